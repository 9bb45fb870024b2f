//! The numbers the stage and its C shim (`shim.c`) must agree on, set once by build.rs
//! for both languages: the size of the thread-local block, the length of the descriptor
//! table, and where glibc's `FILE` keeps its descriptor.

/// Bytes of the shim's thread-local block ([`crate::guard`] checks that its state fits).
pub(crate) const TLS_BYTES: usize = parse(env!("SLUICE_TLS_BYTES"));

/// Descriptors the shim's descriptor table holds ([`crate::tables::fdtable`]).
pub(crate) const FD_TABLE_LEN: usize = parse(env!("SLUICE_FD_TABLE_LEN"));

/// Where glibc's `FILE` keeps `_fileno` on 64-bit targets (the shim checks it against
/// glibc's header at build time).
#[cfg(target_pointer_width = "64")]
pub(crate) const FILE_FILENO_OFFSET: usize = parse(env!("SLUICE_FILE_FILENO_OFFSET"));

/// A number build.rs passes in the environment, read at compile time.
const fn parse(s: &str) -> usize {
    let b = s.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    n
}
