//! Sealing paths inside an environment's own root: every directory above a
//! sealed path is bound onto itself as it is (the kernel refuses to unlink
//! or rename a mount point, EBUSY), and the path itself read-only. Run
//! where the environment's root is `/`: the sandbox's forked child after it
//! chrooted (sandbox/seal.rs), a machine's guest agent. Raw system calls
//! only, safe between fork and exec; no component may be a symbolic link.

use std::collections::BTreeSet;
use std::ffi::CString;

use crate::error::EnvError;

/// Most paths sealed in one phase (files, and the directories above them).
pub const MAX_SEALED: usize = 20_000;

/// The mounts to make, outermost first: every directory above a sealed
/// path (pinned as it is), then the sealed paths (read-only).
pub fn plan(paths: &[String]) -> Result<(Vec<CString>, Vec<CString>), EnvError> {
    let mut pinned = BTreeSet::new();
    let mut sealed = BTreeSet::new();
    for path in paths {
        if !path.starts_with('/') || path.split('/').any(|c| c == ".." || c == ".") {
            return Err(EnvError::Phase(format!("cannot seal `{path}`: not a plain absolute path")));
        }
        let path = path.trim_end_matches('/');
        let mut at = 0;
        while let Some(slash) = path[at + 1..].find('/') {
            at += slash + 1;
            pinned.insert(path[..at].to_string());
        }
        sealed.insert(path.to_string());
    }
    if pinned.len() + sealed.len() > MAX_SEALED {
        return Err(EnvError::Phase(format!(
            "cannot seal {} paths and the {} directories above them: at most {MAX_SEALED}",
            sealed.len(),
            pinned.len()
        )));
    }
    // A directory that is itself sealed is bound read-only, not pinned.
    pinned.retain(|p| !sealed.contains(p));
    // BTreeSet order puts a directory before everything under it.
    let c = |set: BTreeSet<String>| {
        set.into_iter()
            .map(|p| CString::new(p).map_err(|_| EnvError::Phase("a sealed path holds a NUL".into())))
            .collect::<Result<Vec<CString>, EnvError>>()
    };
    Ok((c(pinned)?, c(sealed)?))
}

/// Whether every component of `path` exists and none is a symbolic link.
///
/// # Safety
/// Raw system calls only; `path` is absolute in the caller's root.
/// Components are tried one by one in a stack buffer (no allocation in the
/// forked child).
pub unsafe fn link_free(path: &CString) -> bool {
    let bytes = path.as_bytes();
    let mut buf = [0u8; 4096];
    if bytes.len() >= buf.len() {
        return false;
    }
    for end in (1..=bytes.len()).filter(|&i| i == bytes.len() || bytes[i] == b'/') {
        buf[..end].copy_from_slice(&bytes[..end]);
        buf[end] = 0;
        // SAFETY: buf is NUL-terminated; st is written by the kernel.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::lstat(buf.as_ptr().cast(), &mut st) } != 0
            || st.st_mode & libc::S_IFMT == libc::S_IFLNK
        {
            return false;
        }
    }
    true
}

/// Binds `path` onto itself; with MS_RDONLY, read-only.
///
/// # Safety
/// Raw system calls only; the caller has checked `path` with [`link_free`].
pub unsafe fn bind(path: &CString, flags: libc::c_ulong) -> bool {
    let none = std::ptr::null::<libc::c_char>();
    let hardened = libc::MS_NOSUID | libc::MS_NODEV;
    // SAFETY: raw system calls on a NUL-terminated path.
    unsafe {
        libc::mount(path.as_ptr(), path.as_ptr(), none, libc::MS_BIND, none.cast()) == 0
            && (flags == 0
                || libc::mount(
                    none,
                    path.as_ptr(),
                    none,
                    libc::MS_BIND | libc::MS_REMOUNT | flags | hardened,
                    none.cast(),
                ) == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[CString]) -> Vec<&str> {
        v.iter().map(|c| c.to_str().unwrap()).collect()
    }

    #[test]
    fn every_directory_above_a_sealed_path_is_pinned_outermost_first() {
        let paths = ["/w/a/run.sh", "/w/a/data/x.csv", "/.cleanroom-1"].map(String::from);
        let (pinned, sealed) = plan(&paths).unwrap();
        assert_eq!(names(&pinned), ["/w", "/w/a", "/w/a/data"]);
        assert_eq!(names(&sealed), ["/.cleanroom-1", "/w/a/data/x.csv", "/w/a/run.sh"]);
    }

    #[test]
    fn relative_or_dotted_paths_are_refused() {
        for bad in ["w/a", "/w/../etc/shadow", "/w/./a"] {
            assert!(plan(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}
