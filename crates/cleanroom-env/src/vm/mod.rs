//! The `vm` backend: every environment is a virtual machine of its own.
//!
//! One environment is a directory `<home>/vm-envs/<id>/` holding an `owner`
//! file (as the sandbox's, for the sweep), the trial's disk `disk.qcow2`
//! (a copy-on-write overlay of the image's disk, as large as the image plus
//! the task's `disk_mb`) and the agent's socket while a machine runs. It
//! boots in two ways (qemu.rs):
//!
//! - a phase boots the disk's own system (systemd), with the guest agent
//!   beside it (the `cleanroom-guest` crate); ending the phase powers the
//!   machine off, so nothing of it (processes, modules, memory) lasts into
//!   the next;
//! - between phases, the harness's file work (copying the verifier in,
//!   the tamper check, the env-diff) boots the agent alone from the host's
//!   initramfs, the disk mounted and nothing of it run: no file system the
//!   agent wrote is ever mounted by the host's kernel.
//!
//! Either way the machine is resumed from a booted snapshot of its shape
//! (snapshot.rs) unless `CLEANROOM_VM_BOOT=cold`, and the harness's first
//! message (Message::Start) says which boot it is.

pub(crate) mod channel;
pub(crate) mod exec;
pub(crate) mod files;
mod gpus;
pub mod image;
pub(crate) mod initramfs;
pub mod protocol;
mod qemu;
mod qmp;
mod recent;
pub(crate) mod served;
mod shown;
mod snapshot;
pub(crate) mod sweep;
pub(crate) mod watch;

use std::collections::HashMap;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::access::AccessWatch;
use crate::backend::{
    Backend, EnvDiff, EnvSpec, Environment, ExecOutcome, ExecRequest, GpuDriver, HostMount, LimitState,
    Limits, Needs, Network, PhaseOptions, PreparedImage, SweepReport, Unmet,
};
use crate::bounds::WalkLimits;
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::files::Files;
use crate::gpu_pool::{GpuPool, HeldGpus};
use crate::image::Flavour;
use crate::sandbox::host_tool;
use crate::sandbox::sweep::Owner;
use channel::Channel;
use files::{MachineFiles, Port};
use protocol::{Frame, Message, Mode, Shown};
pub use qemu::Accel;

/// How long a machine may take to boot to its agent's hello.
pub(crate) const BOOT_TIMEOUT: Duration = Duration::from_secs(300);
/// How long the disk's system may take to finish booting (systemd's jobs).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Waits until systemd has booted the disk's system (its manager answers
/// once it runs, and `--wait` then waits for the boot's jobs). A disk
/// without systemd is left as it is.
const SETTLE_SCRIPT: &str = "command -v systemctl >/dev/null || exit 0
while :; do
  case $(systemctl is-system-running --wait 2>/dev/null) in
    running|degraded|maintenance|stopping) exit 0 ;;
  esac
  sleep 0.1
done";
/// How long a machine may take to power off once asked.
pub(crate) const POWER_OFF_TIMEOUT: Duration = Duration::from_secs(30);

/// A machine image, ready to boot.
#[derive(Clone)]
struct Prepared {
    kernel: PathBuf,
    initramfs: PathBuf,
    disk: PathBuf,
    /// The disk's listing (protocol::Listing), as JSON, for the env-diff.
    listing: Arc<Vec<u8>>,
}

pub struct VmBackend {
    home: PathBuf,
    images: Mutex<HashMap<String, Prepared>>,
    accel: OnceLock<Accel>,
    boot: BootFrom,
    gpus: Arc<GpuPool<String>>,
}

/// How machines start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootFrom {
    /// Resumed from a booted snapshot of their shape (snapshot.rs).
    Snapshot,
    /// Booted from the kernel every time.
    Cold,
}

impl BootFrom {
    /// `$CLEANROOM_VM_BOOT`: `snapshot` (the default) or `cold`.
    fn from_env() -> Result<BootFrom, EnvError> {
        match std::env::var("CLEANROOM_VM_BOOT").as_deref() {
            Err(_) | Ok("") | Ok("snapshot") => Ok(BootFrom::Snapshot),
            Ok("cold") => Ok(BootFrom::Cold),
            Ok(other) => Err(EnvError::Phase(format!("CLEANROOM_VM_BOOT={other}: use snapshot or cold"))),
        }
    }
}

impl VmBackend {
    pub fn new(home: &Path) -> Result<VmBackend, EnvError> {
        VmBackend::booting(home, BootFrom::from_env()?)
    }

    /// A backend whose machines start as `boot` says, whatever the
    /// environment says.
    pub fn booting(home: &Path, boot: BootFrom) -> Result<VmBackend, EnvError> {
        if crate::privilege::current() != crate::privilege::Privilege::HostRoot {
            return Err(EnvError::Phase(
                "the vm backend needs the host's root (a network namespace per machine, its NAT, its disk image): run cleanroom as root"
                    .into(),
            ));
        }
        for tool in [qemu::QEMU, "qemu-img", "mkfs.ext4", "slirp4netns", "ip", "ldd"] {
            if host_tool(tool).is_none() {
                return Err(EnvError::Phase(format!(
                    "`{tool}` not found: the vm backend needs QEMU (qemu-system-x86, qemu-utils), e2fsprogs, \
                     slirp4netns and iproute2 (see docs/backends.md)"
                )));
            }
        }
        initramfs::guest_agent()?;
        let envs = home.join("vm-envs");
        std::fs::create_dir_all(&envs).map_err(|e| EnvError::io(envs.display().to_string(), e))?;
        Ok(VmBackend {
            home: home.to_path_buf(),
            images: Mutex::default(),
            accel: OnceLock::new(),
            boot,
            gpus: Arc::new(GpuPool::new(Vec::new())),
        })
    }

    /// The backend with the GPUs at these PCI addresses for passthrough
    /// (`vm.gpus` of the configuration), each checked usable first.
    pub fn with_gpus(self, addresses: &[String]) -> Result<VmBackend, EnvError> {
        let checked = gpus::check_all(addresses, &gpus::HostPaths::real())?;
        Ok(VmBackend { gpus: Arc::new(GpuPool::new(checked)), ..self })
    }
}

impl Backend for VmBackend {
    fn name(&self) -> &'static str {
        "vm"
    }

    fn unmet(&self, needs: &Needs) -> Vec<Unmet> {
        let mut unmet = Vec::new();
        let configured = self.gpus.total();
        if needs.gpus as usize > configured {
            let why = match configured {
                0 => "the vm backend has no GPU for passthrough: name GPUs bound to vfio-pci in vm.gpus of the \
                      configuration (docs/backends.md)"
                    .to_string(),
                n => format!("the task needs {} GPUs, and vm.gpus of the configuration names {n}", needs.gpus),
            };
            unmet.push(Unmet { need: "gpus", why });
        }
        if needs.gpus > 0 && needs.gpu_driver == GpuDriver::Host {
            unmet.push(Unmet {
                need: "gpus",
                why: "the task wants the host's GPU driver (`environment.gpu_driver` is \"host\"), which a machine \
                      with its own kernel cannot have: set `environment.gpu_driver = \"agent\"` for the agent to \
                      install one"
                    .into(),
            });
        }
        if needs.build {
            unmet.push(crate::backend::unbuildable("vm"));
        }
        unmet
    }

    fn prepare_images(
        &self,
        names: &[&str],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError> {
        let mut prepared = Vec::new();
        for name in names {
            let img = crate::image::ensure(name, Flavour::Machine, None, progress)?;
            let dir = img.root.parent().expect("an image's rootfs has a parent").to_path_buf();
            let initramfs = initramfs::ensure(&self.home, &dir)?;
            let kernel = dir.join("vmlinuz");
            if self.accel.get().is_none() {
                let accel = qemu::accelerator(&kernel)?;
                progress(&format!("machines run with {}", accel.as_str()));
                let _ = self.accel.set(accel);
            }
            let listing_path = dir.join("listing.json");
            let listing = std::fs::read(&listing_path)
                .map_err(|e| EnvError::io(listing_path.display().to_string(), e))?;
            let ready =
                Prepared { kernel, initramfs, disk: dir.join("disk.raw"), listing: Arc::new(listing) };
            self.images.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), ready);
            prepared.push(PreparedImage { name: name.to_string(), digest: img.digest });
        }
        Ok(prepared)
    }

    fn sweep(&self) -> Result<SweepReport, EnvError> {
        sweep::sweep(&self.home.join("vm-envs"))
    }

    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        let image = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&spec.image)
            .cloned()
            .ok_or_else(|| EnvError::ImageNotPrepared(spec.image.clone()))?;
        let accel = self.accel.get().copied().unwrap_or(Accel::Tcg);
        let gpus = self.gpus.take(spec.gpus as usize)?;
        Ok(Box::new(VmEnv::create(&self.home, image, accel, self.boot, spec, gpus)?))
    }

    fn accelerator(&self) -> Option<&'static str> {
        self.accel.get().map(|a| a.as_str())
    }
}

/// A machine that runs now, and the agent's port to it.
struct Booted {
    machine: qemu::Machine,
    channel: Arc<Channel>,
}

/// What the environment's file access and its phases share.
struct Inner {
    home: PathBuf,
    dir: PathBuf,
    image: Prepared,
    boot_from: BootFrom,
    accel: Accel,
    cpus: u32,
    memory_mb: u64,
    pids_max: u64,
    resolv_conf: PathBuf,
    /// PCI addresses of the GPUs a phase boots with.
    gpus: Vec<String>,
    booted: Mutex<Option<Booted>>,
    /// A phase has run: from then on a machine that does not boot, or an
    /// agent that stops answering between phases, is the disk's doing.
    phase_ran: std::sync::atomic::AtomicBool,
}

impl Inner {
    fn disk(&self) -> PathBuf {
        self.dir.join("disk.qcow2")
    }

    /// Boots the disk in `mode` with the `shown` disks, after powering off
    /// what runs.
    fn boot(&self, mode: Mode, network: Network, shown: &[PathBuf]) -> Result<Arc<Channel>, EnvError> {
        let mut booted = self.booted.lock().unwrap_or_else(|p| p.into_inner());
        self.boot_in(&mut booted, mode, network, shown)
    }

    /// [`Inner::boot`], with the machine's slot locked by the caller.
    fn boot_in(
        &self,
        booted: &mut Option<Booted>,
        mode: Mode,
        network: Network,
        shown: &[PathBuf],
    ) -> Result<Arc<Channel>, EnvError> {
        if let Some(old) = booted.take() {
            power_off(old);
        }
        let socket = self.dir.join("agent.sock");
        let _ = std::fs::remove_file(&socket);
        let disk = self.disk();
        // A phase gets the GPUs; the agent's file work does without.
        let gpus: &[String] = if mode == Mode::Machine { &self.gpus } else { &[] };
        // A snapshot's machine has no device beyond the trial's disk: a phase
        // that shows host directories or has GPUs boots cold.
        let snapshot = match self.boot_from {
            BootFrom::Snapshot if shown.is_empty() && gpus.is_empty() => Some(snapshot::ensure(
                &self.image,
                snapshot::Shape {
                    accel: self.accel,
                    cpus: self.cpus,
                    memory_mb: self.memory_mb,
                    nic: network == Network::Outbound,
                },
            )?),
            BootFrom::Snapshot | BootFrom::Cold => None,
        };
        let boot = qemu::Boot {
            kernel: &self.image.kernel,
            initramfs: &self.image.initramfs,
            disk: &disk,
            shown,
            gpus,
            socket: &socket,
            accel: self.accel,
            cpus: self.cpus,
            memory_mb: self.memory_mb,
            network,
            resolv_conf: &self.resolv_conf,
            resume: snapshot.as_ref(),
            qmp: None,
        };
        let mut machine = qemu::Machine::start(&boot)?;
        let opened = Channel::open(&socket, &self.start(mode)?, BOOT_TIMEOUT, &mut || machine.running());
        let channel = match opened {
            Ok(channel) if channel.mode == mode => Arc::new(channel),
            Ok(channel) => {
                return Err(EnvError::Phase(format!(
                    "the machine's agent started in {:?} mode, not {mode:?}",
                    channel.mode
                )))
            }
            Err(e) => {
                let console = machine.console();
                drop(machine);
                let why = format!("the machine did not boot: {e}; its console ended:\n{console}");
                return Err(if self.phase_ran.load(Ordering::SeqCst) {
                    EnvError::Broken(why)
                } else {
                    EnvError::Phase(why)
                });
            }
        };
        *booted = Some(Booted { machine, channel: channel.clone() });
        Ok(channel)
    }

    /// What a boot in `mode` is told first.
    fn start(&self, mode: Mode) -> Result<Frame, EnvError> {
        let mut seed = vec![0u8; 32];
        // SAFETY: getrandom fills the buffer it is given.
        let n = unsafe { libc::getrandom(seed.as_mut_ptr().cast(), seed.len(), 0) };
        if n != seed.len() as isize {
            return Err(EnvError::io("getrandom", io::Error::last_os_error()));
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let phase = mode == Mode::Machine;
        let start = Message::Start {
            mode,
            memory_mb: phase.then_some(self.memory_mb),
            pids: phase.then_some(self.pids_max),
            unix_time_ns: now.as_nanos() as u64,
        };
        Ok(Frame::with_data(start, seed))
    }

    fn power_off(&self) {
        if let Some(old) = self.booted.lock().unwrap_or_else(|p| p.into_inner()).take() {
            power_off(old);
        }
    }

    fn channel(&self) -> Option<Arc<Channel>> {
        self.booted.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|b| b.channel.clone())
    }
}

impl Port for Inner {
    fn port(&self) -> io::Result<Arc<Channel>> {
        // Looked at and booted under one lock: two callers never boot twice.
        let mut booted = self.booted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = booted.as_ref() {
            return Ok(b.channel.clone());
        }
        self.boot_in(&mut booted, Mode::Service, Network::LoopbackOnly, &[]).map_err(io::Error::other)
    }
}

/// Makes `disk`, a copy-on-write overlay of the image's `base`, as large
/// as it plus `extra` bytes.
fn overlay(base: &Path, disk: &Path, extra: u64) -> Result<(), EnvError> {
    let base_bytes = std::fs::metadata(base).map_err(|e| EnvError::io(base.display().to_string(), e))?.len();
    let out = Command::new(crate::sandbox::tool("qemu-img"))
        .args(["create", "-q", "-f", "qcow2", "-F", "raw", "-b"])
        .arg(base)
        .arg(disk)
        .arg((base_bytes + extra).to_string())
        .env_clear()
        .output()
        .map_err(|e| EnvError::io("run qemu-img", e))?;
    if !out.status.success() {
        return Err(EnvError::Command {
            program: "qemu-img create".into(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Asks the agent to flush the disk and power off; kills QEMU when that
/// does not happen in time. The disk is consistent either way once the
/// agent has flushed.
fn power_off(booted: Booted) {
    let _ = booted.channel.call(|id| Message::PowerOff { id }, Vec::new(), POWER_OFF_TIMEOUT);
    booted.machine.stop(POWER_OFF_TIMEOUT);
}

pub struct VmEnv {
    id: String,
    inner: Arc<Inner>,
    files: MachineFiles,
    in_phase: bool,
    /// Directories the guest made on the disk for this phase's mounts,
    /// removed once it is powered off.
    mount_points: Vec<String>,
    /// Dropped after the machine's teardown (fields drop after `drop`).
    _gpus: HeldGpus<String>,
}

impl VmEnv {
    fn create(
        home: &Path,
        image: Prepared,
        accel: Accel,
        boot_from: BootFrom,
        spec: &EnvSpec,
        gpus: HeldGpus<String>,
    ) -> Result<VmEnv, EnvError> {
        let me = Owner::current();
        let id = me.new_id();
        let dir = home.join("vm-envs").join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(dir.display().to_string(), e))?;
        me.write(&dir)?;
        let resolv_conf = dir.join("resolv.conf");
        // slirp4netns's DNS, as the NAT into QEMU's namespace offers it.
        std::fs::write(&resolv_conf, "nameserver 10.0.2.3\n")
            .map_err(|e| EnvError::io("writing resolv.conf", e))?;
        if let Err(e) = overlay(&image.disk, &dir.join("disk.qcow2"), spec.disk_mb << 20) {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(e);
        }
        let inner = Arc::new(Inner {
            home: home.to_path_buf(),
            dir,
            image,
            boot_from,
            accel,
            cpus: spec.cpus,
            memory_mb: spec.memory_mb,
            pids_max: spec.pids_max,
            resolv_conf,
            gpus: gpus.gpus.clone(),
            booted: Mutex::new(None),
            phase_ran: std::sync::atomic::AtomicBool::new(false),
        });
        let files = MachineFiles { port: inner.clone(), made: Mutex::default() };
        Ok(VmEnv { id, inner, files, in_phase: false, mount_points: Vec::new(), _gpus: gpus })
    }

    /// Mounts each host directory's disk (attached in this order) where
    /// it goes.
    fn show(&mut self, channel: &Channel, mounts: &[HostMount]) -> Result<(), EnvError> {
        for (n, mount) in mounts.iter().enumerate() {
            let what = Shown::Disk { serial: protocol::shown_serial(n) };
            self.mount_points.extend(served::show(channel, what, &mount.path, POWER_OFF_TIMEOUT)?);
        }
        Ok(())
    }

    /// Best effort, as the sandbox's: from the machine's agent alone, so
    /// nothing of the phase runs while they go.
    fn remove_mount_points(&mut self) {
        if self.mount_points.is_empty() {
            return;
        }
        if let Ok(channel) = self.inner.port() {
            served::remove_mount_points(&channel, std::mem::take(&mut self.mount_points), POWER_OFF_TIMEOUT);
        }
    }

    fn phase_channel(&self) -> Result<Arc<Channel>, EnvError> {
        match (self.in_phase, self.inner.channel()) {
            (true, Some(channel)) => Ok(channel),
            _ => Err(EnvError::Phase("no phase is running".into())),
        }
    }

    fn teardown(&mut self) -> Result<(), EnvError> {
        self.inner.power_off();
        self.in_phase = false;
        crate::removal::remove_dir_all_if_present(&self.inner.dir)
    }
}

impl Environment for VmEnv {
    fn id(&self) -> &str {
        &self.id
    }

    fn limits(&self) -> Limits {
        // The machine's memory and disk are its own; the agent's commands
        // get the task's memory and process limits from a cgroup inside.
        Limits { memory: LimitState::Enforced, pids: LimitState::Enforced, disk: LimitState::Enforced }
    }

    fn files(&self) -> &dyn Files {
        &self.files
    }

    fn begin_phase_with(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError> {
        if self.in_phase {
            return Err(EnvError::Phase("a phase is already running".into()));
        }
        let shown = options
            .mounts
            .iter()
            .map(|mount| shown::disk_of(&self.inner.home, &mount.host))
            .collect::<Result<Vec<_>, _>>()?;
        let channel = self.inner.boot(Mode::Machine, network, &shown)?;
        self.in_phase = true;
        if let Err(e) = self.show(&channel, &options.mounts) {
            self.end_phase()?;
            return Err(e);
        }
        // Sealed before any command of the disk's runs (the wait below is
        // its bash): the seals hold from the phase's first command on.
        if !options.sealed.is_empty() {
            let answer = channel
                .call(|id| Message::Seal { id, paths: options.sealed.clone() }, Vec::new(), POWER_OFF_TIMEOUT)
                .map_err(|e| EnvError::io("sealing paths", e))?;
            if let Message::Failed { failure, .. } = answer.message {
                return Err(EnvError::Phase(failure.message));
            }
        }
        // Commands start once the disk's system has finished booting, as on
        // a machine one logs into. No profile of the disk's runs here: the
        // deployment's code has no turn between the tamper check and the
        // verifier's seals.
        let mut settle = ExecRequest::plain_shell(
            SETTLE_SCRIPT,
            "/",
            vec![("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into())],
        );
        settle.timeout = Some(SETTLE_TIMEOUT);
        exec::run(&channel, &settle, &CancelToken::new().map_err(|e| EnvError::io("cancel token", e))?)?;
        Ok(())
    }

    fn listen_loopback(&self, port: u16) -> Result<TcpListener, EnvError> {
        served::listen(&*self.phase_channel()?, port, "machine")
    }

    fn exec(&self, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
        exec::run(&*self.phase_channel()?, req, cancel)
    }

    fn watch_access(&self, _under: &str) -> Result<Option<Box<dyn AccessWatch>>, EnvError> {
        served::watch_access(self.phase_channel()?, "machine").map(Some)
    }

    fn end_phase(&mut self) -> Result<(), EnvError> {
        self.inner.power_off();
        self.inner.phase_ran.store(true, Ordering::SeqCst);
        self.in_phase = false;
        self.remove_mount_points();
        Ok(())
    }

    fn diff(&self, cancel: &CancelToken) -> Result<EnvDiff, EnvError> {
        if cancel.is_cancelled() {
            return Err(EnvError::Phase("listing the environment's changes: cancelled".into()));
        }
        let limits = WalkLimits::default();
        let broken = |what: &str, e: io::Error| match e.into_inner().map(|inner| inner.downcast::<EnvError>())
        {
            Some(Ok(env_error)) => *env_error,
            Some(Err(other)) => EnvError::Broken(format!("{what}: {other}")),
            None => EnvError::Broken(what.to_string()),
        };
        let channel = self.inner.port().map_err(|e| broken("booting the machine's disk", e))?;
        served::changes(&channel, self.inner.image.listing.to_vec(), limits, &self.files, broken)
    }

    fn destroy(mut self: Box<Self>) -> Result<(), EnvError> {
        self.teardown()
    }
}

impl Drop for VmEnv {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}
