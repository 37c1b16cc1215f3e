//! Memory, process and CPU limits through cgroups, v1 or v2, whichever the
//! host has. Every process of an environment (the mount keeper, each
//! phase's holder, every command) joins the environment's cgroup, which is
//! also how the harness finds and kills whatever is left.

use std::path::{Path, PathBuf};

use crate::backend::{LimitState, Limits};
use crate::error::EnvError;

const ROOT: &str = "/sys/fs/cgroup";
/// The parent cgroup under which every environment's cgroup is made.
pub(crate) const PARENT: &str = "cleanroom";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One unified hierarchy at /sys/fs/cgroup.
    V2,
    /// One hierarchy per controller at /sys/fs/cgroup/<controller>.
    V1,
    None,
}

fn layout() -> Layout {
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

/// The cgroup directories of one environment.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dirs: Vec<PathBuf>,
    pub limits: Limits,
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

/// Every cgroup directory that an environment named `id` may have.
pub(crate) fn dirs_of(id: &str) -> Vec<PathBuf> {
    match layout() {
        Layout::V2 => vec![Path::new(ROOT).join(PARENT).join(id)],
        Layout::V1 => ["memory", "pids", "cpu", "freezer"]
            .iter()
            .map(|c| Path::new(ROOT).join(c).join(PARENT).join(id))
            .filter(|p| p.parent().and_then(Path::parent).is_some_and(Path::exists))
            .collect(),
        Layout::None => Vec::new(),
    }
}

impl Cgroup {
    /// No cgroup: every limit unenforced (the rootless sandbox).
    pub fn none() -> Cgroup {
        let unenforced = LimitState::Unenforced;
        Cgroup { dirs: Vec::new(), limits: Limits { memory: unenforced, pids: unenforced, disk: unenforced } }
    }

    pub fn create(id: &str, memory_mb: u64, pids_max: u64, cpus: u32) -> Result<Cgroup, EnvError> {
        let memory = (memory_mb * 1024 * 1024).to_string();
        let all_pids = all_environments_pids_max();
        let pids = pids_max.min(all_pids).to_string();
        let period = 100_000u64;
        let quota = (cpus.max(1) as u64 * period).to_string();
        let mut cg = Cgroup::none();
        let mkdir = |dir: &Path| -> Result<(), EnvError> {
            std::fs::create_dir_all(dir).map_err(|e| EnvError::io(dir.display().to_string(), e))
        };
        match layout() {
            Layout::V2 => {
                let parent = Path::new(ROOT).join(PARENT);
                mkdir(&parent)?;
                // Controllers must be enabled on the way down; a failure here
                // just leaves the limit unenforced, which is recorded.
                let _ = write(&Path::new(ROOT).join("cgroup.subtree_control"), "+memory +pids +cpu");
                let _ = write(&parent.join("cgroup.subtree_control"), "+memory +pids +cpu");
                let _ = write(&parent.join("pids.max"), &all_pids.to_string());
                let dir = parent.join(id);
                mkdir(&dir)?;
                cg.dirs.push(dir.clone());
                if write(&dir.join("memory.max"), &memory).is_ok() {
                    let _ = write(&dir.join("memory.swap.max"), "0");
                    cg.limits.memory = LimitState::Enforced;
                }
                if write(&dir.join("pids.max"), &pids).is_ok() {
                    cg.limits.pids = LimitState::Enforced;
                }
                let _ = write(&dir.join("cpu.max"), &format!("{quota} {period}"));
            }
            Layout::V1 => {
                for controller in ["memory", "pids", "cpu", "freezer"] {
                    let base = Path::new(ROOT).join(controller);
                    if !base.exists() {
                        continue;
                    }
                    let dir = base.join(PARENT).join(id);
                    mkdir(&dir)?;
                    if controller == "pids" {
                        let _ = write(&base.join(PARENT).join("pids.max"), &all_pids.to_string());
                    }
                    cg.dirs.push(dir.clone());
                    match controller {
                        "memory" if write(&dir.join("memory.limit_in_bytes"), &memory).is_ok() => {
                            // With swap accounting, swap counts too.
                            let memsw = dir.join("memory.memsw.limit_in_bytes");
                            if memsw.exists() {
                                let _ = write(&memsw, &memory);
                            }
                            cg.limits.memory = LimitState::Enforced;
                        }
                        "pids" if write(&dir.join("pids.max"), &pids).is_ok() => {
                            cg.limits.pids = LimitState::Enforced;
                        }
                        "cpu" => {
                            let _ = write(&dir.join("cpu.cfs_period_us"), &period.to_string());
                            let _ = write(&dir.join("cpu.cfs_quota_us"), &quota);
                        }
                        _ => {}
                    }
                }
            }
            Layout::None => {}
        }
        Ok(cg)
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

pub(crate) fn remove_dirs(dirs: &[PathBuf]) -> Result<(), EnvError> {
    for dir in dirs {
        if dir.exists() {
            std::fs::remove_dir(dir)
                .map_err(|e| EnvError::io(format!("remove cgroup {}", dir.display()), e))?;
        }
    }
    Ok(())
}
