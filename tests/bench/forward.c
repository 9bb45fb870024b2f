/* A bare forwarding preload: the floor any interposer pays. Each hook calls the next
 * definition of its symbol through a pointer resolved once, and does nothing else.
 * make bench compares the stage's cost with this one's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

static int (*real_stat)(const char *, struct stat *);
static int (*real_open)(const char *, int, ...);
static int (*real_close)(int);
static int (*real_vprintf)(const char *, va_list);

__attribute__((constructor)) static void resolve(void) {
    real_stat = (int (*)(const char *, struct stat *))dlsym(RTLD_NEXT, "stat");
    real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
    real_vprintf = (int (*)(const char *, va_list))dlsym(RTLD_NEXT, "vprintf");
}

int stat(const char *path, struct stat *buf) { return real_stat(path, buf); }

int open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    unsigned mode = va_arg(ap, unsigned);
    va_end(ap);
    return real_open(path, flags, mode);
}

int close(int fd) { return real_close(fd); }

int printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = real_vprintf(fmt, ap);
    va_end(ap);
    return r;
}
