//! One daemon per state directory: two locals (or two globals) on one directory would each
//! adopt the other's jobs, overwrite the other's records and remove the other's segments.
//! A daemon holds an exclusive `flock` on `STATE_DIR/lock` for as long as it runs; the
//! kernel releases it however the process ends, so a restart after kill -9 finds it free.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::config::persist::unwritable;

/// The lock, held until dropped (the daemon's end).
#[derive(Debug)]
pub struct StateLock {
    /// Held open for the lock it carries; never read.
    _file: File,
}

impl StateLock {
    /// Takes the lock of `state_dir` (created if missing), or says which process holds it.
    pub fn take(state_dir: &Path) -> Result<StateLock> {
        std::fs::create_dir_all(state_dir).with_context(|| unwritable(state_dir))?;
        let path = state_dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&path)
            .with_context(|| unwritable(state_dir))?;
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
            bail!(
                "{who} keeps its state in {}: give each daemon its own --state-dir",
                state_dir.display()
            );
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .with_context(|| unwritable(state_dir))?;
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
