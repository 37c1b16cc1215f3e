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

use std::os::fd::AsRawFd;

use crate::error::EnvError;
use crate::sandbox::phase::open_ns;
use crate::sandbox::spawn;
use crate::seal::{bind, link_free, plan};

const MOUNT_FAILED: i32 = 3;

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
