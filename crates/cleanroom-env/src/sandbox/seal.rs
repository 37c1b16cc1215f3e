//! Sealed paths: files and directories of the environment that no process
//! of a phase can change, remove or replace.
//!
//! Each sealed path is bound onto itself read-only in the phase's mount
//! namespace, and every directory above it (but `/`) onto itself as it is:
//! the kernel refuses to unlink or rename a mount point (EBUSY), and no
//! process inside may unmount (no CAP_SYS_ADMIN, and the filter refuses
//! umount). So a process of the verification phase cannot edit a
//! protected file, nor swap in another one by renaming a directory on its
//! path, even for a moment.
//!
//! As in kernel_views.rs, a forked child of the harness enters the holder's
//! mount namespace and chroots into its root before any command of the
//! phase runs; it checks that no component of a path is a symbolic link
//! (so nothing is resolved through one) and makes raw system calls only.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::fd::AsRawFd;

use crate::error::EnvError;
use crate::sandbox::phase::open_ns;
use crate::sandbox::spawn;

/// Most paths sealed in one phase (files, and the directories above them).
pub(crate) const MAX_SEALED: usize = 20_000;

const MOUNT_FAILED: i32 = 3;

/// The mounts to make, outermost first: every directory above a sealed
/// path (pinned as it is), then the sealed paths (read-only).
fn plan(paths: &[String]) -> Result<(Vec<CString>, Vec<CString>), EnvError> {
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

/// Seals `paths` in the phase whose holder is `holder`.
pub(crate) fn seal(holder: i32, paths: &[String]) -> Result<(), EnvError> {
    if paths.is_empty() {
        return Ok(());
    }
    let (pinned, sealed) = plan(paths)?;
    let mnt = open_ns(holder, "mnt")?;
    let root_path = format!("/proc/{holder}/root");
    let root = std::fs::File::open(&root_path).map_err(|e| EnvError::io(root_path, e))?;
    // SAFETY: the child only makes raw system calls on data prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(EnvError::io("fork", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: forked child; raw system calls, then _exit.
        unsafe {
            spawn::close_all_but(&mut [mnt.as_raw_fd(), root.as_raw_fd()]);
            if libc::setns(mnt.as_raw_fd(), libc::CLONE_NEWNS) != 0
                || libc::fchdir(root.as_raw_fd()) != 0
                || libc::chroot(c".".as_ptr()) != 0
            {
                libc::_exit(2);
            }
            for dir in &pinned {
                if link_free(dir) && !bind(dir, 0) {
                    libc::_exit(MOUNT_FAILED);
                }
            }
            for path in &sealed {
                if link_free(path) && !bind(path, libc::MS_RDONLY) {
                    libc::_exit(MOUNT_FAILED);
                }
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(EnvError::Phase("cannot seal the verifier's and the protected files in the environment".into()))
    }
}

/// Whether every component of `path` exists and none is a symbolic link.
/// Components are tried one by one in a stack buffer (no allocation in the
/// forked child).
unsafe fn link_free(path: &CString) -> bool {
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
unsafe fn bind(path: &CString, flags: libc::c_ulong) -> bool {
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
