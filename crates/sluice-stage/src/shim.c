/* The stage's C shim: what stable Rust cannot write.
 *
 * - The C-variadic entry points (printf, fprintf, scanf, ...). Each takes its va_list and
 *   calls the stage's hook of the matching v-variant (vprintf, vfprintf, vscanf, ...),
 *   which classifies, admits, calls the real v-variant and counts. The hooks live in
 *   Rust (hooks/table.rs); the pairs below are checked against its `variadic` list by a
 *   unit test, and build.rs exports every name a VARIADIC line defines.
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

/* NAME(PARAMS, ...) calls VIA(ARGS, its va_list); LAST is the last named parameter. */
#define VARIADIC(name, via, last, params, args)                                            \
    EXPORT int name params {                                                               \
        va_list ap;                                                                        \
        va_start(ap, last);                                                                \
        int r = via args;                                                                  \
        va_end(ap);                                                                        \
        return r;                                                                          \
    }

VARIADIC(printf, vprintf, fmt, (const char *fmt, ...), (fmt, ap))
VARIADIC(fprintf, vfprintf, fmt, (FILE *stream, const char *fmt, ...), (stream, fmt, ap))
VARIADIC(dprintf, vdprintf, fmt, (int fd, const char *fmt, ...), (fd, fmt, ap))
VARIADIC(__printf_chk, __vprintf_chk, fmt, (int flag, const char *fmt, ...), (flag, fmt, ap))
VARIADIC(__fprintf_chk, __vfprintf_chk, fmt, (FILE *stream, int flag, const char *fmt, ...), (stream, flag, fmt, ap))
VARIADIC(__dprintf_chk, __vdprintf_chk, fmt, (int fd, int flag, const char *fmt, ...), (fd, flag, fmt, ap))
VARIADIC(scanf, vscanf, fmt, (const char *fmt, ...), (fmt, ap))
VARIADIC(fscanf, vfscanf, fmt, (FILE *stream, const char *fmt, ...), (stream, fmt, ap))
VARIADIC(__isoc99_scanf, __isoc99_vscanf, fmt, (const char *fmt, ...), (fmt, ap))
VARIADIC(__isoc99_fscanf, __isoc99_vfscanf, fmt, (FILE *stream, const char *fmt, ...), (stream, fmt, ap))

/* ---- the thread-local block ------------------------------------------------------------ */

/* Zero at thread start; guard.rs lays its state out in it. */
static __thread _Alignas(64) unsigned char tls_block[SLUICE_TLS_BYTES]
    __attribute__((tls_model("initial-exec")));

/* This thread's block. */
void *sluice_tls_block(void) { return tls_block; }

/* The block's distance from the thread pointer: the same in every thread under the
 * initial-exec model, so the stage reaches the block without a call once it knows it. */
ptrdiff_t sluice_tls_offset(void) {
    return (char *)tls_block - (char *)__builtin_thread_pointer();
}

/* ---- glibc's FILE ------------------------------------------------------------------------ */

/* glibc's private flags (libio.h), fixed by its ABI. */
#define IO_IN_BACKUP 0x0100
#define IO_CURRENTLY_PUTTING 0x0800
#define IO_IS_APPENDING 0x1000
#define IO_IS_FILEBUF 0x2000

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
