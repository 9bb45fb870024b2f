/* Makes stat calls from many processes or threads at once.
 * Usage: procs forks N K FILE      N fork()ed children (all alive at once), K stats each
 *        procs threads N K FILE    N threads (all started before any is joined), K stats each
 *        procs vfork PROG ARGS...  vfork() then execv(PROG, ARGS); waits for it
 *        procs spawn PROG ARGS...  posix_spawn(PROG, ARGS); waits for it
 * Exits 1 if any call, child or thread failed. */
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
    } else {
        fprintf(stderr, "procs: bad arguments\n");
        return 2;
    }
    if (failed) fprintf(stderr, "procs: %s failed\n", mode);
    return failed;
}
