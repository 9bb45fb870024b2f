/* A program's own handling of SIGSEGV and SIGBUS, which a preloaded stage must leave as it
 * is: prints one line per check, the same natively and under the stage
 * (crates/sluice-tests/tests/efault.rs).
 *
 * Usage: faults DIR     every check; DIR/faults-empty is created (for SIGBUS)
 *        faults initial the dispositions the program started with
 *
 * Checks that expect the process to die run in a child and print how it ended. Exits 0
 * after the last check; core dumps are turned off. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The legacy ways to set a disposition are checked too: a program may still use them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
extern __sighandler_t bsd_signal(int, __sighandler_t); /* XSI, no longer declared */

static sigjmp_buf back;
static volatile sig_atomic_t calls, code, blocked_self, blocked_usr1, on_alt;
static char *alt_lo, *alt_hi;
static char *fixable;

static int blocked(int sig) {
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    return sigismember(&now, sig);
}

/* Records the delivery and jumps back to the check. */
static void jump_back(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    char here;
    calls++;
    code = info->si_code;
    blocked_self = blocked(sig);
    blocked_usr1 = blocked(SIGUSR1);
    on_alt = alt_lo && &here >= alt_lo && &here < alt_hi;
    siglongjmp(back, 1);
}

/* Records the delivery and returns. */
static void count(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)ctx;
    calls++;
    code = info->si_code;
}

/* Makes the faulting page writable and returns: the write is made again, and succeeds. */
static void fix(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)info, (void)ctx;
    calls++;
    mprotect(fixable, 4096, PROT_READ | PROT_WRITE);
}

static void plain(int sig) { (void)sig; calls++; }

/* Counts as `count` does: another handler, for a thread to switch between the two. */
static void count_too(int sig, siginfo_t *info, void *ctx) { count(sig, info, ctx); }

static void *switch_handlers(void *n) {
    for (long i = 0; i < (long)n; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = i % 2 ? count : count_too;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, NULL);
    }
    return NULL;
}

static const char *name(void (*h)(int)) {
    if (h == SIG_DFL) return "SIG_DFL";
    if (h == SIG_IGN) return "SIG_IGN";
    if (h == SIG_HOLD) return "SIG_HOLD";
    if (h == SIG_ERR) return "SIG_ERR";
    if (h == plain) return "plain";
    if (h == (void (*)(int))jump_back) return "jump_back";
    if (h == (void (*)(int))count) return "count";
    return "other";
}

/* What sigaction(sig, NULL, &old) answers, in full but for the mask's bytes past the
 * kernel's 64 signals (uninitialised in glibc's copy). */
static void show(const char *what, int sig) {
    struct sigaction old;
    memset(&old, 0, sizeof old);
    int r = sigaction(sig, NULL, &old);
    unsigned long long mask = 0;
    for (int s = 1; s <= 64; s++)
        if (sigismember(&old.sa_mask, s) == 1) mask |= 1ULL << (s - 1);
    printf("%s: ret=%d handler=%s flags=%#x mask=%#llx\n", what, r, name(old.sa_handler),
           (unsigned)old.sa_flags, mask);
}

static void set(int sig, void (*h)(int, siginfo_t *, void *), int flags, int also_block) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    if (also_block) sigaddset(&sa.sa_mask, also_block);
    if (sigaction(sig, &sa, NULL) != 0) {
        perror("faults: sigaction");
        exit(2);
    }
}

static void reset(int sig) { signal(sig, SIG_DFL); }

static int *volatile nowhere = (int *)(uintptr_t)8;
static void segv_now(void) { *nowhere = 1; }

static char *empty_map; /* a page of a file with no bytes: touching it raises SIGBUS */
static void bus_now(void) { (void)*(volatile char *)empty_map; }

/* Runs `body` in a child; prints how the child ended. */
static void in_child(const char *what, void (*body)(void)) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        body();
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        printf("%s: killed by signal %d\n", what, WTERMSIG(status));
    else
        printf("%s: exited %d\n", what, WEXITSTATUS(status));
}

static void kill_self(void) { kill(getpid(), SIGSEGV); }
static void ignore_then_fault(void) {
    signal(SIGSEGV, SIG_IGN);
    segv_now();
}
static void ignore_then_kill(void) {
    signal(SIGSEGV, SIG_IGN);
    kill(getpid(), SIGSEGV);
    printf("ignored: still running\n");
}
static void reset_hand_twice(void) {
    set(SIGSEGV, jump_back, SA_RESETHAND | SA_NODEFER, 0);
    if (sigsetjmp(back, 1) == 0) segv_now();
    printf("first fault: handled, calls=%d\n", (int)calls);
    segv_now();
}
static void inherited(void) { show("child after fork", SIGSEGV); }

static void initial(void) {
    show("initial SIGSEGV", SIGSEGV);
    show("initial SIGBUS", SIGBUS);
}

int main(int argc, char **argv) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    if (argc == 2 && !strcmp(argv[1], "initial")) {
        initial();
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: faults DIR | faults initial\n");
        return 2;
    }
    initial();

    /* What a handler set reads back, flags and mask as the kernel keeps them. */
    set(SIGSEGV, jump_back, 0, SIGUSR1);
    show("after sigaction", SIGSEGV);

    /* The program's own fault reaches its handler, with its mask, and it recovers. */
    calls = 0;
    if (sigsetjmp(back, 1) == 0) segv_now();
    printf("own fault: calls=%d code=%d self blocked=%d usr1 blocked=%d\n", (int)calls,
           (int)code, (int)blocked_self, (int)blocked_usr1);

    /* A bad address passed to a call is the kernel's to refuse, never the handler's. */
    struct stat st;
    errno = 0;
    int r = stat((const char *)nowhere, &st);
    printf("stat of a bad address: ret=%d errno=%s calls=%d\n", r, strerrorname_np(errno),
           (int)calls);

    /* A SIGSEGV sent by kill reaches the handler as sent. */
    set(SIGSEGV, count, 0, 0);
    calls = 0;
    kill(getpid(), SIGSEGV);
    printf("kill with a handler: calls=%d code=%d\n", (int)calls, (int)code);

    /* A handler that fixes the page and returns: the faulting write is made again. */
    fixable = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    set(SIGSEGV, fix, 0, 0);
    calls = 0;
    *(volatile char *)&fixable[5] = 42;
    printf("handler that returns: calls=%d value=%d\n", (int)calls, fixable[5]);

    /* On the alternate stack. */
    stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
    alt_lo = ss.ss_sp;
    alt_hi = alt_lo + ss.ss_size;
    sigaltstack(&ss, NULL);
    set(SIGSEGV, jump_back, SA_ONSTACK, 0);
    show("with SA_ONSTACK", SIGSEGV);
    if (sigsetjmp(back, 1) == 0) segv_now();
    printf("alternate stack: on it=%d\n", (int)on_alt);
    alt_lo = alt_hi = NULL;

    /* One-shot and unmasked: reset to the default at delivery; the next fault kills. */
    calls = 0;
    in_child("SA_RESETHAND, second fault", reset_hand_twice);
    set(SIGSEGV, jump_back, SA_RESETHAND | SA_NODEFER, 0);
    if (sigsetjmp(back, 1) == 0) segv_now();
    printf("SA_RESETHAND|SA_NODEFER: self blocked=%d\n", (int)blocked_self);
    show("after a one-shot delivery", SIGSEGV);

    /* The default: a fault kills, a kill kills, an ignored kill is dropped, an ignored
     * fault kills. */
    reset(SIGSEGV);
    in_child("default, fault", segv_now);
    in_child("default, kill", kill_self);
    in_child("ignored, kill", ignore_then_kill);
    in_child("ignored, fault", ignore_then_fault);

    /* The other ways to set a disposition, and what each reads back. */
    reset(SIGSEGV);
    void (*prev)(int) = signal(SIGSEGV, plain);
    printf("signal: previous=%s\n", name(prev));
    show("after signal", SIGSEGV);
    prev = sysv_signal(SIGSEGV, plain);
    printf("sysv_signal: previous=%s\n", name(prev));
    show("after sysv_signal", SIGSEGV);
    prev = bsd_signal(SIGSEGV, SIG_DFL);
    printf("bsd_signal: previous=%s\n", name(prev));
    prev = sigset(SIGSEGV, plain);
    printf("sigset: previous=%s\n", name(prev));
    prev = sigset(SIGSEGV, SIG_HOLD);
    printf("sigset hold: previous=%s blocked=%d\n", name(prev), blocked(SIGSEGV));
    prev = sigset(SIGSEGV, SIG_DFL);
    printf("sigset after hold: previous=%s blocked=%d\n", name(prev), blocked(SIGSEGV));
    printf("sigignore: ret=%d\n", sigignore(SIGSEGV));
    show("after sigignore", SIGSEGV);
    printf("siginterrupt: ret=%d\n", siginterrupt(SIGSEGV, 1));
    show("after siginterrupt", SIGSEGV);
    signal(SIGSEGV, plain);
    show("signal after siginterrupt", SIGSEGV);
    siginterrupt(SIGSEGV, 0);
    /* glibc reads act before it writes old: the same struct may be both. */
    int (*volatile act_old)(int, const struct sigaction *, struct sigaction *) = sigaction;
    struct sigaction same;
    sigaction(SIGSEGV, NULL, &same);
    r = act_old(SIGSEGV, &same, &same);
    printf("sigaction with act == old: ret=%d handler=%s\n", r, name(same.sa_handler));
    errno = 0;
    prev = signal(SIGSEGV, SIG_ERR);
    printf("signal SIG_ERR: %s errno=%s\n", name(prev), strerrorname_np(errno));

    /* Signals and bad addresses while another thread changes the handler: each signal
     * is handled once, by one handler or the other, and each call fails with EFAULT. */
    set(SIGSEGV, count, 0, 0);
    calls = 0;
    pthread_t switcher;
    pthread_create(&switcher, NULL, switch_handlers, (void *)20000L);
    int efaults = 0;
    for (int i = 0; i < 20000; i++) {
        pthread_kill(pthread_self(), SIGSEGV);
        if (stat((const char *)nowhere, &st) == -1 && errno == EFAULT) efaults++;
    }
    pthread_join(switcher, NULL);
    printf("handlers changed meanwhile: calls=%d efaults=%d\n", (int)calls, efaults);

    /* A child inherits the disposition. */
    set(SIGSEGV, count, SA_NODEFER, SIGUSR2);
    in_child("fork", inherited);

    /* SIGBUS: past the end of a mapped file. */
    char empty[4096];
    snprintf(empty, sizeof empty, "%s/faults-empty", argv[1]);
    int fd = open(empty, O_RDWR | O_CREAT | O_TRUNC, 0600);
    empty_map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (fd < 0 || empty_map == MAP_FAILED) {
        perror("faults: SIGBUS setup");
        return 2;
    }
    reset(SIGBUS);
    in_child("SIGBUS, default", bus_now);
    set(SIGBUS, jump_back, 0, 0);
    show("SIGBUS after sigaction", SIGBUS);
    calls = 0;
    if (sigsetjmp(back, 1) == 0) bus_now();
    printf("own SIGBUS: calls=%d code=%d\n", (int)calls, (int)code);
    printf("done\n");
    return 0;
}
