//! A backend for unit tests of the logic above the seam (scheduling,
//! retries, resume, cancel, skipping, the verifier's steps) that needs no
//! root and starts no process. Only for logic: what the walls of a real
//! environment hold is the sandbox tests' business.
//!
//! Each environment's root is a real directory under the backend's home,
//! so files copied in, read out and listed are real. Phases are tracked
//! (one at a time, as the contract says) and every call is recorded in
//! order ([`Call`]). A command is answered by the test's script, given the
//! request and the host path of the root: it may change files there, and
//! says how the command ended and how long it "took" ([`Reply`]). Those
//! durations add up to a clock that tests can read ([`FakeBackend::elapsed`]).
//! A reply can also block until the cancel token fires, to test Ctrl-C.
//!
//! Compiled under the `fake` feature, which crates enable in their
//! dev-dependencies only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::backend::{
    Backend, EnvDiff, EnvSpec, Environment, ExecOutcome, ExecRequest, ExitStatus, LimitState, Limits, Needs,
    Network, PathChange, PathChangeKind, PhaseOptions, PreparedImage, SweepReport, Unmet,
};
use crate::bounds::WalkLimits;
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::files::Files;
use crate::output::Captured;
use crate::rootfs::{Manifest, RootFs};

/// Answers a command: given the request and the host path of the
/// environment's root.
type Script = dyn Fn(&ExecRequest, &Path) -> Result<Reply, EnvError> + Send + Sync;

/// How a scripted command ended.
#[derive(Debug, Clone)]
pub struct Reply {
    status: ExitStatus,
    /// None: it runs until the cancel token fires (or its timeout runs out).
    duration: Option<Duration>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Reply {
    /// Exited with `code` at once.
    pub fn exit(code: i32) -> Reply {
        Reply::status(ExitStatus::Exited(code))
    }

    /// Ended with `status` at once.
    pub fn status(status: ExitStatus) -> Reply {
        Reply { status, duration: Some(Duration::ZERO), stdout: Vec::new(), stderr: Vec::new() }
    }

    /// Runs, without using the CPU, until the cancel token fires
    /// (`Cancelled`) or the request's timeout runs out (`TimedOut`).
    pub fn until_cancelled() -> Reply {
        Reply { duration: None, ..Reply::status(ExitStatus::Cancelled) }
    }

    /// Took `duration` on the fake clock. Longer than the request's timeout,
    /// it ends `TimedOut` at the timeout, as a real command would.
    pub fn after(self, duration: Duration) -> Reply {
        Reply { duration: Some(duration), ..self }
    }

    pub fn stdout(self, bytes: impl Into<Vec<u8>>) -> Reply {
        Reply { stdout: bytes.into(), ..self }
    }

    pub fn stderr(self, bytes: impl Into<Vec<u8>>) -> Reply {
        Reply { stderr: bytes.into(), ..self }
    }
}

/// What the backend and its environments were asked to do, in order.
#[derive(Debug, Clone)]
pub enum Call {
    Created {
        env: String,
        spec: EnvSpec,
    },
    /// A create that failed as configured ([`FakeBackend::failing_creates`]).
    CreateFailed,
    BeganPhase {
        env: String,
        network: Network,
        options: PhaseOptions,
    },
    Exec {
        env: String,
        request: ExecRequest,
    },
    EndedPhase {
        env: String,
    },
    /// Destroyed, or dropped (which destroys).
    Destroyed {
        env: String,
    },
}

/// See the module's documentation. Clones share everything.
#[derive(Clone)]
pub struct FakeBackend {
    shared: Arc<Shared>,
}

struct Shared {
    home: PathBuf,
    script: Box<Script>,
    state: Mutex<State>,
    /// Signalled when a command starts or stops blocking.
    blocking_changed: Condvar,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    lacking: Vec<&'static str>,
    failing_creates: u32,
    /// Creates asked for, failed ones too.
    creates: u32,
    live: usize,
    most_live: usize,
    blocked: usize,
    elapsed: Duration,
}

/// The fields of [`Needs`], as [`Unmet::need`] names them.
const NEEDS: [&str; 5] = ["gpus", "qemu", "network", "machine", "build"];

impl FakeBackend {
    /// Environments are made under `home`; `script` answers every command.
    pub fn new(
        home: &Path,
        script: impl Fn(&ExecRequest, &Path) -> Result<Reply, EnvError> + Send + Sync + 'static,
    ) -> FakeBackend {
        FakeBackend {
            shared: Arc::new(Shared {
                home: home.to_path_buf(),
                script: Box::new(script),
                state: Mutex::default(),
                blocking_changed: Condvar::new(),
            }),
        }
    }

    /// This backend cannot meet `need` (`gpus`, `qemu` or `network`) for a
    /// task that has it.
    pub fn lacking(self, need: &'static str) -> FakeBackend {
        assert!(NEEDS.contains(&need), "`{need}` is not a field of Needs");
        self.state().lacking.push(need);
        self
    }

    /// The next `n` creates fail with an infrastructure error.
    pub fn failing_creates(self, n: u32) -> FakeBackend {
        self.state().failing_creates = n;
        self
    }

    pub fn calls(&self) -> Vec<Call> {
        self.state().calls.clone()
    }

    /// Every command asked for, in order.
    pub fn requests(&self) -> Vec<ExecRequest> {
        let state = self.state();
        let requests = state.calls.iter().filter_map(|c| match c {
            Call::Exec { request, .. } => Some(request.clone()),
            _ => None,
        });
        requests.collect()
    }

    /// Creates asked for, failed ones too.
    pub fn creates(&self) -> u32 {
        self.state().creates
    }

    /// Environments made and not yet destroyed.
    pub fn live(&self) -> usize {
        self.state().live
    }

    /// The most environments alive at once.
    pub fn most_live(&self) -> usize {
        self.state().most_live
    }

    /// The host directory of the fake environment `id`, for a test to lay
    /// out or inspect (no caller of the Environment trait gets one).
    pub fn root_of(&self, id: &str) -> PathBuf {
        self.shared.home.join(id)
    }

    /// The fake clock: what every command so far took, added up.
    pub fn elapsed(&self) -> Duration {
        self.state().elapsed
    }

    /// Returns once `n` commands block at the same time
    /// ([`Reply::until_cancelled`]); panics after a minute without.
    pub fn wait_until_blocked(&self, n: usize) {
        let (state, waited) = self
            .shared
            .blocking_changed
            .wait_timeout_while(self.state(), Duration::from_secs(60), |s| s.blocked < n)
            .unwrap_or_else(|p| p.into_inner());
        assert!(!waited.timed_out(), "{} command(s) blocked, not {n}", state.blocked);
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state()
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, call: Call) {
        self.state().calls.push(call);
    }

    /// Waits for `cancel` or `timeout`, counted as blocked meanwhile.
    fn block(&self, timeout: Option<Duration>, cancel: &CancelToken) -> (ExitStatus, Duration) {
        let started = Instant::now();
        self.state().blocked += 1;
        self.blocking_changed.notify_all();
        let status = loop {
            if cancel.is_cancelled() {
                break ExitStatus::Cancelled;
            }
            let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
            if left == Some(Duration::ZERO) {
                break ExitStatus::TimedOut;
            }
            // Rounded up, so a wait never ends just short of the timeout.
            let ms = left.map_or(-1, |l| l.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32);
            let mut fd = libc::pollfd { fd: cancel.poll_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd; an interrupted poll is simply looped.
            unsafe { libc::poll(&mut fd, 1, ms) };
        };
        self.state().blocked -= 1;
        self.blocking_changed.notify_all();
        (status, started.elapsed())
    }
}

impl Backend for FakeBackend {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn unmet(&self, needs: &Needs) -> Vec<Unmet> {
        let asked = [needs.gpus > 0, needs.qemu, needs.network, needs.machine, needs.build];
        let lacking = &self.state().lacking;
        NEEDS
            .iter()
            .zip(asked)
            .filter(|(need, asked)| *asked && lacking.contains(need))
            .map(|(need, _)| Unmet { need, why: format!("the fake backend has no {need}") })
            .collect()
    }

    fn prepare_images(
        &self,
        names: &[&str],
        _progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError> {
        Ok(names.iter().map(|name| PreparedImage { name: name.to_string(), digest: "fake".into() }).collect())
    }

    fn sweep(&self) -> Result<SweepReport, EnvError> {
        Ok(SweepReport::default())
    }

    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        let mut state = self.state();
        state.creates += 1;
        if state.failing_creates > 0 {
            state.failing_creates -= 1;
            state.calls.push(Call::CreateFailed);
            return Err(EnvError::Command {
                program: "fake".into(),
                detail: "create failed as configured".into(),
            });
        }
        let id = format!("fake-{}", state.creates);
        let dir = self.shared.home.join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(format!("create {}", dir.display()), e))?;
        let root = RootFs::open(&dir).map_err(|e| EnvError::io(format!("open {}", dir.display()), e))?;
        state.live += 1;
        state.most_live = state.most_live.max(state.live);
        state.calls.push(Call::Created { env: id.clone(), spec: spec.clone() });
        drop(state);
        Ok(Box::new(FakeEnv {
            id,
            dir,
            root,
            shared: self.shared.clone(),
            in_phase: false,
            destroyed: false,
        }))
    }
}

struct FakeEnv {
    id: String,
    dir: PathBuf,
    root: RootFs,
    shared: Arc<Shared>,
    in_phase: bool,
    destroyed: bool,
}

impl FakeEnv {
    fn teardown(&mut self) -> Result<(), EnvError> {
        if std::mem::replace(&mut self.destroyed, true) {
            return Ok(());
        }
        let mut state = self.shared.state();
        state.live -= 1;
        state.calls.push(Call::Destroyed { env: self.id.clone() });
        drop(state);
        std::fs::remove_dir_all(&self.dir)
            .map_err(|e| EnvError::io(format!("remove {}", self.dir.display()), e))
    }
}

impl Environment for FakeEnv {
    fn id(&self) -> &str {
        &self.id
    }

    fn limits(&self) -> Limits {
        let held = LimitState::Enforced;
        Limits { memory: held, pids: held, disk: held }
    }

    fn files(&self) -> &dyn Files {
        &self.root
    }

    fn begin_phase_with(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError> {
        if self.in_phase {
            return Err(EnvError::Phase("a phase is already running".into()));
        }
        self.in_phase = true;
        self.shared.record(Call::BeganPhase { env: self.id.clone(), network, options: options.clone() });
        Ok(())
    }

    fn listen_loopback(&self, _port: u16) -> Result<std::net::TcpListener, EnvError> {
        Err(EnvError::Phase("the fake backend has no network to listen on".into()))
    }

    fn exec(&self, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
        if !self.in_phase {
            return Err(EnvError::Phase("no phase is running".into()));
        }
        self.shared.record(Call::Exec { env: self.id.clone(), request: req.clone() });
        let reply = (self.shared.script)(req, self.root.host_path())?;
        // The output is all there before the command "runs" (or blocks).
        if let Some(last_line) = &req.last_line {
            last_line.feed(&reply.stdout);
            last_line.feed(&reply.stderr);
        }
        let (status, duration) = match (reply.duration, req.timeout) {
            (None, timeout) => self.shared.block(timeout, cancel),
            (Some(took), Some(timeout)) if took > timeout => (ExitStatus::TimedOut, timeout),
            (Some(took), _) => (reply.status, took),
        };
        self.shared.state().elapsed += duration;
        let captured = |bytes: &[u8]| {
            let mut c = Captured::new(req.output_limit);
            c.push(bytes);
            c
        };
        Ok(ExecOutcome {
            status,
            duration,
            stdout: captured(&reply.stdout),
            stderr: captured(&reply.stderr),
            combined: captured(&[reply.stdout, reply.stderr].concat()),
        })
    }

    fn end_phase(&mut self) -> Result<(), EnvError> {
        if std::mem::replace(&mut self.in_phase, false) {
            self.shared.record(Call::EndedPhase { env: self.id.clone() });
        }
        Ok(())
    }

    /// Everything in the root: a fake environment starts empty.
    fn diff(&self, cancel: &CancelToken) -> Result<EnvDiff, EnvError> {
        let manifest = self
            .root
            .manifest_against("/", &Manifest::default(), WalkLimits::default(), cancel)
            .map_err(|_| EnvError::Phase("listing cancelled".into()))?;
        let changes = manifest
            .entries
            .keys()
            .map(|rel| PathChange { path: format!("/{rel}"), kind: PathChangeKind::Added })
            .collect();
        Ok(EnvDiff { changes, incomplete: manifest.incomplete })
    }

    fn destroy(mut self: Box<Self>) -> Result<(), EnvError> {
        self.teardown()
    }
}

impl Drop for FakeEnv {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> EnvSpec {
        EnvSpec {
            image: "debian-12-minimal".into(),
            cpus: 1,
            memory_mb: 64,
            disk_mb: 64,
            pids_max: 64,
            gpus: 0,
            gpu_driver: Default::default(),
            allow_unlimited: false,
            build: None,
        }
    }

    fn request(script: &str) -> ExecRequest {
        ExecRequest::login_shell(script, "/", Vec::new())
    }

    #[test]
    fn a_script_changes_real_files_and_the_clock_adds_up() {
        let home = tempfile::tempdir().unwrap();
        let backend = FakeBackend::new(home.path(), |req, root| {
            std::fs::write(root.join("out.txt"), req.argv.last().unwrap()).unwrap();
            Ok(Reply::exit(3).after(Duration::from_secs(2)).stdout("so").stderr("long"))
        });
        let mut env = backend.create(&spec()).unwrap();
        assert!(env.exec(&request("x"), &CancelToken::new().unwrap()).is_err(), "no phase yet");
        env.begin_phase(Network::LoopbackOnly).unwrap();
        assert!(env.begin_phase(Network::Outbound).is_err(), "one phase at a time");
        let cancel = CancelToken::new().unwrap();
        let out = env.exec(&request("hello"), &cancel).unwrap();
        env.exec(&request("again"), &cancel).unwrap();
        env.end_phase().unwrap();
        assert_eq!(out.status, ExitStatus::Exited(3));
        assert_eq!(out.combined.to_string_lossy(), "solong");
        assert_eq!(env.files().read_regular("/out.txt", 100).unwrap(), b"again");
        assert_eq!(backend.elapsed(), Duration::from_secs(4));
        let diff = env.diff(&CancelToken::new().unwrap()).unwrap();
        assert_eq!(diff.changes, [PathChange { path: "/out.txt".into(), kind: PathChangeKind::Added }]);
        assert_eq!(backend.requests().len(), 2);
        assert_eq!(backend.live(), 1);
        env.destroy().unwrap();
        assert_eq!(backend.live(), 0);
        assert_eq!(std::fs::read_dir(home.path()).unwrap().count(), 0, "the root is removed");
    }

    #[test]
    fn a_reply_longer_than_the_timeout_times_out_at_the_timeout() {
        let home = tempfile::tempdir().unwrap();
        let backend = FakeBackend::new(home.path(), |_, _| Ok(Reply::exit(0).after(Duration::from_secs(60))));
        let mut env = backend.create(&spec()).unwrap();
        env.begin_phase(Network::LoopbackOnly).unwrap();
        let mut req = request("x");
        req.timeout = Some(Duration::from_secs(10));
        let out = env.exec(&req, &CancelToken::new().unwrap()).unwrap();
        assert_eq!((out.status, out.duration), (ExitStatus::TimedOut, Duration::from_secs(10)));
    }

    #[test]
    fn a_blocked_command_ends_when_cancelled() {
        let home = tempfile::tempdir().unwrap();
        let backend = FakeBackend::new(home.path(), |_, _| Ok(Reply::until_cancelled()));
        let mut env = backend.create(&spec()).unwrap();
        env.begin_phase(Network::LoopbackOnly).unwrap();
        let cancel = CancelToken::new().unwrap();
        std::thread::scope(|s| {
            let running = s.spawn(|| env.exec(&request("x"), &cancel).unwrap().status);
            backend.wait_until_blocked(1);
            cancel.cancel();
            assert_eq!(running.join().unwrap(), ExitStatus::Cancelled);
        });
    }

    #[test]
    fn configured_failures_and_unmet_needs() {
        let home = tempfile::tempdir().unwrap();
        let backend =
            FakeBackend::new(home.path(), |_, _| Ok(Reply::exit(0))).lacking("gpus").failing_creates(2);
        assert!(backend.unmet(&Needs::new(0, true, true)).is_empty(), "only what the task needs counts");
        let unmet = backend.unmet(&Needs::new(1, false, false));
        assert_eq!(unmet, [Unmet { need: "gpus", why: "the fake backend has no gpus".into() }]);
        assert!(backend.create(&spec()).is_err());
        assert!(backend.create(&spec()).is_err());
        let env = backend.create(&spec()).unwrap();
        assert_eq!((backend.creates(), backend.live()), (3, 1));
        drop(env);
        assert_eq!(backend.live(), 0, "dropping destroys");
        assert!(matches!(backend.calls().last(), Some(Call::Destroyed { env }) if env == "fake-3"));
    }
}
