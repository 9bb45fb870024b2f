//! The seccomp filter a launcher puts a job's program under before it execs: the file
//! system calls of [`CALLS`] go to the supervisor as user notifications, `io_uring_setup`
//! is answered ENOSYS when the job denies io_uring, everything else runs as it would.
//!
//! The filter is built before the fork and installed in the child between fork and exec
//! ([`Filter::install`]), where only async-signal-safe calls may be made: no allocation,
//! no lock. The listener descriptor the kernel returns is sent to the launcher over a
//! socket pair made before the fork (`SCM_RIGHTS`), so the child may exec at once: the
//! descriptor in flight keeps the listener open until the supervisor receives it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use super::calls::CALLS;

/// `AUDIT_ARCH_X86_64` (EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE), linux/audit.h.
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// Where the x32 ABI's numbers start: calls of that ABI are not supervised.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// What a job does with io_uring (`--io-uring`, the job setting `io_uring`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoUring {
    /// Programs may set up rings; what they move through them is not held.
    #[default]
    Allow,
    /// `io_uring_setup` fails with ENOSYS, as on a kernel without io_uring: programs
    /// that can fall back to plain calls do, and those calls are held.
    Deny,
}

impl std::str::FromStr for IoUring {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "allow" => Ok(IoUring::Allow),
            "deny" => Ok(IoUring::Deny),
            _ => Err(format!("'{text}': expected allow or deny")),
        }
    }
}

/// A seccomp filter ready to install.
pub struct Filter {
    prog: Vec<libc::sock_filter>,
    notify: bool,
    /// The child's end of the socket pair the listener travels on.
    child_end: Option<UnixDatagram>,
}

/// The launcher's end: where the listener of a [`Filter`] installed in a child arrives.
pub struct ListenerPort(UnixDatagram);

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

impl Filter {
    /// A filter that sends the file calls to a supervisor (`notify`) and answers
    /// `io_uring_setup` as `io_uring` says; `None` when it would let everything through.
    /// With `notify`, also the port the listener will arrive on.
    pub fn new(
        notify: bool,
        io_uring: IoUring,
    ) -> std::io::Result<Option<(Filter, Option<ListenerPort>)>> {
        if !notify && io_uring == IoUring::Allow {
            return Ok(None);
        }
        use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
        let mut nrs: Vec<u32> = Vec::new();
        if notify {
            nrs.extend(CALLS.iter().map(|c| c.nr as u32));
        }
        let deny = io_uring == IoUring::Deny;
        // Layout: arch check, number load, x32 check, one comparison per call (jumping to
        // NOTIFY), the io_uring comparison (to ERRNO), then ALLOW, NOTIFY, ERRNO.
        let n = nrs.len();
        let mut prog = vec![
            stmt(BPF_LD | BPF_W | BPF_ABS, 4), // seccomp_data.arch
        ];
        // To ALLOW: skip the number load, the x32 check, the comparisons and io_uring's.
        let to_allow = (1 + 1 + n + deny as usize) as u8;
        prog.push(jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            AUDIT_ARCH_X86_64,
            0,
            to_allow,
        ));
        prog.push(stmt(BPF_LD | BPF_W | BPF_ABS, 0)); // seccomp_data.nr
        prog.push(jump(
            BPF_JMP | BPF_JGE | BPF_K,
            X32_SYSCALL_BIT,
            (n + deny as usize) as u8,
            0,
        ));
        for (i, nr) in nrs.iter().enumerate() {
            // From comparison i, NOTIFY is past the other comparisons and ALLOW.
            let to_notify = (n - 1 - i + deny as usize + 1) as u8;
            prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, *nr, to_notify, 0));
        }
        if deny {
            prog.push(jump(
                BPF_JMP | BPF_JEQ | BPF_K,
                libc::SYS_io_uring_setup as u32,
                2,
                0,
            ));
        }
        prog.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW));
        prog.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF));
        prog.push(stmt(
            BPF_RET | BPF_K,
            libc::SECCOMP_RET_ERRNO | (libc::ENOSYS as u32 & libc::SECCOMP_RET_DATA),
        ));
        let (child_end, port) = match notify {
            true => {
                let (a, b) = UnixDatagram::pair()?;
                (Some(a), Some(ListenerPort(b)))
            }
            false => (None, None),
        };
        Ok(Some((
            Filter {
                prog,
                notify,
                child_end,
            },
            port,
        )))
    }

    /// Installs the filter in the calling process (a child between fork and exec) and,
    /// with notifications, sends the listener to the launcher's [`ListenerPort`].
    /// Async-signal-safe. Without the privilege to install a filter, sets
    /// `no_new_privs` first, as the kernel requires of an unprivileged process.
    pub fn install(&self) -> std::io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.prog.len() as u16,
            filter: self.prog.as_ptr() as *mut libc::sock_filter,
        };
        let mut flags = 0;
        if self.notify {
            flags = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
                | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
        }
        let mut fd = seccomp(&prog, flags);
        if fd < 0 && errno() == libc::EINVAL && self.notify {
            // Before Linux 5.19: without killable waits (a signal then restarts a call
            // the supervisor may already have counted).
            flags &= !libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
            fd = seccomp(&prog, flags);
        }
        if fd < 0 && errno() == libc::EACCES {
            // SAFETY: prctl with integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            fd = seccomp(&prog, flags);
        }
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(sock) = &self.child_end {
            let sent = send_fd(sock.as_raw_fd(), fd as RawFd);
            // A raw close: this process is under the filter now, and its launcher is still
            // in `spawn`, not serving it yet; a preloaded stage's `close` would look the
            // descriptor up in /proc (a supervised call) and wait for ever.
            // SAFETY: the descriptor was just returned by seccomp; it is in flight now.
            unsafe { libc::syscall(libc::SYS_close, fd) };
            sent?;
        }
        Ok(())
    }
}

impl Filter {
    /// Waits at most `deadline` for a supervisor in another process to say it is ready
    /// ([`ListenerPort::ready`]): its pid, or `None` when it said it cannot or said
    /// nothing in time (then the filter must not be installed).
    pub fn wait_ready(&self, deadline: Duration) -> std::io::Result<Option<u32>> {
        let Some(sock) = &self.child_end else {
            return Ok(None);
        };
        if !readable(sock.as_raw_fd(), deadline)? {
            return Ok(None);
        }
        let mut pid = [0u8; 4];
        match sock.recv(&mut pid) {
            Ok(4) => Ok(Some(u32::from_ne_bytes(pid)).filter(|&p| p > 0)),
            Ok(_) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl ListenerPort {
    /// The listener sent by the child, once it has installed the filter; `None` when
    /// the child never did (it failed before, or the filter needs no listener).
    /// The child has sent it by the time it execs, so this never waits.
    pub fn receive(self) -> std::io::Result<Option<OwnedFd>> {
        recv_fd(self.0.as_raw_fd())
    }

    /// The port as a descriptor, for a supervisor in another process (it inherits it
    /// across exec and takes it back with [`ListenerPort::from_fd`]).
    pub fn into_fd(self) -> OwnedFd {
        self.0.into()
    }

    /// The port handed over as `fd` by [`ListenerPort::into_fd`].
    pub fn from_fd(fd: OwnedFd) -> ListenerPort {
        ListenerPort(UnixDatagram::from(fd))
    }

    /// Tells the process that will install the filter ([`Filter::wait_ready`]) that the
    /// supervisor `pid` serves it (0: that it cannot): a process that is not its
    /// launcher's child installs the filter only once a supervisor is there to take
    /// the listener, since a listener nobody holds fails every call it stops (ENOSYS).
    pub fn ready(&self, pid: u32) -> std::io::Result<()> {
        self.0.send(&pid.to_ne_bytes()).map(drop)
    }

    /// The listener, once the filter's process sent it, waiting at most `deadline`.
    pub fn receive_within(self, deadline: Duration) -> std::io::Result<Option<OwnedFd>> {
        match readable(self.0.as_raw_fd(), deadline)? {
            true => recv_fd(self.0.as_raw_fd()),
            false => Ok(None),
        }
    }
}

/// Whether `fd` became readable within `deadline` (interrupted waits resume with what is
/// left of it).
fn readable(fd: RawFd, deadline: Duration) -> std::io::Result<bool> {
    let end = Instant::now() + deadline;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd, ours.
        match unsafe { libc::poll(&mut p, 1, ms) } {
            n if n > 0 => return Ok(p.revents & libc::POLLIN != 0),
            0 => return Ok(false),
            _ if errno() == libc::EINTR => continue,
            _ => return Err(std::io::Error::last_os_error()),
        }
    }
}

fn seccomp(prog: &libc::sock_fprog, flags: libc::c_ulong) -> libc::c_long {
    // SAFETY: the program outlives the call; the kernel copies it.
    unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            prog as *const libc::sock_fprog,
        )
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Space for one descriptor's control message, aligned as `cmsghdr` needs.
#[repr(C, align(8))]
struct Cmsg([u8; 32]);

/// Calls `f` with a message of one byte and room for one descriptor's control message
/// (`msg_controllen` is the whole room). Async-signal-safe: nothing is allocated.
fn with_fd_msg<R>(f: impl FnOnce(&mut libc::msghdr) -> R) -> R {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut space = Cmsg([0; 32]);
    // SAFETY: msghdr is plain data, for which all zeroes is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // The pointers outlive `f`, which is the only user of the message.
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.0.as_mut_ptr().cast();
    msg.msg_controllen = space.0.len();
    f(&mut msg)
}

/// Sends `fd` over the datagram socket `sock`. Async-signal-safe: sendmsg only.
fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    with_fd_msg(|msg| {
        // SAFETY: the control buffer holds CMSG_SPACE(sizeof(int)) bytes, aligned, and
        // the message's pointers outlive the call.
        unsafe {
            msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
            let c = libc::CMSG_FIRSTHDR(msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
            if libc::sendmsg(sock, msg, libc::MSG_NOSIGNAL) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    })
}

/// Receives one descriptor from `sock`; `None` when the peer closed without sending.
fn recv_fd(sock: RawFd) -> std::io::Result<Option<OwnedFd>> {
    with_fd_msg(|msg| {
        // SAFETY: as in send_fd; the kernel fills at most msg_controllen bytes.
        unsafe {
            let n = libc::recvmsg(sock, msg, libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT);
            if n < 0 {
                let e = std::io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) => Ok(None),
                    _ => Err(e),
                };
            }
            let c = libc::CMSG_FIRSTHDR(msg);
            if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
                return Ok(None);
            }
            let fd = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>());
            Ok(Some(OwnedFd::from_raw_fd(fd)))
        }
    })
}
