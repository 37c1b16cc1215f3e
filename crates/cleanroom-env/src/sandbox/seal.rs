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

use crate::error::EnvError;
use crate::sandbox::in_root::run_in_root_of;
use crate::seal::{bind, link_free, plan};

const MOUNT_FAILED: i32 = 3;

/// Seals `paths` in the phase whose holder is `holder`.
pub(crate) fn seal(holder: i32, paths: &[String]) -> Result<(), EnvError> {
    if paths.is_empty() {
        return Ok(());
    }
    let (pinned, sealed) = plan(paths)?;
    let sealing = || {
        // SAFETY: raw system calls on paths prepared before the fork.
        unsafe {
            for dir in &pinned {
                if link_free(dir) && !bind(dir, 0) {
                    return MOUNT_FAILED;
                }
            }
            for path in &sealed {
                if link_free(path) && !bind(path, libc::MS_RDONLY) {
                    return MOUNT_FAILED;
                }
            }
        }
        0
    };
    match run_in_root_of(holder, &[], sealing)? {
        0 => Ok(()),
        _ => Err(EnvError::Phase(
            "cannot seal the verifier's and the protected files in the environment".into(),
        )),
    }
}
