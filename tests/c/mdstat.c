/*
 * mdstat: an interactive-like metadata victim. For SECONDS, stat(), open() and close()
 * the files DIR/f0 … DIR/f{N-1} (made beforehand, e.g. by a scenario's setup) in turn,
 * one call after another. Prints one line at the end:
 *
 *   rounds=R calls=N seconds=S rate=R/s p50_us=.. p99_us=..
 *
 * where a round is one file's stat+open+close (three calls), timed as one.
 *
 * Usage: mdstat -n N DIR SECONDS
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUCKETS 100000 /* 1-µs buckets up to 100 ms, then one overflow bucket */
static uint64_t hist[BUCKETS + 1];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double pct(uint64_t total, double p) {
    uint64_t want = (uint64_t)(p * total), seen = 0;
    for (int i = 0; i <= BUCKETS; i++) {
        seen += hist[i];
        if (seen > want) return i;
    }
    return BUCKETS;
}

int main(int argc, char **argv) {
    int nfiles = 0, c;
    while ((c = getopt(argc, argv, "n:")) != -1) {
        if (c == 'n') nfiles = atoi(optarg);
        else { fprintf(stderr, "usage: mdstat -n N DIR SECONDS\n"); return 2; }
    }
    if (argc - optind != 2 || nfiles < 1) {
        fprintf(stderr, "usage: mdstat -n N DIR SECONDS\n");
        return 2;
    }
    const char *dir = argv[optind];
    double seconds = atof(argv[optind + 1]);
    char path[4200];
    uint64_t rounds = 0, errors = 0;
    struct stat st;
    double start = now(), end = start + seconds;
    for (int i = 0;; i = (i + 1) % nfiles) {
        double t0 = now();
        if (t0 >= end) break;
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        if (stat(path, &st) < 0) errors++;
        int fd = open(path, O_RDONLY);
        if (fd < 0) errors++; else close(fd);
        uint64_t us = (uint64_t)((now() - t0) * 1e6);
        hist[us < BUCKETS ? us : BUCKETS]++;
        rounds++;
    }
    double elapsed = now() - start;
    printf("rounds=%llu calls=%llu seconds=%.2f rate=%.0f/s p50_us=%.0f p99_us=%.0f errors=%llu\n",
           (unsigned long long)rounds, (unsigned long long)(3 * rounds), elapsed,
           rounds / elapsed, pct(rounds, 0.50), pct(rounds, 0.99), (unsigned long long)errors);
    return errors ? 1 : 0;
}
