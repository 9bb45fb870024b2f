/* A tiny script interpreter over file-system calls, for the integration tests.
 *
 * Usage: fsdo CMD[@N] ARGS... [CMD[@N] ARGS...]...
 * Each command runs N times (default 1) and must succeed, or fsdo prints why on stderr
 * and exits 1. Commands:
 *   stat P          stat(P)
 *   enoent P        stat(P) must fail with errno == ENOENT exactly
 *   open P          open(P, O_RDONLY) then close
 *   rename A B      rename(A, B), then (next repetition) rename(B, A), and so on
 *   chdir P         chdir(P)
 *   fchdir P        open(P, O_DIRECTORY), fchdir, close
 *   statat D P      open(D, O_DIRECTORY), fstatat(dirfd, P), close
 *   fstat FD        fstat(FD)
 *   keep P FD       open(P) and move it to descriptor FD (no O_CLOEXEC)
 *   closeall        close descriptors 0..1023 (stdio too: later errors are silent)
 *   exec PROG ARGS  execv(PROG, ARGS...): takes the rest of the command line
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void fail(const char *what, const char *arg) {
    fprintf(stderr, "fsdo: %s %s: %s\n", what, arg, strerror(errno));
    exit(1);
}

static void need(int argc, int i, int n, const char *cmd) {
    if (i + n >= argc) {
        fprintf(stderr, "fsdo: %s needs %d argument(s)\n", cmd, n);
        exit(2);
    }
}

int main(int argc, char **argv) {
    struct stat st;
    int i = 1;
    while (i < argc) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "%s", argv[i]);
        long reps = 1;
        char *at = strchr(cmd, '@');
        if (at) {
            *at = 0;
            reps = atol(at + 1);
        }
        const char *a = i + 1 < argc ? argv[i + 1] : NULL;
        const char *b = i + 2 < argc ? argv[i + 2] : NULL;
        int nargs;
        if (!strcmp(cmd, "closeall")) {
            nargs = 0;
            for (int fd = 0; fd < 1024; fd++) close(fd);
        } else if (!strcmp(cmd, "exec")) {
            need(argc, i, 1, cmd);
            execv(a, argv + i + 1);
            fail("exec", a);
        } else if (!strcmp(cmd, "rename") || !strcmp(cmd, "statat") || !strcmp(cmd, "keep")) {
            nargs = 2;
            need(argc, i, 2, cmd);
        } else {
            nargs = 1;
            need(argc, i, 1, cmd);
        }
        for (long r = 0; r < reps; r++) {
            if (!strcmp(cmd, "closeall")) {
            } else if (!strcmp(cmd, "stat")) {
                if (stat(a, &st) != 0) fail("stat", a);
            } else if (!strcmp(cmd, "enoent")) {
                errno = 0;
                if (stat(a, &st) == 0 || errno != ENOENT) {
                    fprintf(stderr, "fsdo: enoent %s: errno %d (%s), expected ENOENT\n", a, errno,
                            strerror(errno));
                    exit(1);
                }
            } else if (!strcmp(cmd, "open")) {
                int fd = open(a, O_RDONLY);
                if (fd < 0) fail("open", a);
                if (close(fd) != 0) fail("close", a);
            } else if (!strcmp(cmd, "rename")) {
                const char *from = r % 2 ? b : a, *to = r % 2 ? a : b;
                if (rename(from, to) != 0) fail("rename", from);
            } else if (!strcmp(cmd, "chdir")) {
                if (chdir(a) != 0) fail("chdir", a);
            } else if (!strcmp(cmd, "fchdir")) {
                int fd = open(a, O_RDONLY | O_DIRECTORY);
                if (fd < 0 || fchdir(fd) != 0) fail("fchdir", a);
                close(fd);
            } else if (!strcmp(cmd, "statat")) {
                int fd = open(a, O_RDONLY | O_DIRECTORY);
                if (fd < 0 || fstatat(fd, b, &st, 0) != 0) fail("statat", b);
                close(fd);
            } else if (!strcmp(cmd, "fstat")) {
                if (fstat(atoi(a), &st) != 0) fail("fstat", a);
            } else if (!strcmp(cmd, "keep")) {
                int fd = open(a, O_RDONLY), to = atoi(b);
                if (fd < 0 || dup2(fd, to) != to) fail("keep", a);
                if (fd != to) close(fd);
            } else {
                fprintf(stderr, "fsdo: unknown command %s\n", cmd);
                exit(2);
            }
        }
        i += 1 + nargs;
    }
    return 0;
}
