/* Descriptor bookkeeping scenarios on a managed FILE. Each prints nothing on success and
 * exits 1 with a message if a call fails or a descriptor number is not the one expected.
 * The test knows how many open, close and getattr calls each scenario makes on FILE.
 *
 * Usage: fdtrack dups FILE       1 open; dup, dup2, dup3, F_DUPFD, F_DUPFD_CLOEXEC;
 *                                1 close of the original; fstat through each of the 5 copies
 *        fdtrack reuse FILE      1 open, 1 fstat, 1 close; a pipe then a socket take the
 *                                freed number and are fstat'ed; then 1 open, and dup2 of a
 *                                pipe over it, fstat'ed: the managed getattr count stays 1
 *        fdtrack range FILE      open; close_range over it; a pipe takes the number, fstat;
 *                                open; closefrom over it; a pipe takes the number, fstat:
 *                                2 open, 2 close, 0 getattr
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stat st;

static void check(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static int open_file(const char *file) {
    int fd = open(file, O_RDONLY);
    check(fd >= 0, "open");
    return fd;
}

/* A pipe whose read end takes the lowest free number, which must be `want`. */
static int pipe_at(int want) {
    int p[2];
    check(pipe(p) == 0, "pipe");
    if (p[0] != want) {
        fprintf(stderr, "fdtrack: pipe got %d, expected %d\n", p[0], want);
        exit(1);
    }
    check(fstat(p[0], &st) == 0 && fstat(p[1], &st) == 0, "fstat pipe");
    return p[1];
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fdtrack dups|reuse|range FILE\n");
        return 2;
    }
    const char *mode = argv[1], *file = argv[2];
    if (!strcmp(mode, "dups")) {
        int fd = open_file(file);
        int copies[5] = {dup(fd), dup2(fd, 50), dup3(fd, 51, O_CLOEXEC), fcntl(fd, F_DUPFD, 60),
                         fcntl(fd, F_DUPFD_CLOEXEC, 70)};
        check(close(fd) == 0, "close");
        for (int i = 0; i < 5; i++) check(copies[i] >= 0 && fstat(copies[i], &st) == 0, "fstat copy");
    } else if (!strcmp(mode, "reuse")) {
        int fd = open_file(file);
        check(fstat(fd, &st) == 0, "fstat");
        check(close(fd) == 0, "close");
        int w = pipe_at(fd);
        check(close(fd) == 0 && close(w) == 0, "close pipe");
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        check(s == fd && fstat(s, &st) == 0, "socket on the freed number");
        check(close(s) == 0, "close socket");
        fd = open_file(file);
        int p[2];
        check(pipe(p) == 0 && dup2(p[0], fd) == fd && fstat(fd, &st) == 0, "dup2 pipe over file");
    } else if (!strcmp(mode, "range")) {
        int fd = open_file(file);
        check(close_range(fd, fd, 0) == 0, "close_range");
        pipe_at(fd);
        int fd2 = open_file(file);
        closefrom(fd2);
        pipe_at(fd2);
    } else {
        fprintf(stderr, "fdtrack: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
