/* The stage's shortcut for formatted stdio on unmanaged targets (shim.c): a printf,
 * fprintf, dprintf or fscanf on a descriptor the stage knows to be unmanaged goes to the
 * real function without the hook, counted as unmanaged. This program moves a stream or a
 * descriptor between unmanaged and managed targets in every way a program can (freopen,
 * dup2 under a stream, fclose and a new fopen that reuses the FILE and the descriptor,
 * fdopen) and prints, on stderr, how many bytes it wrote to and read from managed files:
 * tests/conformance/stdio-fastpath.sh checks that --stats counts exactly those, and that
 * the unmanaged calls were counted as unmanaged.
 *
 * Usage: stdio_fastpath MANAGED_DIR UNMANAGED_DIR   (stdout: /dev/null)
 * Prints "written W read R unmanaged_at_least U" on stderr; exits non-zero when a call
 * returned other than it does without the stage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The FORTIFY variant (declared by <stdio.h> only under _FORTIFY_SOURCE). */
extern int __printf_chk(int flag, const char *fmt, ...);

static long written, readb, unmanaged;

#define CHECK(c)                                                                           \
    do {                                                                                   \
        if (!(c)) {                                                                        \
            fprintf(stderr, "line %d: %s failed (errno %d)\n", __LINE__, #c, errno);       \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* printf to whatever stdout is now; counts it as managed or not. */
static void out(int managed, int i) {
    int n = printf("line %d of the fast path\n", i);
    CHECK(n > 0);
    if (managed)
        written += n;
    else
        unmanaged++;
}

int main(int argc, char **argv) {
    CHECK(argc == 3);
    char m1[4096], m2[4096], u1[4096];
    snprintf(m1, sizeof m1, "%s/a", argv[1]);
    snprintf(m2, sizeof m2, "%s/b", argv[1]);
    snprintf(u1, sizeof u1, "%s/u", argv[2]);

    /* 1. stdout on /dev/null: unmanaged, the shortcut. */
    for (int i = 0; i < 100; i++) out(0, i);
    CHECK(fflush(stdout) == 0);

    /* 2. dup2 a managed file under stdout: the same FILE, the same descriptor number,
     * now managed. */
    int m = open(m1, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(m >= 0);
    int saved = dup(1);
    CHECK(saved >= 0);
    CHECK(dup2(m, 1) == 1);
    CHECK(close(m) == 0);
    for (int i = 0; i < 100; i++) out(1, i);
    CHECK(fflush(stdout) == 0);
    /* 3. and back to /dev/null. */
    CHECK(dup2(saved, 1) == 1);
    CHECK(close(saved) == 0);
    for (int i = 0; i < 50; i++) out(0, i);
    CHECK(fflush(stdout) == 0);

    /* 4. freopen stdout onto a managed file. */
    CHECK(freopen(m2, "w", stdout) == stdout);
    for (int i = 0; i < 100; i++) out(1, i);
    /* __printf_chk and friends, as FORTIFY builds call them. */
    int n = __printf_chk(1, "%s %d\n", "chk", 7);
    CHECK(n == 6);
    written += n;
    CHECK(fflush(stdout) == 0);

    /* 5. fprintf to an unmanaged file, fclose, then fopen a managed one: glibc hands
     * out the same FILE and the same descriptor again. */
    for (int round = 0; round < 3; round++) {
        FILE *f = fopen(u1, "w");
        CHECK(f != NULL);
        for (int i = 0; i < 20; i++) {
            CHECK(fprintf(f, "u %d\n", i) > 0);
            unmanaged++;
        }
        CHECK(fclose(f) == 0);
        FILE *g = fopen(m1, "a");
        CHECK(g != NULL);
        for (int i = 0; i < 20; i++) {
            int k = fprintf(g, "m %d\n", i);
            CHECK(k > 0);
            written += k;
        }
        CHECK(fclose(g) == 0);
    }

    /* 6. fdopen over a managed descriptor, and dprintf on both kinds. */
    int d = open(m1, O_WRONLY | O_APPEND);
    CHECK(d >= 0);
    int k = dprintf(d, "dprintf %d\n", 1);
    CHECK(k == 10);
    written += k;
    FILE *h = fdopen(d, "a");
    CHECK(h != NULL);
    k = fprintf(h, "fdopen %d\n", 2);
    CHECK(k == 9);
    written += k;
    CHECK(fclose(h) == 0);
    int nul = open("/dev/null", O_WRONLY);
    CHECK(nul >= 0);
    CHECK(dprintf(nul, "to nowhere %d\n", 3) == 13);
    unmanaged++;
    CHECK(close(nul) == 0);

    /* 7. fscanf: from an unmanaged file, then a managed one. */
    FILE *r = fopen(u1, "r");
    CHECK(r != NULL);
    int v = -1;
    CHECK(fscanf(r, "u %d\n", &v) == 1 && v == 0);
    unmanaged++;
    CHECK(fclose(r) == 0);
    r = fopen(m2, "r");
    CHECK(r != NULL);
    char word[64];
    int got = 0;
    while (fscanf(r, "%63s", word) == 1) got++;
    CHECK(got > 0);
    CHECK(ferror(r) == 0);
    CHECK(fclose(r) == 0);
    /* Everything fscanf consumed: the whole file (whitespace included, as it reads up to
     * the end). */
    FILE *sz = fopen(m2, "r");
    CHECK(sz != NULL);
    CHECK(fseek(sz, 0, SEEK_END) == 0);
    readb = ftell(sz);
    CHECK(fclose(sz) == 0);

    fprintf(stderr, "written %ld read %ld unmanaged_at_least %ld\n", written, readb, unmanaged);
    return 0;
}
