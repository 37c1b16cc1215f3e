//! Host directories shown in a phase (an external agent's installation):
//! the host made each into a read-only disk (the host's vm/shown.rs), which
//! the agent mounts where the harness says. The disk is read-only to the
//! machine itself, so neither the mount nor the device can be written.

use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use cleanroom_env::RootFs;

/// How long a disk may take to appear once its driver is loaded.
pub const DEVICE_WAIT: Duration = Duration::from_secs(60);

/// Mounts the disk of serial number `serial` at `path` of `root`, read-only;
/// returns the directories made for it, outermost first.
pub fn show(root: &RootFs, serial: &str, path: &str) -> io::Result<Vec<String>> {
    let device = disk_with_serial(serial, DEVICE_WAIT)?;
    let made = root.make_mount_point(path)?;
    let mounted = root.open_dir(path).and_then(|dir| {
        let target = format!("/proc/self/fd/{}", dir.as_raw_fd());
        crate::init::mount(
            Some(&device),
            &target,
            Some("ext4"),
            libc::MS_RDONLY | libc::MS_NODEV | libc::MS_NOSUID,
        )
    });
    if let Err(e) = mounted {
        root.remove_mount_points(&made);
        return Err(io::Error::new(e.kind(), format!("showing {path}: {e}")));
    }
    Ok(made)
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
