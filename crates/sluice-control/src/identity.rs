//! Users and groups as the system's databases know them.

use std::ffi::{CStr, CString, c_char, c_int};

/// An entry of the user or group database: a C struct of integers and pointers, for which
/// all zeros is a valid value.
trait Entry {}
impl Entry for libc::passwd {}
impl Entry for libc::group {}

/// Reads an entry of the user or group database with its reentrant lookup (`getpwuid_r`,
/// `getpwnam_r`, `getgrnam_r`: one signature but the key): the entry, whose strings are
/// in `buf`, or `None` when there is none or `buf` is too small for it.
fn lookup<K, T: Entry>(
    key: K,
    call: unsafe extern "C" fn(K, *mut T, *mut c_char, usize, *mut *mut T) -> c_int,
    buf: &mut [u8],
) -> Option<T> {
    // SAFETY: all zeros is a valid entry (`Entry`), and so a valid out-value.
    let mut entry: T = unsafe { std::mem::zeroed() };
    let mut out: *mut T = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the sizes given; the lookup writes into them.
    let rc = unsafe {
        call(
            key,
            &mut entry,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut out,
        )
    };
    (rc == 0 && !out.is_null()).then_some(entry)
}

/// `uid`'s entry: its login name and primary group.
fn passwd(uid: u32) -> Option<(String, u32)> {
    let mut buf = vec![0u8; 16 * 1024];
    let pw = lookup(uid, libc::getpwuid_r, &mut buf)?;
    // SAFETY: on success pw_name points into buf, NUL-terminated.
    let name = unsafe { CStr::from_ptr(pw.pw_name) }
        .to_string_lossy()
        .into_owned();
    Some((name, pw.pw_gid))
}

/// The login name of `uid`, if the user database has one.
pub fn user_name(uid: u32) -> Option<String> {
    passwd(uid).map(|(name, _)| name)
}

/// The primary group of `uid`, if the user database has one.
pub fn primary_gid(uid: u32) -> Option<u32> {
    passwd(uid).map(|(_, gid)| gid)
}

/// Whether the user database knows a user called `name`.
pub fn user_exists(name: &str) -> bool {
    let Ok(cname) = CString::new(name) else {
        return false;
    };
    let mut buf = vec![0u8; 16 * 1024];
    lookup(cname.as_ptr(), libc::getpwnam_r, &mut buf).is_some()
}

/// The group called `name`: its gid and its members (those for whom it is a
/// supplementary group).
fn group(name: &str) -> Option<(u32, Vec<String>)> {
    let cname = CString::new(name).ok()?;
    let mut buf = vec![0u8; 64 * 1024];
    let gr = lookup(cname.as_ptr(), libc::getgrnam_r, &mut buf)?;
    let mut members = Vec::new();
    let mut member = gr.gr_mem;
    // SAFETY: gr_mem is a NULL-terminated array of NUL-terminated strings in buf.
    unsafe {
        while !member.is_null() && !(*member).is_null() {
            members.push(CStr::from_ptr(*member).to_string_lossy().into_owned());
            member = member.add(1);
        }
    }
    Some((gr.gr_gid, members))
}

/// Whether the group database knows a group called `name`.
pub fn group_exists(name: &str) -> bool {
    group(name).is_some()
}

/// Whether `uid` (primary group `gid`) is root, one of `users` by login name, or a member
/// of the group called `group`.
pub fn may_administer(uid: u32, gid: u32, group_name: Option<&str>, users: &[String]) -> bool {
    if uid == 0 {
        return true;
    }
    let name = user_name(uid);
    if name.as_ref().is_some_and(|n| users.contains(n)) {
        return true;
    }
    let Some((group_gid, members)) = group_name.and_then(group) else {
        return false;
    };
    group_gid == gid || name.is_some_and(|n| members.contains(&n))
}
