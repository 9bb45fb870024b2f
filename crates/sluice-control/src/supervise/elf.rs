//! Whether the stage can enter an executable (`sluice_core::elf`), read from its file.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub use sluice_core::elf::Why;

/// Why the stage cannot enter the ELF executable `path`; `None` when it can (a dynamic
/// program not written in Go), or when the file is not a 64-bit little-endian ELF
/// executable (a script: its interpreter is judged when it runs).
pub fn inspect(path: &Path) -> std::io::Result<Option<Why>> {
    let file = File::open(path)?;
    Ok(sluice_core::elf::inspect(|at, buf| {
        file.read_exact_at(buf, at).is_ok()
    }))
}
