/* The stage's C shim: what stable Rust cannot write.
 *
 * - The C-variadic entry points (printf, fprintf, scanf, ...). Each takes its va_list and
 *   calls the stage's hook of the matching v-variant (vprintf, vfprintf, vscanf, ...),
 *   which classifies, admits, calls the real v-variant and counts. The hooks live in
 *   Rust (symbols.rs); the pairs below are checked against its `variadic` list by a
 *   unit test, and build.rs exports every name a VARIADIC line defines. A call on a
 *   stream the descriptor table already knows to be unmanaged (a terminal, a pipe,
 *   /dev/null) skips the hook: counted, guarded and passed to the real v-variant here.
 * - The C-variadic exec functions (execl, execlp, execle), each calling the stage's hook
 *   of its array form (exec.rs); build.rs exports every name an ARGLIST line defines.
 * - The descriptor table's bytes (tables/fdtable.rs gives them their meaning), so that this
 *   fast path reads them without a call.
 * - The stage's thread-local block, in the initial-exec model: a preloaded library may
 *   use it, and it costs a load from the thread pointer where Rust's general-dynamic
 *   thread-locals cost a call of __tls_get_addr.
 * - Reads of glibc's FILE, whose layout is part of its ABI (bits/types/struct_FILE.h).
 *
 * stdio.h is not included: it would declare printf and scanf under other assembler
 * names (__isoc99_fscanf, fortified variants) than the ones defined here. */
#include <stdarg.h>
#include <stddef.h>
#include <bits/types/struct_FILE.h>

typedef struct _IO_FILE FILE;

#define EXPORT __attribute__((visibility("default")))

/* The stage's hooks of the v-variants (Rust, exported by the same library). */
int vprintf(const char *, va_list);
int vfprintf(FILE *, const char *, va_list);
int vdprintf(int, const char *, va_list);
int __vprintf_chk(int, const char *, va_list);
int __vfprintf_chk(FILE *, int, const char *, va_list);
int __vdprintf_chk(int, int, const char *, va_list);
int vscanf(const char *, va_list);
int vfscanf(FILE *, const char *, va_list);
int __isoc99_vscanf(const char *, va_list);
int __isoc99_vfscanf(FILE *, const char *, va_list);

/* ---- the thread-local block ------------------------------------------------------------ */

/* Zero at thread start; guard.rs lays its state out in it, starting with `struct head`
 * (guard::Local is #[repr(C)] and checks these offsets at compile time). */
static __thread _Alignas(64) unsigned char tls_block[SLUICE_TLS_BYTES]
    __attribute__((tls_model("initial-exec")));

struct head {
    unsigned char busy;      /* the re-entrancy guard: this thread is inside the stage */
    unsigned char ready;     /* the Rust state behind the head is laid in */
    unsigned char owned;     /* this thread is the only writer of *unmanaged */
    unsigned long long *unmanaged; /* this thread's counter of unmanaged calls in the
                                      segment, once it has counted one; NULL before */
};

_Static_assert(sizeof(struct head) <= SLUICE_TLS_BYTES, "the head fits the block");

/* This thread's block. */
void *sluice_tls_block(void) { return tls_block; }

/* The block's distance from the thread pointer: the same in every thread under the
 * initial-exec model, so the stage reaches the block without a call once it knows it. */
ptrdiff_t sluice_tls_offset(void) {
    return (char *)tls_block - (char *)__builtin_thread_pointer();
}

/* ---- the descriptor table ------------------------------------------------------------ */

/* One byte per descriptor (tables/fdtable.rs owns its meaning); here so that the variadic entry
 * points below read it without a call. In .bss: its pages cost memory only once touched. */
unsigned char sluice_fd_table[SLUICE_FD_TABLE_LEN];

/* Nonzero for each byte of the table that stands for a target the stage does not manage
 * (no file, or a file in an unmanaged place). All zero until the stage is ready, so that
 * until then every call takes the hooks' full path. */
unsigned char sluice_unmanaged_byte[256];

/* ---- the C-variadic entry points ------------------------------------------------------ */

/* The real v-variants, set once by the stage when it is ready. */
#define REALS(X)                                                                          \
    X(vprintf) X(vfprintf) X(vdprintf) X(__vprintf_chk) X(__vfprintf_chk) X(__vdprintf_chk) \
    X(vscanf) X(vfscanf) X(__isoc99_vscanf) X(__isoc99_vfscanf)
#define REAL_INDEX(n) REAL_##n,
enum { REALS(REAL_INDEX) REALS_LEN };
#define REAL_NAME(n) #n,
static const char *const real_names[REALS_LEN + 1] = {REALS(REAL_NAME) NULL};
static void *real_v[REALS_LEN];

/* The name of the I-th real v-variant the shim calls, NULL past the last. */
const char *sluice_shim_real_name(size_t i) { return i < REALS_LEN ? real_names[i] : NULL; }

/* Sets the address of the I-th real v-variant. */
void sluice_shim_set_real(size_t i, void *p) {
    if (i < REALS_LEN) __atomic_store_n(&real_v[i], p, __ATOMIC_RELAXED);
}

/* Whether every real v-variant is set. */
int sluice_shim_reals_set(void) {
    for (size_t i = 0; i < REALS_LEN; i++)
        if (!__atomic_load_n(&real_v[i], __ATOMIC_RELAXED)) return 0;
    return 1;
}

extern FILE *stdin, *stdout;

/* The descriptor under a stream, or -1 for a null one or one with none. */
static inline int stream_fd(const FILE *f) {
    return f && (f->_flags & 0x2000 /* IO_IS_FILEBUF */) ? f->_fileno : -1;
}

/* Whether a call on descriptor FD can go straight to the real function: the stage is
 * ready, the descriptor table says FD is no managed target, and this thread is not inside
 * the stage and knows its counter of unmanaged calls. If so, counts the call as unmanaged
 * and enters the guard, as the hook would; the caller leaves it after the real call.
 * Anything else (a descriptor never seen, a managed one, a thread's first call) takes the
 * hook. The table of unmanaged bytes is published only once every real v-variant is. */
static inline __attribute__((always_inline)) struct head *enter_unmanaged(int fd) {
    if ((unsigned)fd >= SLUICE_FD_TABLE_LEN ||
        !sluice_unmanaged_byte[__atomic_load_n(&sluice_fd_table[fd], __ATOMIC_RELAXED)])
        return NULL;
    struct head *h = (struct head *)tls_block;
    unsigned long long *n = h->unmanaged;
    if (h->busy || !n) return NULL;
    h->busy = 1;
    if (h->owned)
        __atomic_store_n(n, __atomic_load_n(n, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    else
        __atomic_fetch_add(n, 1, __ATOMIC_RELAXED);
    return h;
}

/* NAME(PARAMS, ...) calls VIA(ARGS, its va_list); LAST is the last named parameter and FD
 * the descriptor the call lands on. On an unmanaged target it calls the real VIA itself,
 * counted and guarded as the hook would; otherwise the stage's hook of VIA. */
#define VARIADIC(name, via, last, fd, params, args)                                        \
    EXPORT int name params {                                                               \
        va_list ap;                                                                        \
        va_start(ap, last);                                                                \
        int r;                                                                             \
        struct head *h = enter_unmanaged(fd);                                              \
        if (h) {                                                                           \
            __typeof__(via) *real = __atomic_load_n(&real_v[REAL_##via], __ATOMIC_RELAXED); \
            r = real args;                                                                 \
            __atomic_signal_fence(__ATOMIC_SEQ_CST);                                       \
            h->busy = 0;                                                                   \
        } else {                                                                           \
            r = via args;                                                                  \
        }                                                                                  \
        va_end(ap);                                                                        \
        return r;                                                                          \
    }

VARIADIC(printf, vprintf, fmt, stream_fd(stdout), (const char *fmt, ...), (fmt, ap))
VARIADIC(fprintf, vfprintf, fmt, stream_fd(stream), (FILE *stream, const char *fmt, ...), (stream, fmt, ap))
VARIADIC(dprintf, vdprintf, fmt, fd, (int fd, const char *fmt, ...), (fd, fmt, ap))
VARIADIC(__printf_chk, __vprintf_chk, fmt, stream_fd(stdout), (int flag, const char *fmt, ...), (flag, fmt, ap))
VARIADIC(__fprintf_chk, __vfprintf_chk, fmt, stream_fd(stream), (FILE *stream, int flag, const char *fmt, ...), (stream, flag, fmt, ap))
VARIADIC(__dprintf_chk, __vdprintf_chk, fmt, fd, (int fd, int flag, const char *fmt, ...), (fd, flag, fmt, ap))
VARIADIC(scanf, vscanf, fmt, stream_fd(stdin), (const char *fmt, ...), (fmt, ap))
VARIADIC(fscanf, vfscanf, fmt, stream_fd(stream), (FILE *stream, const char *fmt, ...), (stream, fmt, ap))
VARIADIC(__isoc99_scanf, __isoc99_vscanf, fmt, stream_fd(stdin), (const char *fmt, ...), (fmt, ap))
VARIADIC(__isoc99_fscanf, __isoc99_vfscanf, fmt, stream_fd(stream), (FILE *stream, const char *fmt, ...), (stream, fmt, ap))

/* ---- the C-variadic exec functions ------------------------------------------------------- */

/* The stage's hooks of the array forms (Rust, exec.rs), which carry the stage into the
 * program started. */
int execv(const char *, char *const[]);
int execvp(const char *, char *const[]);
int execve(const char *, char *const[], char *const[]);

/* NAME(FIRST, ARG, ..., NULL[, envp]) collects its arguments into an array on the stack,
 * as glibc's own does (ARG first, then every argument up to and with the NULL; for
 * execle the environment after it), and calls the stage's hook of its array form. */
#define ARGLIST(name, first, call, with_envp)                                               \
    EXPORT int name(const char *first, const char *arg, ...) {                              \
        size_t argc = 1;                                                                    \
        va_list ap;                                                                         \
        va_start(ap, arg);                                                                  \
        while (va_arg(ap, const char *) != NULL)                                            \
            argc++;                                                                         \
        va_end(ap);                                                                         \
        char *argv[argc + 1];                                                               \
        argv[0] = (char *)arg;                                                              \
        va_start(ap, arg);                                                                  \
        for (size_t i = 1; i <= argc; i++)                                                  \
            argv[i] = va_arg(ap, char *);                                                   \
        char *const *envp = with_envp ? va_arg(ap, char *const *) : NULL;                   \
        va_end(ap);                                                                         \
        (void)envp;                                                                         \
        return call;                                                                        \
    }

ARGLIST(execl, path, execv(path, argv), 0)
ARGLIST(execlp, file, execvp(file, argv), 0)
ARGLIST(execle, path, execve(path, argv, envp), 1)

/* ---- glibc's FILE ------------------------------------------------------------------------ */

/* glibc's private flags (libio.h), fixed by its ABI. */
#define IO_IN_BACKUP 0x0100
#define IO_CURRENTLY_PUTTING 0x0800
#define IO_IS_APPENDING 0x1000
#define IO_IS_FILEBUF 0x2000

/* stream.rs reads a stream's descriptor itself, as stream_fd above does: _flags first,
 * _fileno at this offset (64-bit glibc). */
_Static_assert(offsetof(FILE, _flags) == 0, "FILE._flags");
_Static_assert(sizeof(void *) != 8 || offsetof(FILE, _fileno) == SLUICE_FILE_FILENO_OFFSET,
               "FILE._fileno: fix SLUICE_FILE_FILENO_OFFSET in build.rs");

/* The descriptor under a stream, or -1 for one with none (fmemopen, open_memstream,
 * fopencookie): what fileno() answers, without setting errno or taking a call. */
int sluice_file_fd(const FILE *f) {
    return (f->_flags & IO_IS_FILEBUF) && f->_fileno >= 0 ? f->_fileno : -1;
}

/* Bytes written into the stream's buffer and not yet passed to the kernel. */
size_t sluice_file_pending(const FILE *f) {
    if (!(f->_flags & IO_CURRENTLY_PUTTING) || f->_IO_write_ptr <= f->_IO_write_base) return 0;
    return (size_t)(f->_IO_write_ptr - f->_IO_write_base);
}

/* Bytes read from the kernel into the stream's buffer and not yet consumed. */
size_t sluice_file_unread(const FILE *f) {
    if (f->_flags & IO_CURRENTLY_PUTTING || f->_IO_read_end <= f->_IO_read_ptr) return 0;
    return (size_t)(f->_IO_read_end - f->_IO_read_ptr);
}

/* The position of a stream that is reading, computed as glibc's ftell does but without
 * its lock and without a system call: known only while glibc knows the stream's file
 * offset (_offset, the kernel's offset at _IO_read_end); -1 otherwise. */
long long sluice_file_position(const FILE *f) {
    if (f->_offset < 0 || f->_flags & (IO_CURRENTLY_PUTTING | IO_IN_BACKUP) || f->_mode > 0 ||
        f->_IO_read_end < f->_IO_read_ptr)
        return -1;
    return f->_offset - (f->_IO_read_end - f->_IO_read_ptr);
}

/* Whether fseek(f, 0, SEEK_CUR) would change nothing the program can see but glibc's
 * knowledge of the file offset: a byte stream with no offset known, nothing to write, no
 * end-of-file or error seen, no pushed-back characters, no markers, not appending. */
int sluice_file_seek_is_invisible(const FILE *f) {
    return f->_offset < 0 && f->_mode <= 0 && f->_markers == NULL &&
           !(f->_flags & (_IO_EOF_SEEN | _IO_ERR_SEEN | IO_IN_BACKUP | IO_CURRENTLY_PUTTING |
                          IO_IS_APPENDING));
}
