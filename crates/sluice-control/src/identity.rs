//! Users and groups as the system's databases know them.

use std::ffi::{CStr, CString};

/// `uid`'s entry: its login name and primary group.
fn passwd(uid: u32) -> Option<(String, u32)> {
    // SAFETY: an all-zero passwd is a valid out-value for getpwuid_r.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 16 * 1024];
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the sizes given; getpwuid_r writes into them.
    let rc =
        unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() {
        return None;
    }
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
    // SAFETY: an all-zero passwd is a valid out-value for getpwnam_r.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 16 * 1024];
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the sizes given.
    let rc = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut out,
        )
    };
    rc == 0 && !out.is_null()
}

/// The group called `name`: its gid and its members (those for whom it is a
/// supplementary group).
fn group(name: &str) -> Option<(u32, Vec<String>)> {
    let cname = CString::new(name).ok()?;
    // SAFETY: an all-zero group is a valid out-value for getgrnam_r.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 64 * 1024];
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: pointers valid for the sizes given.
    let rc = unsafe {
        libc::getgrnam_r(
            cname.as_ptr(),
            &mut gr,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut out,
        )
    };
    if rc != 0 || out.is_null() {
        return None;
    }
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
