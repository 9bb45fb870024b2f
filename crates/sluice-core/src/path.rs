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

/// A set of bytes kept in one word, bit `c % 64` for byte `c`: the letters places start
/// with. It may hold a byte that was never added (one of the three that share its bit),
/// never lacks one that was: every use asks "may a place start so?", where a false yes
/// costs a comparison and a false no would misjudge. One word, so that the stage's probe
/// tests a letter with one load and one `bt`, in the cache line of the place it compares
/// with ([`Prefix`]): for path names, which are mostly ASCII letters, digits and
/// punctuation, the bytes sharing a bit rarely meet (lower case shares with `!`…`:`,
/// upper case with control bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct LetterSet(u64);

impl LetterSet {
    /// Every byte.
    pub const ALL: LetterSet = LetterSet(u64::MAX);

    /// Adds `c`.
    pub fn insert(&mut self, c: u8) {
        self.0 |= 1 << (c % 64);
    }

    /// Whether `c` may be in the set (see the type).
    #[inline(always)]
    pub fn contains(&self, c: u8) -> bool {
        self.0 >> (c % 64) & 1 != 0
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

    /// The managed places a path is compared with at a glance ([`Prefixes::glance`]):
    /// every one but the root when there are at most four, so that a path apart from
    /// them all lies in none; else (or when the root is managed) the managed places no
    /// other place lies below, at most four, which can only say where a path lies.
    pub fn prefixes(&self) -> Prefixes {
        let managed: Vec<usize> = (1..self.places.len())
            .filter(|&i| self.is_managed(i as PlaceIdx))
            .collect();
        let complete = !self.is_managed(0) && managed.len() <= MAX_PREFIXES;
        let letters = self.managed_letters();
        let mut out = Prefixes {
            list: [Prefix {
                letters,
                ..Prefix::default()
            }; MAX_PREFIXES],
            complete,
            ..Prefixes::default()
        };
        let leaf = |i: usize| {
            let path = self.places[i].path.as_bytes();
            path.len() < PREFIX_BYTES && !self.has_places_below(path)
        };
        let chosen = managed.into_iter().filter(|&i| complete || leaf(i));
        for ((slot, about), i) in out.list.iter_mut().zip(&mut out.about).zip(chosen) {
            *slot = Prefix::new(self.places[i].path.as_bytes(), letters);
            *about = About {
                idx: i as PlaceIdx,
                leaf: leaf(i),
            };
        }
        out
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

/// Most places [`Prefixes`] holds, and the bytes of each one's path it holds.
const MAX_PREFIXES: usize = 4;
const PREFIX_BYTES: usize = 48;

/// Up to four managed places, laid out to compare a path with at a glance: the common
/// call names a file on the one file system a job's rules are about, or one on a file
/// system no rule is about, and often one that shares the first letters of its path
/// with a managed place (`/lustre/home` beside a managed `/lustre/scratch`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Prefixes {
    /// What a glance reads, one cache line a place; a place comparing no byte ends it.
    list: [Prefix; MAX_PREFIXES],
    /// What the places stand for, read once a glance has placed a path.
    about: [About; MAX_PREFIXES],
    /// Whether `list` holds every managed place (the root not among them): then a path
    /// apart from them all lies in none.
    complete: bool,
}

/// What one place of [`Prefixes`] stands for, beside what a glance compares.
#[derive(Clone, Copy, Debug, Default)]
struct About {
    idx: PlaceIdx,
    /// Whether no other place lies below this one and its whole path is held: a path in
    /// it lies in this place.
    leaf: bool,
}

/// One place of [`Prefixes`]: all that a glance at a path reads, in one cache line (the
/// letters a managed place may start with, then the place's bytes), so that a path beside
/// a managed place costs the glance no line more than one elsewhere (after a system call,
/// each line a call reads is likely a miss).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Prefix {
    /// The path's first bytes, zero-padded; when the path is shorter than them, the NUL
    /// after it is compared too (the last compared byte is then 0).
    bytes: [u8; PREFIX_BYTES],
    /// Bit `i`: byte `i` is compared (none for no place). Worked out once here, not in
    /// every call.
    mask: u64,
    /// The letters after the leading slash that may lead into any managed place
    /// ([`MountTable::managed_letters`]), the same in every place of a list.
    letters: LetterSet,
}

const _: () = assert!(size_of::<Prefix>() == 64);

impl Default for Prefix {
    fn default() -> Self {
        Prefix {
            bytes: [0; PREFIX_BYTES],
            mask: 0,
            letters: LetterSet::default(),
        }
    }
}

/// Where a routine that does what [`Prefix::stand_of`] does on a C string finds what it
/// needs in a [`Prefix`], whose layout is C's: the bytes compared (zero-padded to whole
/// 16-byte blocks), the word whose bits say which bytes are compared, and the word of the
/// letters a managed place may start with ([`LetterSet`]).
pub mod prefix_layout {
    use super::Prefix;
    use std::mem::offset_of;

    /// The bytes compared.
    pub const BYTES: usize = offset_of!(Prefix, bytes);
    /// Which bytes are compared (a word).
    pub const MASK: usize = offset_of!(Prefix, mask);
    /// The letters a managed place may start with (a word).
    pub const LETTERS: usize = offset_of!(Prefix, letters);
}

/// Where a path lies, as [`Prefixes`] see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glance {
    /// In this managed place, which no other place lies below.
    In(PlaceIdx),
    /// In no managed place, and above none.
    Apart,
    /// A glance cannot tell: the full lookup's.
    Unknown,
}

/// How a path with no component starting with a dot stands to one place
/// ([`Prefix::stand_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stand {
    /// In it (equal to it, or below it).
    In,
    /// Neither in it nor above it.
    Apart,
    /// Above it, or a glance cannot tell.
    Unknown,
}

impl Prefixes {
    /// Where an absolute path lies, from how it stands to the first place, when that
    /// settles it: in the first place if it is one no other place lies below, apart from
    /// it if it is the only managed place, and unknown if there is no other place to
    /// compare with. `None` when the other places must be compared ([`Prefixes::glance`]).
    #[inline(always)]
    pub fn settled(&self, first: Stand) -> Option<Glance> {
        let head = &self.about[0];
        match first {
            Stand::In if head.leaf => Some(Glance::In(head.idx)),
            _ if self.list[1].mask != 0 => None,
            Stand::Apart if self.complete => Some(Glance::Apart),
            _ => Some(Glance::Unknown),
        }
    }

    /// The first place: the one a path is compared with first (one that compares no
    /// byte when there is none).
    #[inline(always)]
    pub fn first(&self) -> &Prefix {
        &self.list[0]
    }

    /// Where an absolute path lies: in a managed place no other place lies below, apart
    /// from every managed place, or unknown. `stand` says how the path stands to a place
    /// ([`Prefix::stand_of`]; the stage's probe does it on a C string): `None` when a
    /// component of the path starts with a dot (`.`, `..`: it may lead anywhere), or an
    /// error when the path cannot be read.
    pub fn glance<E>(
        &self,
        mut stand: impl FnMut(&Prefix) -> Result<Option<Stand>, E>,
    ) -> Result<Glance, E> {
        let mut apart = self.complete;
        let places = self.list.iter().zip(&self.about);
        for (prefix, about) in places.take_while(|(x, _)| x.mask != 0) {
            match stand(prefix)? {
                None => return Ok(Glance::Unknown),
                Some(Stand::In) if about.leaf => return Ok(Glance::In(about.idx)),
                Some(Stand::Apart) => {}
                Some(_) => apart = false,
            }
        }
        Ok(if apart {
            Glance::Apart
        } else {
            Glance::Unknown
        })
    }
}

impl Prefix {
    fn new(path: &[u8], letters: LetterSet) -> Prefix {
        let len = path.len().min(PREFIX_BYTES);
        let mut bytes = [0; PREFIX_BYTES];
        bytes[..len].copy_from_slice(&path[..len]);
        // A whole path's byte after it (its end) is compared too.
        let compared = (path.len() + 1).min(PREFIX_BYTES);
        Prefix {
            bytes,
            mask: (1u64 << compared) - 1,
            letters,
        }
    }

    /// The letters after the leading slash that may lead into a managed place.
    #[inline(always)]
    pub fn letters(&self) -> &LetterSet {
        &self.letters
    }

    /// How the absolute path `path` (its bytes; its NUL after them) stands to this place;
    /// `None` when a component of the path starts with a dot.
    ///
    /// The path is compared with the place's bytes up to the first that differs, and the
    /// bytes around that one say whether the two part ways between components
    /// (`/lustre/home/x` and `/lustre/scratch`), or one continues the other
    /// (`/lustre/scratch/x`), or the path lies above the place (`/lustre`) or has a double
    /// slash where they part (`/lustre//scratch`), which a glance leaves to the lookup.
    /// A component starting with a dot is looked for in the whole path (the stage's
    /// probe looks for it while it compares, not after).
    pub fn stand_of(&self, path: &[u8]) -> Option<Stand> {
        if path.first() == Some(&b'.') || slash_pairs(path).0 {
            return None;
        }
        let n = self.mask.count_ones() as usize;
        let byte = |i: usize| path.get(i).copied().unwrap_or(0);
        let differ = (0..n).find(|&i| byte(i) != self.bytes[i]);
        let Some(d) = differ else {
            // Whole when the NUL after the path was compared.
            return Some(if n > 0 && self.bytes[n - 1] == 0 {
                Stand::In
            } else {
                Stand::Unknown
            });
        };
        let end = |b: u8| b == 0 || b == b'/';
        let (ours, theirs) = (byte(d), self.bytes[d]);
        Some(match (end(ours), end(theirs)) {
            // The path's component goes on where the place's ends or differs.
            (false, _) => Stand::Apart,
            // The place ends where the path's component ends: the path is in it.
            (true, true) if theirs == 0 => Stand::In,
            // The path ends where the place goes on: above it.
            (true, true) => Stand::Unknown,
            // The path's component ends inside one of the place's, unless it is an
            // empty one (a double or a trailing slash), which the lookup must see.
            (true, false) if byte(d - 1) == b'/' => Stand::Unknown,
            (true, false) => Stand::Apart,
        })
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

/// What one pass over a C path found (the stage's probe makes it, sixteen bytes at a time):
/// its length and the pairs that keep it from being in normal form.
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
    /// The scan of `path` (its bytes before the NUL), a byte at a time.
    pub fn of(path: &[u8]) -> Scan {
        let (dot, slash) = slash_pairs(path);
        Scan {
            len: path.len(),
            slash_dot: dot,
            slash_slash: slash || path.last() == Some(&b'/'),
        }
    }

    /// Whether the path is absolute and in normal form (as [`is_normal`] judges it).
    #[inline]
    pub fn is_normal(&self, first: u8) -> bool {
        first == b'/' && !self.slash_dot && (!self.slash_slash || self.len == 1)
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

    #[test]
    fn scan_of_a_path_agrees_with_is_normal() {
        for case in [
            &b"/"[..],
            b"//",
            b"/a/",
            b"/a/.b",
            b"/a/..",
            b"/scratch/x",
            b"/scratch//x",
            b"/x.y/z",
            b"rel/x",
            b"",
        ] {
            let first = case.first().copied().unwrap_or(0);
            let scan = Scan::of(case);
            assert_eq!(scan.len, case.len());
            assert_eq!(
                scan.is_normal(first),
                is_normal(case),
                "{:?}",
                String::from_utf8_lossy(case)
            );
        }
    }

    /// Checks `prefixes.glance` on each path, and that the first place settles it the
    /// same way whenever it can.
    fn check_glances(prefixes: &Prefixes, cases: &[(&str, Glance)]) {
        for &(path, want) in cases {
            let b = path.as_bytes();
            let got = prefixes.glance(|x| Ok::<_, ()>(x.stand_of(b))).unwrap();
            assert_eq!(got, want, "{path:?}");
            if let Some(stand) = prefixes.first().stand_of(b)
                && let Some(settled) = prefixes.settled(stand)
            {
                assert_eq!(settled, want, "{path:?}, settled by the first place");
            }
        }
    }

    #[test]
    fn a_glance_places_a_path_in_a_leaf_or_apart_from_every_managed_place() {
        let long = format!("/{}", "l".repeat(PREFIX_BYTES));
        let mounts = ["/scratch".to_string(), "/lustre/proj".into(), long.clone()];
        let t = MountTable::new(Some(&mounts), &["/lustre/proj/sub".to_string()]).unwrap();
        let idx = |p: &str| t.lookup(p.as_bytes());
        let (scratch, sub) = (
            Glance::In(idx("/scratch")),
            Glance::In(idx("/lustre/proj/sub")),
        );
        let long_x = format!("{long}/x");
        let long_y = format!("{}y/x", &long[..30]);
        check_glances(
            &t.prefixes(),
            &[
                ("/scratch", scratch),
                ("/scratch/", scratch),
                ("/scratch/a/b.c/d", scratch),
                ("/scratch//a", scratch),
                ("/scratch/a.b/c.", scratch),
                // A component starting with a dot, which may lead anywhere.
                ("/scratch/../etc", Glance::Unknown),
                ("/scratch/.hidden", Glance::Unknown),
                ("/scratch/a/..", Glance::Unknown),
                ("/lustre/home/../proj/x", Glance::Unknown),
                ("/lustre/proj/sub/x", sub),
                // In a place with another below it, or one too long to hold whole.
                ("/lustre/proj/x", Glance::Unknown),
                (&long_x, Glance::Unknown),
                // Sharing letters with a place, and parting from it between components.
                ("/scratchy/a", Glance::Apart),
                ("/scratc", Glance::Apart),
                ("/lustre/home/x", Glance::Apart),
                ("/lustre/pro/x", Glance::Apart),
                ("/lustre/projects", Glance::Apart),
                (&long_y, Glance::Apart),
                ("/usr/lib/x86_64-linux-gnu/libc.so.6", Glance::Apart),
                // Above a place, or a double or trailing slash where the two part.
                ("/lustre", Glance::Unknown),
                ("/lustre/", Glance::Unknown),
                ("/lustre//proj/x", Glance::Unknown),
                ("//scratch/x", Glance::Unknown),
                ("/", Glance::Unknown),
            ],
        );
    }

    #[test]
    fn a_path_beside_the_one_managed_place_is_apart_at_a_glance() {
        let t = MountTable::new(Some(&["/dev/shm/a".into()]), &[]).unwrap();
        check_glances(
            &t.prefixes(),
            &[
                ("/dev/shm/b/f", Glance::Apart),
                ("/dev/shm/ab", Glance::Apart),
                ("/dev/sh", Glance::Apart),
                ("/dev/shm/a/f", Glance::In(t.lookup(b"/dev/shm/a"))),
                ("/dev/shm", Glance::Unknown),
                ("/dev/shm/b/../a/f", Glance::Unknown),
            ],
        );
    }

    #[test]
    fn a_glance_cannot_say_apart_when_the_root_or_many_places_are_managed() {
        let everything = MountTable::new(None, &["/home/x".to_string()]).unwrap();
        let home = Glance::In(everything.lookup(b"/home/x"));
        check_glances(
            &everything.prefixes(),
            &[("/home/x/y", home), ("/usr/x", Glance::Unknown)],
        );
        // A place whose path has a component starting with a dot: a path in it has one
        // too, and is left to the lookup.
        let dotted = MountTable::new(Some(&["/home/.cache".into()]), &[]).unwrap();
        check_glances(
            &dotted.prefixes(),
            &[
                ("/home/.cache/x", Glance::Unknown),
                ("/home/x", Glance::Apart),
                ("/home/x/../.cache/y", Glance::Unknown),
            ],
        );
        let many: Vec<String> = (0..5).map(|i| format!("/m{i}")).collect();
        let t = MountTable::new(Some(&many), &[]).unwrap();
        check_glances(
            &t.prefixes(),
            &[
                ("/m0/x", Glance::In(t.lookup(b"/m0"))),
                ("/usr/x", Glance::Unknown),
            ],
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
