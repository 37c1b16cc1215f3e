//! What a phase sees of the kernel: /proc and /sys, trimmed to the
//! environment's own.
//!
//! bubblewrap mounts a fresh /proc and leaves /sys to us. After it has built
//! the sandbox, and before any command runs, a forked child of the harness
//! enters the holder's network namespace and:
//!
//! - makes a fresh sysfs, read-only, not yet attached anywhere: made in the
//!   phase's network namespace, it lists the environment's network devices,
//!   not the host's, and has no cgroup tree mounted under it. It is made in
//!   the mount keeper's namespace, where the host's /sys is in view: the
//!   kernel lets root of a user namespace (the rootless sandbox) make a
//!   sysfs only where one is already fully visible, which the phase's own
//!   namespace never has;
//!
//! then enters the holder's mount namespace and chroots into its root (so
//! every path resolves inside the environment, never on the host), and:
//!
//! - attaches that sysfs at /sys;
//! - makes /proc/sys and /proc/sysrq-trigger read-only (bubblewrap, run as
//!   root, leaves them writable);
//! - masks what tells about the host or other tenants, as Docker does: the
//!   host's kernel command line, the key lists of the kernel keyring,
//!   kernel memory, timer and scheduler internals (the environment's
//!   /dev/null bound over each file, read-only), and firmware and bus
//!   listings (an empty read-only tmpfs over each directory).
//!
//! The child makes raw system calls only: nothing of the environment is
//! executed with the harness's privileges.

use std::ffi::CString;
use std::os::fd::AsRawFd;

use crate::error::EnvError;
use crate::sandbox::phase::open_ns;
use crate::sandbox::spawn;

const READ_ONLY: &[&str] = &["/proc/sys"];
const MASKED_FILES: &[&str] = &[
    "/proc/cmdline",
    "/proc/keys",
    "/proc/key-users",
    "/proc/kcore",
    "/proc/kallsyms",
    "/proc/timer_list",
    "/proc/sched_debug",
    "/proc/latency_stats",
    "/proc/sysrq-trigger",
];
const MASKED_DIRS: &[&str] = &["/proc/acpi", "/proc/scsi", "/sys/firmware"];

/// Exit codes of the child, for the error message.
const SETUP: i32 = 2;
const SYSFS: i32 = 3;
const BIND: i32 = 4;
const MASK: i32 = 5;

struct Prepared {
    read_only: Vec<CString>,
    masked_files: Vec<CString>,
    masked_dirs: Vec<CString>,
}

fn cstrings(paths: &[&str]) -> Vec<CString> {
    paths.iter().map(|p| CString::new(*p).expect("no NUL in a constant")).collect()
}

/// Trims the kernel views of the phase whose holder is `holder`, in the
/// environment whose mount keeper is `keeper`.
pub(crate) fn trim(holder: i32, keeper: i32) -> Result<(), EnvError> {
    let mnt = open_ns(holder, "mnt")?;
    let net = open_ns(holder, "net")?;
    let keeper_mnt = open_ns(keeper, "mnt")?;
    let root_path = format!("/proc/{holder}/root");
    let root = std::fs::File::open(&root_path).map_err(|e| EnvError::io(root_path, e))?;
    let p = Prepared {
        read_only: cstrings(READ_ONLY),
        masked_files: cstrings(MASKED_FILES),
        masked_dirs: cstrings(MASKED_DIRS),
    };
    // SAFETY: the child only makes raw system calls on data prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(EnvError::io("fork", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: forked child; raw system calls, then _exit.
        unsafe {
            spawn::close_all_but(&mut [
                mnt.as_raw_fd(),
                net.as_raw_fd(),
                root.as_raw_fd(),
                keeper_mnt.as_raw_fd(),
            ]);
            if libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET) != 0
                || libc::setns(keeper_mnt.as_raw_fd(), libc::CLONE_NEWNS) != 0
            {
                libc::_exit(SETUP);
            }
            let sysfs = detached_sysfs();
            if sysfs < 0 {
                libc::_exit(SYSFS);
            }
            if libc::setns(mnt.as_raw_fd(), libc::CLONE_NEWNS) != 0
                || libc::fchdir(root.as_raw_fd()) != 0
                || libc::chroot(c".".as_ptr()) != 0
            {
                libc::_exit(SETUP);
            }
            libc::_exit(trim_in_child(sysfs, &p));
        }
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(code) => Err(EnvError::Phase(format!(
            "cannot trim the environment's view of the kernel ({})",
            match code {
                SETUP => "entering its namespaces",
                SYSFS => "mounting its own /sys",
                BIND => "making /proc/sys read-only",
                MASK => "masking host information in /proc and /sys",
                _ => "unknown step",
            }
        ))),
        None => Err(EnvError::Phase("the process trimming the kernel views was killed".into())),
    }
}

const HARDENED: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

/// From linux/mount.h.
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const MOUNT_ATTR_HARDENED_RDONLY: libc::c_uint = 0x1 | 0x2 | 0x4 | 0x8; // RDONLY, NOSUID, NODEV, NOEXEC
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;

/// A new sysfs of the current network namespace, read-only and attached
/// nowhere: its mount's descriptor, or -1.
unsafe fn detached_sysfs() -> libc::c_int {
    // SAFETY: raw system calls with constant, NUL-terminated strings.
    unsafe {
        let fs = libc::syscall(libc::SYS_fsopen, c"sysfs".as_ptr(), FSOPEN_CLOEXEC) as libc::c_int;
        if fs < 0
            || libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_CMD_CREATE,
                std::ptr::null::<u8>(),
                std::ptr::null::<u8>(),
                0,
            ) != 0
        {
            return -1;
        }
        libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_HARDENED_RDONLY) as libc::c_int
    }
}

/// In the forked child, inside the environment's root, with the detached
/// sysfs `sysfs`.
unsafe fn trim_in_child(sysfs: libc::c_int, p: &Prepared) -> i32 {
    // SAFETY: raw system calls on prepared, NUL-terminated strings.
    unsafe {
        if libc::syscall(
            libc::SYS_move_mount,
            sysfs,
            c"".as_ptr(),
            libc::AT_FDCWD,
            c"/sys".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        ) != 0
        {
            return SYSFS;
        }
        for t in &p.read_only {
            if libc::access(t.as_ptr(), libc::F_OK) == 0 && !bind_read_only(t.as_ptr(), t.as_ptr(), HARDENED)
            {
                return BIND;
            }
        }
        for t in &p.masked_files {
            if libc::access(t.as_ptr(), libc::F_OK) == 0
                // Not nodev: the device must stay readable (as empty).
                && !bind_read_only(c"/dev/null".as_ptr(), t.as_ptr(), libc::MS_NOSUID | libc::MS_NOEXEC)
            {
                return MASK;
            }
        }
        for t in &p.masked_dirs {
            if libc::access(t.as_ptr(), libc::F_OK) == 0
                && libc::mount(
                    c"tmpfs".as_ptr(),
                    t.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_RDONLY | HARDENED,
                    c"size=0,mode=555".as_ptr().cast(),
                ) != 0
            {
                return MASK;
            }
        }
        0
    }
}

/// Binds `source` onto `target`, read-only, with `flags` besides.
unsafe fn bind_read_only(
    source: *const libc::c_char,
    target: *const libc::c_char,
    flags: libc::c_ulong,
) -> bool {
    // SAFETY: raw system calls; the caller passes valid C strings.
    unsafe {
        let none = std::ptr::null::<libc::c_char>();
        libc::mount(source, target, none, libc::MS_BIND | libc::MS_REC, none.cast()) == 0
            && libc::mount(
                none,
                target,
                none,
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | flags,
                none.cast(),
            ) == 0
    }
}
