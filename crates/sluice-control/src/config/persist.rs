//! Replacing a file atomically, so that a crash or a concurrent reader never sees a
//! half-written configuration.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The mode of a file that did not exist: it names the token and key files, which are
/// the administrator's business alone.
const NEW_FILE_MODE: u32 = 0o600;

/// What a daemon says of a state directory it cannot write, before the system's reason.
pub(crate) fn unwritable(state_dir: &Path) -> String {
    format!(
        "the state directory {} must be writable by this daemon (--state-dir)",
        state_dir.display()
    )
}

/// Writes `bytes` to `path` by way of a temporary file in the same directory (so that
/// the rename stays on one file system), synced before the rename and followed by a sync
/// of the directory (so that the rename itself survives a crash). An existing file's
/// permission bits carry over.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Durability::Synced)
}

/// [`write_atomically`] without waiting for the disk: a crash of the process never
/// leaves a half-written file, a crash of the machine may leave the one before, or none.
/// For what lives no longer than the machine's uptime (a node's jobs), whose writers
/// must not stall behind a busy disk.
pub(crate) fn replace_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, Durability::Unsynced)
}

/// Whether a replacement waits for the disk.
#[derive(Clone, Copy, PartialEq)]
enum Durability {
    Synced,
    Unsynced,
}

fn replace(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mode = match fs::metadata(path) {
        Ok(meta) => meta.permissions().mode() & 0o7777,
        Err(e) if e.kind() == io::ErrorKind::NotFound => NEW_FILE_MODE,
        Err(e) => return Err(e),
    };
    let (temp, mut file) = create_temp(dir, path, mode)?;
    let written = (|| {
        // Creating applied the umask; the mode must be exactly the old one.
        file.set_permissions(Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        // Best effort: the error that matters is the one being returned.
        let _ = fs::remove_file(&temp);
        return Err(e);
    }
    match durability {
        Durability::Synced => File::open(dir)?.sync_all(),
        Durability::Unsynced => Ok(()),
    }
}

/// Creates a new temporary file next to `path`, named after it and this process; a
/// leftover of an earlier crash with the same name is stepped around, not reused.
fn create_temp(dir: &Path, path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy();
    let mut attempt = 0;
    loop {
        let temp = dir.join(format!(".{name}.{}.{attempt}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}
