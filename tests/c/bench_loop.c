/* Times a loop of stat or open+close calls on one file; prints nanoseconds per call.
 * Usage: bench_loop stat|open FILE N
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
        fprintf(stderr, "usage: %s stat|open FILE N\n", argv[0]);
        return 2;
    }
    const char *file = argv[2];
    long n = atol(argv[3]);
    int do_open = strcmp(argv[1], "open") == 0;
    struct stat st;
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            if (do_open) {
                int fd = open(file, O_RDONLY);
                if (fd < 0) return 1;
                close(fd);
            } else if (stat(file, &st) != 0) {
                return 1;
            }
        }
        double per = (now() - t0) / n;
        if (per < best) best = per;
    }
    printf("%.1f\n", best);
    return 0;
}
