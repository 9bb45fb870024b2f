/* Sets up an io_uring, as liburing's io_uring_queue_init does first; prints "ring" when
 * the kernel gave one, else the error (ENOSYS under `--io-uring deny`), and holds the ring
 * HOLD_MS milliseconds before it closes it (what the local controller's scan sees).
 * Usage: uring [HOLD_MS] */
#include <errno.h>
#include <stdlib.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(SYS_io_uring_setup, 4, &p);
    if (fd < 0) {
        printf("%s\n", strerror(errno));
        return 0;
    }
    printf("ring\n");
    fflush(stdout);
    if (argc > 1) usleep((useconds_t)atoi(argv[1]) * 1000);
    close((int)fd);
    return 0;
}
