/*
 * mdprobe: a metadata victim that records the latency of every call.
 *
 * Makes NFILES files in a directory of its own under DIR (uncounted), then for SECONDS
 * calls stat() on them in turn (or, with -o, stat() then open()+close()), one call after
 * another, timing each with CLOCK_MONOTONIC. Prints one line:
 *
 *   calls=N seconds=S rate=R/s p50_us=.. p90_us=.. p99_us=.. max_us=..
 *
 * With -s, it also prints to stderr, at the end of every second of the run, one line
 * for that second alone (for timelines; protect.sh):
 *
 *   sec=K t=UNIX_TIME calls=N p50_us=.. p99_us=..
 *
 * `sluice load` drives the same calls but reports rates only; this probe is the
 * latency side of the GlusterFS experiment (experiments/gluster/README.md).
 *
 * Build: cc -O2 -o mdprobe mdprobe.c
 * Usage: mdprobe [-o] [-s] [-n NFILES] DIR SECONDS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Latency histogram: 1 µs buckets up to 100 ms, then one overflow bucket. */
#define BUCKETS 100000
static uint64_t hist[BUCKETS + 1];
/* The current second's histogram (-s), cleared after each line. */
static uint64_t sec_hist[BUCKETS + 1];

static double pct_of(const uint64_t *h, uint64_t total, double p) {
    uint64_t want = (uint64_t)(p * total), seen = 0;
    for (int i = 0; i <= BUCKETS; i++) {
        seen += h[i];
        if (seen > want) return i;
    }
    return BUCKETS;
}

static double wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double pct(uint64_t total, double p) { return pct_of(hist, total, p); }

/* Prints second `k`'s line (-s) and clears its histogram. */
static void second_line(int k, uint64_t n) {
    fprintf(stderr, "sec=%d t=%.3f calls=%llu p50_us=%.0f p99_us=%.0f\n", k, wall(),
            (unsigned long long)n, n ? pct_of(sec_hist, n, 0.50) : 0,
            n ? pct_of(sec_hist, n, 0.99) : 0);
    fflush(stderr);
    memset(sec_hist, 0, sizeof sec_hist);
}

int main(int argc, char **argv) {
    int with_open = 0, per_second = 0, nfiles = 16, c;
    while ((c = getopt(argc, argv, "osn:")) != -1) {
        if (c == 'o') with_open = 1;
        else if (c == 's') per_second = 1;
        else if (c == 'n') nfiles = atoi(optarg);
        else { fprintf(stderr, "usage: mdprobe [-o] [-s] [-n NFILES] DIR SECONDS\n"); return 2; }
    }
    if (argc - optind != 2 || nfiles < 1) {
        fprintf(stderr, "usage: mdprobe [-o] [-s] [-n NFILES] DIR SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[optind + 1]);
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/mdprobe.%d", argv[optind], (int)getpid());
    if (mkdir(dir, 0755) < 0) { perror(dir); return 1; }
    for (int i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        if (fd < 0) { perror(path); return 1; }
        close(fd);
    }
    uint64_t calls = 0, errors = 0, max_ns = 0, sec_calls = 0;
    double start = now(), end = start + seconds, t0, t1;
    int sec = 1;
    struct stat st;
    for (int i = 0;; i = (i + 1) % nfiles) {
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        t0 = now();
        /* A call that straddles a second's end counts in the second it ended in; a
         * second without any call ending in it prints calls=0. */
        while (per_second && t0 >= start + sec && start + sec <= end) {
            second_line(sec++, sec_calls);
            sec_calls = 0;
        }
        if (t0 >= end) break;
        if (stat(path, &st) < 0) errors++;
        if (with_open) {
            int fd = open(path, O_RDONLY);
            if (fd < 0) errors++; else close(fd);
        }
        t1 = now();
        uint64_t ns = (uint64_t)((t1 - t0) * 1e9);
        if (ns > max_ns) max_ns = ns;
        uint64_t us = ns / 1000;
        hist[us < BUCKETS ? us : BUCKETS]++;
        sec_hist[us < BUCKETS ? us : BUCKETS]++;
        sec_calls++;
        calls++;
    }
    double elapsed = now() - start;
    for (int i = 0; i < nfiles; i++) {
        snprintf(path, sizeof path, "%s/f%d", dir, i);
        unlink(path);
    }
    rmdir(dir);
    printf("calls=%llu errors=%llu seconds=%.2f rate=%.0f/s p50_us=%.0f p90_us=%.0f "
           "p99_us=%.0f max_us=%.0f\n",
           (unsigned long long)calls, (unsigned long long)errors, elapsed,
           calls / elapsed, pct(calls, 0.50), pct(calls, 0.90), pct(calls, 0.99),
           max_ns / 1000.0);
    return 0;
}
