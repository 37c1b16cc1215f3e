//! PID 1 of the machine, from the host's initramfs: the kernel's virtual
//! file systems, the modules the host listed (virtio), the harness's start
//! (start.rs), the trial's disk, then the mode the start names.
//!
//! - `machine`: the disk becomes the root and its own init (systemd) takes
//!   PID 1; the agent forks first and serves beside it, from memory: no
//!   file of the disk is part of it.
//! - `service`: nothing of the disk runs; the agent serves the harness's
//!   file work on the mounted disk.
//!
//! Whatever happens, the machine ends powered off: a failure here shows on
//! the console, which the harness keeps.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

use cleanroom_env::vm::protocol::{Mode, DISK_SERIAL, PORT_NAME};

use crate::serve::{self, Limits, Place};
use crate::show::{disk_with_serial, DEVICE_WAIT};
use crate::start;

const SYSROOT: &str = "/sysroot";
/// The module list the host wrote into the initramfs, one .ko path a line,
/// in load order.
const MODULES: &str = "/cleanroom/modules";

pub fn run() -> ! {
    if let Err(e) = boot() {
        eprintln!("cleanroom-guest: {e}");
    }
    power_off()
}

pub fn power_off() -> ! {
    // SAFETY: plain system calls; reboot(2) does not return on success.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    loop {
        // SAFETY: pause has no preconditions.
        unsafe { libc::pause() };
    }
}

fn boot() -> io::Result<()> {
    mount(Some("proc"), "/proc", Some("proc"), 0)?;
    mount(Some("sysfs"), "/sys", Some("sysfs"), 0)?;
    mount(Some("devtmpfs"), "/dev", Some("devtmpfs"), 0)?;
    load_modules(|module| !is_disk_driver(module))?;
    let mut port = open_port()?;
    // A booted snapshot is this machine, saved while it waits here.
    let start = start::wait(&mut port)?;
    start::apply(&start)?;
    // The disk's driver probes the disk only now: a machine resumed from a
    // snapshot sees the trial's disk, its size included, not the one the
    // snapshot was booted with.
    load_modules(is_disk_driver)?;
    let disk = disk_with_serial(DISK_SERIAL, DEVICE_WAIT)?;
    std::fs::create_dir_all(SYSROOT)?;
    mount(Some(&disk), SYSROOT, Some("ext4"), 0)?;
    grow(&disk, SYSROOT)?;
    match start.mode {
        Mode::Service => {
            serve::serve(
                Box::new(port.try_clone()?),
                Box::new(port),
                SYSROOT,
                Mode::Service,
                Limits::none(),
                Place::VirtualMachine,
            )?;
            Ok(())
        }
        Mode::Machine => switch_root(port, start.limits),
    }
}

fn is_disk_driver(module: &str) -> bool {
    module.ends_with("/virtio_blk.ko")
}

/// Moves the disk to `/`, forks the agent, and becomes the disk's init.
fn switch_root(port: File, limits: Limits) -> io::Result<()> {
    for fs in ["/dev", "/proc", "/sys"] {
        let target = format!("{SYSROOT}{fs}");
        std::fs::create_dir_all(&target)?;
        mount(Some(fs), &target, None, libc::MS_MOVE)?;
    }
    // systemd finds cgroup2 mounted and keeps it; the agent's commands get
    // their limits from it before systemd has started.
    let _ = mount(Some("cgroup2"), &format!("{SYSROOT}/sys/fs/cgroup"), Some("cgroup2"), 0);
    std::env::set_current_dir(SYSROOT)?;
    mount(Some("."), "/", None, libc::MS_MOVE)?;
    let dot = CString::new(".").expect("no NUL");
    // SAFETY: NUL-terminated path.
    if unsafe { libc::chroot(dot.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    std::env::set_current_dir("/")?;
    // SAFETY: fork in a process with one thread.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // SAFETY: setsid has no preconditions.
            unsafe { libc::setsid() };
            let served = serve::serve(
                Box::new(port.try_clone()?),
                Box::new(port),
                "/",
                Mode::Machine,
                limits,
                Place::VirtualMachine,
            );
            if let Err(e) = served {
                eprintln!("cleanroom-guest: {e}");
            }
            power_off()
        }
        _ => {
            drop(port);
            for init in ["/sbin/init", "/lib/systemd/systemd"] {
                let path = CString::new(init).expect("no NUL");
                let argv = [path.as_ptr(), std::ptr::null()];
                // SAFETY: NUL-terminated path and a NULL-terminated argv.
                unsafe { libc::execv(path.as_ptr(), argv.as_ptr()) };
            }
            // No init on the disk (the agent removed it): stay PID 1 and
            // reap, so the agent's commands still run.
            eprintln!("cleanroom-guest: the disk has no init; running without one");
            loop {
                // SAFETY: waiting for any child; the status is not needed.
                unsafe { libc::wait(std::ptr::null_mut()) };
            }
        }
    }
}

/// Grows the disk's file system to the whole disk (the trial's overlay is
/// the image plus the task's `disk_mb`), online, as resize2fs would.
fn grow(disk: &str, mounted: &str) -> io::Result<()> {
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    const EXT4_IOC_RESIZE_FS: libc::c_ulong = 0x4008_6610;
    use std::os::fd::AsRawFd;
    let disk = File::open(disk)?;
    let mut bytes: u64 = 0;
    // SAFETY: the ioctl writes one u64.
    if unsafe { libc::ioctl(disk.as_raw_fd(), BLKGETSIZE64, &mut bytes) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let c = CString::new(mounted).expect("no NUL");
    // SAFETY: statvfs fills the zeroed struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let blocks: u64 = bytes / st.f_frsize;
    if blocks <= st.f_blocks {
        return Ok(());
    }
    let dir = File::open(mounted)?;
    // SAFETY: the ioctl reads one u64.
    if unsafe { libc::ioctl(dir.as_raw_fd(), EXT4_IOC_RESIZE_FS, &blocks) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("growing the disk's file system: {e}")));
    }
    Ok(())
}

/// Loads the modules of the host's list that `which` picks, in its order.
fn load_modules(which: impl Fn(&str) -> bool) -> io::Result<()> {
    let list = match std::fs::read_to_string(MODULES) {
        Ok(list) => list,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for path in list.lines().filter(|l| !l.is_empty() && which(l)) {
        let file = File::open(path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
        let params = CString::new("").expect("no NUL");
        use std::os::fd::AsRawFd;
        // SAFETY: an open module file and an empty parameter string.
        let r = unsafe { libc::syscall(libc::SYS_finit_module, file.as_raw_fd(), params.as_ptr(), 0) };
        let e = io::Error::last_os_error();
        if r != 0 && e.raw_os_error() != Some(libc::EEXIST) {
            return Err(io::Error::new(e.kind(), format!("loading {path}: {e}")));
        }
    }
    Ok(())
}

/// The virtio-serial port the host named [`PORT_NAME`].
fn open_port() -> io::Result<File> {
    let start = Instant::now();
    loop {
        for entry in std::fs::read_dir("/sys/class/virtio-ports").into_iter().flatten().flatten() {
            let name = std::fs::read_to_string(entry.path().join("name")).unwrap_or_default();
            if name.trim() == PORT_NAME {
                let dev = format!("/dev/{}", entry.file_name().to_string_lossy());
                if std::path::Path::new(&dev).exists() {
                    return File::options().read(true).write(true).open(&dev);
                }
            }
        }
        if start.elapsed() > DEVICE_WAIT {
            return Err(io::Error::other(format!("no virtio port named {PORT_NAME}")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn mount(
    source: Option<&str>,
    target: &str,
    fstype: Option<&str>,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let c = |s: &str| CString::new(s).expect("no NUL");
    let (source, target, fstype) = (source.map(c), c(target), fstype.map(c));
    let ptr = |s: &Option<CString>| s.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings or NULL, no data argument.
    let r = unsafe { libc::mount(ptr(&source), target.as_ptr(), ptr(&fstype), flags, std::ptr::null()) };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("mount {}: {e}", target.to_string_lossy())));
    }
    Ok(())
}
