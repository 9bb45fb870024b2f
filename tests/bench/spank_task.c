/* What the Slurm plugin's slurm_spank_task_init adds to a task's start, outside Slurm:
 * this program stands in for slurmstepd (it defines the spank_* and slurm_* functions the
 * plugin calls), loads libsluice_spank.so, has it set the step up standalone (a socket
 * that never answers, deadline=200ms: the step gets a segment of its own), then forks
 * tasks in turn, static and dynamic interleaved: each calls slurm_spank_task_init, then
 * execs its program (tests/c/bench_loop.c, making one stat). Prints, per task, "KIND NS": the time task_init took in the task.
 *
 * Usage: spank_task PLUGIN SOCKET STATIC DYNAMIC ROUNDS supervise=on|off
 * (cc -O2 -rdynamic -o spank_task spank_task.c -ldl; see spank_task.sh)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The task's argv: PROG stat SOCKET 1 (one stat, through its supervisor when static). */
static char *task_argv[5];

int spank_context(void) { return 2; /* S_CTX_REMOTE */ }

int spank_get_item(void *sp, int item, ...) {
    (void)sp;
    va_list ap;
    va_start(ap, item);
    int rc = 0;
    switch (item) {
    case 0: *va_arg(ap, uint32_t *) = getuid(); break;
    case 1: *va_arg(ap, uint32_t *) = getgid(); break;
    case 2: *va_arg(ap, uint32_t *) = 42; break;
    case 3: *va_arg(ap, uint32_t *) = 0; break;
    case 4: *va_arg(ap, uint32_t *) = 1; break;
    case 6: *va_arg(ap, uint32_t *) = 1; break;
    case 9: {
        int *argc = va_arg(ap, int *);
        char ***argv = va_arg(ap, char ***);
        *argc = 4;
        *argv = task_argv;
        break;
    }
    default: rc = 1;
    }
    va_end(ap);
    return rc;
}

int spank_getenv(void *sp, const char *var, char *buf, int len) {
    (void)sp;
    const char *v = getenv(var);
    if (!v || (int)strlen(v) >= len) return 1;
    strcpy(buf, v);
    return 0;
}

int spank_setenv(void *sp, const char *var, const char *val, int overwrite) {
    (void)sp;
    return setenv(var, val, overwrite) ? 1 : 0;
}

static void vlog(const char *fmt, va_list ap) {
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}
void slurm_info(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}
void slurm_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}
void slurm_debug(const char *fmt, ...) { (void)fmt; }

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

typedef int (*hook)(void *, int, char **);

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: spank_task PLUGIN SOCKET STATIC DYNAMIC ROUNDS supervise=on|off\n");
        return 2;
    }
    /* A controller that never answers: the step runs standalone, with a segment. */
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, argv[2], sizeof a.sun_path - 1);
    unlink(argv[2]);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 16)) {
        perror("socket");
        return 1;
    }
    void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!plugin) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    hook init = (hook)dlsym(plugin, "slurm_spank_init");
    hook post = (hook)dlsym(plugin, "slurm_spank_init_post_opt");
    hook task = (hook)dlsym(plugin, "slurm_spank_task_init");
    hook fini = (hook)dlsym(plugin, "slurm_spank_exit");
    char sock[300];
    snprintf(sock, sizeof sock, "socket=%s", argv[2]);
    char *args[] = {"default=on", sock, "deadline=200ms", "report=off", argv[6]};
    if (init(NULL, 5, args) || post(NULL, 0, NULL)) {
        fprintf(stderr, "the plugin did not set the step up\n");
        return 1;
    }
    int rounds = atoi(argv[5]);
    for (int r = 0; r < 2 * rounds; r++) {
        char *prog = r % 2 ? argv[4] : argv[3];
        int p[2];
        if (pipe(p)) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            task_argv[0] = prog;
            task_argv[1] = "stat";
            task_argv[2] = argv[2];
            task_argv[3] = "1";
            uint64_t t0 = now();
            task(NULL, 0, NULL);
            uint64_t took = now() - t0;
            if (write(p[1], &took, sizeof took) != sizeof took) _exit(1);
            int null = open("/dev/null", O_WRONLY);
            dup2(null, 1);
            execv(prog, task_argv);
            _exit(127);
        }
        close(p[1]);
        uint64_t took = 0;
        if (read(p[0], &took, sizeof took) != sizeof took) return 1;
        close(p[0]);
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status)) {
            fprintf(stderr, "task %s: status %d\n", prog, status);
            return 1;
        }
        printf("%s %llu\n", r % 2 ? "dynamic" : "static", (unsigned long long)took);
    }
    fini(NULL, 0, NULL);
    return 0;
}
