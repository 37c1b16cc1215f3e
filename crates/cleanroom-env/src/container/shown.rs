//! Host directories shown read-only inside a container for one phase (an
//! external agent's installation). Each is cloned from the host's mount
//! tree (open_tree), made read-only, and attached at its place in the
//! container's mount namespace by a forked child that entered it and its
//! root (move_mount), before any command of the phase runs. The container
//! has no CAP_SYS_ADMIN: nothing inside can remount or unmount it. The
//! mount ends with the container's mount namespace, at the phase's end.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use crate::backend::HostMount;
use crate::error::EnvError;
use crate::sandbox::in_root::run_in_root_of;

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// The kernel's `struct mount_attr`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// A read-only clone of the host directory `host`, attached nowhere yet.
fn read_only_clone(host: &std::path::Path) -> Result<OwnedFd, EnvError> {
    let what = || format!("showing {} inside the container", host.display());
    let path = CString::new(host.as_os_str().as_bytes()).map_err(|_| EnvError::Phase(what()))?;
    let flags = OPEN_TREE_CLONE | AT_RECURSIVE | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: a NUL-terminated path; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    if fd < 0 {
        return Err(EnvError::io(what(), std::io::Error::last_os_error()));
    }
    // SAFETY: open_tree gave us this descriptor.
    let tree = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE;
    // SAFETY: the kernel reads `attr` of the size given.
    let set = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if set != 0 {
        return Err(EnvError::io(what(), std::io::Error::last_os_error()));
    }
    Ok(tree)
}

/// Attaches each of `mounts` at its path inside the container whose init
/// is `pid` (the mount points are there already).
pub(crate) fn show(pid: i32, mounts: &[HostMount]) -> Result<(), EnvError> {
    let mut trees = Vec::new();
    for mount in mounts {
        let target = CString::new(mount.path.as_str())
            .map_err(|_| EnvError::Phase(format!("cannot show a host directory at `{}`", mount.path)))?;
        trees.push((read_only_clone(&mount.host)?, target));
    }
    let keep: Vec<i32> = trees.iter().map(|(tree, _)| tree.as_raw_fd()).collect();
    let attaching = || {
        for (tree, target) in &trees {
            // SAFETY: a raw system call on a descriptor and a path prepared
            // before the fork.
            let moved = unsafe {
                libc::syscall(
                    libc::SYS_move_mount,
                    tree.as_raw_fd(),
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    target.as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH,
                )
            };
            if moved != 0 {
                return 3;
            }
        }
        0
    };
    match run_in_root_of(pid, &keep, attaching)? {
        0 => Ok(()),
        _ => Err(EnvError::Phase(format!(
            "cannot show {} inside the container",
            mounts.iter().map(|m| m.host.display().to_string()).collect::<Vec<_>>().join(", ")
        ))),
    }
}
