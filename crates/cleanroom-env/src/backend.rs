//! The one interface every environment backend implements.
//!
//! An environment is a fresh machine made from a base image. Commands run in
//! it during *phases*: each phase has its own PID namespace (and network
//! namespace), so ending a phase kills every process started in it. The
//! agent runs in one phase, the hidden verifier in the next; nothing of the
//! first survives into the second.

use std::path::PathBuf;
use std::time::Duration;

use crate::access::AccessWatch;
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::files::Files;
use crate::last_line::LastLine;
use crate::output::Captured;

/// What a new environment must provide.
#[derive(Debug, Clone)]
pub struct EnvSpec {
    /// The base image, by name (`environment.image`): the backend prepared
    /// it in [`Backend::prepare_images`].
    pub image: String,
    pub cpus: u32,
    pub memory_mb: u64,
    pub disk_mb: u64,
    /// Most processes (threads count) the environment may hold at once.
    pub pids_max: u64,
    /// GPUs the environment gets (only from a backend whose `unmet` does
    /// not name `gpus`).
    pub gpus: u32,
    /// Whether those GPUs come with the host's driver user space.
    pub gpu_driver: GpuDriver,
    /// Start even when a limit cannot be enforced (recorded as such).
    pub allow_unlimited: bool,
    /// A directory holding a Dockerfile that builds the environment's image
    /// (`environment.build`), its build context; only a backend whose
    /// `unmet` lets [`Needs::build`] through is given one.
    pub build: Option<std::path::PathBuf>,
}

/// Whether each resource limit held for an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitState {
    Enforced,
    Unenforced,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub memory: LimitState,
    pub pids: LimitState,
    pub disk: LimitState,
}

/// One command to run inside an environment's current phase.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// argv[0] is resolved inside the environment (absolute path or via PATH).
    pub argv: Vec<String>,
    /// Working directory inside the environment.
    pub cwd: String,
    /// The complete environment of the process: nothing of the host leaks in.
    pub env: Vec<(String, String)>,
    /// Wall-clock limit; on expiry the process group gets TERM, then KILL
    /// after `grace` or as soon as the command has ended, whichever comes
    /// first: nothing of it outlives the timeout.
    pub timeout: Option<Duration>,
    pub grace: Duration,
    /// Most bytes of each output stream kept (half head, half tail).
    pub output_limit: usize,
    /// Fed with the command's output as it arrives, for progress reports;
    /// none when nobody watches.
    pub last_line: Option<LastLine>,
}

impl ExecRequest {
    /// A `bash -lc SCRIPT` in `cwd`, with the given environment.
    pub fn login_shell(script: &str, cwd: &str, env: Vec<(String, String)>) -> Self {
        ExecRequest {
            argv: vec!["/bin/bash".into(), "-lc".into(), script.into()],
            cwd: cwd.into(),
            env,
            timeout: None,
            grace: Duration::from_secs(5),
            output_limit: 2 * 1024 * 1024,
            last_line: None,
        }
    }

    /// A `bash --noprofile --norc -c SCRIPT`: no profile or rc file of the
    /// environment runs.
    pub fn plain_shell(script: &str, cwd: &str, env: Vec<(String, String)>) -> Self {
        let argv = ["/bin/bash", "--noprofile", "--norc", "-c", script].map(String::from).to_vec();
        ExecRequest { argv, ..ExecRequest::login_shell(script, cwd, env) }
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exited on its own with this code.
    Exited(i32),
    /// Killed by a signal that the harness did not send.
    Signaled(i32),
    /// The timeout ran out and the harness killed it.
    TimedOut,
    /// The cancel token fired (Ctrl-C) and the harness killed it.
    Cancelled,
}

impl ExitStatus {
    pub fn success(&self) -> bool {
        matches!(self, ExitStatus::Exited(0))
    }

    /// The shell convention: the code, or 128 + signal.
    pub fn code(&self) -> Option<i32> {
        match self {
            ExitStatus::Exited(c) => Some(*c),
            ExitStatus::Signaled(s) => Some(128 + s),
            ExitStatus::TimedOut | ExitStatus::Cancelled => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ExecOutcome {
    pub status: ExitStatus,
    pub duration: Duration,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Both streams in arrival order.
    pub combined: Captured,
}

/// A phase's network: outbound through user-mode NAT, or loopback only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    Outbound,
    LoopbackOnly,
}

/// A host directory shown read-only inside the environment for one phase
/// (an agent's own installation, for instance). The mount point leaves no
/// trace in the environment once the phase ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostMount {
    pub host: PathBuf,
    /// Absolute path inside the environment.
    pub path: String,
}

/// What a phase gets besides its network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhaseOptions {
    /// Host directories shown read-only inside for this phase.
    pub mounts: Vec<HostMount>,
    /// Absolute paths inside the environment that no process of the phase
    /// can change, remove or replace, nor rename any directory above them:
    /// the hidden verifier and the protected files during verification. A
    /// path that is missing or reached through a link is left as it is
    /// (the tamper check has judged it already).
    pub sealed: Vec<String>,
    /// The agent under test runs in this phase. A backend whose ordinary
    /// phase end can miss a process that left its cgroup ends this phase
    /// the strongest way it has (the ssh backend reboots the host); the
    /// harness's own phases end the ordinary way.
    pub agent: bool,
}

/// One path of the environment that differs from its base image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    /// Absolute, inside the environment.
    pub path: String,
    pub kind: PathChangeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathChangeKind {
    Added,
    Modified,
    Deleted,
}

impl PathChangeKind {
    pub fn letter(self) -> char {
        match self {
            PathChangeKind::Added => 'A',
            PathChangeKind::Modified => 'M',
            PathChangeKind::Deleted => 'D',
        }
    }
}

/// Every change since the environment was made, by path.
#[derive(Debug, Clone, Default)]
pub struct EnvDiff {
    pub changes: Vec<PathChange>,
    /// Why the listing stopped before its end, if it did ("more than 128
    /// directory levels"): changes may be missing.
    pub incomplete: Option<String>,
}

/// What a task needs of the machine it runs on, beyond cpus, memory and
/// disk (which every backend provides). A new need is a new field here,
/// not a change of the [`Backend`] trait: each backend says which it
/// cannot meet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Needs {
    /// GPUs the task's environment must have.
    pub gpus: u32,
    /// With the host's driver user space, or without (`environment.gpu_driver`).
    pub gpu_driver: GpuDriver,
    /// The task boots virtual machines of its own (QEMU inside).
    pub qemu: bool,
    /// Outbound network during the agent's phase.
    pub network: bool,
    /// A machine of its own: a kernel to load modules into, systemd,
    /// Docker inside (`environment.machine`).
    pub machine: bool,
    /// An image built from the task's Dockerfile (`environment.build`).
    pub build: bool,
}

impl Needs {
    pub fn new(gpus: u32, qemu: bool, network: bool) -> Needs {
        Needs { gpus, qemu, network, ..Needs::default() }
    }

    /// These needs, with GPUs that come with `driver`.
    pub fn with_gpu_driver(self, gpu_driver: GpuDriver) -> Needs {
        Needs { gpu_driver, ..self }
    }

    /// These needs, and a machine of its own when `machine`.
    pub fn with_machine(self, machine: bool) -> Needs {
        Needs { machine, ..self }
    }

    /// These needs, and an image built from a Dockerfile when `build`.
    pub fn with_build(self, build: bool) -> Needs {
        Needs { build, ..self }
    }
}

/// What a backend without a container engine says of a task whose image a
/// Dockerfile builds.
pub(crate) fn unbuildable(backend: &str) -> Unmet {
    Unmet {
        need: "build",
        why: format!(
            "the task's environment is built from its Dockerfile (`environment.build`), which the {backend} \
             backend cannot build: --backend container builds it in a container engine"
        ),
    }
}

/// Whose NVIDIA driver user space an environment's GPUs come with
/// (`environment.gpu_driver`): the host's, mounted read-only as NVIDIA's
/// container toolkit does, or none, for the agent to install as on a fresh
/// cloud VM. A machine with its own kernel (vm) can only have the latter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GpuDriver {
    #[default]
    Host,
    Agent,
}

/// A need a backend cannot meet, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    /// The field of [`Needs`]: `gpus`, `qemu`, `network`, `machine`.
    pub need: &'static str,
    pub why: String,
}

/// The machine an environment is, where it is not made on this one (a
/// host of the ssh backend) or holds GPUs of this one, for the record.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MachineRecord {
    /// Its name in the configuration.
    pub host: String,
    /// What it calls itself.
    pub hostname: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// GPUs the configuration says it has.
    pub gpus_declared: u32,
    /// GPUs its driver reports (`nvidia-smi`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
    /// The GPU driver's version, where one runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
}

/// A base image a backend has ready, for the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedImage {
    pub name: String,
    pub digest: String,
}

/// What a sweep removed of runs that died.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Environment ids whose remains were removed.
    pub environments: Vec<String>,
}

/// A backend makes environments: it owns their images, how they are made,
/// what of them a dead run can leave behind, and how host files (an
/// agent's installation) reach them (a bind mount, an upload).
pub trait Backend: Send + Sync {
    fn name(&self) -> &'static str;

    /// The needs this backend cannot meet; empty when it can run the task.
    fn unmet(&self, needs: &Needs) -> Vec<Unmet>;

    /// Makes the named images ready (building or fetching them on first
    /// use), reporting progress a line at a time.
    fn prepare_images(
        &self,
        names: &[&str],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError>;

    /// Removes what runs that died left behind (never a live run's).
    fn sweep(&self) -> Result<SweepReport, EnvError>;

    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError>;

    /// Why none of this backend's environments can have its memory and
    /// process limits enforced, known before any is made (the rootless
    /// sandbox); None where each environment finds out for itself.
    fn limits_never_enforced(&self) -> Option<String> {
        None
    }

    /// Keeps up to `count` environments made ahead of need, so that trials
    /// start from one at once (a pool, drained when the backend is dropped;
    /// 0: none). A backend without a pool ignores it.
    fn keep_ready(&self, _count: usize) -> Result<(), EnvError> {
        Ok(())
    }

    /// Waits until the environments kept ready are made (a benchmark's
    /// wait between samples).
    fn wait_until_ready(&self) {}

    /// How this backend's machines run their CPUs (`kvm`, `tcg`), once its
    /// images are prepared; None for a backend without virtual machines.
    fn accelerator(&self) -> Option<&'static str> {
        None
    }
}

/// A live environment. Dropping it destroys it (best effort); call
/// [`Environment::destroy`] to learn whether that worked.
pub trait Environment: Send + Sync {
    fn id(&self) -> &str;

    fn limits(&self) -> Limits;

    /// The machine it is, where that is not this one, or where it holds
    /// GPUs of this one.
    fn machine(&self) -> Option<MachineRecord> {
        None
    }

    /// Its files: copying in, reading out, listing, removing (files.rs).
    fn files(&self) -> &dyn Files;

    /// Starts a phase. Fails if one is already running.
    fn begin_phase(&mut self, network: Network) -> Result<(), EnvError> {
        self.begin_phase_with(network, &PhaseOptions::default())
    }

    /// Starts a phase with host mounts and sealed paths.
    fn begin_phase_with(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError>;

    /// A TCP socket listening on the loopback address of the current phase's
    /// network, at `port`: the harness serves it, processes inside connect
    /// to 127.0.0.1:`port`. It stops working when the phase ends.
    fn listen_loopback(&self, port: u16) -> Result<std::net::TcpListener, EnvError>;

    /// Runs a command in the current phase and waits for it. Processes it
    /// leaves behind live until the phase ends.
    fn exec(&self, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError>;

    /// Starts recording, from outside, which files the commands of the
    /// current phase open or execute (see access.rs): at least the files
    /// under the directory `under` (absolute inside), where the watch may
    /// see more; none where the backend cannot see that.
    fn watch_access(&self, _under: &str) -> Result<Option<Box<dyn AccessWatch>>, EnvError> {
        Ok(None)
    }

    /// Ends the current phase: every process started in it is killed, and
    /// this returns only once none is left.
    fn end_phase(&mut self) -> Result<(), EnvError>;

    /// What differs from the base image, for the record (env-diff.txt),
    /// less exactly the paths the harness made (see [`RootFs::claim`]).
    /// Call between phases, when nothing runs. Nothing in the environment
    /// makes this fail or run unbounded: the listing stops at the bounds of
    /// host-side work (entries, depth, bytes, time), with the reason in
    /// `incomplete`. Errors are the backend's own, or `cancel` firing.
    fn diff(&self, cancel: &CancelToken) -> Result<EnvDiff, EnvError>;

    /// Kills everything, unmounts, removes every trace on the host.
    fn destroy(self: Box<Self>) -> Result<(), EnvError>;
}
