//! One daemon per state directory: two locals (or two globals) on one directory would each
//! adopt the other's jobs, overwrite the other's records and remove the other's segments.
//! A daemon holds an exclusive `flock` on `STATE_DIR/lock` for as long as it runs; the
//! kernel releases it however the process ends, so a restart after kill -9 finds it free.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use sluice_core::error::{Blame, Fault};

use crate::config::persist::unwritable;

/// Why a daemon cannot take its state directory.
#[derive(Debug, thiserror::Error)]
pub enum StateLockError {
    /// The directory or its lock file cannot be written.
    #[error("{}", unwritable(.dir))]
    Unwritable {
        /// The state directory.
        dir: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another daemon runs on it.
    #[error("{who} keeps its state in {}: give each daemon its own --state-dir", .dir.display())]
    Held {
        /// "another sluice daemon (pid N)".
        who: String,
        /// The state directory.
        dir: std::path::PathBuf,
    },
}

impl Blame for StateLockError {
    /// Two daemons given one directory is the administrator's to fix; a directory that
    /// cannot be written is the host's.
    fn fault(&self) -> Fault {
        match self {
            StateLockError::Unwritable { .. } => Fault::System,
            StateLockError::Held { .. } => Fault::Input,
        }
    }
}

/// The lock, held until dropped (the daemon's end).
#[derive(Debug)]
pub struct StateLock {
    /// Held open for the lock it carries; never read.
    _file: File,
}

impl StateLock {
    /// Takes the lock of `state_dir` (created if missing), or says which process holds it.
    pub fn take(state_dir: &Path) -> Result<StateLock, StateLockError> {
        let unwritable = |source| StateLockError::Unwritable {
            dir: state_dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(state_dir).map_err(unwritable)?;
        let path = state_dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&path)
            .map_err(unwritable)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let who = if holder.is_empty() {
                "another sluice daemon".to_owned()
            } else {
                format!("another sluice daemon (pid {holder})")
            };
            return Err(StateLockError::Held {
                who,
                dir: state_dir.to_owned(),
            });
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .map_err(unwritable)?;
        Ok(StateLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_daemon_on_one_state_directory_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let held = StateLock::take(dir.path()).unwrap();
        let second = StateLock::take(dir.path()).unwrap_err().to_string();
        assert!(
            second.contains(&format!("(pid {})", std::process::id())),
            "{second}"
        );
        drop(held);
        StateLock::take(dir.path()).expect("free once the first is gone");
    }
}
