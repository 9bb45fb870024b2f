/* stdio and copies under the stage: every data symbol of stdio, the inlined gets and
 * puts, sendfile and copy_file_range, and timed loops for the rate tests.
 *
 * Usage: stdio MODE ARGS...
 *   symbols DIR OUT LOG  calls every stdio data symbol the stage hooks (the C-variadic
 *                        ones, their v-variants, FORTIFY's __*_chk, the _unlocked and
 *                        _IO_ names, __overflow and __uflow) on files in DIR (managed),
 *                        checking return values and errno, and a few on files in OUT
 *                        (unmanaged). Appends one line "SYMBOL OP BYTES" per call the
 *                        stage must count to LOG ("-" as OP for calls it must not count).
 *                        Also checks that errno survives successful calls.
 *   inline DIR LOG       putc_unlocked and getc_unlocked as glibc's headers inline them at
 *                        -O2, on a stream with a 4096-byte buffer: logs what __overflow
 *                        and __uflow must count (whole buffers).
 *   copy SRC DST CHUNK N copy_file_range then sendfile of SRC to DST, CHUNK bytes a call,
 *                        N calls each, one after the other (SRC holds 2 * N * CHUNK
 *                        bytes); prints "SYMBOL BYTES SECONDS" for each.
 *   write FILE BYTES     fprintf lines to FILE until BYTES bytes; prints "BYTES SECONDS".
 *   getline FILE         reads FILE with getline; prints "BYTES SECONDS".
 *   fscanf FILE          reads FILE (written by `write`) with fscanf; prints "BYTES SECONDS".
 * A failed check prints why on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Symbols the headers hide: FORTIFY's entry points, and the pre-C99 scanf family that
 * the headers redirect to __isoc99_*. */
extern int __printf_chk(int, const char *, ...);
extern int __fprintf_chk(FILE *, int, const char *, ...);
extern int __dprintf_chk(int, int, const char *, ...);
extern int __vprintf_chk(int, const char *, va_list);
extern int __vfprintf_chk(FILE *, int, const char *, va_list);
extern int __vdprintf_chk(int, int, const char *, va_list);
extern int __isoc99_fscanf(FILE *, const char *, ...);
extern int __isoc99_scanf(const char *, ...);
extern int __isoc99_vfscanf(FILE *, const char *, va_list);
extern int __isoc99_vscanf(const char *, va_list);
extern int old_fscanf(FILE *, const char *, ...) __asm__("fscanf");
extern int old_scanf(const char *, ...) __asm__("scanf");
extern int old_vfscanf(FILE *, const char *, va_list) __asm__("vfscanf");
extern int old_vscanf(const char *, va_list) __asm__("vscanf");
extern int _IO_getc(FILE *);
extern int _IO_putc(int, FILE *);

/* The library's own entry points of what the headers inline at -O2: called through
 * pointers the compiler cannot see through. */
static int (*volatile p_getc_unlocked)(FILE *) = getc_unlocked;
static int (*volatile p_fgetc_unlocked)(FILE *) = fgetc_unlocked;
static int (*volatile p_getchar_unlocked)(void) = getchar_unlocked;
static int (*volatile p_getchar)(void) = getchar;
static int (*volatile p_putc_unlocked)(int, FILE *) = putc_unlocked;
static int (*volatile p_putchar_unlocked)(int) = putchar_unlocked;
static int (*volatile p_putchar)(int) = putchar;
static int (*volatile p_vprintf)(const char *, va_list) = vprintf;
static int (*volatile p_fputc_unlocked)(int, FILE *) = fputc_unlocked;
/* The compiler rewrites fputs of a constant string into fwrite or fputc. */
static int (*volatile p_fputs)(const char *, FILE *) = fputs;

static int log_fd = -1;

static void fail(const char *what) {
    fprintf(stderr, "stdio: %s (errno %d: %s)\n", what, errno, strerror(errno));
    exit(1);
}

/* One call the stage counts as OP for BYTES ("-": not counted), appended to the log. */
static void logged(const char *sym, const char *op, long long bytes) {
    char line[128];
    int n = snprintf(line, sizeof line, "%s %s %lld\n", sym, op, bytes);
    if (write(log_fd, line, (size_t)n) != n) fail("log");
}

/* Checks a call's result and errno, then logs it. */
static void check(const char *sym, const char *op, long long bytes, int ok) {
    if (!ok) {
        fprintf(stderr, "stdio: %s: unexpected result\n", sym);
        fail(sym);
    }
    logged(sym, op, bytes);
}

/* Checks that a call failed with errno `want`, and logs it as counted with no bytes. */
static void check_errno(const char *sym, const char *op, int failed, int want) {
    if (!failed || errno != want) {
        fprintf(stderr, "stdio: %s: failed %d, errno %d (%s), expected %d (%s)\n", sym, failed,
                errno, strerror(errno), want, strerror(want));
        exit(1);
    }
    logged(sym, op, 0);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static char path_buf[8][4096];
static const char *in(const char *dir, const char *name, int slot) {
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", dir, name);
    return path_buf[slot];
}

static FILE *must_open(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) fail(path);
    return f;
}

/* The v-variants, called with a va_list as a program's own wrappers would. */
static int call_vfprintf(int chk, FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = chk ? __vfprintf_chk(f, 1, fmt, ap) : vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}
static int call_vprintf(int chk, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = chk ? __vprintf_chk(1, fmt, ap) : p_vprintf(fmt, ap);
    va_end(ap);
    return r;
}
static int call_vdprintf(int chk, int fd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = chk ? __vdprintf_chk(fd, 1, fmt, ap) : vdprintf(fd, fmt, ap);
    va_end(ap);
    return r;
}
static int call_vfscanf(int iso, FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = iso ? __isoc99_vfscanf(f, fmt, ap) : old_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}
static int call_vscanf(int iso, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = iso ? __isoc99_vscanf(fmt, ap) : old_vscanf(fmt, ap);
    va_end(ap);
    return r;
}

/* The bytes a scanf-family call consumed: how far it moved the stream. */
#define SCANNED(f, call, ok)                                                                  \
    ({                                                                                     \
        long before_ = ftell(f);                                                           \
        int ok_ = (call) == (ok);                                                          \
        if (!ok_) fail(#call);                                                             \
        ftell(f) - before_;                                                                \
    })

static const char TEXT[] = "12 apples\n34 pears\n56 plums\n78 figs\n90 kiwis\nthe end\n";

static void symbols(const char *dir, const char *out) {
    const char *a = in(dir, "a", 0), *w = in(dir, "w", 1), *o = in(dir, "o", 2);
    const char *u = in(out, "u", 3);
    int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, TEXT, sizeof TEXT - 1) != (ssize_t)(sizeof TEXT - 1)) fail(a);
    logged("open", "open", 0);
    logged("write", "write", sizeof TEXT - 1);
    close(fd);
    logged("close", "close", 0);

    /* ---- output to a stream -------------------------------------------------------- */
    FILE *f = must_open(w, "w");
    logged("fopen", "open", 0);
    int r;
    errno = 4242;
    check("fprintf", "write", 7, (r = fprintf(f, "%d-%s\n", 42, "abc")) == 7 && errno == 4242);
    check("vfprintf", "write", 5, call_vfprintf(0, f, "%05d", 7) == 5);
    check("__fprintf_chk", "write", 3, __fprintf_chk(f, 1, "%s", "xyz") == 3);
    check("__vfprintf_chk", "write", 4, call_vfprintf(1, f, "%.2f", 1.5) == 4);
    check("putc", "write", 1, putc('p', f) == 'p');
    check("_IO_putc", "write", 1, _IO_putc('q', f) == 'q');
    check("putc_unlocked", "write", 1, p_putc_unlocked('r', f) == 'r');
    check("fputc_unlocked", "write", 1, p_fputc_unlocked('s', f) == 's');
    check("fputs", "write", 4, p_fputs("tail", f) >= 0);
    /* __overflow on an emptied buffer writes nothing to the kernel: counted, 0 bytes. */
    if (fflush(f) != 0) fail("fflush");
    check("__overflow", "write", 0, __overflow(f, 't') == 't');
    /* Descriptor output. */
    int wfd = fileno(f);
    check("dprintf", "write", 6, dprintf(wfd, "[%04d]", 12) == 6);
    check("vdprintf", "write", 2, call_vdprintf(0, wfd, "%x", 255) == 2);
    check("__dprintf_chk", "write", 3, __dprintf_chk(wfd, 1, "%c%c%c", 'a', 'b', 'c') == 3);
    check("__vdprintf_chk", "write", 1, call_vdprintf(1, wfd, "%d", 9) == 1);
    /* The stream is closed while it still holds 't' in its buffer: fclose writes it out,
     * and the byte was counted when it was put. */
    check("fclose", "close", 0, fclose(f) == 0);

    /* ---- output to stdout, moved onto a managed file ------------------------------- */
    if (fflush(stdout) != 0 || !freopen(o, "w", stdout)) fail("freopen stdout");
    logged("freopen", "open", 0);
    check("printf", "write", 10, printf("%s=%d\n", "answer", 42) == 10);
    check("vprintf", "write", 3, call_vprintf(0, "%3d", 5) == 3);
    check("__printf_chk", "write", 2, __printf_chk(1, "%s", "ok") == 2);
    check("__vprintf_chk", "write", 4, call_vprintf(1, "%4s", "x") == 4);
    check("puts", "write", 6, puts("hello") >= 0);
    check("putchar", "write", 1, p_putchar('!') == '!');
    check("putchar_unlocked", "write", 1, p_putchar_unlocked('?') == '?');
    if (fflush(stdout) != 0) fail("fflush stdout");

    /* ---- input from a stream ------------------------------------------------------- */
    FILE *g = must_open(a, "r");
    logged("fopen", "open", 0);
    int n;
    char word[32];
    errno = 4242;
    long k = SCANNED(g, __isoc99_fscanf(g, "%d %31s", &n, word), 2);
    if (errno != 4242 || n != 12) fail("__isoc99_fscanf: errno or value");
    check("__isoc99_fscanf", "read", k, 1);
    k = SCANNED(g, old_fscanf(g, "%d %31s", &n, word), 2);
    check("fscanf", "read", k, n == 34);
    k = SCANNED(g, call_vfscanf(0, g, "%d", &n), 1);
    check("vfscanf", "read", k, n == 56);
    k = SCANNED(g, call_vfscanf(1, g, "%31s", word), 1);
    check("__isoc99_vfscanf", "read", k, !strcmp(word, "plums"));
    check("getc", "read", 1, getc(g) == '\n');
    check("_IO_getc", "read", 1, _IO_getc(g) == '7');
    check("getc_unlocked", "read", 1, p_getc_unlocked(g) == '8');
    check("fgetc_unlocked", "read", 1, p_fgetc_unlocked(g) == ' ');
    check("fgetc", "read", 1, fgetc(g) == 'f');
    char *line = NULL;
    size_t cap = 0;
    check("getline", "read", 4, getline(&line, &cap, g) == 4);
    check("getdelim", "read", 3, getdelim(&line, &cap, ' ', g) == 3);
    check("fclose", "close", 0, fclose(g) == 0);
    /* __uflow on a fresh stream reads the whole (small) file into the buffer. */
    g = must_open(a, "r");
    logged("fopen", "open", 0);
    check("__uflow", "read", sizeof TEXT - 1, __uflow(g) == '1');
    check("fclose", "close", 0, fclose(g) == 0);

    /* ---- input from stdin, moved onto a managed file ------------------------------- */
    if (!freopen(a, "r", stdin)) fail("freopen stdin");
    logged("freopen", "open", 0);
    k = SCANNED(stdin, old_scanf("%d", &n), 1);
    check("scanf", "read", k, n == 12);
    k = SCANNED(stdin, __isoc99_scanf("%31s", word), 1);
    check("__isoc99_scanf", "read", k, !strcmp(word, "apples"));
    k = SCANNED(stdin, call_vscanf(0, "%d", &n), 1);
    check("vscanf", "read", k, n == 34);
    k = SCANNED(stdin, call_vscanf(1, "%31s", word), 1);
    check("__isoc99_vscanf", "read", k, !strcmp(word, "pears"));
    check("getchar", "read", 1, p_getchar() == '\n');
    check("getchar_unlocked", "read", 1, p_getchar_unlocked() == '5');

    /* ---- failures: the real call's result and errno, counted with no bytes --------- */
    g = must_open(a, "r");
    logged("fopen", "open", 0);
    errno = 0;
    check_errno("fprintf", "write", fprintf(g, "%d", 1) < 0, EBADF);
    errno = 0;
    check_errno("putc", "write", putc('x', g) == EOF, EBADF);
    errno = 0;
    check_errno("fputs", "write", p_fputs("x", g) == EOF, EBADF);
    check("fclose", "close", 0, fclose(g) == 0);
    f = must_open(w, "w");
    logged("fopen", "open", 0);
    errno = 0;
    check_errno("__isoc99_fscanf", "read", __isoc99_fscanf(f, "%d", &n) == EOF, EBADF);
    errno = 0;
    check_errno("getc", "read", getc(f) == EOF, EBADF);
    check("fclose", "close", 0, fclose(f) == 0);
    /* A bad descriptor names no target: passed through, not counted. */
    errno = 0;
    if (dprintf(-1, "x") != -1 || errno != EBADF) fail("dprintf(-1)");
    logged("dprintf", "-", 0);

    /* ---- an unmanaged stream reusing a closed managed stream's descriptor ---------- */
    f = must_open(w, "w");
    logged("fopen", "open", 0);
    int managed_fd = fileno(f);
    check("fprintf", "write", 5, fprintf(f, "%s", "12345") == 5);
    check("fclose", "close", 0, fclose(f) == 0);
    f = must_open(u, "w");
    logged("fopen", "-", 0);
    if (fileno(f) != managed_fd) fail("the unmanaged stream did not reuse the descriptor");
    check("fprintf", "-", 0, fprintf(f, "%s", "not counted") == 11);
    check("fclose", "-", 0, fclose(f) == 0);
    free(line);
}

/* putc_unlocked and getc_unlocked inlined (-O2): the stage sees __overflow when the
 * buffer is full and __uflow when it is empty, and counts whole buffers. */
static void inlined(const char *dir) {
    const char *p = in(dir, "i", 0);
    static char wbuf[4096], rbuf[4096];
    const long total = 3 * 4096 + 100;
    FILE *f = must_open(p, "w");
    logged("fopen", "open", 0);
    if (setvbuf(f, wbuf, _IOFBF, sizeof wbuf) != 0) fail("setvbuf");
    for (long i = 0; i < total; i++)
        if (putc_unlocked('a' + i % 26, f) == EOF) fail("putc_unlocked");
    /* __overflow came at the first put (no buffer yet: nothing flushed) and at each full
     * buffer; the last 100 bytes leave with fclose, unseen. */
    logged("__overflow", "write", 0);
    for (int b = 0; b < 3; b++) logged("__overflow", "write", 4096);
    check("fclose", "close", 0, fclose(f) == 0);

    f = must_open(p, "r");
    logged("fopen", "open", 0);
    if (setvbuf(f, rbuf, _IOFBF, sizeof rbuf) != 0) fail("setvbuf");
    long got = 0;
    while (getc_unlocked(f) != EOF) got++;
    if (got != total) fail("getc_unlocked read back");
    /* __uflow at each empty buffer: three full ones, the last 100 bytes, then EOF. */
    for (int b = 0; b < 3; b++) logged("__uflow", "read", 4096);
    logged("__uflow", "read", 100);
    logged("__uflow", "read", 0);
    check("fclose", "close", 0, fclose(f) == 0);
}

/* copy_file_range then sendfile, CHUNK bytes a call, N calls each. */
static void copies(const char *src, const char *dst, long chunk, long n) {
    int in_fd = open(src, O_RDONLY), out_fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in_fd < 0 || out_fd < 0) fail("copy: open");
    double t0 = now();
    long long bytes = 0;
    for (long i = 0; i < n; i++) {
        ssize_t r = copy_file_range(in_fd, NULL, out_fd, NULL, (size_t)chunk, 0);
        if (r != chunk) fail("copy_file_range");
        bytes += r;
    }
    printf("copy_file_range %lld %.6f\n", bytes, now() - t0);
    t0 = now();
    bytes = 0;
    for (long i = 0; i < n; i++) {
        ssize_t r = sendfile(out_fd, in_fd, NULL, (size_t)chunk);
        if (r != chunk) fail("sendfile");
        bytes += r;
    }
    printf("sendfile %lld %.6f\n", bytes, now() - t0);
    /* At the end of the source, a call asking for more moves what is left (here none). */
    if (copy_file_range(in_fd, NULL, out_fd, NULL, 1 << 20, 0) != 0) fail("copy at EOF");
    errno = 0;
    if (copy_file_range(-1, NULL, out_fd, NULL, 1, 0) != -1 || errno != EBADF)
        fail("copy_file_range from a bad descriptor");
    close(in_fd);
    close(out_fd);
}

/* Lines of the `write` mode: a record number, a value and a word, 39 bytes each. */
static const char LINE_FMT[] = "%010ld %16.6f %-10s\n";

static void timed_write(const char *path, long long bytes) {
    double t0 = now();
    FILE *f = must_open(path, "w");
    long long done = 0;
    for (long i = 0; done < bytes; i++) {
        int r = fprintf(f, LINE_FMT, i, i * 0.25, "sluice");
        if (r < 0) fail("fprintf");
        done += r;
    }
    if (fclose(f) != 0) fail("fclose");
    printf("%lld %.6f\n", done, now() - t0);
}

static void timed_read(const char *path, int use_scanf) {
    double t0 = now();
    FILE *f = must_open(path, "r");
    long long done = 0;
    if (use_scanf) {
        long i;
        double v;
        char word[32];
        while (fscanf(f, "%ld %lf %31s", &i, &v, word) == 3) {
        }
        if (!feof(f)) fail("fscanf");
        done = ftell(f);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t r;
        while ((r = getline(&line, &cap, f)) > 0) done += r;
        free(line);
    }
    if (fclose(f) != 0) fail("fclose");
    printf("%lld %.6f\n", done, now() - t0);
}

static void log_open(const char *path) {
    log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd < 0) fail(path);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "symbols") && argc == 5) {
        log_open(argv[4]);
        symbols(argv[2], argv[3]);
    } else if (!strcmp(mode, "inline") && argc == 4) {
        log_open(argv[3]);
        inlined(argv[2]);
    } else if (!strcmp(mode, "copy") && argc == 6) {
        copies(argv[2], argv[3], atol(argv[4]), atol(argv[5]));
    } else if (!strcmp(mode, "write") && argc == 4) {
        timed_write(argv[2], atoll(argv[3]));
    } else if ((!strcmp(mode, "getline") || !strcmp(mode, "fscanf")) && argc == 3) {
        timed_read(argv[2], !strcmp(mode, "fscanf"));
    } else {
        fprintf(stderr, "usage: stdio symbols DIR OUT LOG | inline DIR LOG | copy SRC DST CHUNK N"
                        " | write FILE BYTES | getline FILE | fscanf FILE\n");
        return 2;
    }
    return 0;
}
