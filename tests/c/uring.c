/* Sets up an io_uring, as liburing's io_uring_queue_init does first; prints "ring" when
 * the kernel gave one, else the error (ENOSYS under `--io-uring deny`).
 * Usage: uring */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(SYS_io_uring_setup, 4, &p);
    if (fd < 0) {
        printf("%s\n", strerror(errno));
        return 0;
    }
    printf("ring\n");
    close((int)fd);
    return 0;
}
