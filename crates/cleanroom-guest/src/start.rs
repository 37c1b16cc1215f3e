//! The harness's start: the first thing the agent waits for, on a cold boot
//! as on a machine resumed from a booted snapshot (the host's snapshot.rs).
//!
//! A resumed machine finds its port as the snapshot left it: connected to a
//! harness that is gone. Its reads then end at once, until the new harness
//! connects; the kernel says when with SIGIO, so the wait is no busy loop.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use cleanroom_env::vm::protocol::{Frame, Message, Mode};

use crate::serve::Limits;

pub struct Start {
    pub mode: Mode,
    pub limits: Limits,
    unix_time_ns: u64,
    seed: Vec<u8>,
}

/// Says the agent waits, then waits for the start.
pub fn wait(port: &mut File) -> io::Result<Start> {
    // Lost when no harness listens (a resumed machine): nothing waits for it then.
    let _ = Frame::new(Message::Waiting).write_to(port);
    let watch = HostWatch::new(port)?;
    loop {
        match Frame::read_from(port) {
            Ok(Some(Frame { message: Message::Start { mode, memory_mb, pids, unix_time_ns }, data })) => {
                return Ok(Start { mode, limits: Limits { memory_mb, pids }, unix_time_ns, seed: data })
            }
            Ok(Some(other)) => {
                return Err(io::Error::other(format!("the harness began with {:?}", other.message)))
            }
            Ok(None) => watch.wait_for_host(port)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Sets the clock to the host's and reseeds the random number generator:
/// every machine resumed from one snapshot would otherwise share both.
pub fn apply(start: &Start) -> io::Result<()> {
    let time = libc::timespec {
        tv_sec: (start.unix_time_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (start.unix_time_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: a valid timespec.
    if unsafe { libc::clock_settime(libc::CLOCK_REALTIME, &time) } != 0 {
        return Err(io::Error::last_os_error());
    }
    const RNDADDENTROPY: libc::c_ulong = 0x4008_5203;
    const RNDRESEEDCRNG: libc::c_ulong = 0x5207;
    #[repr(C)]
    struct PoolInfo {
        entropy_count: libc::c_int,
        buf_size: libc::c_int,
        buf: [u8; 32],
    }
    let mut info = PoolInfo { entropy_count: 0, buf_size: 32, buf: [0; 32] };
    let n = start.seed.len().min(32);
    info.buf[..n].copy_from_slice(&start.seed[..n]);
    info.entropy_count = (n * 8) as libc::c_int;
    let random = File::options().write(true).open("/dev/urandom")?;
    // SAFETY: the ioctls read a rand_pool_info of buf_size bytes, then nothing.
    let reseeded = unsafe {
        libc::ioctl(random.as_raw_fd(), RNDADDENTROPY, &info) == 0
            && libc::ioctl(random.as_raw_fd(), RNDRESEEDCRNG) == 0
    };
    if !reseeded {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("reseeding the random number generator: {e}")));
    }
    Ok(())
}

/// SIGIO from the port, blocked and waited for, while the agent waits for
/// a harness to connect; undone when dropped, so that nothing the agent
/// starts later inherits it.
struct HostWatch {
    fd: libc::c_int,
    flags: libc::c_int,
    mask: libc::sigset_t,
    old_mask: libc::sigset_t,
}

impl HostWatch {
    fn new(port: &File) -> io::Result<HostWatch> {
        let fd = port.as_raw_fd();
        // SAFETY: plain calls on an open descriptor and local signal sets.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            let mut mask: libc::sigset_t = std::mem::zeroed();
            let mut old_mask: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut mask);
            libc::sigaddset(&mut mask, libc::SIGIO);
            if flags < 0
                || libc::sigprocmask(libc::SIG_BLOCK, &mask, &mut old_mask) != 0
                || libc::fcntl(fd, libc::F_SETOWN, libc::getpid()) != 0
                || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_ASYNC) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(HostWatch { fd, flags, mask, old_mask })
        }
    }

    /// Returns once a harness is connected to the port.
    fn wait_for_host(&self, port: &File) -> io::Result<()> {
        loop {
            let mut poll = libc::pollfd { fd: port.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd, no wait.
            if unsafe { libc::poll(&mut poll, 1, 0) } < 0 {
                return Err(io::Error::last_os_error());
            }
            if poll.revents & libc::POLLHUP == 0 {
                return Ok(());
            }
            // The bound only matters if a connection's SIGIO were lost.
            let bound = Duration::from_secs(1);
            let timeout = libc::timespec { tv_sec: bound.as_secs() as libc::time_t, tv_nsec: 0 };
            // SAFETY: a blocked signal set and a timeout; no siginfo wanted.
            unsafe { libc::sigtimedwait(&self.mask, std::ptr::null_mut(), &timeout) };
        }
    }
}

impl Drop for HostWatch {
    fn drop(&mut self) {
        let none = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: as in new; a SIGIO still pending is taken before the
        // signal is unblocked, so it is never delivered.
        unsafe {
            libc::fcntl(self.fd, libc::F_SETFL, self.flags);
            while libc::sigtimedwait(&self.mask, std::ptr::null_mut(), &none) == libc::SIGIO {}
            libc::sigprocmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}
