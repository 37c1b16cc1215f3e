//! Memory, process and CPU limits through cgroups, v1 or v2, whichever the
//! host has (as root), or in a cgroup v2 subtree delegated to the user
//! (the rootless sandbox, delegation.rs). Every process of an environment
//! (the mount keeper, each phase's holder, every command) joins the
//! environment's cgroup, which is also how the harness finds and kills
//! whatever is left.

use std::path::{Path, PathBuf};

use crate::backend::{LimitState, Limits};
use crate::error::EnvError;

pub(crate) const ROOT: &str = "/sys/fs/cgroup";
/// The parent cgroup under which every environment's cgroup is made.
pub(crate) const PARENT: &str = "cleanroom";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One unified hierarchy at /sys/fs/cgroup.
    V2,
    /// One hierarchy per controller at /sys/fs/cgroup/<controller>.
    V1,
    None,
}

pub(crate) fn layout() -> Layout {
    if Path::new(ROOT).join("cgroup.controllers").exists() {
        Layout::V2
    } else if Path::new(ROOT).join("memory").join("memory.limit_in_bytes").exists() {
        Layout::V1
    } else {
        Layout::None
    }
}

/// Most processes of all environments together: half of what the host's
/// kernel allows (pid_max, threads-max), so that parallel environments
/// that each fill their own limit never starve the host. Each environment's
/// own limit is capped by it too.
pub(crate) fn all_environments_pids_max() -> u64 {
    let read = |knob: &str| std::fs::read_to_string(knob).ok().and_then(|v| v.trim().parse::<u64>().ok());
    let host = [read("/proc/sys/kernel/pid_max"), read("/proc/sys/kernel/threads-max")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(32768);
    (host / 2).max(64)
}

/// Where environments' cgroups are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// The host's own hierarchy, as its root: `/sys/fs/cgroup/cleanroom`
    /// (v2), or that under each controller's hierarchy (v1).
    Host,
    /// `<delegated>/cleanroom`, in a cgroup v2 subtree delegated to this
    /// user (delegation.rs), its controllers enabled.
    Delegated(PathBuf),
    /// No cgroup, and why: every limit unenforced (the rootless sandbox
    /// where no subtree is delegated).
    Nowhere(String),
}

/// The controllers an environment's cgroup gets, as
/// `cgroup.subtree_control` takes them.
pub(crate) const CONTROLLERS: &str = "+memory +pids +cpu";

/// The v1 hierarchies an environment has a cgroup in.
const V1_CONTROLLERS: [&str; 4] = ["memory", "pids", "cpu", "freezer"];

/// The cgroup directories of one environment.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dirs: Vec<PathBuf>,
    pub limits: Limits,
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

fn mkdir(dir: &Path) -> Result<(), EnvError> {
    std::fs::create_dir_all(dir).map_err(|e| EnvError::io(dir.display().to_string(), e))
}

impl Place {
    /// The directories under which environments' cgroups are made, one per
    /// hierarchy.
    pub fn parents(&self) -> Vec<PathBuf> {
        match (self, layout()) {
            (Place::Host, Layout::V2) => vec![Path::new(ROOT).join(PARENT)],
            (Place::Host, Layout::V1) => V1_CONTROLLERS
                .iter()
                .map(|c| Path::new(ROOT).join(c).join(PARENT))
                .filter(|p| p.parent().is_some_and(Path::exists))
                .collect(),
            (Place::Delegated(parent), _) => vec![parent.clone()],
            _ => Vec::new(),
        }
    }

    pub fn create(&self, id: &str, memory_mb: u64, pids_max: u64, cpus: u32) -> Result<Cgroup, EnvError> {
        let all_pids = all_environments_pids_max();
        let mut cg = Cgroup::none();
        match (self, layout()) {
            (Place::Host, Layout::V2) => {
                let parent = Path::new(ROOT).join(PARENT);
                mkdir(&parent)?;
                // Controllers must be enabled on the way down; a failure here
                // just leaves the limit unenforced, which is recorded.
                let _ = write(&Path::new(ROOT).join("cgroup.subtree_control"), CONTROLLERS);
                let _ = write(&parent.join("cgroup.subtree_control"), CONTROLLERS);
                let _ = write(&parent.join("pids.max"), &all_pids.to_string());
                cg.dirs.push(parent.join(id));
            }
            (Place::Delegated(parent), _) => cg.dirs.push(parent.join(id)),
            (Place::Host, Layout::V1) => {
                for controller in V1_CONTROLLERS {
                    let base = Path::new(ROOT).join(controller);
                    if !base.exists() {
                        continue;
                    }
                    if controller == "pids" {
                        let _ = write(&base.join(PARENT).join("pids.max"), &all_pids.to_string());
                    }
                    cg.dirs.push(base.join(PARENT).join(id));
                }
            }
            _ => return Ok(cg),
        }
        for dir in &cg.dirs {
            mkdir(dir)?;
        }
        cg.set_limits(memory_mb, pids_max, cpus);
        Ok(cg)
    }
}

const CPU_PERIOD: u64 = 100_000;

impl Cgroup {
    /// Sets the memory, process and CPU limits (again, for an environment
    /// made ahead of need), and records which hold. Each file is tried in
    /// every directory: those of the other version or controller are not
    /// there, and writing them fails.
    pub fn set_limits(&mut self, memory_mb: u64, pids_max: u64, cpus: u32) {
        let memory = (memory_mb * 1024 * 1024).to_string();
        let pids = pids_max.min(all_environments_pids_max()).to_string();
        let cpu_quota = cpus.max(1) as u64 * CPU_PERIOD;
        self.limits.memory = LimitState::Unenforced;
        self.limits.pids = LimitState::Unenforced;
        for dir in &self.dirs {
            if write(&dir.join("memory.max"), &memory).is_ok() {
                let _ = write(&dir.join("memory.swap.max"), "0");
                self.limits.memory = LimitState::Enforced;
            }
            // v1: with swap accounting, swap counts too; memsw may not be
            // below the memory limit, so a raised limit is written again.
            let v1_memory = dir.join("memory.limit_in_bytes");
            let first = write(&v1_memory, &memory).is_ok();
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                let _ = write(&memsw, &memory);
            }
            if first || write(&v1_memory, &memory).is_ok() {
                self.limits.memory = LimitState::Enforced;
            }
            if write(&dir.join("pids.max"), &pids).is_ok() {
                self.limits.pids = LimitState::Enforced;
            }
            let _ = write(&dir.join("cpu.max"), &format!("{cpu_quota} {CPU_PERIOD}"));
            if write(&dir.join("cpu.cfs_period_us"), &CPU_PERIOD.to_string()).is_ok() {
                let _ = write(&dir.join("cpu.cfs_quota_us"), &cpu_quota.to_string());
            }
        }
    }

    /// No cgroup: every limit unenforced.
    pub fn none() -> Cgroup {
        let unenforced = LimitState::Unenforced;
        Cgroup { dirs: Vec::new(), limits: Limits { memory: unenforced, pids: unenforced, disk: unenforced } }
    }

    /// The directories, one per line, for [`read_record`]: a later sweep
    /// finds them there even when they are not under this process's place.
    pub fn record(&self) -> String {
        self.dirs.iter().map(|d| format!("{}\n", d.display())).collect()
    }

    /// The `cgroup.procs` files a process writes itself into to join.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// Kills every process in the cgroup and waits until none is left.
    pub fn kill_all(&self) -> Result<(), EnvError> {
        kill_all_in(&self.dirs)
    }

    /// Removes the (empty) cgroup directories.
    pub fn remove(&self) -> Result<(), EnvError> {
        remove_dirs(&self.dirs)
    }
}

fn pids_in(dirs: &[PathBuf]) -> Vec<i32> {
    let mut pids: Vec<i32> = dirs
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join("cgroup.procs")).ok())
        .flat_map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect::<Vec<_>>())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Kills until the cgroups hold no process. Freezing first (where the
/// freezer exists) stops a fork bomb from outrunning the kills.
pub(crate) fn kill_all_in(dirs: &[PathBuf]) -> Result<(), EnvError> {
    if let Some(dir) = dirs.iter().find(|d| d.join("cgroup.kill").exists()) {
        let _ = write(&dir.join("cgroup.kill"), "1");
    }
    let freezer = dirs.iter().find(|d| d.join("freezer.state").exists());
    for round in 0..2000 {
        let pids = pids_in(dirs);
        if pids.is_empty() {
            return Ok(());
        }
        if let Some(f) = freezer {
            let _ = write(&f.join("freezer.state"), "FROZEN");
        }
        for pid in &pids {
            // SAFETY: plain kill(2).
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        if let Some(f) = freezer {
            // Frozen tasks only die once thawed.
            let _ = write(&f.join("freezer.state"), "THAWED");
        }
        // Dying processes leave the cgroup asynchronously: yield briefly.
        std::thread::sleep(std::time::Duration::from_millis(if round < 50 { 1 } else { 10 }));
    }
    Err(EnvError::Phase(format!(
        "processes {:?} survived SIGKILL in {}",
        pids_in(dirs),
        dirs.first().map(|d| d.display().to_string()).unwrap_or_default()
    )))
}

/// Gone already is fine: two sweeps (two trials starting at once) may
/// both find the same dead cgroup, and only one of them removes it.
pub(crate) fn remove_dirs(dirs: &[PathBuf]) -> Result<(), EnvError> {
    for dir in dirs {
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(EnvError::io(format!("remove cgroup {}", dir.display()), e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The directories a [`Cgroup::record`] names.
pub(crate) fn read_record(text: &str) -> Vec<PathBuf> {
    text.lines().filter(|l| !l.is_empty()).map(PathBuf::from).collect()
}
