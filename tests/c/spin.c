/* A closed-loop job whose natural rate is set by its own work: stat(FILE), then about
 * SPIN_US microseconds of computation, for SECONDS; prints the calls per second.
 *
 * Usage: spin FILE SECONDS SPIN_US
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: spin FILE SECONDS SPIN_US\n");
        return 2;
    }
    uint64_t start = now();
    uint64_t end = start + (uint64_t)(atof(argv[2]) * 1e9);
    uint64_t spin = (uint64_t)atoll(argv[3]) * 1000u;
    uint64_t calls = 0;
    struct stat st;
    for (uint64_t t = start; t < end; t = now()) {
        if (stat(argv[1], &st) != 0) {
            perror("spin: stat");
            return 1;
        }
        calls++;
        uint64_t until = now() + spin;
        while (now() < until) {
        }
    }
    printf("%.1f\n", calls / ((now() - start) / 1e9));
    return 0;
}
