//! What an executable is, as far as the stage is concerned: a program the dynamic loader
//! starts can carry the stage (`LD_PRELOAD`); one without an interpreter (statically
//! linked) cannot, and a Go program makes its system calls itself whether linked
//! statically or not.
//!
//! The file is read through the caller's `read_at`, a few dozen bytes at a time into
//! buffers on the stack: the stage judges a program at exec, where it may not allocate
//! (a `vfork`ed child shares its parent's heap), and the supervisor judges each process
//! it meets.

/// Why the stage cannot hold a program's file calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Why {
    /// Statically linked: no dynamic loader to preload the stage.
    Static,
    /// A Go program: its runtime makes system calls itself, never through libc.
    Go,
    /// A dynamic program started without the stage in its environment.
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
/// More program or section headers than this: not a program the linker made.
const MAX_HEADERS: u64 = 4096;
/// The section the Go linker writes into every program, stripped or not, static or
/// linked with cgo.
const GO_BUILDINFO: &[u8] = b".go.buildinfo\0";

/// Why the stage cannot enter the ELF executable that `read_at(offset, buf)` reads
/// (filling `buf` whole, or false); `None` when it can (a dynamic program not written in
/// Go), or when the file is not a 64-bit little-endian ELF executable (a script: its
/// interpreter is judged when it runs).
pub fn inspect(mut read_at: impl FnMut(u64, &mut [u8]) -> bool) -> Option<Why> {
    let mut eh = [0u8; 64];
    if !read_at(0, &mut eh) || &eh[..4] != b"\x7fELF" || eh[4] != 2 || eh[5] != 1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56));
    let sections = Sections {
        off: u64_at(&eh, 40),
        entsize: u16_at(&eh, 58),
        num: u16_at(&eh, 60),
        strndx: u16_at(&eh, 62),
    };
    if sections.name_go(&mut read_at) {
        return Some(Why::Go);
    }
    if phentsize < 56 || phnum == 0 || phnum > MAX_HEADERS {
        return None;
    }
    let interp = (0..phnum).any(|i| {
        let mut p = [0u8; 4];
        read_at(phoff + i * phentsize, &mut p) && u32::from_le_bytes(p) == PT_INTERP
    });
    (!interp).then_some(Why::Static)
}

/// Where an ELF file's section headers lie.
struct Sections {
    off: u64,
    entsize: u64,
    num: u64,
    strndx: u64,
}

impl Sections {
    /// Whether a section is named `.go.buildinfo`.
    fn name_go(&self, read_at: &mut impl FnMut(u64, &mut [u8]) -> bool) -> bool {
        if self.off == 0 || self.entsize < 64 || self.num == 0 || self.num > MAX_HEADERS {
            return false;
        }
        if self.strndx >= self.num {
            return false;
        }
        let mut strtab = [0u8; 64];
        if !read_at(self.off + self.strndx * self.entsize, &mut strtab) {
            return false;
        }
        let names = u64_at(&strtab, 24);
        (0..self.num).any(|i| {
            let mut name = [0u8; 4];
            let mut text = [0u8; GO_BUILDINFO.len()];
            read_at(self.off + i * self.entsize, &mut name)
                && read_at(names + u64::from(u32::from_le_bytes(name)), &mut text)
                && text == GO_BUILDINFO
        })
    }
}

fn u16_at(b: &[u8], o: usize) -> u64 {
    u64::from(u16::from_le_bytes([b[o], b[o + 1]]))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn of(path: &str) -> Option<Why> {
        let f = std::fs::File::open(path).unwrap();
        inspect(|at, buf| f.read_exact_at(buf, at).is_ok())
    }

    #[test]
    fn a_dynamic_program_is_entered_and_a_script_is_not_judged() {
        assert_eq!(of("/bin/sh"), None);
        let script = std::env::temp_dir().join(format!("sluice-elf-{}", std::process::id()));
        std::fs::write(&script, "#!/bin/sh\n").unwrap();
        assert_eq!(of(script.to_str().unwrap()), None);
        std::fs::remove_file(&script).unwrap();
    }
}
