//! Work in an environment's own mount namespace and root, from the host: a
//! forked child of the harness enters the mount namespace of the
//! environment's process `pid` and chroots into its root, so every path
//! resolves inside the environment, never on the host; it keeps only the
//! descriptors it is given and makes raw system calls only (safe between
//! fork and exit). The sandbox's and a container's seals, and a
//! container's host mounts, are made so.

use std::os::fd::AsRawFd;

use crate::error::EnvError;
use crate::sandbox::phase::open_ns;
use crate::sandbox::spawn;

/// The child's exit code when it could not enter.
pub(crate) const ENTERING_FAILED: i32 = 2;

/// Runs `body` in a forked child inside the environment of `pid`, keeping
/// the descriptors `keep`; the child's exit code is `body`'s.
pub(crate) fn run_in_root_of(pid: i32, keep: &[i32], body: impl FnOnce() -> i32) -> Result<i32, EnvError> {
    let mnt = open_ns(pid, "mnt")?;
    let root_path = format!("/proc/{pid}/root");
    let root = std::fs::File::open(&root_path).map_err(|e| EnvError::io(root_path, e))?;
    let mut kept: Vec<i32> = keep.iter().copied().chain([mnt.as_raw_fd(), root.as_raw_fd()]).collect();
    // SAFETY: the child makes raw system calls only, then _exit.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(EnvError::io("fork", std::io::Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: forked child; raw system calls on descriptors it holds.
        unsafe {
            spawn::close_all_but(&mut kept);
            if libc::setns(mnt.as_raw_fd(), libc::CLONE_NEWNS) != 0
                || libc::fchdir(root.as_raw_fd()) != 0
                || libc::chroot(c".".as_ptr()) != 0
            {
                libc::_exit(ENTERING_FAILED);
            }
            libc::_exit(body());
        }
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(child, &mut status, 0) };
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Err(EnvError::Phase("the process working in the environment's root was killed".into()))
    }
}
