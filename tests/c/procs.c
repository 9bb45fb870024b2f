/* Makes stat calls from many processes or threads at once.
 * Usage: procs forks N K FILE      N fork()ed children (all alive at once), K stats each
 *        procs threads N K FILE    N threads (all started before any is joined), K stats each
 *        procs vfork PROG ARGS...  vfork() then execv(PROG, ARGS); waits for it
 *        procs spawn PROG ARGS...  posix_spawn(PROG, ARGS); waits for it
 *        procs cleared HOW PROG A B  starts PROG A B with an empty environment, through HOW:
 *                                    execl, execlp, execle, execv, execvp, execve, execvpe,
 *                                    fexecve (each in a forked child), vfork (then execve),
 *                                    spawn or spawnp; waits for it
 * Exits 1 if any call, child or thread failed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *file;
static int per_worker;

static int stats(void) {
    struct stat st;
    for (int i = 0; i < per_worker; i++)
        if (stat(file, &st) != 0) return 1;
    return 0;
}

static void *thread_main(void *arg) {
    (void)arg;
    return (void *)(long)stats();
}

static int reap(pid_t pid) {
    int status;
    if (waitpid(pid, &status, 0) != pid) return 1;
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* Starts args[0] with args[1] and args[2] and an empty environment, through `how`. */
static int cleared(const char *how, char **args) {
    char *empty[] = {NULL};
    char *prog = args[0];
    char *argv3[] = {args[0], args[1], args[2], NULL};
    pid_t pid;
    if (!strcmp(how, "spawn") || !strcmp(how, "spawnp")) {
        int (*spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                     const posix_spawnattr_t *, char *const[], char *const[]) =
            how[5] == 'p' ? posix_spawnp : posix_spawn;
        return spawn(&pid, prog, NULL, NULL, argv3, empty) != 0 || reap(pid);
    }
    if (!strcmp(how, "vfork")) {
        pid = vfork();
        if (pid == 0) {
            execve(prog, argv3, empty);
            _exit(127);
        }
        return pid < 0 || reap(pid);
    }
    pid = fork();
    if (pid != 0) return pid < 0 || reap(pid);
    if (!strcmp(how, "execle")) {
        execle(prog, prog, args[1], args[2], (char *)NULL, empty);
    } else if (!strcmp(how, "execve")) {
        execve(prog, argv3, empty);
    } else if (!strcmp(how, "execvpe")) {
        execvpe(prog, argv3, empty);
    } else if (!strcmp(how, "fexecve")) {
        fexecve(open(prog, O_RDONLY | O_CLOEXEC), argv3, empty);
    } else {
        /* The forms that pass the process's own environment: emptied first. */
        clearenv();
        if (!strcmp(how, "execl")) execl(prog, prog, args[1], args[2], (char *)NULL);
        if (!strcmp(how, "execlp")) execlp(prog, prog, args[1], args[2], (char *)NULL);
        if (!strcmp(how, "execv")) execv(prog, argv3);
        if (!strcmp(how, "execvp")) execvp(prog, argv3);
    }
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: procs forks|threads|vfork|spawn ...\n");
        return 2;
    }
    const char *mode = argv[1];
    int failed = 0;
    if ((!strcmp(mode, "forks") || !strcmp(mode, "threads")) && argc == 5) {
        int n = atoi(argv[2]);
        per_worker = atoi(argv[3]);
        file = argv[4];
        if (!strcmp(mode, "forks")) {
            pid_t *pids = calloc(n, sizeof *pids);
            for (int i = 0; i < n; i++) {
                pids[i] = fork();
                if (pids[i] == 0) _exit(stats());
                failed |= pids[i] < 0;
            }
            for (int i = 0; i < n; i++) failed |= pids[i] > 0 && reap(pids[i]);
        } else {
            pthread_t *ts = calloc(n, sizeof *ts);
            for (int i = 0; i < n; i++)
                if (pthread_create(&ts[i], NULL, thread_main, NULL) != 0) {
                    perror("pthread_create");
                    return 1;
                }
            for (int i = 0; i < n; i++) {
                void *r;
                pthread_join(ts[i], &r);
                failed |= r != NULL;
            }
        }
    } else if (!strcmp(mode, "vfork")) {
        pid_t pid = vfork();
        if (pid == 0) {
            execv(argv[2], argv + 2);
            _exit(127);
        }
        failed = pid < 0 || reap(pid);
    } else if (!strcmp(mode, "spawn")) {
        pid_t pid;
        failed = posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0 || reap(pid);
    } else if (!strcmp(mode, "cleared") && argc == 6) {
        failed = cleared(argv[2], argv + 3);
    } else {
        fprintf(stderr, "procs: bad arguments\n");
        return 2;
    }
    if (failed) fprintf(stderr, "procs: %s failed\n", mode);
    return failed;
}
