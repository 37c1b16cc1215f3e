//! A phase: bubblewrap builds the sandbox (root, /proc, /dev, namespaces,
//! capabilities) and then blocks, as PID 1 of the new PID namespace, on a
//! pipe from the harness. That blocked process is the phase's holder:
//! commands join its namespaces (see spawn.rs), and killing it kills every
//! process of the phase. If the harness dies, the pipe reaches end of file,
//! bubblewrap tries to exec a command that cannot exist, and the namespace
//! dies with it.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::backend::{HostMount, Network};
use crate::error::EnvError;
use crate::sandbox::{caps, join_cgroups, pipe, spawn, tool};

/// What bubblewrap execs once unblocked: nothing, on purpose.
const NO_COMMAND: &str = "/proc/cleanroom-phase-ended";
const BLOCK_FD: i32 = 100;
const INFO_FD: i32 = 101;

pub(crate) struct Holder {
    bwrap: Child,
    /// Closing this unblocks bubblewrap, which then exits.
    _block: OwnedFd,
    /// The holder's pid on the host.
    pub pid: i32,
    nat: Option<Nat>,
}

struct Nat {
    child: Child,
    _exit: OwnedFd,
}

fn bwrap_args(merged: &Path, mounts: &[HostMount]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--bind",
        &merged.to_string_lossy(),
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/dev/shm",
        "--ro-bind",
        "/sys",
        "/sys",
        // The host's cgroup tree stays out of sight.
        "--tmpfs",
        "/sys/fs/cgroup",
        "--remount-ro",
        "/sys/fs/cgroup",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--hostname",
        "cleanroom",
        "--new-session",
        "--die-with-parent",
        "--clearenv",
        "--chdir",
        "/",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for mount in mounts {
        args.extend(["--ro-bind".into(), mount.host.to_string_lossy().into_owned(), mount.path.clone()]);
    }
    args.extend(caps::bwrap_args());
    args.extend(["--block-fd".into(), BLOCK_FD.to_string(), "--info-fd".into(), INFO_FD.to_string()]);
    args.extend(["--".into(), NO_COMMAND.into()]);
    args
}

impl Holder {
    pub fn start(
        keeper_pid: i32,
        merged: &Path,
        network: Network,
        mounts: &[HostMount],
        cgroup_procs: &[std::path::PathBuf],
    ) -> Result<Holder, EnvError> {
        let keeper_mnt = open_ns(keeper_pid, "mnt")?;
        let cgroup_fds = open_procs(cgroup_procs)?;
        let (block_r, block_w) = pipe()?;
        let (info_r, info_w) = pipe()?;
        let mut cmd = Command::new(tool("bwrap"));
        cmd.args(bwrap_args(merged, mounts))
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let (mnt, block, info) = (keeper_mnt.as_raw_fd(), block_r.as_raw_fd(), info_w.as_raw_fd());
        let cg: Vec<i32> = cgroup_fds.iter().map(|f| f.as_raw_fd()).collect();
        // SAFETY: the closure only makes raw system calls.
        unsafe {
            cmd.pre_exec(move || {
                join_cgroups(&cg)?;
                // bubblewrap finds the merged root in the keeper's mounts.
                if libc::setns(mnt, libc::CLONE_NEWNS) != 0
                    || libc::dup2(block, BLOCK_FD) < 0
                    || libc::dup2(info, INFO_FD) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut bwrap = cmd.spawn().map_err(|e| EnvError::io("start bwrap", e))?;
        drop((block_r, info_w, cgroup_fds, keeper_mnt));
        let mut info = String::new();
        // SAFETY: info_r is ours; File takes it over.
        let _ = unsafe { std::fs::File::from_raw_fd(into_raw(info_r)) }.read_to_string(&mut info);
        let Some(pid) = child_pid(&info) else {
            let mut err = String::new();
            if let Some(mut e) = bwrap.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = bwrap.kill();
            let _ = bwrap.wait();
            return Err(EnvError::Command { program: "bwrap".into(), detail: err.trim().to_string() });
        };
        let mut holder = Holder { bwrap, _block: block_w, pid, nat: None };
        wait_until_blocked(pid)?;
        read_only_kernel_knobs(pid)?;
        if network == Network::Outbound {
            holder.nat = Some(Nat::start(pid)?);
        }
        Ok(holder)
    }

    /// Kills PID 1 of the phase (the kernel then kills every process in the
    /// namespace) and waits for bubblewrap to go.
    pub fn stop(&mut self) -> Result<(), EnvError> {
        // SAFETY: plain kill(2) of the holder.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let _ = self.bwrap.wait();
        if let Some(mut nat) = self.nat.take() {
            let _ = nat.child.kill();
            // slirp4netns takes ~20 ms to exit once killed (its tap device
            // goes away); nothing waits on that, so reap it aside.
            std::thread::spawn(move || {
                let _ = nat.child.wait();
            });
        }
        Ok(())
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// bubblewrap reports the holder's pid as soon as it is cloned, while the
/// holder is still building the sandbox; it is ready once it sits in
/// `read(BLOCK_FD)`, which /proc/PID/syscall shows ("0 0x64 ..." on x86-64).
fn wait_until_blocked(pid: i32) -> Result<(), EnvError> {
    let path = format!("/proc/{pid}/syscall");
    let blocked_prefix = format!("{} {:#x} ", libc::SYS_read, BLOCK_FD);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match std::fs::read_to_string(&path) {
            Ok(s) if s.starts_with(&blocked_prefix) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(EnvError::io(format!("the sandbox holder ({path})"), e)),
        }
        if std::time::Instant::now() > deadline {
            return Err(EnvError::Phase("bwrap did not finish building the sandbox in 30 s".into()));
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// A listening socket made inside the network namespace of the phase whose
/// holder is `holder_pid`. A socket stays in the namespace it was made in,
/// so one short-lived thread enters the namespace (setns affects only the
/// calling thread), binds, and hands the socket back.
pub fn listen_in_net_ns(holder_pid: i32, port: u16) -> Result<std::net::TcpListener, EnvError> {
    let ns = open_ns(holder_pid, "net")?;
    let bound = std::thread::spawn(move || {
        // SAFETY: setns on this thread only, with a namespace fd we own.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))
    })
    .join()
    .map_err(|_| EnvError::Phase("the thread binding a socket in the phase panicked".into()))?;
    bound.map_err(|e| EnvError::io(format!("listen on 127.0.0.1:{port} inside the environment"), e))
}

fn into_raw(fd: OwnedFd) -> i32 {
    use std::os::fd::IntoRawFd;
    fd.into_raw_fd()
}

fn child_pid(info: &str) -> Option<i32> {
    let v: serde_json::Value = serde_json::from_str(info.trim()).ok()?;
    v.get("child-pid")?.as_i64().map(|p| p as i32)
}

fn open_ns(pid: i32, ns: &str) -> Result<OwnedFd, EnvError> {
    let path = format!("/proc/{pid}/ns/{ns}");
    std::fs::File::open(&path).map(OwnedFd::from).map_err(|e| EnvError::io(path, e))
}

pub(crate) fn open_procs(files: &[std::path::PathBuf]) -> Result<Vec<OwnedFd>, EnvError> {
    files
        .iter()
        .map(|f| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(f)
                .map(OwnedFd::from)
                .map_err(|e| EnvError::io(f.display().to_string(), e))
        })
        .collect()
}

/// bubblewrap, run as root, leaves /proc/sys writable; a bind mount of it
/// onto itself, remounted read-only, fixes that (and /proc/sysrq-trigger).
/// Done from a forked child in the holder's mount namespace, with raw
/// system calls only: nothing of the environment is executed with the
/// harness's privileges.
fn read_only_kernel_knobs(holder: i32) -> Result<(), EnvError> {
    let mnt = open_ns(holder, "mnt")?;
    let root_path = format!("/proc/{holder}/root");
    let root = std::fs::File::open(&root_path).map_err(|e| EnvError::io(root_path, e))?;
    let targets: Vec<CString> =
        ["/proc/sys", "/proc/sysrq-trigger"].iter().map(|t| CString::new(*t).unwrap()).collect();
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
            for t in &targets {
                if libc::access(t.as_ptr(), libc::F_OK) != 0 {
                    continue;
                }
                let bind = libc::mount(
                    t.as_ptr(),
                    t.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                );
                let ro = libc::mount(
                    std::ptr::null(),
                    t.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND
                        | libc::MS_REMOUNT
                        | libc::MS_RDONLY
                        | libc::MS_NOSUID
                        | libc::MS_NODEV
                        | libc::MS_NOEXEC,
                    std::ptr::null(),
                );
                if bind != 0 || ro != 0 {
                    libc::_exit(3);
                }
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    // SAFETY: reaping our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(EnvError::Phase("cannot make /proc/sys read-only in the environment".into()));
    }
    Ok(())
}

impl Nat {
    /// User-mode NAT into the phase's network namespace. The host's
    /// loopback is refused by slirp4netns; the host's own addresses and
    /// link-local ones (cloud metadata) get `prohibit` routes inside, which
    /// the environment cannot remove without CAP_NET_ADMIN.
    fn start(holder: i32) -> Result<Nat, EnvError> {
        let (ready_r, ready_w) = pipe()?;
        let (exit_r, exit_w) = pipe()?;
        let (ready_fd, exit_fd) = (ready_w.as_raw_fd(), exit_r.as_raw_fd());
        let mut cmd = Command::new(tool("slirp4netns"));
        cmd.args([
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
            "--ready-fd=3",
            "--exit-fd=4",
        ])
        .arg(holder.to_string())
        .arg("tap0")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        // SAFETY: raw system calls only.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::dup2(ready_fd, 3) < 0 || libc::dup2(exit_fd, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| EnvError::io("start slirp4netns", e))?;
        drop((ready_w, exit_r));
        let mut byte = [0u8; 1];
        // SAFETY: ready_r is ours; File takes it over.
        let ready = unsafe { std::fs::File::from_raw_fd(into_raw(ready_r)) }.read(&mut byte);
        if !matches!(ready, Ok(1)) {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(EnvError::Command { program: "slirp4netns".into(), detail: err.trim().to_string() });
        }
        let nat = Nat { child, _exit: exit_w };
        block_host_addresses(holder)?;
        Ok(nat)
    }
}

/// The host's own IPv4 addresses, read once.
fn host_addresses() -> &'static [String] {
    static ADDRS: OnceLock<Vec<String>> = OnceLock::new();
    ADDRS.get_or_init(|| {
        let out = Command::new(tool("ip")).args(["-o", "-4", "addr", "show"]).output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                it.position(|w| w == "inet")?;
                it.next()?.split('/').next().map(str::to_string)
            })
            .filter(|a| !a.starts_with("127."))
            .collect()
    })
}

fn block_host_addresses(holder: i32) -> Result<(), EnvError> {
    let mut batch = String::from("route add prohibit 169.254.0.0/16\n");
    for addr in host_addresses() {
        batch.push_str(&format!("route add prohibit {addr}/32\n"));
    }
    let net = open_ns(holder, "net")?;
    let fd = net.as_raw_fd();
    let mut cmd = Command::new(tool("ip"));
    cmd.args(["-batch", "-"]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: one raw system call. Only the network namespace changes: the
    // `ip` that runs is the host's own.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| EnvError::io("run ip", e))?;
    use std::io::Write;
    let _ = child.stdin.take().expect("piped").write_all(batch.as_bytes());
    let out = child.wait_with_output().map_err(|e| EnvError::io("run ip", e))?;
    if !out.status.success() {
        return Err(EnvError::Command {
            program: "ip route (block host addresses)".into(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}
