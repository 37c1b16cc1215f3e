//! Starting a command inside a phase's namespaces, and waiting for it.
//!
//! The harness is multi-threaded, so after `fork` the child may only make
//! raw system calls: everything (argv, environment, paths, namespace and
//! cgroup file descriptors) is prepared before the fork. The child
//! ("intermediate") joins the environment's cgroup and namespaces, then
//! forks again, because joining a PID namespace only applies to children.
//! The grandchild starts a new session, drops every capability that is not
//! kept (bounding set included), installs the seccomp filter and execs the
//! command.
//!
//! Exit status comes from the intermediate's `waitpid`, reported over a
//! pipe: nothing inside the environment can forge it. The intermediate is
//! not dumpable, so no process in the environment can read its memory (a
//! copy of the harness's) while it waits.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::backend::{ExecOutcome, ExecRequest, ExitStatus};
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::last_line::LastLine;
use crate::output::Captured;
use crate::sandbox::{caps, pipe, seccomp};

/// Namespaces joined, in this order (mount last: it changes the root).
const NAMESPACES: [&str; 6] = ["ipc", "uts", "net", "cgroup", "pid", "mnt"];

/// Where a command runs: the phase's PID 1 and the cgroups to join.
pub(crate) struct Target<'a> {
    pub holder_pid: i32,
    pub cgroup_procs: &'a [PathBuf],
}

struct Prepared {
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: CString,
    ns_fds: Vec<OwnedFd>,
    /// The holder's root directory: bubblewrap chroots inside its mount
    /// namespace, so joining the namespace alone is not enough.
    root_fd: OwnedFd,
    cgroup_fds: Vec<OwnedFd>,
    devnull: OwnedFd,
    keep_mask: u64,
    last_cap: u32,
    seccomp: Vec<libc::sock_filter>,
    /// The harness's pid, to notice a parent that died before the fork
    /// could ask to die with it.
    parent: i32,
}

fn cstring(s: &str, what: &str) -> Result<CString, EnvError> {
    CString::new(s).map_err(|_| EnvError::Phase(format!("{what} contains a NUL byte")))
}

fn open_fd(path: &str, flags: i32) -> std::io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: c is a valid NUL-terminated path.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: open returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn prepare(target: &Target, req: &ExecRequest) -> Result<Prepared, EnvError> {
    let Some(program) = req.argv.first() else {
        return Err(EnvError::Phase("empty command".into()));
    };
    if !program.starts_with('/') {
        return Err(EnvError::Phase(format!("command `{program}` must be an absolute path")));
    }
    let mut ns_fds = Vec::new();
    for ns in NAMESPACES {
        let path = format!("/proc/{}/ns/{ns}", target.holder_pid);
        ns_fds.push(open_fd(&path, libc::O_RDONLY).map_err(|e| EnvError::io(path, e))?);
    }
    let root = format!("/proc/{}/root", target.holder_pid);
    let root_fd = open_fd(&root, libc::O_RDONLY | libc::O_DIRECTORY).map_err(|e| EnvError::io(root, e))?;
    let mut cgroup_fds = Vec::new();
    for procs in target.cgroup_procs {
        let path = procs.display().to_string();
        cgroup_fds.push(open_fd(&path, libc::O_WRONLY).map_err(|e| EnvError::io(path, e))?);
    }
    Ok(Prepared {
        argv: req.argv.iter().map(|a| cstring(a, "an argument")).collect::<Result<_, _>>()?,
        envp: req
            .env
            .iter()
            .map(|(k, v)| cstring(&format!("{k}={v}"), "an environment variable"))
            .collect::<Result<_, _>>()?,
        cwd: cstring(&req.cwd, "the working directory")?,
        ns_fds,
        root_fd,
        cgroup_fds,
        devnull: open_fd("/dev/null", libc::O_RDONLY).map_err(|e| EnvError::io("/dev/null", e))?,
        keep_mask: caps::kept_mask(),
        last_cap: caps::last_cap(),
        seccomp: seccomp::program(),
        // SAFETY: getpid has no preconditions.
        parent: unsafe { libc::getpid() },
    })
}

/// Writes a message and the current errno to stderr and exits, from a
/// forked child (no allocation: the number is formatted on the stack).
unsafe fn die(msg: &[u8], code: i32) -> ! {
    // SAFETY: raw writes and _exit are async-signal-safe.
    unsafe {
        let mut errno = *libc::__errno_location();
        let mut digits = [0u8; 12];
        let mut at = digits.len() - 1;
        digits[at] = b'\n';
        loop {
            at -= 1;
            digits[at] = b'0' + (errno % 10) as u8;
            errno /= 10;
            if errno == 0 || at == 0 {
                break;
            }
        }
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::write(2, b" (errno ".as_ptr().cast(), 8);
        libc::write(2, digits[at..digits.len() - 1].as_ptr().cast(), digits.len() - 1 - at);
        libc::write(2, b")\n".as_ptr().cast(), 2);
        libc::_exit(code)
    }
}

/// Status codes of the intermediate when it could not start the command.
const SETUP_FAILED: i32 = 125;

unsafe fn intermediate(p: &Prepared, out_w: RawFd, err_w: RawFd, report_w: RawFd) -> ! {
    // SAFETY: only raw system calls on data prepared before the fork.
    unsafe {
        // A fork that never execs holds every descriptor of the harness
        // (the run's lock among them): drop all but what is needed, first.
        let mut keep = [0i32; 16];
        let mut n = 0;
        for fd in [out_w, err_w, report_w, p.devnull.as_raw_fd(), p.root_fd.as_raw_fd()]
            .into_iter()
            .chain(p.ns_fds.iter().map(|f| f.as_raw_fd()))
            .chain(p.cgroup_fds.iter().map(|f| f.as_raw_fd()))
        {
            if n < keep.len() {
                keep[n] = fd;
                n += 1;
            }
        }
        close_all_but(&mut keep[..n]);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != p.parent {
            libc::_exit(SETUP_FAILED);
        }
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
        libc::dup2(err_w, 2);
        for fd in &p.cgroup_fds {
            if libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                die(b"cleanroom: cannot join the environment's cgroup", SETUP_FAILED);
            }
        }
        for fd in &p.ns_fds {
            if libc::setns(fd.as_raw_fd(), 0) != 0 {
                die(b"cleanroom: cannot join the environment's namespaces", SETUP_FAILED);
            }
        }
        if libc::fchdir(p.root_fd.as_raw_fd()) != 0 || libc::chroot(c".".as_ptr()) != 0 {
            die(b"cleanroom: cannot enter the environment's root", SETUP_FAILED);
        }
        // The namespaces are joined: only the pipes and /dev/null remain.
        close_all_but(&mut [out_w, err_w, report_w, p.devnull.as_raw_fd()]);
        let pid = libc::fork();
        if pid < 0 {
            die(b"cleanroom: fork failed", SETUP_FAILED);
        }
        if pid == 0 {
            grandchild(p, out_w, err_w);
        }
        let pid_bytes = pid.to_ne_bytes();
        libc::write(report_w, pid_bytes.as_ptr().cast(), pid_bytes.len());
        let mut status = 0;
        loop {
            let r = libc::waitpid(pid, &mut status, 0);
            if r == pid {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(SETUP_FAILED);
            }
        }
        let status_bytes = status.to_ne_bytes();
        libc::write(report_w, status_bytes.as_ptr().cast(), status_bytes.len());
        libc::_exit(0)
    }
}

unsafe fn grandchild(p: &Prepared, out_w: RawFd, err_w: RawFd) -> ! {
    // SAFETY: only raw system calls on data prepared before the fork.
    unsafe {
        libc::setsid();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::dup2(p.devnull.as_raw_fd(), 0);
        libc::dup2(out_w, 1);
        libc::dup2(err_w, 2);
        // Ignored signals survive exec; the harness ignores SIGPIPE.
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        for sig in 1..32 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        // Installed while CAP_SYS_ADMIN is still held (no no_new_privs needed).
        let prog = libc::sock_fprog { len: p.seccomp.len() as u16, filter: p.seccomp.as_ptr() as *mut _ };
        if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) != 0
        {
            die(b"cleanroom: cannot install the seccomp filter", SETUP_FAILED);
        }
        for cap in 0..=p.last_cap {
            if p.keep_mask & (1u64 << cap) == 0
                && libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong) != 0
                && *libc::__errno_location() != libc::EINVAL
            {
                die(b"cleanroom: cannot drop capabilities", SETUP_FAILED);
            }
        }
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        let header = CapHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
        let low = p.keep_mask as u32;
        let high = (p.keep_mask >> 32) as u32;
        let data = [
            CapData { effective: low, permitted: low, inheritable: 0 },
            CapData { effective: high, permitted: high, inheritable: 0 },
        ];
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            die(b"cleanroom: cannot set capabilities", SETUP_FAILED);
        }
        if libc::chdir(p.cwd.as_ptr()) != 0 {
            die(b"cleanroom: cannot enter the working directory", SETUP_FAILED);
        }
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let mut argv: Vec<*const libc::c_char> = p.argv.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = p.envp.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());
        libc::execve(p.argv[0].as_ptr(), argv.as_ptr(), envp.as_ptr());
        die(b"cleanroom: cannot execute the command", 127)
    }
}

/// Closes every descriptor from 3 up but those in `keep`; raw system calls
/// only, for forked children (sorts `keep` in place, no allocation).
pub(crate) unsafe fn close_all_but(keep: &mut [i32]) {
    keep.sort_unstable();
    let mut next = 3;
    for &fd in keep.iter() {
        if fd > next {
            // SAFETY: closing descriptors of this process only.
            unsafe { libc::syscall(libc::SYS_close_range, next as u32, (fd - 1) as u32, 0u32) };
        }
        next = next.max(fd + 1);
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, next as u32, u32::MAX, 0u32) };
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Runs `req` inside the target's namespaces and waits for it, its timeout
/// or the cancel token, capturing its output (bounded).
pub(crate) fn run(target: &Target, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
    let prepared = prepare(target, req)?;
    // The argv/envp pointer arrays are built in the grandchild from
    // `prepared`; allocation there is avoided by reserving here.
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (report_r, report_w) = pipe()?;
    let started = Instant::now();
    // SAFETY: the child only makes raw system calls (see intermediate()).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(EnvError::io("fork", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: in the forked child; never returns.
        unsafe { intermediate(&prepared, out_w.as_raw_fd(), err_w.as_raw_fd(), report_w.as_raw_fd()) };
    }
    drop((out_w, err_w, report_w));
    let child = Child { pid, reaped: false };
    let mut wait = Waiter::new(child, req, started)?;
    let (status, combined, stdout, stderr) = wait.run(&out_r, &err_r, &report_r, cancel)?;
    Ok(ExecOutcome { status, duration: started.elapsed(), stdout, stderr, combined })
}

/// The intermediate process; killed and reaped on every path out.
struct Child {
    pid: i32,
    reaped: bool,
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: pid is our own unreaped child.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
        }
    }
}

/// Output as it arrives, to whoever watches the command's progress.
fn tap(last_line: &Option<LastLine>, bytes: &[u8]) {
    if let Some(last_line) = last_line {
        last_line.feed(bytes);
    }
}

struct Waiter {
    child: Child,
    pidfd: OwnedFd,
    deadline: Option<Instant>,
    grace: Duration,
    limit: usize,
    last_line: Option<LastLine>,
}

/// What the waiter is doing about the command's end.
enum Phase {
    Running,
    /// TERM was sent; KILL follows at this instant.
    Terminating {
        kill_at: Instant,
        cause: ExitStatus,
    },
    Killed {
        cause: ExitStatus,
    },
}

impl Waiter {
    fn new(child: Child, req: &ExecRequest, started: Instant) -> Result<Self, EnvError> {
        // SAFETY: pidfd_open on our own unreaped child.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.pid, 0) } as i32;
        if fd < 0 {
            return Err(EnvError::io("pidfd_open", std::io::Error::last_os_error()));
        }
        Ok(Waiter {
            child,
            // SAFETY: a new fd owned here.
            pidfd: unsafe { OwnedFd::from_raw_fd(fd) },
            deadline: req.timeout.map(|t| started + t),
            grace: req.grace,
            limit: req.output_limit,
            last_line: req.last_line.clone(),
        })
    }

    fn run(
        &mut self,
        out_r: &OwnedFd,
        err_r: &OwnedFd,
        report_r: &OwnedFd,
        cancel: &CancelToken,
    ) -> Result<(ExitStatus, Captured, Captured, Captured), EnvError> {
        let mut combined = Captured::new(self.limit);
        let mut stdout = Captured::new(self.limit);
        let mut stderr = Captured::new(self.limit);
        let mut open = [true, true];
        let mut phase = Phase::Running;
        let mut report = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut group: Option<i32> = None;
        loop {
            // The grandchild's pid arrives first on the report pipe.
            let mut fds =
                vec![pollfd(self.pidfd.as_raw_fd()), pollfd(cancel.poll_fd()), pollfd(report_r.as_raw_fd())];
            if open[0] {
                fds.push(pollfd(out_r.as_raw_fd()));
            }
            if open[1] {
                fds.push(pollfd(err_r.as_raw_fd()));
            }
            let timeout_ms = match &phase {
                Phase::Running => self.deadline.map(ms_until).unwrap_or(-1),
                Phase::Terminating { kill_at, .. } => ms_until(*kill_at),
                Phase::Killed { .. } => -1,
            };
            // SAFETY: fds is a valid array of pollfd structs.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
            if n < 0 {
                let err = std::io::Error::last_os_error();
                if err.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(EnvError::io("poll", err));
            }
            if fds[2].revents != 0 {
                read_into(report_r.as_raw_fd(), &mut buf, |b| report.extend_from_slice(b));
                if group.is_none() && report.len() >= 4 {
                    group = Some(i32::from_ne_bytes(report[..4].try_into().unwrap()));
                }
            }
            let mut idx = 3;
            for (stream, is_open) in open.iter_mut().enumerate() {
                if !*is_open {
                    continue;
                }
                if fds[idx].revents != 0 {
                    let got = read_into(fds[idx].fd, &mut buf, |b| {
                        combined.push(b);
                        tap(&self.last_line, b);
                        if stream == 0 {
                            stdout.push(b)
                        } else {
                            stderr.push(b)
                        }
                    });
                    if got == 0 {
                        *is_open = false;
                    }
                }
                idx += 1;
            }
            let exited = fds[0].revents != 0;
            if exited {
                // Drain what is already written; processes left behind may
                // hold the pipes open, so stop at the first empty read.
                drain(out_r.as_raw_fd(), &mut buf, |b| {
                    combined.push(b);
                    tap(&self.last_line, b);
                    stdout.push(b)
                });
                drain(err_r.as_raw_fd(), &mut buf, |b| {
                    combined.push(b);
                    tap(&self.last_line, b);
                    stderr.push(b)
                });
                drain(report_r.as_raw_fd(), &mut buf, |b| report.extend_from_slice(b));
                if let Phase::Terminating { .. } = phase {
                    // Ended by its TERM: what is left of its group goes now.
                    signal_group(group, self.child.pid, libc::SIGKILL);
                }
                let mut wstatus = 0;
                // SAFETY: reaping our own child.
                unsafe { libc::waitpid(self.child.pid, &mut wstatus, 0) };
                self.child.reaped = true;
                let status = match phase {
                    Phase::Terminating { cause, .. } | Phase::Killed { cause } => cause,
                    Phase::Running => decode(&report, wstatus),
                };
                return Ok((status, combined, stdout, stderr));
            }
            let now = Instant::now();
            match &phase {
                Phase::Running => {
                    let cause = if cancel.is_cancelled() {
                        Some(ExitStatus::Cancelled)
                    } else if self.deadline.is_some_and(|d| now >= d) {
                        Some(ExitStatus::TimedOut)
                    } else {
                        None
                    };
                    if let Some(cause) = cause {
                        signal_group(group, self.child.pid, libc::SIGTERM);
                        phase = Phase::Terminating { kill_at: now + self.grace, cause };
                    }
                }
                Phase::Terminating { kill_at, cause } if now >= *kill_at => {
                    signal_group(group, self.child.pid, libc::SIGKILL);
                    // SAFETY: our own child; its death kills the grandchild (PDEATHSIG).
                    unsafe { libc::kill(self.child.pid, libc::SIGKILL) };
                    phase = Phase::Killed { cause: cause.clone() };
                }
                _ => {}
            }
        }
    }
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd { fd, events: libc::POLLIN, revents: 0 }
}

fn ms_until(t: Instant) -> i32 {
    t.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32
}

/// One read; returns the byte count (0 at end of file or on error).
fn read_into(fd: RawFd, buf: &mut [u8], mut sink: impl FnMut(&[u8])) -> usize {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 {
        return 0;
    }
    sink(&buf[..n as usize]);
    n as usize
}

/// Reads whatever is available right now, without blocking.
fn drain(fd: RawFd, buf: &mut [u8], mut sink: impl FnMut(&[u8])) {
    loop {
        let mut p = pollfd(fd);
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, 0) } <= 0 || p.revents & libc::POLLIN == 0 {
            return;
        }
        if read_into(fd, buf, &mut sink) == 0 {
            return;
        }
    }
}

/// TERM or KILL the command's whole process group (it leads a session).
fn signal_group(group: Option<i32>, intermediate: i32, sig: i32) {
    // SAFETY: kill with a negative pid signals a process group.
    unsafe {
        match group {
            Some(g) if g > 0 => {
                libc::kill(-g, sig);
            }
            _ => {
                libc::kill(intermediate, libc::SIGKILL);
            }
        }
    }
}

/// The command's status from the intermediate's report (its pid, then the
/// raw wait status), or a setup failure.
fn decode(report: &[u8], intermediate_status: i32) -> ExitStatus {
    if report.len() >= 8 {
        let w = i32::from_ne_bytes(report[4..8].try_into().unwrap());
        if libc::WIFEXITED(w) {
            return ExitStatus::Exited(libc::WEXITSTATUS(w));
        }
        if libc::WIFSIGNALED(w) {
            return ExitStatus::Signaled(libc::WTERMSIG(w));
        }
    }
    if libc::WIFEXITED(intermediate_status) {
        ExitStatus::Exited(libc::WEXITSTATUS(intermediate_status))
    } else {
        ExitStatus::Signaled(libc::WTERMSIG(intermediate_status))
    }
}
