//! Lexical path resolution and the table of managed places.
//!
//! The stage must decide, for every path a program passes, whether it lies on a managed
//! file system, without allocating and without a system call. Paths are joined to their
//! base (the current directory or a directory descriptor's path) and normalised
//! lexically into a caller's stack buffer: `.` and empty components vanish, `..` removes
//! the previous component. Symbolic links are not followed (documented limitation): a
//! link from an unmanaged place into a managed one is judged by where it stands.

/// Longest path the stage resolves; longer paths are judged unmanaged-safe by their base.
pub const PATH_MAX: usize = 4096;

/// Which entry of a [`MountTable`] a path falls under.
pub type PlaceIdx = u8;

/// Most entries a table holds (places are indexed by a byte; masks are 64 bits).
pub const MAX_PLACES: usize = 64;

/// One prefix of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// Normalised absolute path (`/` for the root).
    pub path: String,
    /// Whether calls on paths under it are managed.
    pub managed: bool,
}

/// A set of bytes (256 bits): the letters places start with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LetterSet([u64; 4]);

impl LetterSet {
    /// Every byte.
    pub const ALL: LetterSet = LetterSet([u64::MAX; 4]);

    /// Adds `c`.
    pub fn insert(&mut self, c: u8) {
        self.0[c as usize / 64] |= 1 << (c % 64);
    }

    /// Whether `c` is in the set.
    #[inline(always)]
    pub fn contains(&self, c: u8) -> bool {
        self.0[c as usize / 64] >> (c % 64) & 1 != 0
    }
}

/// Errors building a [`MountTable`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// A managed place that is not an absolute path.
    #[error("'{0}' is not an absolute path")]
    NotAbsolute(String),
    /// More places than the stage can index.
    #[error("too many managed places (at most {MAX_PLACES})")]
    TooMany,
}

/// Prefixes and whether each is managed; a path belongs to its longest matching prefix.
///
/// Entry 0 is always `/`. With no managed mount named, `/` is managed and `/proc`, `/sys`,
/// `/dev` and `/run` are not; with mounts named, `/` is not and each mount is. Places that
/// rules name (`mount=`) are added as entries that inherit the status of their parent, so
/// that a rule's mount condition is a bit mask over entries, computed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountTable {
    places: Vec<Place>,
    /// The first letters of every place but the root: a path whose first letter is in
    /// none of them can only fall under the root.
    first_letters: LetterSet,
    /// Bit `i`: entry `i` is managed.
    managed_mask: u64,
}

/// The places never managed when no mount is named: kernel and runtime pseudo file systems.
pub const PSEUDO: [&str; 4] = ["/proc", "/sys", "/dev", "/run"];

impl MountTable {
    /// Builds the table from the managed mounts (`None`: manage everything but
    /// [`PSEUDO`]) and the extra places that rules name.
    pub fn new(managed: Option<&[String]>, rule_places: &[String]) -> Result<Self, PlaceError> {
        let everything = managed.is_none();
        let mut table = MountTable {
            managed_mask: everything as u64,
            places: vec![Place {
                path: "/".into(),
                managed: everything,
            }],
            first_letters: LetterSet::default(),
        };
        if everything {
            for p in PSEUDO {
                table.insert(p, false)?;
            }
        }
        for m in managed.unwrap_or_default() {
            table.insert(m, true)?;
        }
        for r in rule_places {
            let norm = normalize_owned(r)?;
            if !table.places.iter().any(|p| p.path == norm) {
                let inherited = table.places[table.lookup(norm.as_bytes()) as usize].managed;
                table.insert(&norm, inherited)?;
            }
        }
        Ok(table)
    }

    /// The managed places no other place lies below, for [`Leaves::place_of`].
    pub fn leaves(&self) -> Leaves {
        let mut leaves = Leaves::default();
        let mut k = 0;
        for (i, p) in self.places.iter().enumerate().skip(1) {
            let path = p.path.as_bytes();
            if p.managed
                && path.len() <= LEAF_BYTES
                && k < MAX_LEAVES
                && !self.has_places_below(path)
            {
                let leaf = &mut leaves.0[k];
                leaf.bytes[..path.len()].copy_from_slice(path);
                leaf.len = path.len() as u8;
                leaf.idx = i as PlaceIdx;
                leaf.blocks = (path.len() / 16 + 1) as u8;
                leaf.last = (1u16 << (path.len() % 16)).wrapping_sub(1);
                k += 1;
            }
        }
        leaves
    }

    fn insert(&mut self, path: &str, managed: bool) -> Result<(), PlaceError> {
        let norm = normalize_owned(path)?;
        if let Some(i) = self.places.iter().position(|p| p.path == norm) {
            self.places[i].managed = managed;
            self.managed_mask = self.managed_mask & !(1 << i) | (managed as u64) << i;
            return Ok(());
        }
        if self.places.len() == MAX_PLACES {
            return Err(PlaceError::TooMany);
        }
        if let Some(&c) = norm.as_bytes().get(1) {
            self.first_letters.insert(c);
        }
        self.managed_mask |= (managed as u64) << self.places.len();
        self.places.push(Place {
            path: norm,
            managed,
        });
        Ok(())
    }

    /// The entries, in index order.
    pub fn places(&self) -> &[Place] {
        &self.places
    }

    /// Whether entry `idx` is managed.
    #[inline]
    pub fn is_managed(&self, idx: PlaceIdx) -> bool {
        (idx as usize) < MAX_PLACES && self.managed_mask >> idx & 1 != 0
    }

    /// Whether no place but the root starts with letter `c` (a path's byte after its
    /// leading slash): such a path can only fall under the root, unless a `.` or `..`
    /// component leads it elsewhere, which the caller checks.
    #[inline]
    pub fn no_place_starts_with(&self, c: u8) -> bool {
        c != b'/' && c != b'.' && !self.first_letters.contains(c)
    }

    /// The letters a path may have after its leading slash and still lie in a managed
    /// place: the second byte of each managed place, and `/` (a path starting `//`); every
    /// letter when the root itself is managed. A path with any other letter lies in no
    /// managed place unless a `.` or `..` component leads it into one.
    pub fn managed_letters(&self) -> LetterSet {
        if self.is_managed(0) {
            return LetterSet::ALL;
        }
        let mut set = LetterSet::default();
        set.insert(b'/');
        for (i, p) in self.places.iter().enumerate() {
            if let Some(&c) = p.path.as_bytes().get(1)
                && self.is_managed(i as PlaceIdx)
            {
                set.insert(c);
            }
        }
        set
    }

    /// The entry a normalised absolute path falls under (the longest prefix that ends at a
    /// component boundary).
    #[inline]
    pub fn lookup(&self, path: &[u8]) -> PlaceIdx {
        let mut best = 0usize;
        let mut best_len = 1usize;
        let first = path.get(1).copied();
        for i in 1..self.places.len() {
            let pre = self.places[i].path.as_bytes();
            // Most places differ from the path in their first letter: skip them cheaply.
            if pre.len() > best_len && pre.get(1).copied() == first && is_under(path, pre) {
                best = i;
                best_len = pre.len();
            }
        }
        best as PlaceIdx
    }

    /// Whether some entry other than `idx`'s own lies strictly below `dir`: then a relative
    /// path from `dir` can cross into another entry and must be resolved in full.
    pub fn has_places_below(&self, dir: &[u8]) -> bool {
        self.places
            .iter()
            .skip(1)
            .any(|p| p.path.len() > dir.len() && is_under(p.path.as_bytes(), dir))
    }

    /// The mask of entries equal to or below the place `path` (for `mount=` conditions).
    pub fn mask_under(&self, path: &str) -> u64 {
        let Ok(norm) = normalize_owned(path) else {
            return 0;
        };
        self.places
            .iter()
            .enumerate()
            .filter(|(_, p)| is_under(p.path.as_bytes(), norm.as_bytes()))
            .fold(0, |m, (i, _)| m | 1 << i)
    }
}

/// Most places [`Leaves`] holds, and the room for each one's path.
const MAX_LEAVES: usize = 4;
const LEAF_BYTES: usize = 47;

/// The managed places that no other place lies below (at most four, each with a path of
/// at most 47 bytes), to match a path against where it lies: the common managed call
/// names a file on the one file system a job's rules are about.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leaves([Leaf; MAX_LEAVES]);

/// One place of [`Leaves`], in one cache line; `len` 0 ends the list.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Leaf {
    /// The path, zero-padded to whole 16-byte blocks.
    bytes: [u8; 48],
    len: u8,
    idx: PlaceIdx,
    /// The 16-byte blocks that hold the path and the byte after it, and the mask of the
    /// path's bytes in the last one: both follow from `len`, worked out once here rather
    /// than in every call.
    blocks: u8,
    last: u16,
}

impl Default for Leaf {
    fn default() -> Self {
        Leaf {
            bytes: [0; 48],
            len: 0,
            idx: 0,
            blocks: 0,
            last: 0,
        }
    }
}

impl Leaves {
    /// The place a NUL-terminated path lies in, when a glance can tell: its first bytes
    /// are a place's path, followed by a slash or its end, and no component after them
    /// starts with a dot. `None` when a glance cannot tell. One comparison per place, and
    /// no scan of the whole path.
    ///
    /// # Safety
    /// `p` points to a NUL-terminated string.
    #[inline(always)]
    pub unsafe fn place_of(&self, p: *const u8) -> Option<PlaceIdx> {
        let first = &self.0[0];
        if first.len == 0 {
            return None;
        }
        // SAFETY: the caller's promise.
        if unsafe { first.starts(p) } {
            // SAFETY: as above.
            return unsafe { first.place_past(p) };
        }
        if self.0[1].len == 0 {
            return None;
        }
        // SAFETY: as above.
        unsafe { self.place_among_others(p) }
    }

    /// [`Leaves::place_of`] over the places after the first, out of line: a job's rules
    /// are most often about one file system, and the code for the others would lie
    /// between the pieces of the common call.
    ///
    /// # Safety
    /// `p` points to a NUL-terminated string.
    #[cold]
    #[inline(never)]
    unsafe fn place_among_others(&self, p: *const u8) -> Option<PlaceIdx> {
        for leaf in &self.0[1..] {
            if leaf.len == 0 {
                return None;
            }
            // SAFETY: the caller's promise.
            if unsafe { leaf.starts(p) } {
                // SAFETY: as above.
                return unsafe { leaf.place_past(p) };
            }
        }
        None
    }
}

impl Leaf {
    /// This place, for a string that [`Leaf::starts`] with it, unless a component after
    /// the place's path starts with a dot.
    ///
    /// # Safety
    /// `p` points to a NUL-terminated string that starts with this place's path.
    #[inline(always)]
    unsafe fn place_past(&self, p: *const u8) -> Option<PlaceIdx> {
        // SAFETY: byte `len` is a slash or the NUL: what follows it, or the NUL itself, is
        // a NUL-terminated suffix of the string.
        (!unsafe { dot_component(p.add(self.len as usize)) }).then_some(self.idx)
    }

    /// Whether the string at `p` starts with this place's path, followed by a slash or
    /// its end.
    ///
    /// # Safety
    /// `p` points to a NUL-terminated string.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn starts(&self, p: *const u8) -> bool {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8};
        let blocks = self.blocks as usize;
        // The blocks read lie in the page of the string's first byte, which is mapped;
        // near the page's end, a glance cannot tell.
        if (p as usize & 4095) + blocks * 16 > 4096 {
            return false;
        }
        for k in 0..blocks {
            // SAFETY: within the page of `p` (above), and within `bytes`. SSE2 is part of
            // x86_64.
            let eq = unsafe {
                let v = load_block(p.add(16 * k));
                let w = load_block(self.bytes.as_ptr().add(16 * k));
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, w)) as u32
            };
            let want = if k + 1 == blocks {
                self.last as u32
            } else {
                0xffff
            };
            if eq & want != want {
                return false;
            }
        }
        // SAFETY: the path's bytes matched, none of which is the NUL: the byte after them
        // is the string's.
        matches!(unsafe { *p.add(self.len as usize) }, b'/' | 0)
    }

    /// See the x86_64 version; elsewhere a byte at a time (the first byte that differs
    /// stops it, the string's NUL at the latest).
    ///
    /// # Safety
    /// `p` points to a NUL-terminated string.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    unsafe fn starts(&self, p: *const u8) -> bool {
        let n = self.len as usize;
        // SAFETY: reads stop at the first byte that differs, the NUL at the latest.
        (0..n).all(|k| unsafe { *p.add(k) } == self.bytes[k])
            && matches!(unsafe { *p.add(n) }, b'/' | 0)
    }
}

/// Whether `path` equals `prefix` or lies below it.
#[inline]
fn is_under(path: &[u8], prefix: &[u8]) -> bool {
    if prefix == b"/" {
        return true;
    }
    path.starts_with(prefix) && (path.len() == prefix.len() || path[prefix.len()] == b'/')
}

fn normalize_owned(path: &str) -> Result<String, PlaceError> {
    if !path.starts_with('/') {
        return Err(PlaceError::NotAbsolute(path.to_owned()));
    }
    let mut buf = [0u8; PATH_MAX];
    let n = resolve_into(&mut buf, b"/", path.as_bytes())
        .ok_or(PlaceError::NotAbsolute(path.to_owned()))?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Joins `rel` to the absolute `base` (ignored when `rel` is absolute) and normalises the
/// result lexically into `buf`. Returns its length, or `None` when it does not fit.
#[inline]
pub fn resolve_into(buf: &mut [u8; PATH_MAX], base: &[u8], rel: &[u8]) -> Option<usize> {
    let mut len = 0usize;
    let mut push = |buf: &mut [u8; PATH_MAX], comp: &[u8]| -> Option<()> {
        match comp {
            b"" | b"." => {}
            b".." => {
                if let Some(pos) = buf[..len].iter().rposition(|&c| c == b'/') {
                    len = pos;
                }
            }
            _ => {
                if len + 1 + comp.len() > PATH_MAX {
                    return None;
                }
                buf[len] = b'/';
                buf[len + 1..len + 1 + comp.len()].copy_from_slice(comp);
                len += 1 + comp.len();
            }
        }
        Some(())
    };
    if rel.first() != Some(&b'/') {
        for comp in base.split(|&b| b == b'/') {
            push(buf, comp)?;
        }
    }
    for comp in rel.split(|&b| b == b'/') {
        push(buf, comp)?;
    }
    if len == 0 {
        buf[0] = b'/';
        return Some(1);
    }
    Some(len)
}

/// Whether an absolute path is already in normal form (no `.`, `..` or empty component,
/// no trailing slash), so that the stage can match it without copying. Components that
/// merely start with a dot (`.bashrc`) are judged not normal too: they take the slower,
/// exact path.
#[inline]
pub fn is_normal(path: &[u8]) -> bool {
    match path {
        [b'/'] => true,
        [b'/', .., last] => {
            let (dot, slash) = slash_pairs(path);
            *last != b'/' && !dot && !slash
        }
        _ => false,
    }
}

/// What one pass over a C path found: its length and the pairs that keep it from being in
/// normal form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// Bytes before the NUL.
    pub len: usize,
    /// A slash followed by a dot (a `.` or `..` component, or a name starting with a dot).
    pub slash_dot: bool,
    /// A slash followed by a slash, or a slash before the NUL.
    pub slash_slash: bool,
}

impl Scan {
    /// Whether the path is absolute and in normal form (as [`is_normal`] judges it).
    #[inline]
    pub fn is_normal(&self, first: u8) -> bool {
        first == b'/' && !self.slash_dot && (!self.slash_slash || self.len == 1)
    }
}

/// Measures a NUL-terminated path and checks it for `/.`, `//` and a trailing slash, in
/// one pass, sixteen bytes at a time: the stage runs this on every path a program passes.
///
/// The pass reads whole aligned 16-byte blocks, so it may read up to 15 bytes beyond the
/// NUL but never into another page (the way `strlen` is written); the loads are made with
/// inline assembly, outside the language's object model.
///
/// # Safety
/// `p` points to a NUL-terminated string.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn scan_c_path(p: *const u8) -> Scan {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_setzero_si128};
    let off = p as usize & 15;
    let mut q = p.wrapping_sub(off);
    let mut shift = off as u32;
    let (mut dots, mut slashes, mut carry) = (0u32, 0u32, 0u32);
    loop {
        // SAFETY: the block holds a byte of the string, at most its NUL.
        let v = unsafe { load_block(q) };
        // SAFETY: SSE2 is part of x86_64.
        let (z, s, d) = unsafe {
            let mask = |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, splat(b))) as u32;
            (
                _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) as u32 >> shift,
                mask(b'/') >> shift,
                mask(b'.') >> shift,
            )
        };
        // Bit i: byte i follows a slash (bit 0 of the first block never does).
        let after = (s << 1) | carry;
        if z != 0 {
            let nul = z & z.wrapping_neg();
            let before = nul - 1;
            dots |= after & d & before;
            slashes |= after & (s & before | nul);
            return Scan {
                len: (q as usize + shift as usize - p as usize) + z.trailing_zeros() as usize,
                slash_dot: dots != 0,
                slash_slash: slashes != 0,
            };
        }
        dots |= after & d;
        slashes |= after & s;
        carry = (s >> (15 - shift)) & 1;
        q = q.wrapping_add(16);
        shift = 0;
    }
}

/// `b` in each byte of a vector, made in registers. As a constant it would be loaded from
/// the library's read-only data, a page no other part of a call touches: after a system
/// call, each page a call touches costs a TLB miss (1.7 ns on this project's VM).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn splat(b: u8) -> std::arch::x86_64::__m128i {
    let v;
    // SAFETY: register moves only; SSE2 is part of x86_64.
    unsafe {
        std::arch::asm!("movd {v}, {x:e}", "pshufd {v}, {v}, 0",
            x = in(reg) u32::from_ne_bytes([b; 4]), v = out(xmm_reg) v,
            options(pure, nomem, nostack, preserves_flags));
    }
    v
}

/// The 16 bytes at `q`, aligned or not.
///
/// # Safety
/// The 16 bytes lie in mapped memory: an aligned block that holds a byte of a string
/// does, for it lies within that byte's page.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn load_block(q: *const u8) -> std::arch::x86_64::__m128i {
    let v;
    // SAFETY: the caller's promise; the load is made outside the language's object
    // model, so reading bytes past the NUL is no out-of-bounds access.
    unsafe {
        std::arch::asm!("movdqu {v}, [{q}]", q = in(reg) q, v = out(xmm_reg) v,
            options(pure, readonly, nostack, preserves_flags));
    }
    v
}

/// Whether some component of a NUL-terminated path starts with a dot (a `.` or `..`
/// component, or a hidden name): the only way a path can lead out of the place its
/// letters name. Cheaper than [`scan_c_path`]: sixteen bytes at a time, it looks only for
/// dots and the NUL, and checks the byte before each dot; the string is not measured.
///
/// # Safety
/// `p` points to a NUL-terminated string.
#[cfg(target_arch = "x86_64")]
#[inline]
pub unsafe fn dot_component(p: *const u8) -> bool {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_setzero_si128};
    let mut q = p.wrapping_sub(p as usize & 15);
    let mut keep = u32::MAX << (p as usize & 15);
    loop {
        // SAFETY: the block holds a byte of the string, at most its NUL. SSE2 is part of
        // x86_64.
        let mut m = unsafe {
            let v = load_block(q);
            let hits = _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_setzero_si128()),
                _mm_cmpeq_epi8(v, splat(b'.')),
            );
            _mm_movemask_epi8(hits) as u32 & keep
        };
        while m != 0 {
            let at = q.wrapping_add(m.trailing_zeros() as usize);
            // SAFETY: `at` is a byte of the string or its NUL, and the byte before it is
            // one too when `at` is not the first.
            unsafe {
                if *at == 0 {
                    return false;
                }
                if at == p || *at.sub(1) == b'/' {
                    return true;
                }
            }
            m &= m - 1;
        }
        q = q.wrapping_add(16);
        keep = u32::MAX;
    }
}

/// See the x86_64 version; elsewhere a byte at a time.
///
/// # Safety
/// `p` points to a NUL-terminated string.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub unsafe fn dot_component(p: *const u8) -> bool {
    // SAFETY: the caller's promise.
    let path = unsafe { std::ffi::CStr::from_ptr(p.cast()) }.to_bytes();
    path.first() == Some(&b'.') || slash_pairs(path).0
}

/// See the x86_64 version; elsewhere a byte at a time.
///
/// # Safety
/// `p` points to a NUL-terminated string.
#[cfg(not(target_arch = "x86_64"))]
#[inline]
pub unsafe fn scan_c_path(p: *const u8) -> Scan {
    // SAFETY: the caller's promise.
    let path = unsafe { std::ffi::CStr::from_ptr(p.cast()) }.to_bytes();
    let (dot, slash) = slash_pairs(path);
    Scan {
        len: path.len(),
        slash_dot: dot,
        slash_slash: slash || path.last() == Some(&b'/'),
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// 0x80 in every byte of `w` equal to `b`, 0 elsewhere (exact: no borrow between bytes).
#[inline(always)]
fn byte_mask(w: u64, b: u8) -> u64 {
    let x = w ^ (ONES * b as u64);
    !(((x & !HIGH) + !HIGH) | x | !HIGH)
}

/// Whether `path` holds a slash followed by a dot, and a slash followed by a slash.
/// Eight bytes at a time: these checks run on every path a program passes. A path whose
/// length is not a multiple of eight ends with a word that overlaps the one before it,
/// which only looks at some bytes twice.
#[inline]
fn slash_pairs(path: &[u8]) -> (bool, bool) {
    let word = |i: usize| {
        let c = &path[i..i + 8];
        u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
    };
    let n = path.len();
    if n < 8 {
        let w = path.iter().rev().fold(0u64, |w, &c| w << 8 | c as u64);
        return pairs_in(w, 0);
    }
    let (mut dot, mut slash) = (false, false);
    let mut i = 0;
    while i < n {
        let at = i.min(n - 8);
        let carry = if at > 0 && path[at - 1] == b'/' {
            0x80
        } else {
            0
        };
        let (d, s) = pairs_in(word(at), carry);
        dot |= d;
        slash |= s;
        i += 8;
    }
    (dot, slash)
}

/// The pairs in one word; `carry` is 0x80 when the byte before the word is a slash.
#[inline(always)]
fn pairs_in(w: u64, carry: u64) -> (bool, bool) {
    let s = byte_mask(w, b'/');
    let after_slash = (s << 8) | carry;
    (after_slash & byte_mask(w, b'.') != 0, after_slash & s != 0)
}

/// The mount points in `/proc/self/mountinfo` text whose file-system type is one of
/// `types` (`fuse.*` style wildcards allowed: a trailing `*` matches any suffix).
pub fn mounts_of_types(mountinfo: &str, types: &[String]) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let fstype = right.split(' ').next()?;
            types
                .iter()
                .any(|t| match t.strip_suffix('*') {
                    Some(pre) => fstype.starts_with(pre),
                    None => fstype == t,
                })
                .then(|| unescape_octal(point))
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(base: &str, rel: &str) -> String {
        let mut buf = [0u8; PATH_MAX];
        let n = resolve_into(&mut buf, base.as_bytes(), rel.as_bytes()).unwrap();
        String::from_utf8(buf[..n].to_vec()).unwrap()
    }

    #[test]
    fn lexical_normalisation() {
        assert_eq!(resolve("/a/b", "c"), "/a/b/c");
        assert_eq!(resolve("/a/b", "../c"), "/a/c");
        assert_eq!(resolve("/a/b", "../../../c"), "/c");
        assert_eq!(resolve("/a", "/x//y/./z/"), "/x/y/z");
        assert_eq!(resolve("/", ".."), "/");
        assert_eq!(resolve("/a/b", ""), "/a/b");
        assert_eq!(resolve("/a/b", "./.."), "/a");
    }

    #[test]
    fn normal_form_detection() {
        assert!(is_normal(b"/scratch/x"));
        assert!(is_normal(b"/"));
        assert!(!is_normal(b"/a/.hidden"));
        assert!(is_normal(b"/a/x../y.z/very-long-component-name/and/more/x"));
        assert!(!is_normal(b"/a/very-long-component-name/and/more//x"));
        assert!(!is_normal(b"/1234567/.x"));
        assert!(!is_normal(b"/1234567//x"));
        assert!(!is_normal(b"/a/."));
        assert!(!is_normal(b"/a/.."));
        assert!(!is_normal(b"/a/../b"));
        assert!(!is_normal(b"//"));
        assert!(!is_normal(b""));
        assert!(!is_normal(b"/scratch//x"));
        assert!(!is_normal(b"/scratch/./x"));
        assert!(!is_normal(b"/scratch/x/"));
        assert!(!is_normal(b"x"));
    }

    /// The one-pass scan agrees with `strlen` and `is_normal` wherever the string starts
    /// relative to 16-byte blocks.
    #[test]
    fn one_pass_scan_agrees_with_the_slice_checks() {
        let cases: &[&[u8]] = &[
            b"/",
            b"//",
            b"/a",
            b"/a/",
            b"/a/.",
            b"/a/..",
            b"/a/.b",
            b"/scratch/x",
            b"/1234567/.x",
            b"/1234567//x",
            b"/123456789012345/x",
            b"/12345678901234/.x",
            b"/123456789012345/.x",
            b"/1234567890123456/.x",
            b"/dev/shm/sluice-bench.AbCdEf/managed/f",
            b"/a/very-long-component-name/and/more//x",
            b"/a/x../y.z/very-long-component-name/and/more/x",
            b"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/.x",
            b"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x",
            b"/aaaaaaaaaaaaaaa/.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x",
            b"/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
            b"relative/x",
            b"./x",
            b".hidden",
            b"a.b/c.d/.e",
            b"a.b/c.d/e.",
            b"/usr/lib/x86_64-linux-gnu/libc.so.6",
            b"/usr/lib/x86_64-linux-gnu/../../../scratch/libc.so.6",
            b"",
        ];
        let mut page = vec![0u8; 8192];
        let base = page.as_mut_ptr() as usize;
        let start = base.next_multiple_of(4096) - base;
        for case in cases {
            for off in 0..33 {
                let at = start + off;
                page[at..at + case.len()].copy_from_slice(case);
                page[at + case.len()] = 0;
                // SAFETY: NUL-terminated just above.
                let scan = unsafe { scan_c_path(page[at..].as_ptr()) };
                assert_eq!(
                    scan.len,
                    case.len(),
                    "{:?} at {off}",
                    String::from_utf8_lossy(case)
                );
                let first = case.first().copied().unwrap_or(0);
                assert_eq!(
                    scan.is_normal(first),
                    is_normal(case),
                    "{:?} at {off}",
                    String::from_utf8_lossy(case)
                );
                let (dot, _) = slash_pairs(case);
                assert_eq!(scan.slash_dot, dot, "{:?}", String::from_utf8_lossy(case));
                // SAFETY: as above.
                let dotted = unsafe { dot_component(page[at..].as_ptr()) };
                assert_eq!(
                    dotted,
                    dot || first == b'.',
                    "{:?} at {off}",
                    String::from_utf8_lossy(case)
                );
                page[at..at + case.len() + 1].fill(b'/');
            }
            page.fill(0);
        }
    }

    /// A NUL-terminated copy of `path` that ends where `page` ends, with the page after it
    /// unmapped: a read past the NUL's page faults.
    fn at_page_end(page: &mut [u8], path: &[u8]) -> *const u8 {
        let at = page.len() - path.len() - 1;
        page[at..at + path.len()].copy_from_slice(path);
        page[at + path.len()] = 0;
        page[at..].as_ptr()
    }

    #[test]
    fn leaves_place_a_path_at_a_glance_or_leave_it_to_the_lookup() {
        let long = format!("/{}", "l".repeat(LEAF_BYTES));
        let mounts = ["/scratch".to_string(), "/lustre/proj".into(), long.clone()];
        let t = MountTable::new(Some(&mounts), &["/lustre/proj/sub".to_string()]).unwrap();
        let leaves = t.leaves();
        let idx = |p: &str| t.lookup(p.as_bytes());
        let cases: &[(&str, Option<PlaceIdx>)] = &[
            ("/scratch", Some(idx("/scratch"))),
            ("/scratch/", Some(idx("/scratch"))),
            ("/scratch/a/b.c/d", Some(idx("/scratch"))),
            ("/scratch//a", Some(idx("/scratch"))),
            ("/lustre/proj/sub/x", Some(idx("/lustre/proj/sub"))),
            // A place with another below it, or too long to hold: the lookup's.
            ("/lustre/proj/x", None),
            (&format!("{long}/x"), None),
            // Not in the place, or a dot that may lead out of it: the lookup's.
            ("/scratchy/a", None),
            ("/scratc", None),
            ("/scratch/../etc", None),
            ("/scratch/.hidden", None),
            ("scratch/x", None),
            ("/", None),
            ("", None),
        ];
        // Two pages, the second unmapped.
        // SAFETY: an anonymous private mapping, unmapped at the end of the test.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        // SAFETY: the second page of the mapping.
        assert_eq!(
            unsafe { libc::mprotect(map.cast::<u8>().add(4096).cast(), 4096, libc::PROT_NONE) },
            0
        );
        // SAFETY: the first page, mapped and writable.
        let page = unsafe { std::slice::from_raw_parts_mut(map.cast::<u8>(), 4096) };
        for &(path, want) in cases {
            for off in 0..48 {
                let mut buf = vec![0u8; path.len() + 64];
                buf[off..off + path.len()].copy_from_slice(path.as_bytes());
                // SAFETY: NUL-terminated: the buffer is zeroed past the path.
                let got = unsafe { leaves.place_of(buf[off..].as_ptr()) };
                assert_eq!(got, want, "{path:?} at {off}");
            }
            // At the end of a page, the glance reads nothing past it, and may decline.
            // SAFETY: NUL-terminated within the mapped page.
            let got = unsafe { leaves.place_of(at_page_end(page, path.as_bytes())) };
            assert!(got.is_none() || got == want, "{path:?} at a page's end");
        }
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(map, 8192) };
    }

    #[test]
    fn the_root_leaves_no_leaf_when_it_is_managed() {
        let t = MountTable::new(None, &[]).unwrap();
        // SAFETY: a C string literal.
        assert_eq!(
            unsafe { t.leaves().place_of(c"/home/x".as_ptr().cast()) },
            None
        );
    }

    #[test]
    fn default_table_manages_all_but_pseudo_file_systems() {
        let t = MountTable::new(None, &[]).unwrap();
        assert!(t.is_managed(t.lookup(b"/scratch/x")));
        assert!(!t.is_managed(t.lookup(b"/proc/self/fd")));
        assert!(!t.is_managed(t.lookup(b"/dev")));
        assert!(t.is_managed(t.lookup(b"/device")));
    }

    #[test]
    fn managed_letters_are_those_of_managed_places() {
        let t = MountTable::new(Some(&["/scratch".into()]), &["/home/x".into()]).unwrap();
        let set = t.managed_letters();
        assert!(set.contains(b's') && set.contains(b'/'));
        assert!(!set.contains(b'h') && !set.contains(b'u'));
        assert_eq!(
            MountTable::new(None, &[]).unwrap().managed_letters(),
            LetterSet::ALL
        );
    }

    #[test]
    fn first_letters_of_places() {
        let t = MountTable::new(Some(&["/scratch".into()]), &[]).unwrap();
        assert!(t.no_place_starts_with(b'u'));
        assert!(!t.no_place_starts_with(b's'));
        assert!(!t.no_place_starts_with(b'/'));
        assert!(!t.no_place_starts_with(b'.'));
    }

    #[test]
    fn named_mounts_and_rule_places() {
        let t = MountTable::new(
            Some(&["/scratch".into()]),
            &["/scratch/proj".into(), "/home".into()],
        )
        .unwrap();
        assert!(!t.is_managed(t.lookup(b"/tmp/x")));
        assert!(t.is_managed(t.lookup(b"/scratch/x")));
        let proj = t.lookup(b"/scratch/proj/y");
        assert!(t.is_managed(proj));
        assert!(!t.is_managed(t.lookup(b"/home/u")));
        let m = t.mask_under("/scratch");
        assert_ne!(m & 1 << proj, 0);
        assert!(t.has_places_below(b"/"));
        assert!(!t.has_places_below(b"/scratch/proj"));
    }

    #[test]
    fn mountinfo_types() {
        let mi = "36 35 98:0 / /mnt/lustre rw - lustre 10.0.0.1@tcp:/fs rw\n\
                  37 35 98:0 / /mnt/with\\040space rw - fuse.sshfs x rw\n\
                  38 35 98:0 / /tmp rw - tmpfs tmpfs rw\n";
        assert_eq!(mounts_of_types(mi, &["lustre".into()]), vec!["/mnt/lustre"]);
        assert_eq!(
            mounts_of_types(mi, &["fuse.*".into()]),
            vec!["/mnt/with space"]
        );
    }
}
