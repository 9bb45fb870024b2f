//! A task whose program the stage cannot enter (statically linked, Go) is held all the
//! same: in `slurm_spank_task_init`, in the task's own process (as its user, just before
//! Slurm execs the program), the plugin starts a supervisor for it, `sluice supervise
//! --serve` (the `sluice` beside the stage), detached by a double fork so that the task
//! never sees it as a child, waits at most the site's deadline for it to say it is ready,
//! then installs the seccomp filter in the task and sends it the listener. The
//! supervisor admits the task's file calls through the job's segment and ends when the
//! last process under the filter has gone.
//!
//! The supervisor is the task's own, not the local controller's: a controller that stops
//! or restarts takes no listener with it (a listener nobody holds fails every call it
//! stops with ENOSYS), and the listener never crosses a socket to a root daemon. Until
//! the supervisor said it was ready no filter is installed: a supervisor that cannot
//! start leaves the task unheld, never failed.

use std::ffi::{CStr, CString, OsStr, c_char, c_int};
use std::os::fd::{AsRawFd as _, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_control::supervise::{Filter, IoUring, Why};

use crate::ffi::{self, Spank};

/// The task's program, found as execvp would find it: `argv[0]` when it names a path
/// (Slurm has made it absolute by now), else the first executable file of that name in
/// the job's `PATH`.
///
/// # Safety
/// `sp` is Slurm's handle, in a task.
pub(crate) unsafe fn program(sp: Spank) -> Option<PathBuf> {
    let mut argc: c_int = 0;
    let mut argv: *const *const c_char = std::ptr::null();
    // SAFETY: the caller's contract; S_JOB_ARGV takes an int * and a char ***.
    let rc = unsafe {
        ffi::spank_get_item(
            sp,
            ffi::JOB_ARGV,
            &mut argc as *mut c_int,
            &mut argv as *mut *const *const c_char,
        )
    };
    if rc != ffi::SUCCESS || argc < 1 || argv.is_null() {
        return None;
    }
    // SAFETY: Slurm's argv holds argc C strings.
    let first = unsafe { *argv };
    if first.is_null() {
        return None;
    }
    // SAFETY: as above.
    let arg0 = Path::new(OsStr::from_bytes(
        unsafe { CStr::from_ptr(first) }.to_bytes(),
    ));
    if arg0.as_os_str().as_bytes().contains(&b'/') {
        return Some(arg0.to_owned());
    }
    // SAFETY: the caller's contract.
    let path = unsafe { crate::getenv(sp, c"PATH") }?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(arg0))
        .find(|p| executable(p))
}

/// Why the stage cannot enter the program `path` (`None`: it can, or it is no ELF
/// executable). Every task pays this, so its headers are read through two cached pages:
/// the section headers and their names each lie in a page or two, where a read per field
/// would make a hundred system calls of a dynamic program's forty sections.
pub(crate) fn inspect(path: &Path) -> Option<Why> {
    let file = std::fs::File::open(path).ok()?;
    let mut pages = Pages::default();
    sluice_core::elf::inspect(|at, buf| pages.read(&file, at, buf))
}

/// Two pages of a file, the older replaced on a miss.
#[derive(Default)]
struct Pages {
    slot: [Option<Page>; 2],
    older: usize,
}

/// One page of a file: its number, the bytes read of it (fewer at the end), the bytes.
struct Page(u64, usize, Box<[u8; PAGE]>);

const PAGE: usize = 4096;

impl Pages {
    /// Fills `buf` from `file` at `at`; false past its end.
    fn read(&mut self, file: &std::fs::File, at: u64, buf: &mut [u8]) -> bool {
        use std::os::unix::fs::FileExt as _;
        let (page, off) = (at / PAGE as u64, (at % PAGE as u64) as usize);
        if off + buf.len() > PAGE {
            return file.read_exact_at(buf, at).is_ok();
        }
        let hit = self
            .slot
            .iter()
            .position(|s| s.as_ref().is_some_and(|p| p.0 == page));
        let i = match hit {
            Some(i) => i,
            None => {
                let i = self.older;
                let mut data = Box::new([0u8; PAGE]);
                let mut len = 0;
                while len < PAGE {
                    match file.read_at(&mut data[len..], page * PAGE as u64 + len as u64) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => len += n,
                    }
                }
                self.slot[i] = Some(Page(page, len, data));
                i
            }
        };
        self.older = 1 - i;
        match &self.slot[i] {
            Some(Page(_, len, data)) if off + buf.len() <= *len => {
                buf.copy_from_slice(&data[off..off + buf.len()]);
                true
            }
            _ => false,
        }
    }
}

/// Whether `path` is a file this process may execute.
fn executable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a C string.
    path.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
}

/// Starts the task's supervisor (`sluice`, serving the job's segment `segment`, which
/// must say it is ready within `deadline`) and puts this process under the filter;
/// returns the supervisor's pid, or why the task runs unheld.
///
/// # Safety
/// Called in the task's process, single-threaded, before Slurm execs the program.
pub(crate) unsafe fn supervise(
    sluice: &Path,
    segment: &Path,
    io_uring: IoUring,
    log: Option<String>,
    deadline: Duration,
) -> Result<u32, String> {
    if !executable(sluice) {
        return Err(format!("{} is missing", sluice.display()));
    }
    let (filter, port) = match Filter::new(true, io_uring) {
        Ok(Some((filter, Some(port)))) => (filter, port),
        Ok(_) => return Err("no filter".into()),
        Err(e) => return Err(format!("cannot prepare the seccomp filter: {e}")),
    };
    // slurmstepd, until the program's exec: its calls in between are not the job's.
    let me = std::env::current_exe().unwrap_or_default();
    let c = |b: &[u8]| CString::new(b).map_err(|_| "a path holds a NUL".to_owned());
    let argv = [
        c(sluice.as_os_str().as_bytes())?,
        c(b"supervise")?,
        c(b"--serve")?,
        c(PORT_FD.to_string().as_bytes())?,
        c(b"--exempt")?,
        c(me.as_os_str().as_bytes())?,
    ];
    let mut env = vec![
        c(&[b"SLUICE_SEGMENT=", segment.as_os_str().as_bytes()].concat())?,
        c(b"PATH=/usr/bin:/bin")?,
    ];
    if let Some(log) = log {
        env.push(c(format!("SLUICE_LOG={log}").as_bytes())?);
    }
    let argv_p: Vec<*const c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let env_p: Vec<*const c_char> = env
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let port = port.into_fd();
    // SAFETY: fork in a single-threaded process; the children make only
    // async-signal-safe calls on what was prepared above.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: as above.
        let grandchild = unsafe { libc::fork() };
        if grandchild == 0 {
            // SAFETY: as above; never returns.
            unsafe { detached(port.as_raw_fd(), &argv_p, &env_p) };
        }
        // SAFETY: _exit ends the intermediate child at once, without running anything
        // of slurmstepd's (atexit handlers, buffered output).
        unsafe { libc::_exit(if grandchild < 0 { 1 } else { 0 }) };
    }
    drop(port);
    if child < 0 {
        return Err(format!("cannot fork: {}", std::io::Error::last_os_error()));
    }
    let mut status = 0;
    // SAFETY: waits for our own child, which exits at once.
    while unsafe { libc::waitpid(child, &mut status, 0) } < 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err("cannot fork the supervisor".into());
    }
    let pid = match filter.wait_ready(deadline) {
        Ok(Some(pid)) => pid,
        Ok(None) => {
            return Err(format!(
                "{} supervise did not start within {deadline:?}",
                sluice.display()
            ));
        }
        Err(e) => return Err(format!("no word from the supervisor: {e}")),
    };
    // Where Yama restricts ptrace to ancestors, the supervisor (no ancestor: detached)
    // may still read the task's memory. Without Yama this fails, and needs not succeed.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, pid as libc::c_ulong, 0, 0, 0) };
    filter
        .install()
        .map_err(|e| format!("cannot install the seccomp filter: {e}"))?;
    Ok(pid)
}

/// The descriptor the supervisor finds its port on.
const PORT_FD: RawFd = 3;

/// In the detached grandchild: a session of its own (the job's job-control signals do
/// not reach it), the port on [`PORT_FD`], nothing else open but /dev/null as standard
/// input and output (nothing of the task's, so that srun's streams end with the task),
/// then the supervisor. Should the exec fail, says so on the port, so that the task does
/// not wait for it. Async-signal-safe.
///
/// # Safety
/// Called between fork and exec; `argv` and `envp` are null-terminated arrays of C
/// strings.
unsafe fn detached(port: RawFd, argv: &[*const c_char], envp: &[*const c_char]) -> ! {
    // SAFETY: plain system calls on descriptors and C strings of ours.
    unsafe {
        libc::setsid();
        if port == PORT_FD {
            libc::fcntl(PORT_FD, libc::F_SETFD, 0);
        } else {
            libc::dup2(port, PORT_FD);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        libc::syscall(libc::SYS_close_range, PORT_FD + 1, u32::MAX, 0);
        libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
        let cannot = 0u32.to_ne_bytes();
        libc::send(PORT_FD, cannot.as_ptr().cast(), 4, libc::MSG_NOSIGNAL);
        libc::_exit(127)
    }
}

/// The job's io_uring setting, from its environment (`SLUICE_IO_URING`, as for `sluice
/// run`): allow unless it says deny.
pub(crate) fn io_uring_of(value: Option<&str>) -> IoUring {
    value.and_then(|v| v.parse().ok()).unwrap_or_default()
}
