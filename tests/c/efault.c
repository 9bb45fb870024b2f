/* Calls every hook that takes a pointer the stage reads (a path, an *at path, either path
 * of a two-path call, a stream, a directory stream, an iovec array) with pointers the
 * kernel or libc refuses, and prints what each call returned: the same lines natively
 * and under the stage, managed or not (crates/sluice-tests/tests/efault.rs).
 *
 * Usage: efault DIR
 *   DIR: an existing directory; DIR/efault-file is created there and read and written.
 *
 * Each call runs in a child of its own, so that one that faults in libc (natively too:
 * mkstemp(NULL), fclose of a bad stream) ends only that child. One line per call:
 *   NAME.ARG CASE ret=R errno=E     (R: the return value, or 0/1 for a null/non-null
 *                                    pointer; E: errno's name)
 *   NAME.ARG CASE signal=S          (the child was killed by signal S)
 * CASE: null; unmapped (a page just unmapped); prot_none (a PROT_NONE page); runoff (a
 * relative name running off the end of a mapping into an unmapped page); runoff_abs (an
 * absolute one); runoff_in (DIR's path, then a name, running off the end); wild (a
 * non-canonical address). Streams, directory streams and iovec arrays take the first
 * three and wild. Exits 0 after the last call; core dumps are turned off. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static char missing[4096]; /* DIR/efault-missing: does not exist */
static char file[4096];    /* DIR/efault-file: exists */
static int dir_fd;         /* DIR */
static int file_fd;        /* DIR/efault-file, read and write */
static FILE *stream;       /* on DIR/efault-file, read and write */
static char buf[8192];
static char *line;
static size_t line_len;
static dev_t dev;

/* The symbol NAME as the program sees it: the stage's hook when it is preloaded. A symbol
 * new glibc keeps only as a compat version (__xstat) is found at its base version. */
static void *sym(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) f = dlvsym(RTLD_DEFAULT, name, "GLIBC_2.2.5");
    if (!f) {
        fprintf(stderr, "efault: no symbol %s\n", name);
        exit(2);
    }
    return f;
}

/* The v-variants, given their arguments as a va_list. */
static long vcall(const char *name, FILE *f, const char *fmt, ...) {
    int (*v)(FILE *, const char *, va_list) = (int (*)(FILE *, const char *, va_list))sym(name);
    va_list ap;
    va_start(ap, fmt);
    long r = v(f, fmt, ap);
    va_end(ap);
    return r;
}

static long vcall_chk(const char *name, FILE *f, const char *fmt, ...) {
    int (*v)(FILE *, int, const char *, va_list) =
        (int (*)(FILE *, int, const char *, va_list))sym(name);
    va_list ap;
    va_start(ap, fmt);
    long r = v(f, 1, fmt, ap);
    va_end(ap);
    return r;
}

typedef long (*test_fn)(const void *bad);
struct test {
    const char *name; /* SYMBOL.ARG */
    test_fn run;
    int stream; /* 1: the bad pointer is no path (stream, DIR, iovec) */
};

/* A test of SYMBOL whose argument ARG is the bad pointer B: the symbol has type TYPE and
 * is called on ARGS; R converts its result to a long. */
#define T(SYMBOL, ARG, TYPE, R, ARGS)                           \
    static long t_##SYMBOL##_##ARG(const void *B) {             \
        TYPE f = (TYPE)sym(#SYMBOL);                            \
        (void)B;                                                \
        return R(f ARGS);                                       \
    }
#define INT(x) ((long)(x))
#define PTR(x) ((x) != NULL)

typedef int (*p_i)(const char *);
typedef int (*pi_i)(const char *, int);
typedef int (*pu_i)(const char *, unsigned);
typedef int (*pv_i)(const char *, void *);
typedef int (*ipi_i)(int, const char *, int);
typedef int (*ipu_i)(int, const char *, unsigned);
typedef int (*ipvi_i)(int, const char *, void *, int);
typedef int (*ipv_i)(int, const char *, const void *);
typedef int (*pp_i)(const char *, const char *);
typedef int (*opn)(const char *, int, ...);
typedef int (*opnat)(int, const char *, int, ...);
typedef FILE *(*fop)(const char *, const char *);
typedef FILE *(*frop)(const char *, const char *, FILE *);
typedef int (*tmpl)(char *);
typedef int (*tmpl_i)(char *, int);
typedef int (*tmpl_ii)(char *, int, int);
typedef DIR *(*opd)(const char *);
typedef int (*xst)(int, const char *, void *);
typedef int (*fxst)(int, int, const char *, void *, int);
typedef int (*stx)(int, const char *, int, unsigned, void *);
typedef int (*ipii_i)(int, const char *, int, int);
typedef int (*ipuui_i)(int, const char *, unsigned, unsigned, int);
typedef int (*puu_i)(const char *, unsigned, unsigned);
typedef int (*ipui_i)(int, const char *, unsigned, int);
typedef int (*pl_i)(const char *, long);
typedef int (*ipip_i)(int, const char *, int, const char *);
typedef int (*ipipu_i)(int, const char *, int, const char *, unsigned);
typedef int (*ipipi_i)(int, const char *, int, const char *, int);
typedef int (*pip_i)(const char *, int, const char *);
typedef long (*rl)(const char *, char *, size_t);
typedef long (*rlat)(int, const char *, char *, size_t);
typedef long (*rlchk)(const char *, char *, size_t, size_t);
typedef long (*rlatchk)(int, const char *, char *, size_t, size_t);
typedef int (*mkn)(const char *, unsigned, dev_t);
typedef int (*mknat)(int, const char *, unsigned, dev_t);
typedef int (*xmkn)(int, const char *, unsigned, dev_t *);
typedef int (*xmknat)(int, int, const char *, unsigned, dev_t *);
typedef long (*gx)(const char *, const char *, void *, size_t);
typedef int (*sx)(const char *, const char *, const void *, size_t, int);
typedef long (*lx)(const char *, char *, size_t);
typedef long (*rdv)(int, const struct iovec *, int);
typedef long (*rdv_o)(int, const struct iovec *, int, long);
typedef long (*rdv_oi)(int, const struct iovec *, int, long, int);
typedef int (*s_i)(FILE *);
typedef size_t (*frd)(void *, size_t, size_t, FILE *);
typedef size_t (*frdchk)(void *, size_t, size_t, size_t, FILE *);
typedef size_t (*fwr)(const void *, size_t, size_t, FILE *);
typedef char *(*fgt)(char *, int, FILE *);
typedef char *(*fgtchk)(char *, size_t, int, FILE *);
typedef long (*gln)(char **, size_t *, FILE *);
typedef long (*gdl)(char **, size_t *, int, FILE *);
typedef int (*fps)(const char *, FILE *);
typedef int (*ps)(const char *);
typedef int (*fpc)(int, FILE *);
typedef int (*ovf)(FILE *, int);
typedef struct dirent *(*rdd)(DIR *);
typedef int (*cld)(DIR *);

/* ---- paths ------------------------------------------------------------------------- */
T(open, path, opn, INT, (B, O_RDONLY))
T(open64, path, opn, INT, (B, O_RDONLY))
T(openat, path, opnat, INT, (dir_fd, B, O_RDONLY))
T(openat64, path, opnat, INT, (dir_fd, B, O_RDONLY))
T(creat, path, pu_i, INT, (B, 0600))
T(creat64, path, pu_i, INT, (B, 0600))
T(__open_2, path, pi_i, INT, (B, O_RDONLY))
T(__open64_2, path, pi_i, INT, (B, O_RDONLY))
T(__openat_2, path, ipi_i, INT, (dir_fd, B, O_RDONLY))
T(__openat64_2, path, ipi_i, INT, (dir_fd, B, O_RDONLY))
T(fopen, path, fop, PTR, (B, "r"))
T(fopen64, path, fop, PTR, (B, "r"))
T(freopen, path, frop, PTR, (B, "r", stream))
T(freopen64, path, frop, PTR, (B, "r", stream))
T(mkstemp, template, tmpl, INT, ((char *)B))
T(mkstemp64, template, tmpl, INT, ((char *)B))
T(mkostemp, template, tmpl_i, INT, ((char *)B, 0))
T(mkostemp64, template, tmpl_i, INT, ((char *)B, 0))
T(mkstemps, template, tmpl_i, INT, ((char *)B, 0))
T(mkstemps64, template, tmpl_i, INT, ((char *)B, 0))
T(mkostemps, template, tmpl_ii, INT, ((char *)B, 0, 0))
T(mkostemps64, template, tmpl_ii, INT, ((char *)B, 0, 0))
T(opendir, path, opd, PTR, (B))
T(stat, path, pv_i, INT, (B, buf))
T(stat64, path, pv_i, INT, (B, buf))
T(lstat, path, pv_i, INT, (B, buf))
T(lstat64, path, pv_i, INT, (B, buf))
T(fstatat, path, ipvi_i, INT, (dir_fd, B, buf, 0))
T(fstatat64, path, ipvi_i, INT, (dir_fd, B, buf, 0))
T(statx, path, stx, INT, (dir_fd, B, 0, 0x7ff, buf))
T(__xstat, path, xst, INT, (1, B, buf))
T(__xstat64, path, xst, INT, (1, B, buf))
T(__lxstat, path, xst, INT, (1, B, buf))
T(__lxstat64, path, xst, INT, (1, B, buf))
T(__fxstatat, path, fxst, INT, (1, dir_fd, B, buf, 0))
T(__fxstatat64, path, fxst, INT, (1, dir_fd, B, buf, 0))
T(access, path, pi_i, INT, (B, F_OK))
T(faccessat, path, ipii_i, INT, (dir_fd, B, F_OK, 0))
T(euidaccess, path, pi_i, INT, (B, F_OK))
T(eaccess, path, pi_i, INT, (B, F_OK))
T(chmod, path, pu_i, INT, (B, 0644))
T(fchmodat, path, ipui_i, INT, (dir_fd, B, 0644, 0))
T(chown, path, puu_i, INT, (B, -1, -1))
T(lchown, path, puu_i, INT, (B, -1, -1))
T(fchownat, path, ipuui_i, INT, (dir_fd, B, -1, -1, 0))
T(utime, path, pv_i, INT, (B, NULL))
T(utimes, path, pv_i, INT, (B, NULL))
T(lutimes, path, pv_i, INT, (B, NULL))
T(futimesat, path, ipv_i, INT, (dir_fd, B, NULL))
T(utimensat, path, ipvi_i, INT, (dir_fd, B, NULL, 0))
T(truncate, path, pl_i, INT, (B, 0))
T(truncate64, path, pl_i, INT, (B, 0))
T(rename, old, pp_i, INT, (B, missing))
T(rename, new, pp_i, INT, (missing, B))
T(renameat, old, ipip_i, INT, (dir_fd, B, dir_fd, missing))
T(renameat, new, ipip_i, INT, (dir_fd, missing, dir_fd, B))
T(renameat2, old, ipipu_i, INT, (dir_fd, B, dir_fd, missing, 0))
T(renameat2, new, ipipu_i, INT, (dir_fd, missing, dir_fd, B, 0))
T(link, old, pp_i, INT, (B, missing))
T(link, new, pp_i, INT, (file, B))
T(linkat, old, ipipi_i, INT, (dir_fd, B, dir_fd, missing, 0))
T(linkat, new, ipipi_i, INT, (dir_fd, file, dir_fd, B, 0))
T(symlink, target, pp_i, INT, (B, missing))
T(symlink, linkpath, pp_i, INT, (missing, B))
T(symlinkat, target, pip_i, INT, (B, dir_fd, missing))
T(symlinkat, linkpath, pip_i, INT, (missing, dir_fd, B))
T(readlink, path, rl, INT, (B, buf, 100))
T(readlinkat, path, rlat, INT, (dir_fd, B, buf, 100))
T(__readlink_chk, path, rlchk, INT, (B, buf, 100, sizeof buf))
T(__readlinkat_chk, path, rlatchk, INT, (dir_fd, B, buf, 100, sizeof buf))
T(unlink, path, p_i, INT, (B))
T(unlinkat, path, ipi_i, INT, (dir_fd, B, 0))
T(mkdir, path, pu_i, INT, (B, 0700))
T(mkdirat, path, ipu_i, INT, (dir_fd, B, 0700))
T(rmdir, path, p_i, INT, (B))
T(mknod, path, mkn, INT, (B, S_IFIFO | 0600, 0))
T(mknodat, path, mknat, INT, (dir_fd, B, S_IFIFO | 0600, 0))
T(__xmknod, path, xmkn, INT, (0, B, S_IFIFO | 0600, &dev))
T(__xmknodat, path, xmknat, INT, (0, dir_fd, B, S_IFIFO | 0600, &dev))
T(mkfifo, path, pu_i, INT, (B, 0600))
T(mkfifoat, path, ipu_i, INT, (dir_fd, B, 0600))
T(statfs, path, pv_i, INT, (B, buf))
T(statfs64, path, pv_i, INT, (B, buf))
T(statvfs, path, pv_i, INT, (B, buf))
T(statvfs64, path, pv_i, INT, (B, buf))
T(getxattr, path, gx, INT, (B, "user.x", buf, 100))
T(getxattr, name, gx, INT, (file, B, buf, 100))
T(lgetxattr, path, gx, INT, (B, "user.x", buf, 100))
T(lgetxattr, name, gx, INT, (file, B, buf, 100))
T(setxattr, path, sx, INT, (B, "user.x", "v", 1, 0))
T(setxattr, name, sx, INT, (file, B, "v", 1, 0))
T(lsetxattr, path, sx, INT, (B, "user.x", "v", 1, 0))
T(lsetxattr, name, sx, INT, (file, B, "v", 1, 0))
T(listxattr, path, lx, INT, (B, buf, 100))
T(llistxattr, path, lx, INT, (B, buf, 100))
T(removexattr, path, pp_i, INT, (B, "user.x"))
T(removexattr, name, pp_i, INT, (file, B))
T(lremovexattr, path, pp_i, INT, (B, "user.x"))
T(lremovexattr, name, pp_i, INT, (file, B))
T(chdir, path, p_i, INT, (B))
/* The string fputs and puts write: measured by the stage when their stream is managed. */
T(fputs, string, fps, INT, (B, stream))
T(fputs_unlocked, string, fps, INT, (B, stream))
T(puts, string, ps, INT, (B))

/* ---- iovec arrays, on a managed descriptor -------------------------------------------- */
T(readv, iov, rdv, INT, (file_fd, B, 1))
T(preadv, iov, rdv_o, INT, (file_fd, B, 1, 0))
T(preadv64, iov, rdv_o, INT, (file_fd, B, 1, 0))
T(preadv2, iov, rdv_oi, INT, (file_fd, B, 1, 0, 0))
T(preadv64v2, iov, rdv_oi, INT, (file_fd, B, 1, 0, 0))
T(writev, iov, rdv, INT, (file_fd, B, 1))
T(pwritev, iov, rdv_o, INT, (file_fd, B, 1, 0))
T(pwritev64, iov, rdv_o, INT, (file_fd, B, 1, 0))
T(pwritev2, iov, rdv_oi, INT, (file_fd, B, 1, 0, 0))
T(pwritev64v2, iov, rdv_oi, INT, (file_fd, B, 1, 0, 0))

/* ---- streams: some calls return before glibc touches the stream ------------------------ */
T(freopen, stream, frop, PTR, (file, "r", (FILE *)B))
T(freopen64, stream, frop, PTR, (file, "r", (FILE *)B))
T(fclose, stream, s_i, INT, ((FILE *)B))
T(fread, stream, frd, INT, (buf, 1, 1, (FILE *)B))
T(fread, nothing, frd, INT, (buf, 0, 1, (FILE *)B))
T(fread_unlocked, stream, frd, INT, (buf, 1, 1, (FILE *)B))
T(fread_unlocked, nothing, frd, INT, (buf, 0, 1, (FILE *)B))
T(__fread_chk, stream, frdchk, INT, (buf, sizeof buf, 1, 1, (FILE *)B))
T(__fread_chk, nothing, frdchk, INT, (buf, sizeof buf, 0, 1, (FILE *)B))
T(__fread_unlocked_chk, stream, frdchk, INT, (buf, sizeof buf, 1, 1, (FILE *)B))
T(__fread_unlocked_chk, nothing, frdchk, INT, (buf, sizeof buf, 0, 1, (FILE *)B))
T(fgets, stream, fgt, PTR, (buf, 10, (FILE *)B))
T(fgets, one, fgt, PTR, (buf, 1, (FILE *)B))
T(fgets_unlocked, stream, fgt, PTR, (buf, 10, (FILE *)B))
T(fgets_unlocked, one, fgt, PTR, (buf, 1, (FILE *)B))
T(__fgets_chk, stream, fgtchk, PTR, (buf, sizeof buf, 10, (FILE *)B))
T(__fgets_chk, one, fgtchk, PTR, (buf, sizeof buf, 1, (FILE *)B))
T(__fgets_unlocked_chk, stream, fgtchk, PTR, (buf, sizeof buf, 10, (FILE *)B))
T(__fgets_unlocked_chk, one, fgtchk, PTR, (buf, sizeof buf, 1, (FILE *)B))
T(fgetc, stream, s_i, INT, ((FILE *)B))
T(fgetc_unlocked, stream, s_i, INT, ((FILE *)B))
T(getc, stream, s_i, INT, ((FILE *)B))
T(getc_unlocked, stream, s_i, INT, ((FILE *)B))
T(_IO_getc, stream, s_i, INT, ((FILE *)B))
T(__uflow, stream, s_i, INT, ((FILE *)B))
T(getline, stream, gln, INT, (&line, &line_len, (FILE *)B))
T(getline, nothing, gln, INT, (NULL, NULL, (FILE *)B))
T(getdelim, stream, gdl, INT, (&line, &line_len, '\n', (FILE *)B))
T(getdelim, nothing, gdl, INT, (NULL, NULL, '\n', (FILE *)B))
T(__getdelim, stream, gdl, INT, (&line, &line_len, '\n', (FILE *)B))
T(__getdelim, nothing, gdl, INT, (NULL, NULL, '\n', (FILE *)B))
T(fwrite, stream, fwr, INT, ("x", 1, 1, (FILE *)B))
T(fwrite, nothing, fwr, INT, ("x", 0, 1, (FILE *)B))
T(fwrite_unlocked, stream, fwr, INT, ("x", 1, 1, (FILE *)B))
T(fwrite_unlocked, nothing, fwr, INT, ("x", 0, 1, (FILE *)B))
T(fputs, stream, fps, INT, ("x", (FILE *)B))
T(fputs_unlocked, stream, fps, INT, ("x", (FILE *)B))
T(fputc, stream, fpc, INT, ('x', (FILE *)B))
T(fputc_unlocked, stream, fpc, INT, ('x', (FILE *)B))
T(putc, stream, fpc, INT, ('x', (FILE *)B))
T(putc_unlocked, stream, fpc, INT, ('x', (FILE *)B))
T(_IO_putc, stream, fpc, INT, ('x', (FILE *)B))
T(__overflow, stream, ovf, INT, ((FILE *)B, 'x'))
static long t_vfprintf_stream(const void *B) { return vcall("vfprintf", (FILE *)B, "%d", 1); }
static long t___vfprintf_chk_stream(const void *B) {
    return vcall_chk("__vfprintf_chk", (FILE *)B, "%d", 1);
}
static long t_vfscanf_stream(const void *B) {
    int i;
    return vcall("vfscanf", (FILE *)B, "%d", &i);
}
static long t___isoc99_vfscanf_stream(const void *B) {
    int i;
    return vcall("__isoc99_vfscanf", (FILE *)B, "%d", &i);
}
static long t_fprintf_stream(const void *B) {
    int (*f)(FILE *, const char *, ...) = (int (*)(FILE *, const char *, ...))sym("fprintf");
    return f((FILE *)B, "%d", 1);
}
static long t_fscanf_stream(const void *B) {
    int i;
    int (*f)(FILE *, const char *, ...) = (int (*)(FILE *, const char *, ...))sym("fscanf");
    return f((FILE *)B, "%d", &i);
}

/* ---- directory streams ------------------------------------------------------------------ */
T(readdir, dir, rdd, PTR, ((DIR *)B))
T(readdir64, dir, rdd, PTR, ((DIR *)B))
T(closedir, dir, cld, INT, ((DIR *)B))

#define PATH(SYMBOL, ARG) {#SYMBOL "." #ARG, t_##SYMBOL##_##ARG, 0}
#define OTHER(SYMBOL, ARG) {#SYMBOL "." #ARG, t_##SYMBOL##_##ARG, 1}

static const struct test tests[] = {
    PATH(open, path), PATH(open64, path), PATH(openat, path), PATH(openat64, path),
    PATH(creat, path), PATH(creat64, path), PATH(__open_2, path), PATH(__open64_2, path),
    PATH(__openat_2, path), PATH(__openat64_2, path), PATH(fopen, path), PATH(fopen64, path),
    PATH(freopen, path), PATH(freopen64, path), PATH(mkstemp, template),
    PATH(mkstemp64, template), PATH(mkostemp, template), PATH(mkostemp64, template),
    PATH(mkstemps, template), PATH(mkstemps64, template), PATH(mkostemps, template),
    PATH(mkostemps64, template), PATH(opendir, path), PATH(stat, path), PATH(stat64, path),
    PATH(lstat, path), PATH(lstat64, path), PATH(fstatat, path), PATH(fstatat64, path),
    PATH(statx, path), PATH(__xstat, path), PATH(__xstat64, path), PATH(__lxstat, path),
    PATH(__lxstat64, path), PATH(__fxstatat, path), PATH(__fxstatat64, path),
    PATH(access, path), PATH(faccessat, path), PATH(euidaccess, path), PATH(eaccess, path),
    PATH(chmod, path), PATH(fchmodat, path), PATH(chown, path), PATH(lchown, path),
    PATH(fchownat, path), PATH(utime, path), PATH(utimes, path), PATH(lutimes, path),
    PATH(futimesat, path), PATH(utimensat, path), PATH(truncate, path),
    PATH(truncate64, path), PATH(rename, old), PATH(rename, new), PATH(renameat, old),
    PATH(renameat, new), PATH(renameat2, old), PATH(renameat2, new), PATH(link, old),
    PATH(link, new), PATH(linkat, old), PATH(linkat, new), PATH(symlink, target),
    PATH(symlink, linkpath), PATH(symlinkat, target), PATH(symlinkat, linkpath),
    PATH(readlink, path), PATH(readlinkat, path), PATH(__readlink_chk, path),
    PATH(__readlinkat_chk, path), PATH(unlink, path), PATH(unlinkat, path),
    PATH(mkdir, path), PATH(mkdirat, path), PATH(rmdir, path), PATH(mknod, path),
    PATH(mknodat, path), PATH(__xmknod, path), PATH(__xmknodat, path), PATH(mkfifo, path),
    PATH(mkfifoat, path), PATH(statfs, path), PATH(statfs64, path), PATH(statvfs, path),
    PATH(statvfs64, path), PATH(getxattr, path), PATH(getxattr, name),
    PATH(lgetxattr, path), PATH(lgetxattr, name), PATH(setxattr, path),
    PATH(setxattr, name), PATH(lsetxattr, path), PATH(lsetxattr, name),
    PATH(listxattr, path), PATH(llistxattr, path), PATH(removexattr, path),
    PATH(removexattr, name), PATH(lremovexattr, path), PATH(lremovexattr, name),
    PATH(chdir, path), PATH(fputs, string), PATH(fputs_unlocked, string), PATH(puts, string),
    OTHER(readv, iov), OTHER(preadv, iov), OTHER(preadv64, iov), OTHER(preadv2, iov),
    OTHER(preadv64v2, iov), OTHER(writev, iov), OTHER(pwritev, iov), OTHER(pwritev64, iov),
    OTHER(pwritev2, iov), OTHER(pwritev64v2, iov), OTHER(freopen, stream),
    OTHER(freopen64, stream), OTHER(fclose, stream), OTHER(fread, stream),
    OTHER(fread, nothing), OTHER(fread_unlocked, stream), OTHER(fread_unlocked, nothing),
    OTHER(__fread_chk, stream), OTHER(__fread_chk, nothing),
    OTHER(__fread_unlocked_chk, stream), OTHER(__fread_unlocked_chk, nothing),
    OTHER(fgets, stream), OTHER(fgets, one), OTHER(fgets_unlocked, stream),
    OTHER(fgets_unlocked, one), OTHER(__fgets_chk, stream), OTHER(__fgets_chk, one),
    OTHER(__fgets_unlocked_chk, stream), OTHER(__fgets_unlocked_chk, one),
    OTHER(fgetc, stream), OTHER(fgetc_unlocked, stream), OTHER(getc, stream),
    OTHER(getc_unlocked, stream), OTHER(_IO_getc, stream), OTHER(__uflow, stream),
    OTHER(getline, stream), OTHER(getline, nothing), OTHER(getdelim, stream),
    OTHER(getdelim, nothing), OTHER(__getdelim, stream), OTHER(__getdelim, nothing),
    OTHER(fwrite, stream), OTHER(fwrite, nothing), OTHER(fwrite_unlocked, stream),
    OTHER(fwrite_unlocked, nothing), OTHER(fputs, stream), OTHER(fputs_unlocked, stream),
    OTHER(fputc, stream), OTHER(fputc_unlocked, stream), OTHER(putc, stream),
    OTHER(putc_unlocked, stream), OTHER(_IO_putc, stream), OTHER(__overflow, stream),
    OTHER(vfprintf, stream), OTHER(__vfprintf_chk, stream), OTHER(vfscanf, stream),
    OTHER(__isoc99_vfscanf, stream), OTHER(fprintf, stream), OTHER(fscanf, stream),
    OTHER(readdir, dir), OTHER(readdir64, dir), OTHER(closedir, dir),
};

/* A page of non-NUL bytes whose next page is unmapped; a string that ends `tail` bytes
 * before that page, running off into it, with `head` copied at its start. */
static const char *runoff(const char *head) {
    char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED || munmap(two + 4096, 4096) != 0) {
        perror("efault: mmap");
        exit(2);
    }
    memset(two, 'a', 4096);
    size_t tail = strlen(head) + 64;
    memcpy(two + 4096 - tail, head, strlen(head));
    return two + 4096 - tail;
}

static void run(const struct test *t, const char *what, const void *bad) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("efault: fork");
        exit(2);
    }
    if (pid == 0) {
        errno = 0;
        long r = t->run(bad);
        int e = errno;
        const char *name = strerrorname_np(e);
        printf("%s %s ret=%ld errno=%s\n", t->name, what, r, name ? name : "0");
        fflush(stdout);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) {
        perror("efault: waitpid");
        exit(2);
    }
    if (WIFSIGNALED(status))
        printf("%s %s signal=%d\n", t->name, what, WTERMSIG(status));
    else if (WEXITSTATUS(status) != 0)
        printf("%s %s exit=%d\n", t->name, what, WEXITSTATUS(status));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: efault DIR\n");
        return 2;
    }
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    snprintf(missing, sizeof missing, "%s/efault-missing", argv[1]);
    snprintf(file, sizeof file, "%s/efault-file", argv[1]);
    dir_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
    file_fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
    stream = fopen(file, "r+");
    if (dir_fd < 0 || file_fd < 0 || !stream) {
        perror("efault: setup");
        return 2;
    }

    char *unmapped = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (unmapped == MAP_FAILED || none == MAP_FAILED || munmap(unmapped, 4096) != 0) {
        perror("efault: mmap");
        return 2;
    }
    char in_dir[4200];
    snprintf(in_dir, sizeof in_dir, "%s/", argv[1]);
    const struct {
        const char *name;
        const void *p;
        int paths_only;
    } cases[] = {
        {"null", NULL, 0},
        {"unmapped", unmapped, 0},
        {"prot_none", none, 0},
        {"runoff", runoff(""), 1},
        {"runoff_abs", runoff("/"), 1},
        {"runoff_in", runoff(in_dir), 1},
        {"wild", (const void *)0xdeadc0dedeadc0deUL, 0},
    };
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            if (!(tests[i].stream && cases[c].paths_only)) run(&tests[i], cases[c].name, cases[c].p);
    printf("done\n");
    return 0;
}
