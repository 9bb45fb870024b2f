//! Users as the system's user database knows them.

use std::ffi::CStr;

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

/// Whether `uid` is root or a member of the group called `group`.
pub fn may_administer(uid: u32, gid: u32, group: Option<&str>) -> bool {
    if uid == 0 {
        return true;
    }
    let Some(group) = group else { return false };
    let Ok(cname) = std::ffi::CString::new(group) else {
        return false;
    };
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
        return false;
    }
    if gr.gr_gid == gid {
        return true;
    }
    let Some(name) = user_name(uid) else {
        return false;
    };
    let mut member = gr.gr_mem;
    // SAFETY: gr_mem is a NULL-terminated array of NUL-terminated strings in buf.
    unsafe {
        while !member.is_null() && !(*member).is_null() {
            if CStr::from_ptr(*member).to_bytes() == name.as_bytes() {
                return true;
            }
            member = member.add(1);
        }
    }
    false
}
