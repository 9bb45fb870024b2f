/* Makes N stat(FILE) calls while SIGALRM arrives every 10 ms (handler installed without
 * SA_RESTART), then one stat(MISSING) that must fail with ENOENT, not EINTR.
 * Usage: signals FILE MISSING N
 * Prints "calls=N handled=H eintr=E errno=NAME ms=T". Exits 1 if a call failed. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t handled;

static void on_alarm(int sig) {
    (void)sig;
    handled++;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: signals FILE MISSING N\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = 0; /* no SA_RESTART: an interrupted system call would fail with EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_REAL, &it, NULL);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int n = atoi(argv[3]), calls = 0, eintr = 0, failed = 0;
    struct stat st;
    for (int i = 0; i < n; i++) {
        if (stat(argv[1], &st) == 0) {
            calls++;
        } else {
            failed = 1;
            if (errno == EINTR) eintr++;
        }
    }
    errno = 0;
    int r = stat(argv[2], &st);
    int e = errno;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    printf("calls=%d handled=%d eintr=%d errno=%s ms=%ld\n", calls, (int)handled, eintr,
           r == 0 ? "none" : e == ENOENT ? "ENOENT" : e == EINTR ? "EINTR" : strerror(e), ms);
    return failed ? 1 : 0;
}
