//! One boot of a machine: a QEMU process with the kernel and initramfs
//! given directly (no firmware boot loader, no disk scan), or a booted
//! snapshot of the same devices resumed (snapshot.rs); the trial's qcow2
//! disk, the agent's virtio-serial port, and a network card only in a phase
//! with outbound network.
//!
//! With outbound network, QEMU runs in a network namespace of its own that
//! slirp4netns connects, with the sandbox's rules (sandbox/phase.rs): QEMU's
//! user-mode network opens the guest's connections from inside it, so the
//! host's loopback (QEMU's 10.0.2.2 is that namespace's own), its addresses
//! and 169.254/16 are as unreachable as from a sandbox.

use std::ffi::CString;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::Network;
use crate::error::EnvError;
use crate::output::Captured;
use crate::sandbox::phase::Nat;
use crate::vm::protocol::{shown_serial, DISK_SERIAL, PORT_NAME};

pub const QEMU: &str = "qemu-system-x86_64";

/// How the guest's CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// The host's KVM: near native speed.
    Kvm,
    /// QEMU's own translator: works everywhere, several times slower.
    Tcg,
}

impl Accel {
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Memory a machine has beyond its commands' limit: the kernel, systemd
/// and the page cache live there.
pub const OVERHEAD_MB: u64 = 256;

/// What to boot.
pub struct Boot<'a> {
    pub kernel: &'a Path,
    pub initramfs: &'a Path,
    pub disk: &'a Path,
    /// Host directories' read-only disks (shown.rs), in the order of
    /// their serial numbers (protocol::shown_serial).
    pub shown: &'a [PathBuf],
    /// PCI addresses of host GPUs bound to vfio-pci, passed through.
    pub gpus: &'a [String],
    /// The agent's port: a Unix socket QEMU listens on.
    pub socket: &'a Path,
    pub accel: Accel,
    pub cpus: u32,
    /// The commands' memory limit; the machine gets [`OVERHEAD_MB`] more.
    pub memory_mb: u64,
    pub network: Network,
    /// `nameserver` file QEMU's DNS forwarder reads (outbound only).
    pub resolv_conf: &'a Path,
    /// A booted snapshot (snapshot.rs) to resume instead of booting: a
    /// machine of the same devices, kernel and initramfs.
    pub resume: Option<&'a std::fs::File>,
    /// A QMP socket QEMU listens on (only to take a snapshot).
    pub qmp: Option<&'a Path>,
}

/// The kernel's command line: the same on every boot, as a snapshot's
/// memory holds it. What differs between boots comes in Message::Start.
const APPEND: &str = "console=ttyS0 panic=-1 quiet loglevel=4 systemd.getty_auto=0 systemd.show_status=0";

/// A path as the value of a QEMU option, where a comma ends the value
/// unless doubled.
fn option_value(path: &Path) -> String {
    path.display().to_string().replace(',', ",,")
}

pub struct Machine {
    child: Child,
    nat: Option<Nat>,
    console: Arc<Mutex<Captured>>,
}

impl Machine {
    pub fn start(boot: &Boot<'_>) -> Result<Machine, EnvError> {
        let mut cmd = Command::new(crate::sandbox::tool(QEMU));
        let (accel, cpu) = match boot.accel {
            Accel::Kvm => ("kvm", "host"),
            // One thread for every vCPU: with QEMU's multi-threaded TCG
            // (7.2), a guest kernel patching its own code (a static key)
            // while another vCPU translated it left that vCPU looping on a
            // stale int3, about one boot in 30 (docs/backends.md).
            Accel::Tcg => ("tcg,thread=single", "max"),
        };
        cmd.args(["-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"])
            .args(["-machine", "q35", "-accel", accel, "-cpu", cpu])
            .args(["-smp", &boot.cpus.max(1).to_string()])
            .args(["-m", &format!("{}M", boot.memory_mb + OVERHEAD_MB)])
            .arg("-kernel")
            .arg(boot.kernel)
            .arg("-initrd")
            .arg(boot.initramfs)
            .args(["-append", APPEND])
            .args(["-serial", "stdio"])
            .arg("-drive")
            .arg(format!(
                "file={},if=none,id=disk,format=qcow2,cache=writeback,discard=unmap",
                option_value(boot.disk)
            ))
            .args(["-device", &format!("virtio-blk-pci,drive=disk,serial={DISK_SERIAL}")])
            .args(["-device", "virtio-serial-pci,id=serial"])
            .arg("-chardev")
            .arg(format!("socket,id=agent,path={},server=on,wait=off", option_value(boot.socket)))
            .args(["-device", &format!("virtserialport,bus=serial.0,chardev=agent,name={PORT_NAME}")]);
        for (n, shown) in boot.shown.iter().enumerate() {
            cmd.arg("-drive")
                .arg(format!("file={},if=none,id=shown{n},format=raw,readonly=on", option_value(shown)))
                .args(["-device", &format!("virtio-blk-pci,drive=shown{n},serial={}", shown_serial(n))]);
        }
        for (n, address) in boot.gpus.iter().enumerate() {
            // Each on a PCIe port of its own, as a GPU sits in a machine.
            let port = format!("pcie-root-port,id=gpu{n},chassis={},slot=0", n + 1);
            cmd.args(["-device", &port, "-device", &format!("vfio-pci,host={address},bus=gpu{n}")]);
        }
        let outbound = boot.network == Network::Outbound;
        if outbound {
            cmd.args(["-netdev", "user,id=net", "-device", "virtio-net-pci,netdev=net"]);
        }
        if let Some(qmp) = boot.qmp {
            cmd.arg("-qmp").arg(format!("unix:{},server=on,wait=off", option_value(qmp)));
        }
        // QEMU reads the snapshot from an inherited descriptor: no shell,
        // no path for it to resolve.
        let inherited = boot.resume.map(|f| f.as_raw_fd());
        if let Some(fd) = inherited {
            cmd.args(["-incoming", &format!("fd:{fd}")]);
        }
        cmd.env_clear().stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let resolv = CString::new(boot.resolv_conf.as_os_str().as_encoded_bytes())
            .map_err(|_| EnvError::Phase(format!("{}: a NUL in the path", boot.resolv_conf.display())))?;
        // SAFETY: raw system calls only, between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if let Some(fd) = inherited {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if outbound {
                    if libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWNS) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    let (root, etc) = (c"/".as_ptr(), c"/etc/resolv.conf".as_ptr());
                    let private = libc::MS_REC | libc::MS_PRIVATE;
                    if libc::mount(std::ptr::null(), root, std::ptr::null(), private, std::ptr::null()) != 0
                        || libc::mount(
                            resolv.as_ptr(),
                            etc,
                            std::ptr::null(),
                            libc::MS_BIND,
                            std::ptr::null(),
                        ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| EnvError::io(format!("start {QEMU}"), e))?;
        let console = Arc::new(Mutex::new(Captured::new(16 << 10)));
        for stream in [
            child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
            child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let console = console.clone();
            std::thread::spawn(move || keep(stream, &console));
        }
        let mut machine = Machine { child, nat: None, console };
        if outbound {
            machine.nat = Some(Nat::start(machine.child.id() as i32, &[])?);
        }
        Ok(machine)
    }

    /// Whether QEMU is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `timeout` for QEMU to exit on its own (the guest powered
    /// off); kills it after that. Returns whether it exited on its own.
    pub fn stop(mut self, timeout: Duration) -> bool {
        let exited = wait_with_timeout(&mut self.child, timeout);
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(nat) = self.nat.take() {
            nat.stop();
        }
        exited
    }

    /// The tail of what the machine printed on its console.
    pub fn console(&self) -> String {
        let text = self.console.lock().unwrap_or_else(|p| p.into_inner()).to_string_lossy();
        text.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(nat) = self.nat.take() {
            nat.stop();
        }
    }
}

fn keep(mut stream: Box<dyn Read + Send>, console: &Mutex<Captured>) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        console.lock().unwrap_or_else(|p| p.into_inner()).push(&buf[..n]);
    }
}

/// Waits for `child` without polling: a thread waits, this one times out.
fn wait_with_timeout(child: &mut Child, timeout: Duration) -> bool {
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    // waitid with WNOWAIT leaves the child for Child::wait to reap.
    std::thread::spawn(move || {
        // SAFETY: a zeroed siginfo_t for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting on our own child, without reaping it.
        let r =
            unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        let _ = tx.send(r);
    });
    let exited = rx.recv_timeout(timeout).is_ok();
    if exited {
        let _ = child.wait();
    }
    exited
}

/// The accelerator to use: `$CLEANROOM_VM_ACCEL` (kvm or tcg) when set;
/// else KVM when /dev/kvm opens and a probe boot with it ends in time (on
/// a nested host /dev/kvm can exist and hang), else TCG. The probe's answer
/// is kept in /run (which the host's next boot empties) with the boot's id.
pub fn accelerator(kernel: &Path) -> Result<Accel, EnvError> {
    match std::env::var("CLEANROOM_VM_ACCEL").as_deref() {
        Ok("kvm") => return Ok(Accel::Kvm),
        Ok("tcg") => return Ok(Accel::Tcg),
        Ok(other) if !other.is_empty() => {
            return Err(EnvError::Phase(format!("CLEANROOM_VM_ACCEL={other}: use kvm or tcg")))
        }
        _ => {}
    }
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let cache = Path::new("/run/cleanroom/vm-accelerator");
    if let Ok(text) = std::fs::read_to_string(cache) {
        if let Some((accel, id)) = text.split_once(' ') {
            if id.trim() == boot_id.trim() {
                return Ok(if accel == "kvm" { Accel::Kvm } else { Accel::Tcg });
            }
        }
    }
    let accel =
        if std::fs::File::options().read(true).write(true).open("/dev/kvm").is_ok() && kvm_boots(kernel) {
            Accel::Kvm
        } else {
            Accel::Tcg
        };
    let _ = std::fs::create_dir_all("/run/cleanroom");
    let _ = std::fs::write(cache, format!("{} {}", accel.as_str(), boot_id.trim()));
    Ok(accel)
}

/// Boots `kernel` under KVM with no root file system: it panics at once and
/// QEMU exits (panic=-1, -no-reboot). A hung KVM never gets that far.
fn kvm_boots(kernel: &Path) -> bool {
    let child = Command::new(crate::sandbox::tool(QEMU))
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
            "-accel",
            "kvm",
            "-m",
            "128M",
        ])
        .arg("-kernel")
        .arg(kernel)
        .args(["-append", "panic=-1 quiet"])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    let ended = wait_with_timeout(&mut child, Duration::from_secs(20));
    if !ended {
        let _ = child.kill();
        let _ = child.wait();
    }
    ended
}
