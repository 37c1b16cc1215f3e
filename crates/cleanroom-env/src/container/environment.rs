//! One environment of the `container` backend: a container of a local
//! engine, killed at the end of each phase.
//!
//! Killing a container kills its init, and with it every process of its
//! PID namespace: nothing of a phase survives into the next, whatever it
//! did inside (no process can leave the container's namespaces or cgroup
//! without capabilities the container does not have).
//!
//! A container is started when the harness first needs it after a kill,
//! for a phase or for its file work between phases, and runs only the
//! engine's init until a phase's commands run (`Started::phase`): a phase
//! may begin in a container the file work started, since nothing of the
//! image has run in it. The harness works on the container's files through
//! its root as this host sees it (`/proc/<init>/root`), with the sandbox's
//! link-safe code; and makes a phase's network, seals, served ports and
//! access watch in the container's own namespaces, as the sandbox makes
//! them in its own. So the engine must run on this host. The container has
//! the engine's `none` network (a loopback device only); an outbound phase
//! gets the sandbox's user-mode NAT, with the host, its neighbours and its
//! gateways unroutable.

use std::collections::BTreeMap;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::access::{AccessWatch, FileId};
use crate::backend::{
    EnvDiff, Environment, ExecOutcome, ExecRequest, Limits, Network, PathChangeKind, PhaseOptions,
};
use crate::bounds::{Cancelled, WalkLimits};
use crate::cancel::CancelToken;
use crate::container::engine::Engine;
use crate::container::shown;
use crate::error::EnvError;
use crate::fanotify::FanotifyWatch;
use crate::files::Files;
use crate::rootfs::{EntryKind, Globs, Manifest, ReadError, RootFs};
use crate::sandbox::diff::upper_changes;
use crate::sandbox::kernel_views;
use crate::sandbox::phase::{listen_in_net_ns, Nat};

pub struct ContainerEnv {
    id: String,
    engine: Arc<Engine>,
    container: String,
    /// The container's overlay layers in the engine's storage (known from
    /// its first start): the env-diff compares the upper with the image's,
    /// as the sandbox's does.
    layers: OnceLock<Layers>,
    /// The variables every command starts with: a built image's (its
    /// Dockerfile's `ENV`), none for cleanroom's base images.
    image_env: Vec<(String, String)>,
    limits: Limits,
    /// The running container, if it runs.
    started: Mutex<Option<Started>>,
    /// What the harness made in the container's earlier starts (each
    /// start's root records its own), for the env-diff.
    made: Mutex<BTreeMap<String, EntryKind>>,
    /// Directories made for the current phase's host mounts.
    mount_points: Vec<String>,
}

/// A container's overlay layers, as its engine's inspection names them:
/// the upper (the container's own) and the image's, top first (Docker's
/// first is its init layer of mount points).
struct Layers {
    upper: PathBuf,
    lowers: Vec<PathBuf>,
}

impl Layers {
    fn of(state: &serde_json::Value) -> Option<Layers> {
        let data = &state["GraphDriver"]["Data"];
        let upper = PathBuf::from(data["UpperDir"].as_str()?);
        let lowers: Vec<PathBuf> = data["LowerDir"].as_str()?.split(':').map(PathBuf::from).collect();
        Some(Layers { upper, lowers })
    }
}

/// How many starts of a container may come up without its root.
const START_ATTEMPTS: usize = 5;

/// Whether the root of process `pid` is an overlay (a container's, as
/// every engine the backend drives mounts it), not a bare directory.
fn root_is_an_overlay(pid: i32) -> bool {
    let table = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
    // The last mount at "/" is the one seen; its type follows " - ".
    let root = table.lines().rfind(|l| l.split(' ').nth(4) == Some("/"));
    root.and_then(|l| l.split_once(" - ")).is_some_and(|(_, fs)| fs.starts_with("overlay "))
}

/// A started container: its init as this host sees it, its root, and
/// whether a phase runs in it (and the phase's NAT).
struct Started {
    pid: i32,
    root: RootFs,
    phase: bool,
    nat: Option<Nat>,
}

impl ContainerEnv {
    pub(crate) fn new(
        id: String,
        engine: Arc<Engine>,
        container: String,
        image_env: Vec<(String, String)>,
        limits: Limits,
    ) -> ContainerEnv {
        ContainerEnv {
            id,
            engine,
            container,
            image_env,
            layers: OnceLock::new(),
            limits,
            started: Mutex::new(None),
            made: Mutex::default(),
            mount_points: Vec::new(),
        }
    }

    pub(crate) fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    fn started(&self) -> MutexGuard<'_, Option<Started>> {
        self.started.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The container, started with nothing but the engine's init if it
    /// was not running.
    fn start_if_stopped<'a>(
        &self,
        started: &'a mut MutexGuard<'_, Option<Started>>,
    ) -> Result<&'a mut Started, EnvError> {
        if started.is_none() {
            let opened = self.start_with_root().and_then(|pid| {
                kernel_views::trim(pid, std::process::id() as i32)?;
                let root = RootFs::open(Path::new(&format!("/proc/{pid}/root")))
                    .map_err(|e| EnvError::io("the container's root", e))?;
                if self.layers.get().is_none() {
                    self.record_engines_own(&root)?;
                }
                Ok(Started { pid, root, phase: false, nat: None })
            });
            match opened {
                Ok(s) => **started = Some(s),
                Err(e) => {
                    let _ = self.engine.kill(&self.container);
                    return Err(e);
                }
            }
        }
        Ok(started.as_mut().expect("started above"))
    }

    /// Starts the container; its init's pid, once its root is its own
    /// overlay. Under load Docker (20.10) now and then starts a container
    /// on the bare directory its root is mounted on (its count of the
    /// mount's users lags the previous run's end): such a start is ended
    /// and made again, a few times at most (once or twice was enough in
    /// every case seen).
    fn start_with_root(&self) -> Result<i32, EnvError> {
        for _ in 0..START_ATTEMPTS {
            self.engine.start(&self.container)?;
            let pid = self.local_init()?;
            if root_is_an_overlay(pid) {
                return Ok(pid);
            }
            self.engine.kill(&self.container)?;
        }
        Err(EnvError::Phase(format!(
            "the container engine at {} started the container {} without its root file system, {START_ATTEMPTS} \
             times",
            self.engine.socket().display(),
            self.container
        )))
    }

    /// At the container's first start, nothing but the engine has written
    /// to its upper layer (the mount points it made: /etc/hostname,
    /// /run/.containerenv, ...): that is the engine's, left out of the
    /// env-diff as what the harness made is.
    fn record_engines_own(&self, root: &RootFs) -> Result<(), EnvError> {
        let layers = Layers::of(&self.engine.inspect(&self.container)?).ok_or_else(|| {
            EnvError::Config(format!(
                "the container engine at {} keeps no overlay layers for its containers: the container \
                 backend needs its overlay storage driver",
                self.engine.socket().display(),
            ))
        })?;
        let cancel = CancelToken::new().map_err(|e| EnvError::io("a cancel token", e))?;
        let engines =
            upper_changes(&layers.upper, &layers.lowers, &BTreeMap::new(), WalkLimits::default(), &cancel)?;
        for change in engines.changes.iter().filter(|c| c.kind != PathChangeKind::Deleted) {
            if let Ok(Some(kind)) = root.kind_of(&change.path) {
                root.claim(&change.path, kind);
            }
        }
        let _ = self.layers.set(layers);
        Ok(())
    }

    /// The container's init, as a pid of this host: the engine's answer,
    /// checked against the process's own cgroup (a remote engine's pid
    /// names some other process here, or none).
    fn local_init(&self) -> Result<i32, EnvError> {
        let state = self.engine.inspect(&self.container)?;
        let pid = state["State"]["Pid"].as_i64().filter(|p| *p > 0).ok_or_else(|| {
            EnvError::Phase(format!("the engine reports no process for the container {}", self.container))
        })? as i32;
        let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        if !cgroup.contains(&self.container) {
            return Err(EnvError::Config(format!(
                "the container engine at {} does not run its containers on this host (its container's \
                 init, pid {pid}, is not one here): the container backend needs a local engine \
                 (docs/backends.md)",
                self.engine.socket().display()
            )));
        }
        Ok(pid)
    }

    /// The container's root, started for it if need be; for file work.
    fn with_root<T>(&self, work: impl FnOnce(&RootFs) -> io::Result<T>) -> io::Result<T> {
        let mut started = self.started();
        let running = self.start_if_stopped(&mut started).map_err(io::Error::other)?;
        work(&running.root)
    }

    /// The pid of the container's init while a phase runs.
    fn phase_pid(&self) -> Result<i32, EnvError> {
        match self.started().as_ref() {
            Some(s) if s.phase => Ok(s.pid),
            _ => Err(EnvError::Phase("no phase is running".into())),
        }
    }

    fn start_phase(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError> {
        let mut guard = self.started();
        let started = self.start_if_stopped(&mut guard)?;
        if started.phase {
            return Err(EnvError::Phase("a phase is already running".into()));
        }
        // From here on a failure leaves the phase to end_phase.
        started.phase = true;
        let pid = started.pid;
        if network == Network::Outbound {
            // slirp4netns stays outside the container's cgroups: the
            // engine removes them as the container stops.
            started.nat = Some(Nat::start(pid, &[])?);
        }
        let mut made = Vec::new();
        for mount in &options.mounts {
            let points = started.root.make_mount_point(&mount.path);
            made.extend(points.map_err(|e| EnvError::io("making a mount point", e))?);
        }
        drop(guard);
        self.mount_points = made;
        shown::show(pid, &options.mounts)?;
        crate::sandbox::seal::seal(pid, &options.sealed)
    }

    /// Kills the container, keeping what its root recorded of the
    /// harness's work.
    fn stop(&mut self) -> Result<(), EnvError> {
        let Some(started) = self.started().take() else { return Ok(()) };
        let killed = self.engine.kill(&self.container);
        if let Some(nat) = started.nat {
            nat.stop();
        }
        self.made.lock().unwrap_or_else(|p| p.into_inner()).extend(started.root.made_by_harness());
        killed
    }

    /// Removes the directories made for the phase's host mounts, from a
    /// new start of the container (the mounts ended with the last one).
    fn remove_mount_points(&mut self) -> Result<(), EnvError> {
        if self.mount_points.is_empty() {
            return Ok(());
        }
        let points = std::mem::take(&mut self.mount_points);
        self.with_root(|root| {
            root.remove_mount_points(&points);
            Ok(())
        })
        .map_err(|e| EnvError::io("removing the mount points of host directories", e))
    }

    /// Every path the harness made, with the kind it made there.
    fn made_by_harness(&self) -> BTreeMap<String, EntryKind> {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(started) = self.started().as_ref() {
            made.extend(started.root.made_by_harness());
        }
        made
    }

    /// Removes the container (killing it); dropping the environment later
    /// finds nothing to remove.
    fn remove(&mut self) -> Result<(), EnvError> {
        if self.container.is_empty() {
            return Ok(());
        }
        let stopped = self.stop();
        let removed = self.engine.remove(&self.container);
        self.container.clear();
        stopped.and(removed)
    }
}

impl Environment for ContainerEnv {
    fn id(&self) -> &str {
        &self.id
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn files(&self) -> &dyn Files {
        self
    }

    fn begin_phase_with(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError> {
        if self.started().as_ref().is_some_and(|s| s.phase) {
            return Err(EnvError::Phase("a phase is already running".into()));
        }
        let started = self.start_phase(network, options);
        if started.is_err() {
            let _ = self.end_phase();
        }
        started
    }

    fn listen_loopback(&self, port: u16) -> Result<TcpListener, EnvError> {
        listen_in_net_ns(self.phase_pid()?, port)
    }

    fn exec(&self, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
        self.phase_pid()?;
        crate::container::exec::run(&self.engine, &self.container, &self.image_env, req, cancel)
    }

    fn watch_access(&self, _under: &str) -> Result<Option<Box<dyn AccessWatch>>, EnvError> {
        // The container's root is an overlay of its own: a mark on that
        // file system sees this container's commands only.
        let root = format!("/proc/{}/root", self.phase_pid()?);
        Ok(Some(Box::new(FanotifyWatch::start(Path::new(&root))?)))
    }

    fn end_phase(&mut self) -> Result<(), EnvError> {
        if !self.started().as_ref().is_some_and(|s| s.phase) {
            return Ok(());
        }
        self.stop()?;
        self.remove_mount_points()
    }

    fn diff(&self, cancel: &CancelToken) -> Result<EnvDiff, EnvError> {
        let Some(layers) = self.layers.get() else {
            // Never started: nothing changed.
            return Ok(EnvDiff::default());
        };
        upper_changes(&layers.upper, &layers.lowers, &self.made_by_harness(), WalkLimits::default(), cancel)
    }

    fn destroy(mut self: Box<Self>) -> Result<(), EnvError> {
        self.remove()
    }
}

impl Drop for ContainerEnv {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// The sandbox's file operations, on the container's root.
impl Files for ContainerEnv {
    fn create_dir_all(&self, path: &str, mode: u32) -> io::Result<()> {
        self.with_root(|root| root.create_dir_all(path, mode))
    }

    fn write_file(&self, path: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.with_root(|root| root.write_file(path, bytes, mode))
    }

    fn copy_tree_in(&self, host_src: &Path, dest: &str, exclude: &dyn Fn(&Path) -> bool) -> io::Result<()> {
        self.with_root(|root| root.copy_tree_in_filtered(host_src, dest, exclude))
    }

    fn read_regular(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        self.with_root(|root| Ok(root.read_regular(path, limit))).map_err(ReadError::Io)?
    }

    fn manifest_against(
        &self,
        dir: &str,
        original: &Manifest,
        limits: WalkLimits,
        cancel: &CancelToken,
    ) -> Result<Manifest, Cancelled> {
        let listed = self.with_root(|root| Ok(root.manifest_against(dir, original, limits, cancel)));
        // A container that cannot be started lists nothing, saying why:
        // what the tamper check then finds missing counts as changed.
        listed.unwrap_or_else(|e| {
            Ok(Manifest {
                incomplete: Some(format!("the container did not start: {e}")),
                ..Manifest::default()
            })
        })
    }

    fn remove_matching(&self, dir: &str, globs: &Globs, cancel: &CancelToken) -> io::Result<Vec<String>> {
        self.with_root(|root| root.remove_matching(dir, globs, cancel))
    }

    fn file_id(&self, path: &str) -> io::Result<FileId> {
        self.with_root(|root| root.file_id(path))
    }

    fn claim(&self, path: &str, kind: EntryKind) {
        match self.started().as_ref() {
            Some(started) => started.root.claim(path, kind),
            None => {
                self.made.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_string(), kind);
            }
        }
    }
}
