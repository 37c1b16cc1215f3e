//! The agent on a host the harness reaches over SSH (the `ssh` backend):
//! `cleanroom-guest --serve-host outbound|loopback`, started by the harness
//! through `ssh` for one phase or one piece of file work, serving on its
//! standard input and output.
//!
//! Before anything else it takes a mount namespace of its own (seals and
//! their binds end with it and its commands, and never touch the host's
//! mounts) and, for a phase without network, a network namespace with only
//! a loopback device: its commands, and the ports it serves them, live
//! there. The host's clock and random generator are the host's own: the
//! harness's start is read for its mode and limits only.
//!
//! `cleanroom-guest --reboot` ends a phase on such a host (reboot below).

use std::io;
use std::time::{Duration, Instant};

use cleanroom_env::vm::protocol::{Frame, Message};

use crate::exec;
use crate::serve::{self, Limits, Place};

pub fn serve(network: &str) -> io::Result<()> {
    let loopback_only = match network {
        "outbound" => false,
        "loopback" => true,
        other => return Err(io::Error::other(format!("--serve-host {other}: outbound or loopback"))),
    };
    // Still one thread: the namespaces are the whole process's.
    private_mounts()?;
    if loopback_only {
        own_loopback()?;
    }
    let mut input = io::stdin();
    let (mode, limits) = match Frame::read_from(&mut input)? {
        Some(Frame { message: Message::Start { mode, memory_mb, pids, .. }, .. }) => {
            (mode, Limits { memory_mb, pids })
        }
        Some(other) => return Err(io::Error::other(format!("the harness began with {:?}", other.message))),
        None => return Ok(()),
    };
    // What an earlier phase that was not rebooted away left (the harness
    // ends each phase with end_all, so normally nothing).
    end_all(Duration::from_secs(10))?;
    serve::serve(Box::new(input), Box::new(io::stdout()), "/", mode, limits, Place::Host)
}

fn private_mounts() -> io::Result<()> {
    // SAFETY: plain system calls; a slave root keeps the host's later
    // mounts visible here and nothing of here visible there.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0
            || libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A network namespace of this process's own, its loopback up.
fn own_loopback() -> io::Result<()> {
    // SAFETY: plain system calls on a zeroed ifreq naming "lo".
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) != 0 {
            return Err(io::Error::last_os_error());
        }
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        let ok = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) == 0 && {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(sock, libc::SIOCSIFFLAGS, &req) == 0
        };
        let e = io::Error::last_os_error();
        libc::close(sock);
        if !ok {
            return Err(io::Error::new(e.kind(), format!("bringing the loopback up: {e}")));
        }
    }
    Ok(())
}

/// Kills every process of every command this agent (or an earlier one)
/// started, and waits until none is left, at most `timeout`.
pub fn end_all(timeout: Duration) -> io::Result<()> {
    let Some(parent) = exec::parent_cgroup().filter(|p| p.exists()) else { return Ok(()) };
    let began = Instant::now();
    loop {
        exec::kill_cgroup(&parent);
        let mut busy = false;
        for entry in std::fs::read_dir(&parent)?.flatten() {
            let path = entry.path();
            if path.is_dir() && std::fs::remove_dir(&path).is_err() {
                busy = true;
            }
        }
        if !busy {
            return Ok(());
        }
        if began.elapsed() > timeout {
            return Err(io::Error::other(format!(
                "processes of {} outlived their kill for {}s",
                parent.display(),
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reboots the host by the kernel at once, its disks flushed first: no
/// service's stop runs on the way down (nothing the agent installed), and
/// no program of the host's is asked to do it. Returns at once; the reboot
/// follows half a second later, so that the harness's session ends first.
pub fn reboot() -> io::Result<()> {
    // SAFETY: fork in a process with one thread; the child makes plain
    // system calls only.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => unsafe {
            libc::setsid();
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            libc::usleep(500_000);
            libc::sync();
            libc::reboot(libc::RB_AUTOBOOT);
            libc::_exit(1)
        },
        _ => Ok(()),
    }
}
