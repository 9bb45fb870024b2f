//! What an executable is, as far as the stage is concerned: a program the dynamic loader
//! starts can carry the stage (`LD_PRELOAD`); one without an interpreter (statically
//! linked) cannot, and a Go program makes its system calls itself whether linked
//! statically or not.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Why the stage cannot hold a program's file calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Why {
    /// Statically linked: no dynamic loader to preload the stage.
    Static,
    /// A Go program: its runtime makes system calls itself, never through libc.
    Go,
    /// A dynamic program started without the stage in its environment (`env -i`).
    ClearedEnv,
}

impl Why {
    /// The word reports and logs use.
    pub const fn name(self) -> &'static str {
        match self {
            Why::Static => "static",
            Why::Go => "go",
            Why::ClearedEnv => "cleared-env",
        }
    }
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const PT_INTERP: u32 = 3;

/// Why the stage cannot enter the ELF executable `path`; `None` when it can (a dynamic
/// program not written in Go), or when the file is not a 64-bit little-endian ELF
/// executable (a script: its interpreter is judged when it runs).
pub fn inspect(path: &Path) -> std::io::Result<Option<Why>> {
    inspect_file(&File::open(path)?)
}

/// [`inspect`] of a file already open.
pub fn inspect_file(file: &File) -> std::io::Result<Option<Why>> {
    let mut eh = [0u8; 64];
    let mut f = file;
    if f.read(&mut eh)? < 64 || &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return Ok(None);
    }
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
    let (phoff, phentsize, phnum) = (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56));
    let (shoff, shentsize, shnum, shstrndx) = (
        u64_at(&eh, 40),
        u16_at(&eh, 58),
        u16_at(&eh, 60),
        u16_at(&eh, 62),
    );
    if is_go(file, shoff, shentsize, shnum, shstrndx)? {
        return Ok(Some(Why::Go));
    }
    if phentsize < 56 || phnum == 0 || phnum > 4096 {
        return Ok(None);
    }
    let mut ph = vec![0u8; (phentsize * phnum) as usize];
    file.read_exact_at(&mut ph, phoff)?;
    let interp = ph
        .chunks_exact(phentsize as usize)
        .any(|p| u32_at(p, 0) == PT_INTERP);
    Ok((!interp).then_some(Why::Static))
}

/// Whether the section headers name `.go.buildinfo`, which the Go linker writes into every
/// program, stripped or not, static or linked with cgo.
fn is_go(
    file: &File,
    shoff: u64,
    shentsize: u64,
    shnum: u64,
    strndx: u64,
) -> std::io::Result<bool> {
    if shoff == 0 || shentsize < 64 || shnum == 0 || shnum > 65535 || strndx >= shnum {
        return Ok(false);
    }
    let mut sh = vec![0u8; (shentsize * shnum) as usize];
    if file.read_exact_at(&mut sh, shoff).is_err() {
        return Ok(false);
    }
    let field = |i: u64, o: usize| {
        let s = (i * shentsize) as usize + o;
        u64::from_le_bytes(sh[s..s + 8].try_into().unwrap_or([0; 8]))
    };
    let (str_off, str_len) = (field(strndx, 24), field(strndx, 32).min(1 << 20));
    let mut names = vec![0u8; str_len as usize];
    if file.read_exact_at(&mut names, str_off).is_err() {
        return Ok(false);
    }
    Ok((0..shnum).any(|i| {
        let s = (i * shentsize) as usize;
        let name = u32::from_le_bytes(sh[s..s + 4].try_into().unwrap_or([0; 4])) as usize;
        names
            .get(name..)
            .and_then(|n| n.split(|&b| b == 0).next())
            .is_some_and(|n| n == b".go.buildinfo")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_program_is_entered_and_a_script_is_not_judged() {
        assert_eq!(inspect(Path::new("/bin/sh")).unwrap(), None);
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert_eq!(inspect(&script).unwrap(), None);
    }
}
