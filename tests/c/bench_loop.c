/* Times a loop of one call; prints nanoseconds per call (the best of 3 rounds), or calls
 * per second for `statfor`.
 * Usage: bench_loop stat|open|printf|write|read|clock FILE N
 *        bench_loop statfor FILE MS
 *   stat     stat(FILE)
 *   open     open(FILE) + close: two calls per iteration
 *   printf   printf("%ld\n", i) to stdout (the caller points stdout where it wants)
 *   write    write(2) of a 4 KiB block to FILE, opened once (truncated, rewritten from
 *            its start each round), or to descriptor 1 when FILE is "-"
 *   read     pread(2) of 4 KiB at offset 0 of FILE, opened once
 *   clock    clock_gettime(CLOCK_MONOTONIC): the machine's yardstick (FILE unused)
 *   statfor  stat(FILE) for MS milliseconds; prints calls per second
 * Run with and without the stage (make bench) to see what the stage adds per call. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s stat|open|printf|write|read|clock|statfor FILE N\n", argv[0]);
        return 2;
    }
    const char *op = argv[1], *file = argv[2];
    long n = atol(argv[3]);
    struct stat st;
    struct timespec ts;
    if (!strcmp(op, "statfor")) {
        double end = now() + n * 1e6, t0 = now();
        long calls = 0;
        while (now() < end) {
            for (int i = 0; i < 1000; i++)
                if (stat(file, &st) != 0) return 1;
            calls += 1000;
        }
        fprintf(stderr, "%.0f\n", calls / ((now() - t0) / 1e9));
        return 0;
    }
    static char block[4096];
    int out = -1;
    if (!strcmp(op, "write")) {
        out = strcmp(file, "-") ? open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644) : 1;
        if (out < 0) return 1;
    }
    int in = strcmp(op, "read") ? -1 : open(file, O_RDONLY);
    if (!strcmp(op, "read") && in < 0) return 1;
    double best = 1e30;
    for (int round = 0; round < 3; round++) {
        if (out > 1 && lseek(out, 0, SEEK_SET) != 0) return 1;
        double t0 = now();
        for (long i = 0; i < n; i++) {
            if (!strcmp(op, "open")) {
                int fd = open(file, O_RDONLY);
                if (fd < 0) return 1;
                close(fd);
            } else if (!strcmp(op, "printf")) {
                if (printf("%ld\n", i) < 0) return 1;
            } else if (in >= 0) {
                if (pread(in, block, sizeof block, 0) < 0) return 1;
            } else if (out >= 0) {
                if (write(out, block, sizeof block) != (ssize_t)sizeof block) return 1;
            } else if (!strcmp(op, "clock")) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
            } else if (stat(file, &st) != 0) {
                return 1;
            }
        }
        double per = (now() - t0) / n;
        if (per < best) best = per;
    }
    /* On stderr: stdout may be what the loop writes to. */
    fprintf(stderr, "%.2f\n", best);
    return 0;
}
