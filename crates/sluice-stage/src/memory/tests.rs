//! The probe's reads under the fault handler: each read at the edge of a mapping, and
//! each agrees with the portable rules it stands for.

use std::ffi::c_char;

use super::probe::*;
use sluice_core::path::{MountTable, Scan};

/// Two pages, the second inaccessible: a read past the first faults.
struct EdgePage(*mut u8);

impl EdgePage {
    fn new() -> Self {
        super::signals::arm_for_tests();
        // SAFETY: an anonymous private mapping, unmapped on drop.
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
        let r = unsafe { libc::mprotect(map.cast::<u8>().add(4096).cast(), 4096, 0) };
        assert_eq!(r, 0);
        EdgePage(map.cast())
    }

    fn page(&mut self) -> &mut [u8] {
        // SAFETY: the first page, mapped and writable.
        unsafe { std::slice::from_raw_parts_mut(self.0, 4096) }
    }

    /// The first byte past the readable page.
    fn past(&self) -> *const c_char {
        self.0.wrapping_add(4096).cast()
    }
}

impl Drop for EdgePage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`.
        unsafe { libc::munmap(self.0.cast(), 8192) };
    }
}

/// The scan agrees with the slice checks wherever the string starts relative to
/// 16-byte blocks, and ends at a page's end.
#[test]
fn the_scan_agrees_with_the_slice_checks() {
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
    let mut edge = EdgePage::new();
    let page = edge.page();
    for case in cases {
        let want = Scan::of(case);
        // Bytes before the string that would count if the scan looked at them.
        for off in 0..33 {
            let at = 64 + off;
            page[..at].fill(b'/');
            page[at..at + case.len()].copy_from_slice(case);
            page[at + case.len()] = 0;
            page[at + case.len() + 1..at + case.len() + 40].fill(b'.');
            let got = scan(page[at..].as_ptr().cast());
            assert_eq!(
                got,
                Ok(want),
                "{:?} at {off}",
                String::from_utf8_lossy(case)
            );
        }
        let at = 4096 - case.len() - 1;
        page[at..at + case.len()].copy_from_slice(case);
        page[at + case.len()] = 0;
        let got = scan(page[at..].as_ptr().cast());
        assert_eq!(
            got,
            Ok(want),
            "{:?} at a page's end",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn a_string_the_kernel_cannot_read_is_unreadable() {
    let mut edge = EdgePage::new();
    let past = edge.past();
    let page = edge.page();
    page.fill(b'a');
    let t = MountTable::new(Some(&["/aaaa".into()]), &[]).unwrap();
    let prefixes = t.prefixes();
    let glance_at = |p: *const c_char| glance(p, prefixes.first());
    // Non-canonical: the CPU raises a general protection fault, not a page fault.
    let wild = 0xdead_c0de_dead_c0de_usize as *const c_char;
    for p in [std::ptr::null(), past, 0xdeadc0de as *const c_char, wild] {
        assert_eq!(scan(p), Err(Unreadable), "{p:?}");
        assert_eq!(glance_at(p), Err(Unreadable), "{p:?}");
    }
    // Running off the end of the readable page, from anywhere in it; and a path that
    // matches the place up to there.
    for at in [0, 4000, 4095] {
        let p = page[at..].as_ptr().cast();
        assert_eq!(scan(p), Err(Unreadable), "at {at}");
        assert_eq!(glance_at(p), Err(Unreadable), "at {at}");
    }
    page[4090..4096].copy_from_slice(b"/aaaa/");
    assert_eq!(glance_at(page[4090..].as_ptr().cast()), Err(Unreadable));
    page[4091..4096].copy_from_slice(b"aaaa/");
    assert_eq!(glance_at(page[4091..].as_ptr().cast()), Err(Unreadable));
}

/// The glance's sequence agrees with the stage's portable rules (`Prefix::stand_of`,
/// the letters, the scan) wherever a path starts relative to 16-byte blocks and
/// pages, right at the end of what is readable, and on both sides of where the
/// comparison stops reading 48 bytes at once (a page's last 48 bytes); with each
/// kind of place first (long, short, holding a dot component).
#[test]
fn the_glance_agrees_with_the_rules_it_stands_for() {
    let long = format!("/l/{}", "m".repeat(60));
    let mounts = [
        "/dev/shm/sluice-bench.AbCdEf/managed".to_string(),
        "/lustre/scratch".into(),
        long.clone(),
        "/home/.cache".into(),
    ];
    let mut paths: Vec<String> = [
        "/dev/shm/sluice-bench.AbCdEf/managed/f",
        "/dev/shm/sluice-bench.AbCdEf/managed",
        "/dev/shm/sluice-bench.AbCdEf/managed/",
        "/dev/shm/sluice-bench.AbCdEf/managedx",
        "/dev/shm/sluice-bench.AbCdEf/beside/f",
        "/dev/shm/sluice-bench.AbCdEf/beside/../managed/f",
        "/dev/shm/sluice-bench.AbCdEf//managed/f",
        "/dev/shm/sluice-bench.AbCdEf",
        "/dev/shm",
        "/dev/sh",
        "/lustre/scratch/a.b/c",
        "/lustre/scratch/.x",
        "/lustre/scratch/x/..",
        "/lustre/scratch",
        "/lustre/scratchy",
        "/lustre/home/x",
        "/lustre/home/.x",
        "/lustre",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/../x",
        "/home/.cache/x",
        "/home/.cache",
        "/home/x",
        "/$x",
        "//x",
        "/",
        "rel/x",
        "./x",
        ".x",
        "",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    paths.push(format!("{long}/x"));
    paths.push(format!("{}n/x", &long[..40]));
    let mut edge = EdgePage::new();
    let page = edge.page();
    for first in 0..mounts.len() {
        let order: Vec<String> = mounts[first..]
            .iter()
            .chain(&mounts[..first])
            .cloned()
            .collect();
        let t = MountTable::new(Some(&order), &[]).unwrap();
        let prefixes = t.prefixes();
        let place = prefixes.first();
        for path in &paths {
            let b = path.as_bytes();
            let expected = Ok(glance_of(b, place));
            // Starts over two blocks, far from the page's end; then every start from
            // 64 bytes before the page's end to the last that holds the path.
            let far = (4096 - 160..4096 - 128).map(|at| (at, "far from the end"));
            let last = 4096 - b.len() - 1;
            let near = (last.saturating_sub(64)..=last).map(|at| (at, "near the end"));
            for (at, place_of) in far.chain(near) {
                page[at..at + b.len()].copy_from_slice(b);
                page[at + b.len()] = 0;
                let got = glance(page[at..].as_ptr().cast(), place);
                assert_eq!(got, expected, "{path:?} at {at} ({place_of}), {order:?}");
            }
        }
    }
}

#[test]
fn a_stream_or_an_iovec_array_the_kernel_cannot_read_is_unreadable() {
    let mut edge = EdgePage::new();
    assert_eq!(stream_fd(std::ptr::null_mut()), Err(Unreadable));
    assert_eq!(stream_fd(edge.past().cast_mut().cast()), Err(Unreadable));
    // A FILE whose _fileno lies past the readable page.
    let page = edge.page();
    page[4088..4092].copy_from_slice(&0x2000i32.to_ne_bytes());
    let f = page[4088..].as_mut_ptr().cast();
    assert_eq!(stream_fd(f), Err(Unreadable));
    page[4088..4092].copy_from_slice(&0i32.to_ne_bytes());
    assert_eq!(stream_fd(f), Ok(None));
    // SAFETY: a stream glibc made.
    let real = unsafe { libc::fdopen(libc::dup(1), c"w".as_ptr()) };
    // SAFETY: as above.
    let fd = unsafe { libc::fileno(real) };
    assert_eq!(stream_fd(real.cast()), Ok(Some(fd)));
    // SAFETY: as above.
    unsafe { libc::fclose(real) };

    let iov = |base: *const u8, len| libc::iovec {
        iov_base: base.cast_mut().cast(),
        iov_len: len,
    };
    let three = [
        iov(page.as_ptr(), 3),
        iov(page.as_ptr(), 4),
        iov(page.as_ptr(), 5),
    ];
    assert_eq!(iov_len(three.as_ptr(), 3), 12);
    assert_eq!(iov_len(three.as_ptr(), 0), 0);
    let huge = [iov(page.as_ptr(), usize::MAX), iov(page.as_ptr(), 2)];
    assert_eq!(iov_len(huge.as_ptr(), 2), u64::MAX);
    // Two whole entries fit before the end of the readable page, not three.
    let last = page[4096 - 32..].as_mut_ptr().cast::<libc::iovec>();
    // SAFETY: two iovecs' room at the end of the page.
    unsafe { last.copy_from_nonoverlapping(three.as_ptr(), 2) };
    assert_eq!(iov_len(last, 2), 7);
    assert_eq!(iov_len(last, 3), 0);
    assert_eq!(iov_len(0xdeadc0de as *const libc::iovec, 1), 0);
}
