/*
 * mdcreate: a metadata aggressor that creates and removes files, as fast as it is let.
 *
 * In a directory of its own under DIR, for SECONDS: open(O_CREAT|O_EXCL) a new file,
 * close it, unlink it, one call after another (all three of class `metadata`, so one
 * rule on the class holds every call). On CephFS the create and the unlink are each
 * one request to the MDS; the close sends none. Prints one line at the end:
 *
 *   calls=N seconds=S rate=R/s errors=E
 *
 * With -s, also one line per second of the run on stderr: `sec=K t=UNIX_TIME calls=N`.
 *
 * Usage: mdcreate [-s] DIR SECONDS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_of(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int per_second = 0, c;
    while ((c = getopt(argc, argv, "s")) != -1) {
        if (c == 's') per_second = 1;
        else { fprintf(stderr, "usage: mdcreate [-s] DIR SECONDS\n"); return 2; }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "usage: mdcreate [-s] DIR SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[optind + 1]);
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/mdcreate.%d", argv[optind], (int)getpid());
    if (mkdir(dir, 0755) < 0) { perror(dir); return 1; }
    uint64_t calls = 0, errors = 0, sec_calls = 0, n = 0;
    double start = clock_of(CLOCK_MONOTONIC), end = start + seconds;
    int sec = 1;
    for (;;) {
        double t = clock_of(CLOCK_MONOTONIC);
        while (per_second && t >= start + sec && start + sec <= end) {
            fprintf(stderr, "sec=%d t=%.3f calls=%llu\n", sec++, clock_of(CLOCK_REALTIME),
                    (unsigned long long)sec_calls);
            fflush(stderr);
            sec_calls = 0;
        }
        if (t >= end) break;
        snprintf(path, sizeof path, "%s/f%llu", dir, (unsigned long long)n++);
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) { errors++; } else { close(fd); }
        if (unlink(path) < 0) errors++;
        calls += fd < 0 ? 2 : 3;
        sec_calls += fd < 0 ? 2 : 3;
    }
    double elapsed = clock_of(CLOCK_MONOTONIC) - start;
    rmdir(dir);
    printf("calls=%llu seconds=%.2f rate=%.0f/s errors=%llu\n", (unsigned long long)calls,
           elapsed, calls / elapsed, (unsigned long long)errors);
    return errors ? 1 : 0;
}
