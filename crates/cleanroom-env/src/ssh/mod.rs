//! The `ssh` backend: every environment is a whole host reached over SSH
//! (a workstation, a lab server, a cloud VM), taken from the
//! configuration's pools (pool.rs) and fresh for each trial.
//!
//! On the host, cleanroom's guest agent (agent.rs) serves the same
//! protocol as in the vm backend's machines, over an ssh session: commands
//! in cgroups of their own, files through link-safe paths, seals, access
//! watches and the port relay (the model forwarder reaches the host's
//! loopback through it, with no remote port forward). One session serves a
//! phase; between phases a session serves the harness's file work. Host
//! directories a phase shows (an external agent's installation) are copied
//! onto the host for it (shown.rs).
//!
//! A phase ends with every process of its commands killed (their cgroups),
//! then, with `phase_end = "reboot"` (the default), the host rebooted by
//! the kernel at once before anything else touches it: nothing the agent
//! started outlives its phase, whatever cgroup it moved to. What the agent
//! installed does (a unit enabled at boot runs in the next phase too); on
//! a host it was root of, nothing can be verified from outside as the
//! sandbox and the vm backend do (docs/backends.md).

mod agent;
pub mod config;
mod pool;
mod shown;
mod transport;

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::access::AccessWatch;
use crate::backend::{
    Backend, EnvDiff, EnvSpec, Environment, ExecOutcome, ExecRequest, LimitState, Limits, MachineRecord,
    Needs, Network, PhaseOptions, PreparedImage, SweepReport, Unmet,
};
use crate::bounds::WalkLimits;
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::files::Files;
use crate::sandbox::sweep::Owner;
use crate::vm::channel::Channel;
use crate::vm::files::{MachineFiles, Port};
use crate::vm::protocol::{Frame, Message, Mode, Shown};
use crate::vm::served;
use agent::{Session, Uploaded};
pub use config::{PhaseEnd, SshConfig};
use pool::{Lease, Pools};
use transport::Connection;

/// How long a host may take to answer on SSH, first and after a reboot.
const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long one request of the harness's own may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one try to reach a rebooting host may take at first (a
/// handshake and one command take a second or two on an emulated host);
/// each try that runs out gives the next one half as much again.
const REBOOT_TRY: Duration = Duration::from_secs(10);
/// What tells one boot of a host from the next.
const BOOT_ID: &str = "cat /proc/sys/kernel/random/boot_id";
/// The bounds of a host's listing: a whole system, not a task's tree.
const LISTING: WalkLimits = WalkLimits {
    entries: 4_000_000,
    depth: crate::bounds::MAX_DEPTH,
    name_bytes: crate::bounds::MAX_NAME_BYTES,
    time: Duration::from_secs(600),
};

pub struct SshBackend {
    home: PathBuf,
    pools: Pools,
    phase_end: PhaseEnd,
}

impl SshBackend {
    pub fn new(home: &Path, config: &SshConfig) -> Result<SshBackend, EnvError> {
        config.check().map_err(EnvError::Config)?;
        if config.pools.is_empty() {
            return Err(EnvError::Config(
                "ssh.pools: the ssh backend has no hosts: add a pool of hosts or a provisioner to the \
                 configuration's [ssh] section (docs/backends.md; scripts/test-hosts.sh up N makes some here)"
                    .into(),
            ));
        }
        if crate::sandbox::host_tool("ssh").is_none() {
            return Err(EnvError::Phase("`ssh` not found: the ssh backend needs OpenSSH's client".into()));
        }
        crate::vm::initramfs::guest_agent()?;
        let locks = pool::machine_locks();
        for dir in [home.join("ssh-envs"), locks.clone()] {
            std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(dir.display().to_string(), e))?;
        }
        let pools = Pools::new(config, &locks);
        Ok(SshBackend { home: home.to_path_buf(), pools, phase_end: config.phase_end })
    }
}

impl Backend for SshBackend {
    fn name(&self) -> &'static str {
        "ssh"
    }

    fn unmet(&self, needs: &Needs) -> Vec<Unmet> {
        let mut unmet = Vec::new();
        let most = self.pools.most_gpus();
        if needs.gpus > most {
            let why = format!(
                "no host of the ssh backend has {} GPUs (the most is {most}): declare `gpus` on a host of \
                 [[ssh.pools.hosts]] or on a provisioner's pool in the configuration (docs/backends.md)",
                needs.gpus
            );
            unmet.push(Unmet { need: "gpus", why });
        }
        if needs.build {
            unmet.push(crate::backend::unbuildable("ssh"));
        }
        unmet
    }

    fn prepare_images(
        &self,
        names: &[&str],
        _progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError> {
        // A host runs its own system: the task's image names what it was
        // written for, the record says what it ran on.
        Ok(names.iter().map(|name| PreparedImage { name: name.to_string(), digest: "host".into() }).collect())
    }

    fn sweep(&self) -> Result<SweepReport, EnvError> {
        // The masters die with their harness (a parent-death signal): only
        // directories can remain.
        crate::vm::sweep::sweep(&self.home.join("ssh-envs"))
    }

    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        let lease = self.pools.take(spec.gpus)?;
        Ok(Box::new(SshEnv::create(&self.home, lease, self.phase_end, spec)?))
    }
}

/// The host's connection and what runs on it now.
#[derive(Default)]
struct Host {
    conn: Option<Connection>,
    agent: Option<Uploaded>,
    session: Option<Session>,
    /// The agent ran (or a phase did not end cleanly) since the host last
    /// booted: in reboot mode it boots again before anything else runs.
    needs_reboot: bool,
    boot_id: String,
}

struct Inner {
    lease: Lease,
    dir: PathBuf,
    phase_end: PhaseEnd,
    memory_mb: u64,
    pids_max: u64,
    host: Mutex<Host>,
    /// A phase has run: from then on a host that does not come back, or an
    /// agent that cannot start, is the trial's doing.
    phase_ran: AtomicBool,
}

impl Inner {
    fn host(&self) -> MutexGuard<'_, Host> {
        self.host.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An error of the host, the trial's breakage once a phase has run.
    fn fault(&self, e: EnvError) -> EnvError {
        match e {
            EnvError::Broken(_) => e,
            other if self.phase_ran.load(Ordering::SeqCst) => EnvError::Broken(other.to_string()),
            other => other,
        }
    }

    /// Connected, with the agent uploaded for this boot.
    fn connect(&self, host: &mut Host, timeout: Duration) -> Result<(), EnvError> {
        if host.conn.is_none() {
            let conn = Connection::open(&self.lease.target, &self.dir, timeout)?;
            host.boot_id = conn.text(BOOT_ID, REQUEST_TIMEOUT)?.trim().to_string();
            host.conn = Some(conn);
            host.agent = None;
        }
        if host.agent.is_none() {
            host.agent = Some(agent::upload(host.conn.as_ref().expect("connected"))?);
        }
        Ok(())
    }

    /// Reboots the host if it needs it (and phases end that way), and
    /// waits until it answers from its new boot.
    fn make_clean(&self, host: &mut Host) -> Result<(), EnvError> {
        if !host.needs_reboot || self.phase_end == PhaseEnd::Kill {
            host.needs_reboot = false;
            return Ok(());
        }
        self.connect(host, REQUEST_TIMEOUT)?;
        let before = host.boot_id.clone();
        let reboot = host.agent.as_ref().expect("uploaded").command("--reboot");
        // The session ends with the host; its answer never comes.
        let _ = host.conn.as_ref().expect("connected").run(&reboot, &[], Duration::from_secs(15));
        *host = Host::default();
        let began = Instant::now();
        let mut per_try = REBOOT_TRY;
        loop {
            let left = BOOT_TIMEOUT.saturating_sub(began.elapsed());
            if left.is_zero() {
                return Err(EnvError::Broken(format!(
                    "{} did not come back from its reboot within {}s",
                    self.lease.target.name,
                    BOOT_TIMEOUT.as_secs()
                )));
            }
            let try_for = per_try.min(left);
            let tried = Instant::now();
            if let Some((conn, boot_id)) = self.new_boot(&before, try_for) {
                *host = Host { conn: Some(conn), boot_id, ..Host::default() };
                return self.connect(host, REQUEST_TIMEOUT);
            }
            if tried.elapsed() >= try_for {
                per_try += REBOOT_TRY / 2;
            }
            // Not down yet, or not up yet.
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// A connection to a boot of the host other than `before`, if one
    /// answers within about `within`.
    fn new_boot(&self, before: &str, within: Duration) -> Option<(Connection, String)> {
        let conn = Connection::open_once(&self.lease.target, &self.dir, within)?;
        let boot_id = conn.text(BOOT_ID, within).ok()?.trim().to_string();
        (boot_id != before).then_some((conn, boot_id))
    }

    /// Starts an agent session in `mode`.
    fn start(&self, host: &mut Host, mode: Mode, network: Network) -> Result<Arc<Channel>, EnvError> {
        if let Some(old) = host.session.take() {
            old.end(REQUEST_TIMEOUT)?;
        }
        self.make_clean(host)?;
        self.connect(host, REQUEST_TIMEOUT)?;
        let phase = mode == Mode::Machine;
        let start = Frame::new(Message::Start {
            mode,
            memory_mb: phase.then_some(self.memory_mb),
            pids: phase.then_some(self.pids_max),
            unix_time_ns: 0,
        });
        let conn = host.conn.as_ref().expect("connected");
        let session =
            Session::start(conn, host.agent.as_ref().expect("uploaded"), &start, network, BOOT_TIMEOUT)?;
        let channel = session.channel.clone();
        host.session = Some(session);
        Ok(channel)
    }

    fn text(&self, script: &str) -> Result<String, EnvError> {
        let mut host = self.host();
        self.connect(&mut host, BOOT_TIMEOUT)?;
        host.conn.as_ref().expect("connected").text(script, REQUEST_TIMEOUT)
    }
}

impl Port for Inner {
    fn port(&self) -> io::Result<Arc<Channel>> {
        let mut host = self.host();
        if let Some(session) = &host.session {
            return Ok(session.channel.clone());
        }
        self.start(&mut host, Mode::Service, Network::LoopbackOnly)
            .map_err(|e| io::Error::other(self.fault(e)))
    }
}

pub struct SshEnv {
    id: String,
    inner: Arc<Inner>,
    files: MachineFiles,
    limits: Limits,
    machine: MachineRecord,
    /// The host as the trial got it, for the env-diff ([`protocol::Listing`] JSON).
    listing: Vec<u8>,
    in_phase: bool,
    /// The phase's copies of host directories on the host (shown.rs), and
    /// the directories made to show them, removed once it is over.
    copies: Vec<String>,
    mount_points: Vec<String>,
}

impl SshEnv {
    fn create(home: &Path, lease: Lease, phase_end: PhaseEnd, spec: &EnvSpec) -> Result<SshEnv, EnvError> {
        let me = Owner::current();
        let id = me.new_id();
        let dir = home.join("ssh-envs").join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(dir.display().to_string(), e))?;
        me.write(&dir)?;
        let inner = Arc::new(Inner {
            lease,
            dir,
            phase_end,
            memory_mb: spec.memory_mb,
            pids_max: spec.pids_max,
            host: Mutex::default(),
            phase_ran: AtomicBool::new(false),
        });
        let files = MachineFiles { port: inner.clone(), made: Mutex::default() };
        let mut env = SshEnv {
            id,
            inner,
            files,
            limits: Limits {
                memory: LimitState::Unenforced,
                pids: LimitState::Unenforced,
                disk: LimitState::Unenforced,
            },
            machine: MachineRecord::default(),
            listing: Vec::new(),
            in_phase: false,
            copies: Vec::new(),
            mount_points: Vec::new(),
        };
        // On any failure from here, dropping the env hands the host back.
        env.survey(spec)?;
        Ok(env)
    }

    /// What the host is: its cgroups (the limits), its GPUs and driver,
    /// and a listing of its files as the trial got it.
    fn survey(&mut self, spec: &EnvSpec) -> Result<(), EnvError> {
        let facts = self.inner.text(
            "hostname; cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null || echo; \
             nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true",
        )?;
        let mut lines = facts.lines();
        let hostname = lines.next().unwrap_or_default().trim().to_string();
        let controllers: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
        let state =
            |c: &str| if controllers.contains(&c) { LimitState::Enforced } else { LimitState::Unenforced };
        // The host's disk is its own: nothing of this one fills with it.
        self.limits = Limits { memory: state("memory"), pids: state("pids"), disk: LimitState::Unenforced };
        if !spec.allow_unlimited {
            for (limit, held) in [("memory", self.limits.memory), ("pids", self.limits.pids)] {
                if held == LimitState::Unenforced {
                    return Err(EnvError::LimitUnavailable {
                        limit,
                        why: format!("{} has no cgroup v2 {limit} controller", self.inner.lease.target.name),
                    });
                }
            }
        }
        let gpus: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(',').map(|(n, d)| (n.trim().to_string(), d.trim().to_string())))
            .collect();
        self.machine = MachineRecord {
            host: self.inner.lease.target.name.clone(),
            hostname,
            labels: self.inner.lease.labels.clone(),
            gpus_declared: self.inner.lease.gpus,
            gpus: gpus.iter().map(|(name, _)| name.clone()).collect(),
            driver: gpus.first().map(|(_, driver)| driver.clone()),
        };
        let channel = self.inner.port().map_err(|e| EnvError::io("starting the host's agent", e))?;
        self.listing = served::listing(&channel, LISTING)?;
        Ok(())
    }

    fn phase_channel(&self) -> Result<Arc<Channel>, EnvError> {
        match (&self.inner.host().session, self.in_phase) {
            (Some(session), true) => Ok(session.channel.clone()),
            _ => Err(EnvError::Phase("no phase is running".into())),
        }
    }
}

impl Environment for SshEnv {
    fn id(&self) -> &str {
        &self.id
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn machine(&self) -> Option<MachineRecord> {
        Some(self.machine.clone())
    }

    fn files(&self) -> &dyn Files {
        &self.files
    }

    fn begin_phase_with(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError> {
        if self.in_phase {
            return Err(EnvError::Phase("a phase is already running".into()));
        }
        let channel = {
            let mut host = self.inner.host();
            let started =
                self.inner.start(&mut host, Mode::Machine, network).map_err(|e| self.inner.fault(e))?;
            host.needs_reboot |= options.agent;
            let (conn, agent) =
                (host.conn.as_ref().expect("connected"), host.agent.as_ref().expect("uploaded"));
            for mount in &options.mounts {
                let copy = shown::copy(conn, agent.sudo(), &mount.host).map_err(|e| self.inner.fault(e))?;
                self.copies.push(copy);
            }
            started
        };
        self.in_phase = true;
        self.inner.phase_ran.store(true, Ordering::SeqCst);
        for (mount, copy) in options.mounts.iter().zip(&self.copies) {
            let what = Shown::Copy { source: copy.clone() };
            self.mount_points.extend(served::show(&channel, what, &mount.path, REQUEST_TIMEOUT)?);
        }
        if !options.sealed.is_empty() {
            let answer = channel
                .call(|id| Message::Seal { id, paths: options.sealed.clone() }, Vec::new(), REQUEST_TIMEOUT)
                .map_err(|e| EnvError::io("sealing paths", e))?;
            if let Message::Failed { failure, .. } = answer.message {
                return Err(EnvError::Phase(format!("sealing paths: {}", failure.message)));
            }
        }
        Ok(())
    }

    fn listen_loopback(&self, port: u16) -> Result<TcpListener, EnvError> {
        served::listen(&*self.phase_channel()?, port, "host")
    }

    fn exec(&self, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
        crate::vm::exec::run(&*self.phase_channel()?, req, cancel)
    }

    fn watch_access(&self, _under: &str) -> Result<Option<Box<dyn AccessWatch>>, EnvError> {
        served::watch_access(self.phase_channel()?, "host").map(Some)
    }

    fn end_phase(&mut self) -> Result<(), EnvError> {
        self.in_phase = false;
        let mut host = self.inner.host();
        let session = host.session.take();
        let ended = match (session.map(|s| s.end(REQUEST_TIMEOUT)), self.inner.phase_end) {
            (Some(Ok(())) | None, _) => Ok(()),
            // What outlived its cgroup's kill goes with the reboot.
            (Some(Err(_)), PhaseEnd::Reboot) => {
                host.needs_reboot = true;
                Ok(())
            }
            (Some(Err(e)), PhaseEnd::Kill) => Err(EnvError::Broken(format!("ending the phase: {e}"))),
        };
        drop(host);
        ended?;
        self.remove_shown()
    }

    fn diff(&self, cancel: &CancelToken) -> Result<EnvDiff, EnvError> {
        if cancel.is_cancelled() {
            return Err(EnvError::Phase("listing the environment's changes: cancelled".into()));
        }
        let channel = self.inner.port().map_err(|e| EnvError::Broken(format!("reaching the host: {e}")))?;
        let limits = WalkLimits { depth: WalkLimits::default().depth, ..LISTING };
        served::changes(&channel, self.listing.clone(), limits, &self.files, |what, e| {
            EnvError::Broken(format!("{what} of the host: {e}"))
        })
    }

    fn destroy(mut self: Box<Self>) -> Result<(), EnvError> {
        self.teardown()
    }
}

impl SshEnv {
    /// Removes what showing host directories left on the host, once
    /// nothing of the phase runs (after its reboot, in reboot mode).
    fn remove_shown(&mut self) -> Result<(), EnvError> {
        if self.copies.is_empty() && self.mount_points.is_empty() {
            return Ok(());
        }
        let channel = self.inner.port().map_err(|e| EnvError::Broken(format!("reaching the host: {e}")))?;
        served::remove_mount_points(&channel, std::mem::take(&mut self.mount_points), REQUEST_TIMEOUT);
        let host = self.inner.host();
        let (conn, agent) = (host.conn.as_ref().expect("connected"), host.agent.as_ref().expect("uploaded"));
        shown::remove(conn, agent.sudo(), &std::mem::take(&mut self.copies)).map_err(|e| self.inner.fault(e))
    }

    /// Ends what runs and closes the connection; the host goes back to its
    /// pool (reset before its next trial) or is destroyed.
    fn teardown(&mut self) -> Result<(), EnvError> {
        self.in_phase = false;
        let mut host = self.inner.host();
        if let Some(session) = host.session.take() {
            let _ = session.end(REQUEST_TIMEOUT);
        }
        *host = Host::default();
        drop(host);
        crate::removal::remove_dir_all_if_present(&self.inner.dir)
    }
}

impl Drop for SshEnv {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}
