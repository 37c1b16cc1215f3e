//! Host directories shown in a phase (an external agent's installation).
//! In a machine, the host made each into a read-only disk (the host's
//! vm/shown.rs), which the agent mounts where the harness says; the disk is
//! read-only to the machine itself, so neither the mount nor the device can
//! be written. On a host of the ssh backend, the harness copied the
//! directory there (the harness's ssh/shown.rs), and the agent binds the
//! copy read-only in its own mount namespace: the phase's root can remount
//! it, but only this host's copy is then written, never the harness's.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use cleanroom_env::vm::protocol::Shown;
use cleanroom_env::RootFs;

/// How long a disk may take to appear once its driver is loaded.
pub const DEVICE_WAIT: Duration = Duration::from_secs(60);

/// Mounts `what` at `path` of `root`, read-only; returns the directories
/// made for it, outermost first.
pub fn show(root: &RootFs, what: &Shown, path: &str) -> io::Result<Vec<String>> {
    let made = root.make_mount_point(path)?;
    let mounted = root.open_dir(path).and_then(|dir| {
        let target = format!("/proc/self/fd/{}", dir.as_raw_fd());
        let flags = libc::MS_RDONLY | libc::MS_NODEV | libc::MS_NOSUID;
        match what {
            Shown::Disk { serial } => {
                let device = disk_with_serial(serial, DEVICE_WAIT)?;
                crate::init::mount(Some(&device), &target, Some("ext4"), flags)
            }
            Shown::Copy { source } => bind(root, source, &target, path, flags),
        }
    });
    if let Err(e) = mounted {
        root.remove_mount_points(&made);
        return Err(io::Error::new(e.kind(), format!("showing {path}: {e}")));
    }
    Ok(made)
}

/// Binds `source` onto `target` (the fd path of `path`'s directory) with
/// `flags`. A bind takes its flags only from a remount, of the new mount's
/// root: `path`, opened again, now reaches it.
fn bind(root: &RootFs, source: &str, target: &str, path: &str, flags: libc::c_ulong) -> io::Result<()> {
    crate::init::mount(Some(source), target, None, libc::MS_BIND)?;
    let bound = root.open_dir(path).and_then(|bound| {
        let at = format!("/proc/self/fd/{}", bound.as_raw_fd());
        crate::init::mount(None, &at, None, libc::MS_REMOUNT | libc::MS_BIND | flags)
    });
    if bound.is_err() {
        // Never left writable: the bind goes with its failure (by its
        // path: the fd reaches what lies under it).
        let at = root.host_path().join(path.trim_start_matches('/'));
        if let Ok(at) = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()) {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::umount2(at.as_ptr(), libc::MNT_DETACH) };
        }
    }
    bound
}

/// The device node of the virtio disk whose serial number is `serial`,
/// waited for up to `wait`.
pub fn disk_with_serial(serial: &str, wait: Duration) -> io::Result<String> {
    let start = Instant::now();
    loop {
        for entry in std::fs::read_dir("/sys/block").into_iter().flatten().flatten() {
            let found = std::fs::read_to_string(entry.path().join("serial")).unwrap_or_default();
            let dev = format!("/dev/{}", entry.file_name().to_string_lossy());
            if found.trim() == serial && std::path::Path::new(&dev).exists() {
                return Ok(dev);
            }
        }
        if start.elapsed() > wait {
            return Err(io::Error::other(format!("no disk of serial number {serial} appeared")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
