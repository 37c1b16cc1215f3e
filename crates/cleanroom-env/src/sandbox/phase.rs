//! A phase: bubblewrap builds the sandbox (root, /proc, /dev, namespaces,
//! capabilities) and then blocks, as PID 1 of the new PID namespace, on a
//! pipe from the harness. That blocked process is the phase's holder:
//! commands join its namespaces (see spawn.rs), and killing it kills every
//! process of the phase. If the harness dies, the pipe reaches end of file,
//! bubblewrap tries to exec a command that cannot exist, and the namespace
//! dies with it.

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::backend::{HostMount, Network};
use crate::error::EnvError;
use crate::sandbox::{caps, join_cgroups, kernel_views, pipe, tool};

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

/// User-mode NAT into a network namespace (the phase's; a machine's QEMU).
pub(crate) struct Nat {
    child: Child,
    _exit: OwnedFd,
}

/// What a phase binds in from the host: directories and files read-only,
/// and device nodes (under the /dev that bubblewrap makes afresh).
#[derive(Default)]
pub(crate) struct Binds<'a> {
    pub read_only: Vec<&'a HostMount>,
    pub devices: Vec<&'a HostMount>,
}

fn bwrap_args(merged: &Path, binds: &Binds<'_>) -> Vec<String> {
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
    for mount in &binds.read_only {
        args.extend(["--ro-bind".into(), mount.host.to_string_lossy().into_owned(), mount.path.clone()]);
    }
    for device in &binds.devices {
        args.extend(["--dev-bind".into(), device.host.to_string_lossy().into_owned(), device.path.clone()]);
    }
    args.extend(caps::holder_bwrap_args());
    args.extend(["--block-fd".into(), BLOCK_FD.to_string(), "--info-fd".into(), INFO_FD.to_string()]);
    args.extend(["--".into(), NO_COMMAND.into()]);
    args
}

impl Holder {
    pub fn start(
        keeper_pid: i32,
        merged: &Path,
        network: Network,
        binds: &Binds<'_>,
        cgroup_procs: &[std::path::PathBuf],
    ) -> Result<Holder, EnvError> {
        let keeper_mnt = open_ns(keeper_pid, "mnt")?;
        let cgroup_fds = open_procs(cgroup_procs)?;
        let (block_r, block_w) = pipe()?;
        let (info_r, info_w) = pipe()?;
        let mut cmd = Command::new(tool("bwrap"));
        cmd.args(bwrap_args(merged, binds))
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
        kernel_views::trim(pid, keeper_pid)?;
        if network == Network::Outbound {
            holder.nat = Some(Nat::start(pid, cgroup_procs)?);
        }
        Ok(holder)
    }

    /// Kills PID 1 of the phase (the kernel then kills every process in the
    /// namespace) and waits for bubblewrap to go.
    pub fn stop(&mut self) -> Result<(), EnvError> {
        // SAFETY: plain kill(2) of the holder.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
        let _ = self.bwrap.wait();
        if let Some(nat) = self.nat.take() {
            nat.stop();
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

pub(crate) fn open_ns(pid: i32, ns: &str) -> Result<OwnedFd, EnvError> {
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

impl Nat {
    /// User-mode NAT into the phase's network namespace. The host's
    /// loopback is refused by slirp4netns; the host's own addresses, its
    /// neighbours and link-local ones (cloud metadata) get `prohibit` routes
    /// inside (see blocked_routes), which the environment cannot remove
    /// without CAP_NET_ADMIN. slirp4netns joins the environment's cgroups:
    /// the CPU and memory it spends on the agent's traffic count against
    /// the environment's limits.
    pub(crate) fn start(holder: i32, cgroup_procs: &[std::path::PathBuf]) -> Result<Nat, EnvError> {
        let cgroup_fds = open_procs(cgroup_procs)?;
        let cg: Vec<i32> = cgroup_fds.iter().map(|f| f.as_raw_fd()).collect();
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
                join_cgroups(&cg)?;
                if libc::dup2(ready_fd, 3) < 0 || libc::dup2(exit_fd, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| EnvError::io("start slirp4netns", e))?;
        drop((ready_w, exit_r, cgroup_fds));
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

    pub(crate) fn stop(mut self) {
        let _ = self.child.kill();
        // slirp4netns takes ~20 ms to exit once killed (its tap device goes
        // away); nothing waits on that, so reap it aside.
        std::thread::spawn(move || {
            let _ = self.child.wait();
        });
    }
}

/// slirp4netns's own network inside the environment (its gateway, DNS
/// and the environment's address). A host network that overlaps it cannot
/// be blocked by a route without cutting the environment off; slirp4netns
/// itself refuses the host's loopback behind its gateway address.
const SLIRP_NETWORK: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 0, 2, 0), 24);

/// Destinations the environment must not reach through the NAT: the
/// host's own addresses, the networks it is directly attached to (its
/// neighbours), its gateways, and link-local ranges (cloud metadata at
/// 169.254.169.254), IPv4 and IPv6. Read once from `ip -o addr` and
/// `ip -o route`.
fn blocked_routes() -> &'static [IpNet] {
    static ROUTES: OnceLock<Vec<IpNet>> = OnceLock::new();
    ROUTES.get_or_init(|| {
        let ip = |args: &[&str]| {
            let out = Command::new(tool("ip")).args(args).output();
            out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
        };
        let listing = [
            ip(&["-o", "addr", "show"]),
            ip(&["-o", "-4", "route", "show"]),
            ip(&["-o", "-6", "route", "show"]),
        ];
        blocked_destinations(&listing.join("\n"))
    })
}

/// An address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IpNet(IpAddr, u32);

impl IpNet {
    /// `ADDR` (a host) or `ADDR/LEN`.
    fn parse(text: &str, host_only: bool) -> Option<IpNet> {
        let (addr, len) = text.split_once('/').unwrap_or((text, ""));
        let addr: IpAddr = addr.parse().ok()?;
        let full = if addr.is_ipv4() { 32 } else { 128 };
        let len = if host_only || len.is_empty() { full } else { len.parse().ok().filter(|l| *l <= full)? };
        Some(IpNet(addr, len))
    }

    fn overlaps_slirp(&self) -> bool {
        let IpAddr::V4(addr) = self.0 else { return false };
        let len = self.1.min(SLIRP_NETWORK.1);
        let prefix = |a: Ipv4Addr| if len == 0 { 0 } else { u32::from(a) >> (32 - len) };
        prefix(addr) == prefix(SLIRP_NETWORK.0)
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.0, self.1)
    }
}

/// The destinations of [`blocked_routes`] in `ip -o` listings: each
/// `inet`/`inet6` address as a host, each network a route names, each
/// `via` gateway as a host; loopback aside (slirp4netns refuses it).
fn blocked_destinations(listing: &str) -> Vec<IpNet> {
    let mut out =
        vec![IpNet::parse("169.254.0.0/16", false).unwrap(), IpNet::parse("fe80::/10", false).unwrap()];
    for line in listing.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
        let mut found = Vec::new();
        if let Some(addr) = after("inet").or_else(|| after("inet6")) {
            found.extend(IpNet::parse(addr, true));
        } else if let Some(first) = words.first() {
            found.extend(after("via").and_then(|gw| IpNet::parse(gw, true)));
            found.extend(IpNet::parse(first, false));
        }
        for net in found {
            if !net.0.is_loopback() && !net.overlaps_slirp() && !out.contains(&net) {
                out.push(net);
            }
        }
    }
    out
}

/// Whether the host runs IPv6 (a namespace then has it too).
fn ipv6_enabled() -> bool {
    std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6").is_ok_and(|v| v.trim() == "0")
}

fn block_host_addresses(holder: i32) -> Result<(), EnvError> {
    let mut batch = String::new();
    let ipv6 = ipv6_enabled();
    for net in blocked_routes() {
        if net.0.is_ipv4() || ipv6 {
            batch.push_str(&format!("route add prohibit {net}\n"));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_addresses_neighbours_and_gateways_are_blocked() {
        let listing = "\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever
1: lo    inet6 ::1/128 scope host \\       valid_lft forever
4: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\\       valid_lft forever
4: eth0    inet6 fd00::2/64 scope global nodad \\       valid_lft forever
default via 192.0.2.1 dev eth0
192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2
10.0.0.0/8 via 192.0.2.254 dev eth0
fd00::/64 dev eth0 proto kernel metric 256 pref medium
default via fd00::1 dev eth0 metric 1024 pref medium
";
        let got: Vec<String> = blocked_destinations(listing).iter().map(|n| n.to_string()).collect();
        for want in [
            "169.254.0.0/16",
            "fe80::/10",
            "192.0.2.2/32",
            "fd00::2/128",
            "192.0.2.1/32",
            "192.0.2.0/24",
            "192.0.2.254/32",
            "fd00::/64",
            "fd00::1/128",
        ] {
            assert!(got.contains(&want.to_string()), "{want} missing from {got:?}");
        }
        assert!(!got.iter().any(|d| d.starts_with("127.") || d.starts_with("::1")), "{got:?}");
        // 10.0.0.0/8 holds slirp4netns's own network: blocking it would cut
        // the environment off.
        assert!(!got.contains(&"10.0.0.0/8".to_string()), "{got:?}");
    }
}
