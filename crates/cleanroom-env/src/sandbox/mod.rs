//! The `sandbox` backend: no daemon, real namespaces.
//!
//! One environment is:
//! - a directory `<home>/envs/<id>/` holding an `owner` file (the harness
//!   process that made it, so a later command can sweep what a dead run
//!   left), a sparse ext4 image `disk.img` (the disk limit), and the mount
//!   points `disk/` and `root/`;
//! - a mount keeper (keeper.rs) whose private mount namespace holds the
//!   loop-mounted disk and the overlayfs root (image below, disk above);
//! - a cgroup (cgroup.rs) with the memory, process and CPU limits (in the
//!   rootless sandbox, in the subtree delegated to the user: delegation.rs);
//! - while a phase runs, a bubblewrap holder (phase.rs) with fresh PID, IPC,
//!   UTS, network and cgroup namespaces, and commands entered into it
//!   (spawn.rs);
//! - the host's GPUs it holds, if its task needs any (gpus.rs).

mod caps;
mod cgroup;
mod delegation;
pub(crate) mod diff;
mod gpus;
pub(crate) mod in_root;
mod keeper;
pub(crate) mod kernel_views;
pub(crate) mod phase;
mod pool;
pub(crate) mod seal;
pub(crate) mod seccomp;
mod spawn;
pub(crate) mod sweep;

use std::collections::HashMap;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::backend::{
    Backend, EnvDiff, EnvSpec, Environment, ExecOutcome, ExecRequest, LimitState, Limits, MachineRecord,
    Needs, Network, PhaseOptions, PreparedImage, SweepReport, Unmet,
};
use crate::bounds::WalkLimits;
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::files::Files;
use crate::gpu_pool::{GpuPool, HeldGpus};
use crate::image;
use crate::privilege::{self, Privilege};
use crate::rootfs::RootFs;

pub use delegation::{host_has_cgroup_v2, in_delegated_cgroup};
pub use gpus::{Gpu, GpuHost};

pub struct SandboxBackend {
    home: PathBuf,
    /// Run as root of a user namespace (docs/rootless.md): no loop-mounted
    /// disk, no cgroups but in a delegated subtree, no fanotify.
    rootless: bool,
    cgroups: cgroup::Place,
    /// Image name → its root file system, filled by prepare_images.
    images: Arc<Mutex<HashMap<String, PathBuf>>>,
    gpu_host: Arc<GpuHost>,
    /// The indices of `gpu_host`'s GPUs.
    gpus: Arc<GpuPool<u32>>,
    /// Environments made ahead of need, once [`Backend::keep_ready`] asks.
    pool: Mutex<Option<pool::Pool>>,
}

impl SandboxBackend {
    /// A backend keeping its environments under `<home>/envs`.
    pub fn new(home: &Path) -> Result<SandboxBackend, EnvError> {
        let rootless = match privilege::current() {
            Privilege::HostRoot => false,
            Privilege::NamespaceRoot => true,
            Privilege::User => {
                return Err(EnvError::Phase(
                    "the sandbox backend needs root, or root of a user namespace (the `cleanroom` command makes one for an ordinary user)".into(),
                ))
            }
        };
        // The rootless sandbox makes no disk of its own (no mkfs.ext4).
        let tools = ["bwrap", "unshare", "mkfs.ext4", "slirp4netns", "ip"];
        for tool in tools.into_iter().filter(|t| !(rootless && *t == "mkfs.ext4")) {
            if host_tool(tool).is_none() {
                return Err(EnvError::Phase(format!(
                    "`{tool}` not found: the sandbox backend needs bubblewrap, util-linux, e2fsprogs, slirp4netns and iproute2 (see the README)"
                )));
            }
        }
        // No other user may reach an environment's upper layer, where the
        // agent makes set-user-ID programs of its own (in the rootless
        // sandbox a directory of the host's, with the user's ids).
        let envs = home.join("envs");
        std::fs::create_dir_all(&envs)
            .and_then(|()| std::fs::set_permissions(&envs, std::fs::Permissions::from_mode(0o700)))
            .map_err(|e| EnvError::io(envs.display().to_string(), e))?;
        let cgroups = match rootless {
            false => cgroup::Place::Host,
            true => delegation::environments_parent()
                .map_or_else(cgroup::Place::Nowhere, cgroup::Place::Delegated),
        };
        Ok(SandboxBackend {
            home: home.to_path_buf(),
            rootless,
            cgroups,
            images: Arc::new(Mutex::new(HashMap::new())),
            gpu_host: Arc::default(),
            gpus: Arc::new(GpuPool::new(Vec::new())),
            pool: Mutex::new(None),
        })
    }

    /// This backend, giving environments the GPUs of `host`
    /// ([`GpuHost::discover`] finds this host's).
    pub fn with_gpus(self, host: GpuHost) -> SandboxBackend {
        let indices = host.gpus.iter().map(|g| g.index).collect();
        SandboxBackend { gpus: Arc::new(GpuPool::new(indices)), gpu_host: Arc::new(host), ..self }
    }
}

/// A host program by absolute path: commands run with a cleared
/// environment, so PATH cannot be relied on.
pub(crate) fn host_tool(tool: &str) -> Option<PathBuf> {
    ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.exists())
}

impl Backend for SandboxBackend {
    fn name(&self) -> &'static str {
        "sandbox"
    }

    fn unmet(&self, needs: &Needs) -> Vec<Unmet> {
        let mut unmet = Vec::new();
        unmet.extend(self.gpu_host.unmet(needs));
        if needs.build {
            unmet.push(crate::backend::unbuildable("sandbox"));
        }
        if needs.machine {
            unmet.push(Unmet {
                need: "machine",
                why:
                    "the sandbox shares the host's kernel: the task needs a machine of its own (--backend vm)"
                        .into(),
            });
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
            let img = image::ensure(name, image::Flavour::Sandbox, None, progress)?;
            self.images.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), img.root);
            prepared.push(PreparedImage { name: name.to_string(), digest: img.digest });
        }
        Ok(prepared)
    }

    fn sweep(&self) -> Result<SweepReport, EnvError> {
        sweep::sweep(&self.home, &self.cgroups)
    }

    fn limits_never_enforced(&self) -> Option<String> {
        match &self.cgroups {
            cgroup::Place::Nowhere(why) => Some(why.clone()),
            _ => None,
        }
    }

    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        let image_root = image_root(&self.images, &spec.image)?;
        if spec.gpus == 0 {
            let pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(env) = pool.as_ref().and_then(|pool| pool.take(spec)) {
                return Ok(Box::new(env));
            }
        }
        let gpus = match spec.gpus {
            0 => None,
            n => Some(EnvGpus {
                held: self.gpus.take(n as usize)?,
                host: self.gpu_host.clone(),
                driver: spec.gpu_driver,
            }),
        };
        Ok(Box::new(SandboxEnv::create(&self.home, &image_root, spec, gpus, &self.cgroups, self.rootless)?))
    }

    fn keep_ready(&self, count: usize) -> Result<(), EnvError> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        // The old pool, if any, drains as it is dropped.
        *pool = None;
        if count == 0 {
            return Ok(());
        }
        let (home, images, cgroups, rootless) =
            (self.home.clone(), self.images.clone(), self.cgroups.clone(), self.rootless);
        let make = move |spec: &EnvSpec| {
            let root = image_root(&images, &spec.image)?;
            SandboxEnv::create(&home, &root, spec, None, &cgroups, rootless)
        };
        *pool = Some(pool::Pool::start(count, Box::new(make))?);
        Ok(())
    }

    fn wait_until_ready(&self) {
        if let Some(pool) = self.pool.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            pool.wait_until_full();
        }
    }
}

/// The root file system of the prepared image `name`.
fn image_root(images: &Mutex<HashMap<String, PathBuf>>, name: &str) -> Result<PathBuf, EnvError> {
    let images = images.lock().unwrap_or_else(|p| p.into_inner());
    images.get(name).cloned().ok_or_else(|| EnvError::ImageNotPrepared(name.to_string()))
}

pub struct SandboxEnv {
    id: String,
    image_root: PathBuf,
    dir: PathBuf,
    cgroup: cgroup::Cgroup,
    limits: Limits,
    keeper: Option<keeper::Keeper>,
    root: Option<RootFs>,
    phase: Option<phase::Holder>,
    /// Directories made as mount points for the current phase's host
    /// mounts, outermost first; removed again when the phase ends.
    mount_points: Vec<String>,
    /// Empty files made as mount points for the current phase's driver
    /// files; removed again when the phase ends.
    file_points: Vec<String>,
    gpus: Option<EnvGpus>,
    rootless: bool,
    /// The running phase was begun ahead of need by the pool (outbound,
    /// nothing bound in): the first `begin_phase` that asks for exactly
    /// that takes it over.
    warm_phase: bool,
}

/// The GPUs an environment holds for its life, and whose driver they come with.
struct EnvGpus {
    held: HeldGpus<u32>,
    host: Arc<GpuHost>,
    driver: crate::backend::GpuDriver,
}

impl SandboxEnv {
    fn rootfs(&self) -> &RootFs {
        self.root.as_ref().expect("the root is open until destroy")
    }

    fn create(
        home: &Path,
        image_root: &Path,
        spec: &EnvSpec,
        gpus: Option<EnvGpus>,
        cgroups: &cgroup::Place,
        rootless: bool,
    ) -> Result<SandboxEnv, EnvError> {
        if !image_root.join("usr").is_dir() {
            return Err(EnvError::NoImage(image_root.to_path_buf()));
        }
        let me = sweep::Owner::current();
        let id = me.new_id();
        let dir = home.join("envs").join(&id);
        std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(dir.display().to_string(), e))?;
        // The owner is written first: a sweep never removes a live run's files.
        me.write(&dir)?;
        let record = dir.join(sweep::CGROUPS_RECORD);
        let made = cgroups.create(&id, spec.memory_mb, spec.pids_max, spec.cpus).and_then(|cg| {
            std::fs::write(&record, cg.record())
                .map_err(|e| EnvError::io(record.display().to_string(), e))?;
            Ok(cg)
        });
        let cgroup = match made {
            Ok(cg) => cg,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut env = SandboxEnv {
            id,
            image_root: image_root.to_path_buf(),
            dir,
            limits: cgroup.limits,
            cgroup,
            keeper: None,
            root: None,
            phase: None,
            mount_points: Vec::new(),
            file_points: Vec::new(),
            gpus,
            rootless,
            warm_phase: false,
        };
        env.check_limits(spec.allow_unlimited, cgroups)?;
        let (disk, merged) = (env.dir.join("disk"), env.dir.join("root"));
        let disk_image = if rootless {
            env.make_dirs()?;
            None
        } else {
            env.limits.disk = LimitState::Enforced;
            env.make_disk(spec.disk_mb)?;
            Some(env.dir.join("disk.img"))
        };
        let keeper = keeper::Keeper::start(disk_image.as_deref(), &disk, image_root, &merged)?;
        env.root = Some(
            RootFs::open(&keeper.root_path)
                .map_err(|e| EnvError::io(format!("open {}", keeper.root_path.display()), e))?,
        );
        env.keeper = Some(keeper);
        Ok(env)
    }

    fn check_limits(&self, allow_unlimited: bool, cgroups: &cgroup::Place) -> Result<(), EnvError> {
        if allow_unlimited {
            return Ok(());
        }
        let why = match cgroups {
            cgroup::Place::Nowhere(why) => why,
            _ => "no usable cgroup controller",
        };
        for (name, state) in [("memory", self.limits.memory), ("pids", self.limits.pids)] {
            if state == LimitState::Unenforced {
                return Err(EnvError::LimitUnavailable { limit: name, why: why.into() });
            }
        }
        Ok(())
    }

    /// The disk's mount point (in the rootless sandbox, the directory that
    /// holds the overlay's upper layer) and the merged root's.
    fn make_dirs(&self) -> Result<(), EnvError> {
        for d in ["disk", "root"] {
            let p = self.dir.join(d);
            std::fs::create_dir(&p).map_err(|e| EnvError::io(p.display().to_string(), e))?;
        }
        Ok(())
    }

    /// A sparse file of the disk limit's size, formatted ext4: what the
    /// environment writes lands there, so it can write no more.
    fn make_disk(&self, disk_mb: u64) -> Result<(), EnvError> {
        let image = self.dir.join("disk.img");
        let file = std::fs::File::create(&image).map_err(|e| EnvError::io(image.display().to_string(), e))?;
        file.set_len(disk_mb.max(64) * 1024 * 1024)
            .map_err(|e| EnvError::io(image.display().to_string(), e))?;
        self.make_dirs()?;
        let out = Command::new(tool("mkfs.ext4"))
            .args(["-q", "-F", "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard", "-m", "0"])
            .arg(&image)
            .env_clear()
            .output()
            .map_err(|e| EnvError::io("run mkfs.ext4", e))?;
        if !out.status.success() {
            return Err(EnvError::Command {
                program: "mkfs.ext4".into(),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(())
    }

    /// Makes the directories of `path` that are missing, remembering them.
    fn make_mount_point(&mut self, path: &str) -> Result<(), EnvError> {
        let root = self.root.as_ref().ok_or_else(|| EnvError::Phase("environment destroyed".into()))?;
        let made = root.make_mount_point(path).map_err(|e| EnvError::io("making a mount point", e))?;
        self.mount_points.extend(made);
        Ok(())
    }

    fn remove_mount_points(&mut self) {
        if let Some(root) = self.root.as_ref() {
            for file in &self.file_points {
                root.remove_file_mount_point(file);
            }
            root.remove_mount_points(&self.mount_points);
        }
        self.mount_points.clear();
        self.file_points.clear();
    }

    /// What the phase binds in of the GPUs this environment holds. A driver
    /// file whose place the environment took (a link, a directory there) is
    /// left out: the mount must land where it is shown, and a broken
    /// library directory is the environment's own doing.
    fn gpu_binds(&mut self) -> Result<gpus::GpuBinds, EnvError> {
        let Some(held) = self.gpus.as_ref() else { return Ok(gpus::GpuBinds::default()) };
        let root = self.root.as_ref().ok_or_else(|| EnvError::Phase("environment destroyed".into()))?;
        let lib_dir = ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"]
            .into_iter()
            .find(|d| root.is_dir(d))
            .unwrap_or("/usr/lib");
        let mut binds = gpus::binds(&held.host, &held.held.gpus, held.driver, lib_dir);
        let file_points = &mut self.file_points;
        binds.files.retain(|file| match root.make_file_mount_point(&file.path) {
            Ok(made) => {
                if made {
                    file_points.push(file.path.clone());
                }
                true
            }
            Err(_) => false,
        });
        Ok(binds)
    }

    fn teardown(&mut self) -> Result<(), EnvError> {
        let mut first_err = None;
        let mut note = |r: Result<(), EnvError>| {
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        };
        if self.phase.is_some() {
            note(self.end_phase());
        }
        self.root = None;
        if let Some(mut k) = self.keeper.take() {
            note(k.stop());
        }
        note(self.cgroup.kill_all());
        note(self.cgroup.remove());
        if self.dir.exists() {
            note(
                std::fs::remove_dir_all(&self.dir)
                    .map_err(|e| EnvError::io(format!("remove {}", self.dir.display()), e)),
            );
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Environment for SandboxEnv {
    fn id(&self) -> &str {
        &self.id
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn machine(&self) -> Option<MachineRecord> {
        let gpus = self.gpus.as_ref()?;
        let indices = &gpus.held.gpus;
        Some(MachineRecord {
            host: "local".into(),
            hostname: hostname(),
            labels: Vec::new(),
            gpus_declared: indices.len() as u32,
            gpus: indices
                .iter()
                .map(|i| {
                    gpus.host.gpu(*i).and_then(|g| g.name.clone()).unwrap_or_else(|| format!("nvidia{i}"))
                })
                .collect(),
            driver: gpus.host.driver.clone(),
        })
    }

    fn files(&self) -> &dyn Files {
        self.rootfs()
    }

    fn begin_phase_with(&mut self, network: Network, options: &PhaseOptions) -> Result<(), EnvError> {
        let mounts = &options.mounts;
        if std::mem::take(&mut self.warm_phase) {
            let plain = options.mounts.is_empty() && options.sealed.is_empty() && self.gpus.is_none();
            if network == Network::Outbound && plain {
                return Ok(());
            }
            self.end_phase()?;
        }
        if self.phase.is_some() {
            return Err(EnvError::Phase("a phase is already running".into()));
        }
        let keeper = self.keeper.as_ref().ok_or_else(|| EnvError::Phase("environment destroyed".into()))?;
        let keeper_pid = keeper.pid();
        for mount in mounts {
            self.make_mount_point(&mount.path)?;
        }
        let gpu = match self.gpu_binds() {
            Ok(gpu) => gpu,
            Err(e) => {
                self.remove_mount_points();
                return Err(e);
            }
        };
        let binds = phase::Binds {
            read_only: mounts.iter().chain(&gpu.files).collect(),
            devices: gpu.devices.iter().collect(),
        };
        let merged = self.dir.join("root");
        let procs = self.cgroup.procs_files();
        let started = phase::Holder::start(keeper_pid, &merged, network, &binds, &procs)
            .and_then(|holder| seal::seal(holder.pid, &options.sealed).map(|()| holder));
        match started {
            Ok(holder) => self.phase = Some(holder),
            Err(e) => {
                self.remove_mount_points();
                return Err(e);
            }
        }
        Ok(())
    }

    fn listen_loopback(&self, port: u16) -> Result<std::net::TcpListener, EnvError> {
        let holder = self.phase.as_ref().ok_or_else(|| EnvError::Phase("no phase is running".into()))?;
        phase::listen_in_net_ns(holder.pid, port)
    }

    fn exec(&self, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
        let holder = self.phase.as_ref().ok_or_else(|| EnvError::Phase("no phase is running".into()))?;
        let procs = self.cgroup.procs_files();
        spawn::run(&spawn::Target { holder_pid: holder.pid, cgroup_procs: &procs }, req, cancel)
    }

    fn watch_access(&self, under: &str) -> Result<Option<Box<dyn crate::AccessWatch>>, EnvError> {
        let keeper = self.keeper.as_ref().ok_or_else(|| EnvError::Phase("environment destroyed".into()))?;
        if self.rootless {
            // A file system mark needs the host's CAP_SYS_ADMIN.
            return Ok(Some(Box::new(crate::fanotify::MarksWatch::start(&keeper.root_path, under)?)));
        }
        Ok(Some(Box::new(crate::fanotify::FanotifyWatch::start(&keeper.root_path)?)))
    }

    fn end_phase(&mut self) -> Result<(), EnvError> {
        self.warm_phase = false;
        if let Some(mut holder) = self.phase.take() {
            holder.stop()?;
        }
        self.remove_mount_points();
        self.cgroup.kill_all()
    }

    fn diff(&self, cancel: &CancelToken) -> Result<EnvDiff, EnvError> {
        let keeper = self.keeper.as_ref().ok_or_else(|| EnvError::Phase("environment destroyed".into()))?;
        let upper = keeper.root_path.with_file_name("disk").join("upper");
        let made = self.rootfs().made_by_harness();
        diff::upper_changes(
            &upper,
            std::slice::from_ref(&self.image_root),
            &made,
            WalkLimits::default(),
            cancel,
        )
    }

    fn destroy(mut self: Box<Self>) -> Result<(), EnvError> {
        self.teardown()
    }
}

impl Drop for SandboxEnv {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// This host's name, for the record.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// A host program that `SandboxBackend::new` checked is there.
pub(crate) fn tool(name: &str) -> PathBuf {
    host_tool(name).unwrap_or_else(|| PathBuf::from(name))
}

/// Joins the cgroups whose `cgroup.procs` files are open as `fds`; for use
/// between fork and exec (raw system calls only).
pub(crate) fn join_cgroups(fds: &[i32]) -> std::io::Result<()> {
    for fd in fds {
        // SAFETY: writing "0" (this process) to an open cgroup.procs file.
        if unsafe { libc::write(*fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd), EnvError> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(EnvError::io("pipe", std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 succeeded; both fds are new and owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
