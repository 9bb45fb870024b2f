//! The stage's handler of SIGSEGV and SIGBUS, and the application's own dispositions of
//! the two, which it keeps exactly as without the stage.
//!
//! The reads in [`super::probe`] may fault on an address the application passed; the
//! handler installed here ([`on_fault`]) resumes a thread that faulted inside them at
//! their common exit. Every other SIGSEGV and SIGBUS is the application's, delivered
//! with the disposition the application set:
//!
//! - a handler of its own is called with the kernel's arguments, from the stage's
//!   handler, which the kernel ran with the application's own mask, `SA_NODEFER` and
//!   `SA_ONSTACK` (the stage registers its handler with them); `SA_RESETHAND` is done by
//!   the stage before the call. A handler that returns resumes the faulting instruction
//!   (or whatever it set in the context); one that `siglongjmp`s leaves the stage's frame
//!   behind, which holds nothing;
//! - the default action: the disposition is handed back to the kernel and the handler
//!   returns; the faulting instruction faults again and the kernel kills the process as
//!   it would have (core dump included). A SIGSEGV sent by `kill` is queued again to the
//!   thread, with its own `siginfo`, once the disposition is back;
//! - ignored: a sent signal is dropped, as the kernel would; a fault is handed back and
//!   faults again, and the kernel kills, as it does for an ignored fault.
//!
//! The application reads and sets its dispositions through the libc functions interposed
//! here (`sigaction`, `signal`, `sysv_signal`, `sigset`, `sigignore`, `siginterrupt` and
//! their aliases), which answer what it set as the kernel would have stored it (the
//! stage registers its handler with the application's flags and mask, reads back what
//! the kernel keeps and puts the application's handler and flags into it). The
//! disposition a program starts with (inherited across exec) is read when the stage
//! starts. Changes are made with every signal blocked on the changing thread, under a
//! lock, and published with a sequence number that a handler on another thread re-reads
//! around its copy, so a fault that arrives meanwhile sees one disposition or the other.
//!
//! Why the stage's handler calls the application's, rather than hand every fault back to
//! the kernel (restore the application's disposition, let the instruction fault again)
//! and install itself again afterwards: nothing tells the stage when the application's
//! handler has run (one that recovers with `siglongjmp` never returns), and another
//! thread that installs it again before the instruction faults again sends the fault
//! back to the stage. Registered with the application's mask and flags, the stage's
//! handler runs as the application's would have; only `SA_RESETHAND` is the stage's to
//! do. The default disposition is still handed back: the process ends there, and the
//! kernel's own fault is what ends it.
//!
//! What this cannot keep (docs/limitations.md): a program that changes the dispositions
//! with a raw `rt_sigaction` system call takes them from the stage; a thread that blocks
//! SIGSEGV and passes an invalid pointer is killed by the kernel where natively its call
//! fails; a program that ignores SIGSEGV or SIGBUS and then execs passes the default
//! disposition to the new program, not SIG_IGN (the stage's handler stands in the
//! kernel, and exec resets handlers).

use std::ffi::{c_int, c_void};
use std::mem::size_of;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering, fence};

use super::probe;
use crate::real::{Slot, missing};
use crate::sys;

/// The flags the stage sets or clears on its own registration, put back as the
/// application set them in what it reads.
const OURS: c_int = libc::SA_SIGINFO | libc::SA_RESETHAND | libc::SA_ONSTACK;
/// glibc's `SA_INTERRUPT`, which `sysv_signal` sets (a historical no-op).
const SA_INTERRUPT: c_int = 0x2000_0000;
/// glibc's `SIG_HOLD`, for `sigset`.
const SIG_HOLD: libc::sighandler_t = 2;

/// Words of a `struct sigaction`.
const WORDS: usize = size_of::<libc::sigaction>().div_ceil(8);

/// The application's disposition of one signal, as a `struct sigaction` read back from
/// glibc; a sequence lock (odd while written).
struct View {
    seq: AtomicU64,
    words: [AtomicU64; WORDS],
}

/// The application's dispositions of SIGSEGV and SIGBUS.
struct Views {
    /// Whether the stage's handler is installed: until then, and in a process where the
    /// stage did not set up, every function here passes straight to libc's.
    armed: AtomicBool,
    /// Held by the thread changing a disposition (with every signal blocked).
    lock: AtomicBool,
    /// Whether `siginterrupt` made the signal interrupt system calls (bit per view):
    /// `signal` then sets no `SA_RESTART`, as glibc's does.
    interrupting: AtomicU8,
    views: [View; 2],
}

static VIEWS: Views = Views {
    armed: AtomicBool::new(false),
    lock: AtomicBool::new(false),
    interrupting: AtomicU8::new(0),
    views: [const {
        View {
            seq: AtomicU64::new(0),
            words: [const { AtomicU64::new(0) }; WORDS],
        }
    }; 2],
};

/// The view of `sig`, once armed, for the two signals the stage handles.
#[inline]
fn ours(sig: c_int) -> Option<usize> {
    if !VIEWS.armed.load(Ordering::Acquire) {
        return None;
    }
    match sig {
        libc::SIGSEGV => Some(0),
        libc::SIGBUS => Some(1),
        _ => None,
    }
}

fn zeroed() -> libc::sigaction {
    // SAFETY: all-zero bytes are a valid `struct sigaction` (SIG_DFL, empty mask).
    unsafe { std::mem::zeroed() }
}

impl View {
    /// A consistent copy, waiting out a writer on another thread.
    fn read(&self) -> libc::sigaction {
        let mut words = [0u64; WORDS];
        loop {
            let seq = self.seq.load(Ordering::Acquire);
            if seq % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            for (w, a) in words.iter_mut().zip(&self.words) {
                *w = a.load(Ordering::Relaxed);
            }
            fence(Ordering::Acquire);
            if self.seq.load(Ordering::Relaxed) == seq {
                break;
            }
        }
        let mut v = zeroed();
        // SAFETY: the words were copied from a `struct sigaction` (`write`), and the
        // struct is at most WORDS words.
        unsafe {
            std::ptr::copy_nonoverlapping(
                words.as_ptr().cast::<u8>(),
                (&raw mut v).cast::<u8>(),
                size_of::<libc::sigaction>(),
            )
        };
        v
    }

    /// Publishes `v`. The caller holds the lock with every signal blocked.
    fn write(&self, v: &libc::sigaction) {
        let mut words = [0u64; WORDS];
        // SAFETY: as in `read`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                std::ptr::from_ref(v).cast::<u8>(),
                words.as_mut_ptr().cast::<u8>(),
                size_of::<libc::sigaction>(),
            )
        };
        self.seq.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::Release);
        for (a, w) in self.words.iter().zip(words) {
            a.store(w, Ordering::Relaxed);
        }
        self.seq.fetch_add(1, Ordering::Release);
    }
}

/// Runs `f` with every signal blocked on this thread and the lock held: no handler can
/// run on this thread meanwhile (one that read a view would wait for this thread
/// forever), and no other thread changes a view.
fn exclusively<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: sigset_t is plain data; the calls fill it.
    let (mut all, mut old) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: valid sets; pthread_sigmask sets no errno.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    while VIEWS
        .lock
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::hint::spin_loop();
    }
    let out = f();
    VIEWS.lock.store(false, Ordering::Release);
    // SAFETY: as above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    out
}

/// libc's `sigaction`, resolved when the stage arms.
static REAL_SIGACTION: Slot = Slot::new(c"sigaction");

/// libc's `sigaction(sig, act, old)`: 0, or -1 with errno set.
fn real_sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int {
    type F = unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;
    match REAL_SIGACTION.get() {
        // SAFETY: libc's sigaction, whose signature this is; the pointers are the
        // caller's, null or valid.
        Some(f) => unsafe { std::mem::transmute::<*mut c_void, F>(f)(sig, act, old) },
        None => missing(),
    }
}

/// The stage's registration for the application's disposition `app`: its handler with
/// the application's mask and flags, always with `SA_SIGINFO`, never `SA_RESETHAND`
/// (done by the handler), and on the alternate stack when the application's disposition
/// is a default one, whose faults may be a stack overflow.
fn registration(app: &libc::sigaction) -> libc::sigaction {
    let mut r = *app;
    r.sa_sigaction = on_fault as *const () as libc::sighandler_t;
    r.sa_flags = app.sa_flags & !libc::SA_RESETHAND | libc::SA_SIGINFO;
    if is_default(app.sa_sigaction) {
        r.sa_flags |= libc::SA_ONSTACK;
    }
    r
}

fn is_default(h: libc::sighandler_t) -> bool {
    h == libc::SIG_DFL || h == libc::SIG_IGN
}

/// Sets the application's disposition of `sig` (view `i`) to `act` when given, as glibc
/// would store it, and returns the one before.
fn set(i: usize, sig: c_int, act: Option<&libc::sigaction>) -> Result<libc::sigaction, ()> {
    exclusively(|| {
        let view = &VIEWS.views[i];
        let before = view.read();
        if let Some(act) = act {
            if real_sigaction(sig, &registration(act), std::ptr::null_mut()) != 0 {
                return Err(());
            }
            let mut kept = zeroed();
            real_sigaction(sig, std::ptr::null(), &mut kept);
            kept.sa_sigaction = act.sa_sigaction;
            kept.sa_flags = kept.sa_flags & !OURS | act.sa_flags & OURS;
            view.write(&kept);
        }
        Ok(before)
    })
}

/// Installs the stage's handler of SIGSEGV and SIGBUS over the dispositions the program
/// started with, which become the application's views. Called once, when the stage sets
/// up, before any hook reads the application's memory. Whether it could.
pub fn arm() -> bool {
    if REAL_SIGACTION.get().is_none() {
        return false;
    }
    let armed = exclusively(|| {
        for (i, sig) in [libc::SIGSEGV, libc::SIGBUS].into_iter().enumerate() {
            let mut start = zeroed();
            if real_sigaction(sig, std::ptr::null(), &mut start) != 0
                || real_sigaction(sig, &registration(&start), std::ptr::null_mut()) != 0
            {
                return false;
            }
            VIEWS.views[i].write(&start);
        }
        true
    });
    VIEWS.armed.store(armed, Ordering::Release);
    armed
}

/// In a forked child: another thread of the parent may have held the lock at the fork.
pub fn after_fork_in_child() {
    VIEWS.lock.store(false, Ordering::Release);
}

/// Arms the handler once, for unit tests of the probes.
#[cfg(test)]
pub fn arm_for_tests() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| assert!(arm(), "cannot install the stage's SIGSEGV handler"));
}

/// The stage's handler: a fault inside a probe resumes at the probes' exit; anything else
/// goes to the application's disposition.
extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, uctx: *mut c_void) {
    // SAFETY: the kernel's arguments to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    // A fault the instruction itself raised; machine-check errors reported "action
    // optional" are sent, not raised.
    let raised = code > 0 && !(sig == libc::SIGBUS && code == libc::BUS_MCEERR_AO);
    if raised {
        // SAFETY: the kernel's context of the interrupted thread.
        let pc = unsafe {
            &mut (*uctx.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RIP as usize]
        };
        if let Some(exit) = probe::resume_at(*pc as usize) {
            *pc = exit as i64;
            return;
        }
    }
    let i = if sig == libc::SIGSEGV { 0 } else { 1 };
    let app = claim(i);
    match app.sa_sigaction {
        libc::SIG_DFL => sys::keep_errno(|| {
            real_sigaction(sig, &app, std::ptr::null_mut());
            if !raised {
                requeue(sig, info);
            }
        }),
        libc::SIG_IGN if raised => sys::keep_errno(|| {
            real_sigaction(sig, &app, std::ptr::null_mut());
        }),
        libc::SIG_IGN => {}
        h => {
            type Handler = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);
            // SAFETY: the application's handler; the kernel passes every handler these
            // three arguments, whether it asked for SA_SIGINFO or not.
            let f = unsafe { std::mem::transmute::<libc::sighandler_t, Handler>(h) };
            f(sig, info, uctx)
        }
    }
}

/// The application's disposition of view `i` for one delivery: a handler registered
/// with `SA_RESETHAND` is taken once, the view reset to the default as the kernel would.
fn claim(i: usize) -> libc::sigaction {
    let view = &VIEWS.views[i];
    let app = view.read();
    if is_default(app.sa_sigaction) || app.sa_flags & libc::SA_RESETHAND == 0 {
        return app;
    }
    exclusively(|| {
        let mut now = view.read();
        let claimed = now;
        if !is_default(now.sa_sigaction) && now.sa_flags & libc::SA_RESETHAND != 0 {
            now.sa_sigaction = libc::SIG_DFL;
            view.write(&now);
        }
        claimed
    })
}

/// Queues `sig` with `info` again to this thread, once its default disposition is back:
/// a signal sent to the process is delivered as the kernel would have.
fn requeue(sig: c_int, info: *mut libc::siginfo_t) {
    // SAFETY: a signal to this very thread, with the siginfo the kernel gave; the
    // kernel allows any code when a thread signals its own process.
    unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            sys::getpid(),
            libc::syscall(libc::SYS_gettid),
            sig,
            info,
        )
    };
}

/// glibc's `sigaction(sig, act, old)` for a view: `act` is read before `old` is written
/// (they may be the same), as glibc does.
///
/// # Safety
/// The C function's contract.
unsafe fn sigaction_of(
    i: usize,
    sig: c_int,
    act: *const libc::sigaction,
    old: *mut libc::sigaction,
) -> c_int {
    // SAFETY: the caller's pointers; an invalid one faults here as it would in glibc.
    let act = (!act.is_null()).then(|| unsafe { *act });
    match set(i, sig, act.as_ref()) {
        Ok(before) => {
            if !old.is_null() {
                // SAFETY: as above.
                unsafe { *old = before };
            }
            0
        }
        Err(()) => -1,
    }
}

/// A disposition as glibc's `signal` & co build it: `handler`, with the signal itself
/// blocked while it runs or nothing, and `flags`.
fn legacy(
    sig: c_int,
    handler: libc::sighandler_t,
    mask_self: bool,
    flags: c_int,
) -> libc::sigaction {
    let mut act = zeroed();
    act.sa_sigaction = handler;
    act.sa_flags = flags;
    if mask_self {
        // SAFETY: a valid set and signal.
        unsafe { libc::sigaddset(&mut act.sa_mask, sig) };
    }
    act
}

/// Sets a view's disposition to `act`; the handler before, or SIG_ERR.
fn set_handler(i: usize, sig: c_int, act: &libc::sigaction) -> libc::sighandler_t {
    match set(i, sig, Some(act)) {
        Ok(before) => before.sa_sigaction,
        Err(()) => libc::SIG_ERR,
    }
}

/// `signal` & co: SIG_ERR is refused with EINVAL, as glibc's do.
fn signal_of(i: usize, sig: c_int, act: libc::sigaction) -> libc::sighandler_t {
    if act.sa_sigaction == libc::SIG_ERR {
        // SAFETY: errno is thread-local.
        unsafe { *libc::__errno_location() = libc::EINVAL };
        return libc::SIG_ERR;
    }
    set_handler(i, sig, &act)
}

/// Blocks or unblocks `sig` on this thread; whether it was blocked before.
fn mask(how: c_int, sig: c_int) -> Result<bool, ()> {
    // SAFETY: sigset_t is plain data; the calls fill it.
    let (mut set, mut old) = unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: valid sets and signal.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        if libc::sigprocmask(how, &set, &mut old) != 0 {
            return Err(());
        }
        Ok(libc::sigismember(&old, sig) == 1)
    }
}

/// Real-symbol slots and pass-through calls of the interposed functions.
macro_rules! interposed {
    ($( $name:ident ( $sig:ident : $sigty:ty $(, $arg:ident : $ty:ty)* ) -> $ret:ty => |$i:ident| $body:expr; )*) => {$(
        #[doc = concat!("Interposes `", stringify!($name), "`: the application's view of SIGSEGV and SIGBUS (see the module), libc's for every other signal.")]
        ///
        /// # Safety
        /// The C function's contract.
        #[cfg_attr(not(test), unsafe(no_mangle))]
        pub unsafe extern "C" fn $name($sig: $sigty $(, $arg: $ty)*) -> $ret {
            static REAL: Slot = Slot::new(
                // SAFETY: the literal ends with its only NUL.
                unsafe { ::std::ffi::CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
            );
            if let Some($i) = ours($sig) {
                return $body;
            }
            match REAL.get() {
                // SAFETY: libc's function of this name, whose signature this is.
                Some(f) => unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($sigty $(, $ty)*) -> $ret>(f)($sig $(, $arg)*) },
                None => missing(),
            }
        }
    )*};
}

interposed! {
    sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int
        => |i| unsafe { sigaction_of(i, sig, act, old) };
    __sigaction(sig: c_int, act: *const libc::sigaction, old: *mut libc::sigaction) -> c_int
        => |i| unsafe { sigaction_of(i, sig, act, old) };
    signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t
        => |i| signal_of(i, sig, legacy(sig, handler, true, restart_flag(i)));
    bsd_signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t
        => |i| signal_of(i, sig, legacy(sig, handler, true, restart_flag(i)));
    ssignal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t
        => |i| signal_of(i, sig, legacy(sig, handler, true, restart_flag(i)));
    sysv_signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t
        => |i| signal_of(i, sig, legacy(sig, handler, false, SYSV_FLAGS));
    __sysv_signal(sig: c_int, handler: libc::sighandler_t) -> libc::sighandler_t
        => |i| signal_of(i, sig, legacy(sig, handler, false, SYSV_FLAGS));
    sigset(sig: c_int, disp: libc::sighandler_t) -> libc::sighandler_t
        => |i| sigset_of(i, sig, disp);
    sigignore(sig: c_int) -> c_int
        => |i| match set_handler(i, sig, &legacy(sig, libc::SIG_IGN, false, 0)) {
            libc::SIG_ERR => -1,
            _ => 0,
        };
    siginterrupt(sig: c_int, interrupt: c_int) -> c_int
        => |i| siginterrupt_of(i, sig, interrupt != 0);
}

/// The flags glibc's `sysv_signal` sets: one-shot, unmasked, interrupting.
const SYSV_FLAGS: c_int = libc::SA_RESETHAND | libc::SA_NODEFER | SA_INTERRUPT;

/// `signal`'s flags: `SA_RESTART` unless `siginterrupt` asked otherwise.
fn restart_flag(i: usize) -> c_int {
    if VIEWS.interrupting.load(Ordering::Relaxed) >> i & 1 != 0 {
        0
    } else {
        libc::SA_RESTART
    }
}

/// glibc's `sigset` for a view.
fn sigset_of(i: usize, sig: c_int, disp: libc::sighandler_t) -> libc::sighandler_t {
    if disp == SIG_HOLD {
        return match mask(libc::SIG_BLOCK, sig) {
            Err(()) => libc::SIG_ERR,
            Ok(true) => SIG_HOLD,
            Ok(false) => VIEWS.views[i].read().sa_sigaction,
        };
    }
    let before = set_handler(i, sig, &legacy(sig, disp, false, 0));
    if before == libc::SIG_ERR {
        return libc::SIG_ERR;
    }
    match mask(libc::SIG_UNBLOCK, sig) {
        Err(()) => libc::SIG_ERR,
        Ok(true) => SIG_HOLD,
        Ok(false) => before,
    }
}

/// glibc's `siginterrupt` for a view.
fn siginterrupt_of(i: usize, sig: c_int, interrupt: bool) -> c_int {
    let bit = 1u8 << i;
    let mut act = VIEWS.views[i].read();
    if interrupt {
        VIEWS.interrupting.fetch_or(bit, Ordering::Relaxed);
        act.sa_flags &= !libc::SA_RESTART;
    } else {
        VIEWS.interrupting.fetch_and(!bit, Ordering::Relaxed);
        act.sa_flags |= libc::SA_RESTART;
    }
    match set(i, sig, Some(&act)) {
        Ok(_) => 0,
        Err(()) => -1,
    }
}
