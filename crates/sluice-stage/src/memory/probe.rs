//! Reads of the application's memory that the kernel may refuse, made without faulting.
//!
//! A hook must look at what a call names (a path, a stream, an iovec array) before the
//! real call, and the application may pass a pointer the kernel would answer with EFAULT:
//! null, unmapped, inaccessible (PROT_NONE), non-canonical, or a string that runs off the
//! end of its mapping. Natively the call fails; a plain read would kill the process. So
//! every such read is made by a few small hand-written leaf sequences here, and a fault
//! inside them ends at an exit that answers "fault" instead (see [`super::signals`],
//! whose handler moves a faulting thread there): they return an impossible value, the
//! hook passes the call to the real function unjudged, and the kernel answers it.
//!
//! - [`glance`]: all a hook's fast path needs of a path: its letter after the slash, how
//!   it stands to the first managed place (compared sixteen bytes at a time, up to the
//!   first byte that differs; the place and the letters lie in one cache line), and
//!   whether a component starts with a dot (aligned sixteen-byte loads, which never touch
//!   a page past the one holding the NUL, the way `strlen` is written). The comparison
//!   and the search for dots do not wait for each other: the system call after the glance
//!   waits for every instruction before it, so what a call pays is the longest chain of
//!   dependent loads, not the sum of the two. Not a routine but a sequence inlined
//!   into each hook, each copy recording where its loads lie in the section
//!   `sluice_probe_sites`, where the handler looks a faulting instruction up: a routine
//!   lies on a code page of its own, and after a system call every page a call touches
//!   costs it a TLB miss (docs/performance.md).
//! - [`scan`]: the full lookup's pass over a path: its length and what keeps it from
//!   normal form.
//! - [`stream_fd`], [`readable`]: the descriptor under a `FILE*`; whether a `DIR*` can be
//!   read.
//! - [`iov_len`]: the sum of an iovec array's lengths.
//!
//! Why not ask the kernel first: a system call per call costs more than the whole stage,
//! and a cache of pages known to be readable is stale as soon as the program unmaps one.
//! Why fixed code and not a recovery point set around Rust code: the handler must know,
//! from the faulting instruction alone, that nothing was left half done; a leaf routine,
//! or an inline sequence that keeps nothing on the stack and writes only registers it
//! declares, can be left at any instruction. Why the glance
//! decides where a path stands in the routine itself: it is the one pass over the path on
//! the fast path, and a hook that called out to compare, then to scan, paid for each call
//! as much as the comparison (tests check it against the portable rules it stands for,
//! `sluice_core::path::Prefix::stand_of`).
//!
//! Elsewhere than x86_64 the same reads are plain Rust, and an invalid pointer still ends
//! the process (docs/limitations.md).

use std::ffi::{c_char, c_int, c_void};

#[cfg(target_arch = "x86_64")]
use sluice_core::path::prefix_layout;
use sluice_core::path::{Prefix, Scan, Stand};

/// What a routine returns when it faulted (the common exit's value).
const FAULT: u64 = u64::MAX;
/// What [`glance`]'s sequence answers: a component starts with a dot; or none does, and
/// the path is absolute with a letter after the slash that is none of those asked about
/// (0: the common case is one test), or relative, or it stands so to the place it was
/// compared with.
#[cfg(target_arch = "x86_64")]
const DOTTED: u64 = u64::MAX - 1;
#[cfg(target_arch = "x86_64")]
const ELSEWHERE: u64 = 0;
#[cfg(target_arch = "x86_64")]
const IN: u64 = 1;
#[cfg(target_arch = "x86_64")]
const APART: u64 = 2;
#[cfg(target_arch = "x86_64")]
const OTHER: u64 = 3;
#[cfg(target_arch = "x86_64")]
const RELATIVE: u64 = 4;

/// A C string, a stream or an array the kernel would refuse to read: the call is passed
/// through unjudged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreadable;

/// Two words, returned in two registers.
#[cfg(target_arch = "x86_64")]
#[repr(C)]
#[derive(Clone, Copy)]
struct Pair {
    a: u64,
    b: u64,
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    /// `a`: the string's length, or [`FAULT`]; `b`: bits 0–15, a dot after a slash;
    /// bits 16–31, a slash or the NUL after a slash.
    fn sluice_probe_scan(p: *const c_char) -> Pair;
    /// The descriptor under a stream (zero-extended), `u32::MAX` when it has none, or
    /// [`FAULT`].
    fn sluice_probe_stream_fd(f: *const c_void) -> u64;
    /// `a`: the sum of `n` (at least 1) lengths, saturated; `b`: 0, or [`FAULT`] in both.
    fn sluice_probe_iov_len(iov: *const libc::iovec, n: usize) -> Pair;
    /// The 32-bit word at `p` (zero-extended), or [`FAULT`].
    fn sluice_probe_word(p: *const c_void) -> u64;
    /// The first instruction of the routines.
    fn sluice_probe_begin();
    /// The instruction after the last one that may fault.
    fn sluice_probe_end();
    /// The common exit of a routine that faulted.
    fn sluice_probe_fault();
}

// The routines keep nothing on the stack and touch only caller-saved registers, so a
// thread stopped at any of their instructions can resume at `sluice_probe_fault`, which
// returns to their caller. Only the loads from the application's memory may fault.
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    // The bounds of the glance's sites stay inside the stage (the linker would export them).
    ".hidden __start_sluice_probe_sites",
    ".hidden __stop_sluice_probe_sites",
    ".pushsection .text.sluice_probe,\"ax\",@progbits",
    ".p2align 4",
    ".globl sluice_probe_begin",
    ".hidden sluice_probe_begin",
    "sluice_probe_begin:",
    // sluice_probe_scan(rdi = p): rsi walks aligned blocks; ecx keeps the string's bytes
    // of the block (those from p on, in the first); r9d is 1 when the block before ended
    // with a slash; r8d gathers the pairs.
    ".globl sluice_probe_scan",
    ".hidden sluice_probe_scan",
    ".type sluice_probe_scan, @function",
    "sluice_probe_scan:",
    ".cfi_startproc",
    "    mov ecx, edi",
    "    and ecx, 15",
    "    mov rsi, rdi",
    "    and rsi, -16",
    "    mov eax, 0xffff",
    "    shl eax, cl",
    "    mov ecx, eax",
    "    mov eax, 0x2f2f2f2f",
    "    movd xmm1, eax",
    "    pshufd xmm1, xmm1, 0",
    "    mov eax, 0x2e2e2e2e",
    "    movd xmm2, eax",
    "    pshufd xmm2, xmm2, 0",
    "    pxor xmm3, xmm3",
    "    xor r8d, r8d",
    "    xor r9d, r9d",
    "2:",
    "    movdqa xmm0, xmmword ptr [rsi]",
    "    movdqa xmm4, xmm0",
    "    pcmpeqb xmm4, xmm3",
    "    pmovmskb eax, xmm4",
    "    and eax, ecx",
    "    movdqa xmm4, xmm0",
    "    pcmpeqb xmm4, xmm1",
    "    pmovmskb edx, xmm4",
    "    and edx, ecx",
    "    pcmpeqb xmm0, xmm2",
    "    pmovmskb r10d, xmm0",
    // r11d: the bytes after a slash; r9d: whether the next block's first is one.
    "    lea r11d, [r9 + 2*rdx]",
    "    mov r9d, edx",
    "    shr r9d, 15",
    // ecx: the bytes up to the NUL (all, when the block holds none).
    "    lea ecx, [rax - 1]",
    "    xor ecx, eax",
    "    and r11d, ecx",
    "    and r10d, r11d",
    "    or edx, eax",
    "    and edx, r11d",
    "    shl edx, 16",
    "    or r8d, r10d",
    "    or r8d, edx",
    "    test eax, eax",
    "    jnz 3f",
    "    add rsi, 16",
    "    mov ecx, 0xffff",
    "    jmp 2b",
    "3:",
    "    bsf eax, eax",
    "    sub rsi, rdi",
    "    add rax, rsi",
    "    mov edx, r8d",
    "    ret",
    ".cfi_endproc",
    ".size sluice_probe_scan, . - sluice_probe_scan",
    // sluice_probe_stream_fd(rdi = FILE*): glibc's _flags, then _fileno when the stream
    // is over a descriptor (libio.h's _IO_IS_FILEBUF).
    ".globl sluice_probe_stream_fd",
    ".hidden sluice_probe_stream_fd",
    ".type sluice_probe_stream_fd, @function",
    "sluice_probe_stream_fd:",
    ".cfi_startproc",
    "    mov eax, dword ptr [rdi]",
    "    test eax, 0x2000",
    "    jz 4f",
    "    mov eax, dword ptr [rdi + {fileno}]",
    "    ret",
    "4:",
    "    mov eax, -1",
    "    ret",
    ".cfi_endproc",
    ".size sluice_probe_stream_fd, . - sluice_probe_stream_fd",
    // sluice_probe_iov_len(rdi = iov, rsi = n >= 1): the iov_len fields, summed; a
    // carry saturates the sum for good.
    ".globl sluice_probe_iov_len",
    ".hidden sluice_probe_iov_len",
    ".type sluice_probe_iov_len, @function",
    "sluice_probe_iov_len:",
    ".cfi_startproc",
    "    xor eax, eax",
    "5:",
    "    add rax, qword ptr [rdi + 8]",
    "    jnc 6f",
    "    mov rax, -1",
    "6:",
    "    add rdi, 16",
    "    dec rsi",
    "    jnz 5b",
    "    xor edx, edx",
    "    ret",
    ".cfi_endproc",
    ".size sluice_probe_iov_len, . - sluice_probe_iov_len",
    // sluice_probe_word(rdi = p)
    ".globl sluice_probe_word",
    ".hidden sluice_probe_word",
    ".type sluice_probe_word, @function",
    "sluice_probe_word:",
    ".cfi_startproc",
    "    mov eax, dword ptr [rdi]",
    "    ret",
    ".cfi_endproc",
    ".size sluice_probe_word, . - sluice_probe_word",
    ".globl sluice_probe_end",
    ".hidden sluice_probe_end",
    "sluice_probe_end:",
    // The common exit: FAULT in both return registers, back to the routine's caller.
    ".globl sluice_probe_fault",
    ".hidden sluice_probe_fault",
    ".type sluice_probe_fault, @function",
    "sluice_probe_fault:",
    ".cfi_startproc",
    "    mov rax, -1",
    "    mov rdx, -1",
    "    ret",
    ".cfi_endproc",
    ".size sluice_probe_fault, . - sluice_probe_fault",
    ".popsection",
    fileno = const crate::abi::FILE_FILENO_OFFSET,
);

/// Where a thread that faulted at `pc` resumes: the routines' common exit when `pc` is
/// one of their loads, the end of the glance's inline sequence when it is one of its
/// loads, `None` for any other instruction.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn resume_at(pc: usize) -> Option<usize> {
    let begin = sluice_probe_begin as *const () as usize;
    let end = sluice_probe_end as *const () as usize;
    if (begin..end).contains(&pc) {
        return Some(sluice_probe_fault as *const () as usize);
    }
    glance_sites().find_map(|(start, end)| (start..end).contains(&pc).then_some(end))
}

/// One copy of [`glance`]'s sequence: where its loads start and where they end, each as
/// a distance from the field itself (no relocation at load time), laid down by the
/// sequence in the section `sluice_probe_sites`.
#[cfg(target_arch = "x86_64")]
#[repr(C)]
struct Site {
    start: i32,
    end: i32,
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    // The bounds of `sluice_probe_sites`, set by the linker.
    static __start_sluice_probe_sites: Site;
    static __stop_sluice_probe_sites: Site;
}

/// The code ranges of every copy of [`glance`]'s sequence, as `(start, end)`: read in a
/// signal handler, so plain loads only.
#[cfg(target_arch = "x86_64")]
fn glance_sites() -> impl Iterator<Item = (usize, usize)> {
    let first = (&raw const __start_sluice_probe_sites).cast::<Site>();
    let stop = (&raw const __stop_sluice_probe_sites) as usize;
    let n = (stop - first as usize) / size_of::<Site>();
    (0..n).map(move |i| {
        // SAFETY: `i` indexes the section's sites, laid down by the sequences.
        let site = unsafe { &*first.add(i) };
        let at =
            |field: &i32| (std::ptr::from_ref(field) as usize).wrapping_add_signed(*field as isize);
        (at(&site.start), at(&site.end))
    })
}

/// `x`, which the compiler can no longer relate to the tests made before.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn opaque(mut x: u64) -> u64 {
    // SAFETY: an empty instruction sequence.
    unsafe { std::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack)) };
    x
}

/// What a glance at a path found ([`glance`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glanced {
    /// The path is absolute, its letter after the slash is none of those asked about (so
    /// it lies in no managed place), and no component starts with a dot.
    Elsewhere,
    /// The path is relative, and no component starts with a dot.
    Relative,
    /// Some component starts with a dot (`.`, `..`, a hidden name): a glance cannot tell
    /// where the path leads.
    Dotted,
    /// The path is absolute, its letter after the slash is one of those asked about, no
    /// component starts with a dot, and it stands so to the place it was compared with
    /// ([`Stand::Unknown`] for a place that compares no byte).
    Compared(Stand),
}

/// The cheapest pass over the C string at `p` that tells a glance what it needs, in one
/// routine: whether it is absolute with a letter after its slash among those `place` says
/// may lead into a managed place ([`Prefix::letters`]), and if so how it stands to
/// `place` ([`Prefix::stand_of`]); whether a component starts with a
/// dot; [`Unreadable`] for null, or when a byte up to its NUL cannot be read. The dots
/// are looked for sixteen bytes at a time (with the NUL; the byte before each dot is
/// looked at) over the whole path.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // read through a sequence that cannot fault
#[inline(always)]
pub fn glance(p: *const c_char, place: &Prefix) -> Result<Glanced, Unreadable> {
    if p.is_null() {
        return Err(Unreadable);
    }
    #[cfg(target_arch = "x86_64")]
    {
        let r: u64;
        // SAFETY: the sequence reads the string at `p` up to its NUL (and, when it compares
        // with the place, whole blocks from `p` inside `p`'s page), and `place` (laid out as `prefix_layout` says), keeps nothing on the stack and
        // leaves by label 98 with its answer in rax. A load from the string that the
        // kernel refuses moves the thread to label 91 ([`resume_at`], through the site
        // recorded in `sluice_probe_sites`), which answers FAULT. Inline rather than a
        // routine: a routine lies on a page of its own, which every call touched beside
        // the hook's (see the module).
        unsafe {
            std::arch::asm!(
                "90:",
                // rdi = p, rdx = place. r11 holds what to return when no component starts with a
                // dot. The place's letters are a word, bit letter % 64 (`bt` takes the bit index
                // modulo 64 from a register).
                "    mov r11d, 4",
                "    movzx eax, byte ptr [rdi]",
                "    cmp eax, 0x2f",
                "    jne 16f",
                "    xor r11d, r11d",
                "    movzx eax, byte ptr [rdi + 1]",
                "    mov r10, qword ptr [rdx + {letters}]",
                "    bt r10, rax",
                "    jnc 16f",
                // Compared with the place: rsi its bytes, r8 the mask of its compared bytes, rcx
                // the mask from the current block on, rdx the block's offset.
                "    mov r11d, 3",
                "    mov r8, qword ptr [rdx + {mask}]",
                "    mov rcx, r8",
                "    test rcx, rcx",
                "    jz 16f",
                "    lea rsi, [rdx + {bytes}]",
                "    xor edx, edx",
                // Sixteen bytes at a time while the block lies in p's page (r9: the last offset
                // where one does; reading past the string's NUL within a readable page is
                // harmless), then a byte at a time: the string may end before the page does, and
                // the next page may not be readable.
                "    mov eax, edi",
                "    and eax, 4095",
                "    mov r9d, 4080",
                "    sub r9, rax",
                "31:",
                "    cmp rdx, r9",
                "    jg 35f",
                "    movdqu xmm0, xmmword ptr [rdi + rdx]",
                "    pcmpeqb xmm0, xmmword ptr [rsi + rdx]",
                "    pmovmskb eax, xmm0",
                "    xor eax, 0xffff",
                "    and eax, ecx",
                "    jnz 33f",
                "    add rdx, 16",
                "    shr rcx, 16",
                "    jnz 31b",
                "    jmp 37f",
                "33:",
                "    bsf eax, eax",
                "    add rdx, rax",
                "    jmp 38f",
                "35:",
                "    test cl, 1",
                "    jz 37f",
                "    movzx eax, byte ptr [rdi + rdx]",
                "    cmp al, byte ptr [rsi + rdx]",
                "    jne 38f",
                "    inc rdx",
                "    shr rcx, 1",
                "    jmp 35b",
                // No compared byte differs: in the place when they hold its whole path (the last
                // is its end), else unknown.
                "37:",
                "    bsr r8, r8",
                "    mov eax, 1",
                "    cmp byte ptr [rsi + r8], 0",
                "    cmove r11d, eax",
                "    jmp 40f",
                // rdx: the first byte that differs. Apart when the path's component goes on there;
                // in when the place ends there; unknown when the path ends where the place goes on
                // or has an empty component there; else apart.
                "38:",
                "    movzx eax, byte ptr [rdi + rdx]",
                "    movzx ecx, byte ptr [rsi + rdx]",
                "    mov r11d, 2",
                "    test al, al",
                "    jz 39f",
                "    cmp al, 0x2f",
                "    jne 40f",
                "39:",
                "    mov r11d, 1",
                "    test cl, cl",
                "    jz 40f",
                "    mov r11d, 3",
                "    cmp cl, 0x2f",
                "    je 40f",
                "    cmp byte ptr [rdi + rdx - 1], 0x2f",
                "    je 40f",
                "    mov r11d, 2",
                // The dots of the whole string, from rdi = p again: the scan does not wait for the
                // comparison, and the two run side by side (the system call that follows waits
                // for both, so the longer chain is what a call pays). rsi walks aligned blocks;
                // eax holds the bytes of the block that are a dot or the NUL, r10d the string's
                // bytes of the block (from rdi on, in the first); each is looked at in turn: the NUL
                // ends the string, a dot at rdi or after a slash starts a component.
                "40:",
                "16:",
                "    mov ecx, edi",
                "    and ecx, 15",
                "    mov rsi, rdi",
                "    and rsi, -16",
                "    mov r10d, -1",
                "    shl r10d, cl",
                "    mov eax, 0x2e2e2e2e",
                "    movd xmm1, eax",
                "    pshufd xmm1, xmm1, 0",
                "    pxor xmm2, xmm2",
                "    jmp 15f",
                "17:",
                "    add rsi, 16",
                "    mov r10d, -1",
                "15:",
                "    movdqa xmm0, xmmword ptr [rsi]",
                "    movdqa xmm3, xmm0",
                "    pcmpeqb xmm0, xmm2",
                "    pcmpeqb xmm3, xmm1",
                "    por xmm0, xmm3",
                "    pmovmskb eax, xmm0",
                "    and eax, r10d",
                "    jz 17b",
                "12:",
                "    bsf edx, eax",
                "    lea r8, [rsi + rdx]",
                "    cmp byte ptr [r8], 0",
                "    je 14f",
                "    cmp r8, rdi",
                "    je 13f",
                "    cmp byte ptr [r8 - 1], 0x2f",
                "    je 13f",
                "    lea edx, [rax - 1]",
                "    and eax, edx",
                "    jnz 12b",
                "    jmp 17b",
                "13:",
                "    mov rax, -2",
                "    jmp 98f",
                "14:",
                "    mov rax, r11",
                "    jmp 98f",
                "91:",
                "    mov rax, -1",
                "98:",
                ".pushsection sluice_probe_sites,\"aR\",@progbits",
                ".balign 4",
                ".long 90b - .",
                ".long 91b - .",
                ".popsection",
                letters = const prefix_layout::LETTERS,
                mask = const prefix_layout::MASK,
                bytes = const prefix_layout::BYTES,
                inout("rdi") p => _,
                inout("rdx") place => _,
                out("rsi") _,
                out("rax") r,
                out("rcx") _,
                out("r8") _,
                out("r9") _,
                out("r10") _,
                out("r11") _,
                out("xmm0") _,
                out("xmm1") _,
                out("xmm2") _,
                out("xmm3") _,
                options(nostack, readonly),
            );
        }
        if r == ELSEWHERE {
            return Ok(Glanced::Elsewhere);
        }
        // Tested apart, behind a barrier the compiler cannot see through: it merges tests
        // of one value into a switch and lowers that to a jump table in .rodata, a page
        // nothing else on the fast path touches, and after a system call each such page
        // costs a call a TLB miss (docs/performance.md).
        let r = opaque(r);
        if r == APART {
            return Ok(Glanced::Compared(Stand::Apart));
        }
        match opaque(r) {
            IN => Ok(Glanced::Compared(Stand::In)),
            APART => Ok(Glanced::Compared(Stand::Apart)),
            OTHER => Ok(Glanced::Compared(Stand::Unknown)),
            RELATIVE => Ok(Glanced::Relative),
            DOTTED => Ok(Glanced::Dotted),
            _ => Err(Unreadable),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: a plain read: an invalid pointer faults, as documented.
        let path = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
        Ok(glance_of(path, place))
    }
}

/// What [`glance`] finds in `path` (its bytes; its NUL after them), by the portable
/// rules its sequence stands for: where there is none, and to check it.
#[cfg(any(test, not(target_arch = "x86_64")))]
pub(super) fn glance_of(path: &[u8], place: &Prefix) -> Glanced {
    let first = path.first().copied().unwrap_or(0);
    let dotted = Scan::of(path).slash_dot || first == b'.';
    match first {
        b'/' if place.letters().contains(path.get(1).copied().unwrap_or(0)) => place
            .stand_of(path)
            .map_or(Glanced::Dotted, Glanced::Compared),
        _ if dotted => Glanced::Dotted,
        b'/' => Glanced::Elsewhere,
        _ => Glanced::Relative,
    }
}

/// One pass over the C string at `p`: its length and the pairs that keep it from normal
/// form; [`Unreadable`] for null, or when any byte up to its NUL cannot be read.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // read through a routine that cannot fault
#[inline(always)]
pub fn scan(p: *const c_char) -> Result<Scan, Unreadable> {
    if p.is_null() {
        return Err(Unreadable);
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the routine faults only on its loads, which the signal handler turns
        // into FAULT.
        let r = unsafe { sluice_probe_scan(p) };
        if r.a == FAULT {
            return Err(Unreadable);
        }
        Ok(Scan {
            len: r.a as usize,
            slash_dot: r.b & 0xffff != 0,
            slash_slash: r.b >> 16 != 0,
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: a plain read: an invalid pointer faults, as documented.
        let path = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
        Ok(Scan::of(path))
    }
}

/// The descriptor under the stream `f`: `None` for a stream over none (`fmemopen`,
/// `open_memstream`, `fopencookie`); [`Unreadable`] for null or a pointer to memory that
/// cannot be read. What glibc does with such a stream is its own: most calls fault, some
/// (`fread` of nothing, `fgets` of one byte) return first.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // read through a routine that cannot fault
#[inline(always)]
pub fn stream_fd(f: *mut c_void) -> Result<Option<c_int>, Unreadable> {
    if f.is_null() {
        return Err(Unreadable);
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `scan`.
    let r = unsafe { sluice_probe_stream_fd(f) };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: a plain read: an invalid pointer faults, as documented.
    let r = unsafe { plain_fd(f) } as u32 as u64;
    match r {
        FAULT => Err(Unreadable),
        fd => Ok(c_int::try_from(fd).ok().filter(|&fd| fd >= 0)),
    }
}

/// The descriptor under a non-null stream, or -1, read as it stands: the plain read
/// [`probe::stream_fd`] makes where it has no routine of its own.
///
/// # Safety
/// `f` points to a readable FILE.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn plain_fd(f: *mut c_void) -> c_int {
    #[cfg(target_pointer_width = "64")]
    // SAFETY: the caller's promise: a FILE, whose `_flags` (an int) come first and whose
    // `_fileno` (an int) lies at the offset the shim checks against glibc's header at
    // build time.
    return unsafe {
        let flags = f.cast::<c_int>().read();
        let fileno = f
            .byte_add(crate::abi::FILE_FILENO_OFFSET)
            .cast::<c_int>()
            .read();
        if flags & IO_IS_FILEBUF != 0 {
            fileno
        } else {
            -1
        }
    };
    #[cfg(not(target_pointer_width = "64"))]
    // SAFETY: the caller's promise.
    unsafe {
        sluice_file_fd(f)
    }
}

/// glibc's flag of a stream over a descriptor (libio.h).
#[cfg(all(target_pointer_width = "64", not(target_arch = "x86_64")))]
const IO_IS_FILEBUF: c_int = 0x2000;

#[cfg(all(not(target_arch = "x86_64"), not(target_pointer_width = "64")))]
unsafe extern "C" {
    /// The descriptor under a stream, through glibc's own layout (shim.c).
    fn sluice_file_fd(f: *const c_void) -> c_int;
}

/// Whether the first word at `p`, the start of a structure libc reads first (a `DIR`,
/// whose descriptor `dirfd` reads there), can be read; [`Unreadable`] for null too.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // read through a routine that cannot fault
#[inline]
pub fn readable(p: *const c_void) -> Result<(), Unreadable> {
    if p.is_null() {
        return Err(Unreadable);
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as in `scan`.
    let r = unsafe { sluice_probe_word(p) };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: a plain read: an invalid pointer faults, as documented.
    let r = unsafe { p.cast::<u32>().read_volatile() } as u64;
    if r == FAULT { Err(Unreadable) } else { Ok(()) }
}

/// The sum of the lengths of the `n` iovecs at `iov`, saturated; 0 for an array the
/// kernel would refuse (null, empty, longer than `IOV_MAX`, unreadable): such a call
/// moves nothing.
#[allow(clippy::not_unsafe_ptr_arg_deref)] // read through a routine that cannot fault
#[inline]
pub fn iov_len(iov: *const libc::iovec, n: c_int) -> u64 {
    const IOV_MAX: c_int = 1024;
    if iov.is_null() || n <= 0 || n > IOV_MAX {
        return 0;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: as in `scan`.
        let r = unsafe { sluice_probe_iov_len(iov, n as usize) };
        if r.b == FAULT { 0 } else { r.a }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: a plain read: an invalid pointer faults, as documented.
    unsafe { std::slice::from_raw_parts(iov, n as usize) }
        .iter()
        .fold(0u64, |sum, v| sum.saturating_add(v.iov_len as u64))
}
