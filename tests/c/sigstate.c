/* Prints the lines of /proc/self/status that say what a program started with: its blocked
 * signals (SigBlk), its ignored ones (SigIgn), and whether it runs under a seccomp filter
 * (Seccomp). Built statically by the tests, so that the stage cannot enter it. */
#include <stdio.h>
#include <string.h>

int main(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 1;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "SigBlk:", 7) || !strncmp(line, "SigIgn:", 7) || !strncmp(line, "Seccomp:", 8))
            fputs(line, stdout);
    fclose(f);
    return 0;
}
