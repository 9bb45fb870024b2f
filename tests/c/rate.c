/* Drives calls as fast as the stage admits them until a deadline, and records the
 * CLOCK_MONOTONIC time at which each call returned, one file per worker.
 *
 * Usage: rate MODE FILE OUTDIR MS [CHILD]
 *   MODE  one      one thread of stat(FILE)
 *         threads  two threads of stat(FILE)
 *         fork     this process and a fork()ed child, each stat(FILE)
 *         exec     this process and a child that exec()s CHILD (a copy of this program)
 *                  with MODE "until"
 *         pwrite   one thread of pwrite(FILE, 1 MiB, offset 0)
 *         raw      one thread of syscall(SYS_newfstatat, AT_FDCWD, FILE, …), no libc wrapper
 *         until    (for exec) one thread of stat(FILE) until the absolute deadline MS,
 *                  in nanoseconds of CLOCK_MONOTONIC
 *   Workers write OUTDIR/ts.PID.N: one decimal timestamp (ns) per line, every call made,
 *   the last one being the first that returned at or after the deadline.
 *   With RATE_START set to a path, the program writes OUTDIR/ready.PID once it runs, and
 *   the run (and its MS) starts once that path exists (at most a minute later): jobs
 *   started one by one are released together.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CALLS (4 << 20)
#define BLOCK (1 << 20)

static const char *file, *outdir;
static uint64_t deadline;
static int do_write, do_raw;

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void *worker(void *arg) {
    uint64_t *ts = malloc(MAX_CALLS * sizeof *ts);
    char *block = do_write ? calloc(1, BLOCK) : NULL;
    int fd = do_write ? open(file, O_WRONLY | O_CREAT, 0644) : -1;
    if (!ts || (do_write && (!block || fd < 0))) die("rate: setup");
    size_t n = 0;
    struct stat st;
    while (n < MAX_CALLS) {
        if (do_write) {
            if (pwrite(fd, block, BLOCK, 0) != BLOCK) die("rate: pwrite");
        } else if (do_raw) {
            if (syscall(SYS_newfstatat, AT_FDCWD, file, &st, 0) != 0) die("rate: newfstatat");
        } else if (stat(file, &st) != 0) {
            die("rate: stat");
        }
        ts[n++] = now();
        if (ts[n - 1] >= deadline) break;
    }
    char name[4096];
    snprintf(name, sizeof name, "%s/ts.%d.%ld", outdir, (int)getpid(), (long)(intptr_t)arg);
    FILE *out = fopen(name, "w");
    if (!out) die(name);
    for (size_t i = 0; i < n; i++) fprintf(out, "%llu\n", (unsigned long long)ts[i]);
    if (fclose(out) != 0) die(name);
    if (fd >= 0) close(fd);
    free(ts);
    free(block);
    return NULL;
}

/* Waits until the file `path` exists, polling every millisecond for at most a minute. */
static void wait_for_start(const char *path) {
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 60000; i++) {
        if (access(path, F_OK) == 0) return;
        nanosleep(&ms, NULL);
    }
    fprintf(stderr, "rate: %s never appeared\n", path);
    exit(1);
}

static void wait_child(pid_t pid) {
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "rate: child failed (status %d)\n", status);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: rate MODE FILE OUTDIR MS [CHILD]\n");
        return 2;
    }
    const char *mode = argv[1];
    file = argv[2];
    outdir = argv[3];
    if (!strcmp(mode, "until")) {
        deadline = strtoull(argv[4], NULL, 10);
        worker((void *)0);
        return 0;
    }
    const char *start = getenv("RATE_START");
    if (start) {
        char ready[4096];
        snprintf(ready, sizeof ready, "%s/ready.%d", outdir, (int)getpid());
        FILE *f = fopen(ready, "w");
        if (!f || fclose(f) != 0) die(ready);
        wait_for_start(start);
    }
    deadline = now() + strtoull(argv[4], NULL, 10) * 1000000u;
    do_write = !strcmp(mode, "pwrite");
    do_raw = !strcmp(mode, "raw");
    if (!strcmp(mode, "one") || do_write || do_raw) {
        worker((void *)0);
    } else if (!strcmp(mode, "threads")) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)1) != 0) die("pthread_create");
        worker((void *)0);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "fork")) {
        pid_t pid = fork();
        if (pid < 0) die("fork");
        worker((void *)0);
        if (pid == 0) exit(0);
        wait_child(pid);
    } else if (!strcmp(mode, "exec") && argc == 6) {
        char until[32];
        snprintf(until, sizeof until, "%llu", (unsigned long long)deadline);
        pid_t pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            execl(argv[5], argv[5], "until", file, outdir, until, (char *)NULL);
            die("exec");
        }
        worker((void *)0);
        wait_child(pid);
    } else {
        fprintf(stderr, "rate: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
