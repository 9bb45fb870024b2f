/* Calls at least one libc symbol of every operation the stage counts, on files in DIR.
 * Usage: coverage DIR N     (N: a small byte count, 5, passed at run time so that a
 *                            fortified build cannot prove sizes and uses the _chk symbols)
 *
 * Every call is a step, and every step prints one line "SYMBOL OP" on stdout: the symbol
 * called and the operation the stage must count it as. The test sums the lines per
 * operation and compares with the stage's counters, so a symbol the stage misses shows up
 * as a missing count. A step that fails stops the program (exit 1), except the xattr
 * steps, which tmpfs may refuse with ENOTSUP (the call is still made, and counted).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

static void step(const char *sym, const char *op, int ok, int may_be_unsupported) {
    if (!ok && !(may_be_unsupported && (errno == ENOTSUP || errno == ENODATA))) {
        fprintf(stderr, "coverage: %s failed: %s\n", sym, strerror(errno));
        exit(1);
    }
    printf("%s %s\n", sym, op);
}
#define STEP(sym, op, ok) step(sym, op, ok, 0)
#define XSTEP(sym, op, ok) step(sym, op, ok, 1)

static char path_buf[8][4096];
static const char *in(const char *dir, const char *name, int slot) {
    snprintf(path_buf[slot], sizeof path_buf[slot], "%s/%s", dir, name);
    return path_buf[slot];
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: coverage DIR N\n");
        return 2;
    }
    const char *dir = argv[1];
    size_t n = (size_t)atoi(argv[2]);
    const char *a = in(dir, "a", 0), *b = in(dir, "b", 1), *l = in(dir, "l", 2);
    const char *s = in(dir, "s", 3), *d = in(dir, "d", 4), *p = in(dir, "p", 5);
    const char *w = in(dir, "w", 6);
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/tXXXXXX", dir);
    char buf[64], lbuf[64];
    struct stat st;
    struct statx stx;
    struct statfs sfs;
    struct statvfs svfs;
    struct iovec iov[2] = {{"ab", 2}, {"cd", 2}};
    struct iovec riov[2] = {{buf, 2}, {buf + 2, 2}};
    int fd, dfd;

    /* data and descriptor calls on a new file */
    STEP("creat", "open", (fd = creat(a, 0644)) >= 0);
    STEP("close", "close", close(fd) == 0);
    STEP("open", "open", (fd = open(a, O_RDWR)) >= 0);
    STEP("write", "write", write(fd, "hello\nworld\n", 12) == 12);
    STEP("pwrite", "write", pwrite(fd, "x", 1, 12) == 1);
    STEP("writev", "write", writev(fd, iov, 2) == 4);
    STEP("fsync", "sync", fsync(fd) == 0);
    STEP("fdatasync", "sync", fdatasync(fd) == 0);
    STEP("ftruncate", "setattr", ftruncate(fd, 12) == 0);
    STEP("fallocate", "allocate", fallocate(fd, 0, 0, 4096) == 0);
    STEP("posix_fallocate", "allocate", posix_fallocate(fd, 0, 8192) == 0);
    STEP("fchmod", "setattr", fchmod(fd, 0600) == 0);
    STEP("fstat", "getattr", fstat(fd, &st) == 0);
    STEP("fstatvfs", "statfs", fstatvfs(fd, &svfs) == 0);
    void *m;
    STEP("mmap", "mmap", (m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0)) != MAP_FAILED);
    munmap(m, 4096);
    STEP("close", "close", close(fd) == 0);
    STEP("truncate", "setattr", truncate(a, 12) == 0);

    /* reads */
    STEP("open", "open", (fd = open(a, O_RDONLY)) >= 0);
    STEP("read", "read", read(fd, buf, n) == (ssize_t)n);
    STEP("pread", "read", pread(fd, buf, n, 6) == (ssize_t)n);
    STEP("readv", "read", readv(fd, riov, 2) == 4);
    STEP("close", "close", close(fd) == 0);

    /* *at calls through a directory descriptor */
    STEP("open", "open", (dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
    STEP("openat", "open", (fd = openat(dfd, "a", O_RDONLY)) >= 0);
    STEP("close", "close", close(fd) == 0);
    STEP("fstatat", "getattr", fstatat(dfd, "a", &st, 0) == 0);
    STEP("statx", "getattr", statx(dfd, "a", 0, STATX_BASIC_STATS, &stx) == 0);
    STEP("faccessat", "access", faccessat(dfd, "a", R_OK, 0) == 0);
    STEP("utimensat", "setattr", utimensat(dfd, "a", NULL, 0) == 0);
    STEP("renameat", "rename", renameat(dfd, "a", dfd, "b") == 0);
    STEP("rename", "rename", rename(b, a) == 0);

    /* attributes and names by path */
    STEP("stat", "getattr", stat(a, &st) == 0);
    STEP("lstat", "getattr", lstat(a, &st) == 0);
    STEP("access", "access", access(a, R_OK) == 0);
    STEP("chmod", "setattr", chmod(a, 0644) == 0);
    STEP("chown", "setattr", chown(a, getuid(), getgid()) == 0);
    STEP("link", "link", link(a, l) == 0);
    STEP("symlink", "symlink", symlink("a", s) == 0);
    STEP("readlink", "readlink", readlink(s, lbuf, n) == 1);
    STEP("unlink", "unlink", unlink(l) == 0);
    STEP("unlink", "unlink", unlink(s) == 0);
    STEP("mkdir", "mkdir", mkdir(d, 0755) == 0);
    STEP("rmdir", "rmdir", rmdir(d) == 0);
    STEP("mkfifo", "mknod", mkfifo(p, 0644) == 0);
    STEP("unlink", "unlink", unlink(p) == 0);
    STEP("statfs", "statfs", statfs(dir, &sfs) == 0);

    /* extended attributes: tmpfs may refuse user.* names; the calls are counted anyway */
    XSTEP("setxattr", "setxattr", setxattr(a, "user.sluice", "1", 1, 0) == 0);
    XSTEP("getxattr", "getxattr", getxattr(a, "user.sluice", buf, sizeof buf) >= 0);
    XSTEP("listxattr", "listxattr", listxattr(a, buf, sizeof buf) >= 0);
    XSTEP("removexattr", "removexattr", removexattr(a, "user.sluice") == 0);

    /* directory streams: one step per readdir call, the last one returns NULL */
    DIR *dp;
    STEP("opendir", "open", (dp = opendir(dir)) != NULL);
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(dp);
        STEP("readdir", "readdir", e != NULL || errno == 0);
        if (!e) break;
    }
    STEP("closedir", "close", closedir(dp) == 0);

    /* stdio */
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    STEP("fopen", "open", (f = fopen(a, "r")) != NULL);
    STEP("fread", "read", fread(buf, 1, n, f) == n);
    STEP("fgets", "read", fgets(lbuf, (int)n + 2, f) != NULL);
    STEP("getline", "read", getline(&line, &cap, f) > 0);
    STEP("fclose", "close", fclose(f) == 0);
    free(line);
    STEP("fopen", "open", (f = fopen(w, "w")) != NULL);
    STEP("fwrite", "write", fwrite("abc", 1, 3, f) == 3);
    STEP("fputs", "write", fputs(argv[2], f) >= 0);
    STEP("fclose", "close", fclose(f) == 0);
    STEP("mkstemp", "open", (fd = mkstemp(tmpl)) >= 0);
    STEP("close", "close", close(fd) == 0);
    STEP("unlink", "unlink", unlink(tmpl) == 0);
    STEP("close", "close", close(dfd) == 0);
    return 0;
}
