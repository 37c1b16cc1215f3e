//! Removing what a dead run left behind. Mounts cannot outlive a run (they
//! live in the keeper's namespace); cgroups, processes that escaped a kill
//! and environment directories can, when the harness is killed with
//! SIGKILL. Each command sweeps them before it starts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::SweepReport;
use crate::error::EnvError;
use crate::sandbox::cgroup;

/// A process identified by pid and start time, so a recycled pid is not
/// mistaken for the run that made an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub pid: u32,
    pub start_time: u64,
}

fn start_time_of(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22, counted after the parenthesised command name.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner { pid, start_time: start_time_of(pid).unwrap_or(0) }
    }

    pub fn write(&self, env_dir: &Path) -> Result<(), EnvError> {
        let path = env_dir.join("owner");
        std::fs::write(&path, format!("{} {}\n", self.pid, self.start_time))
            .map_err(|e| EnvError::io(path.display().to_string(), e))
    }

    pub(crate) fn read(env_dir: &Path) -> Option<Owner> {
        let text = std::fs::read_to_string(env_dir.join("owner")).ok()?;
        let mut it = text.split_whitespace();
        Some(Owner { pid: it.next()?.parse().ok()?, start_time: it.next()?.parse().ok()? })
    }

    /// A name unique to this call that names this owner as its maker,
    /// `<pid>-<start time>-<n>`, for [`owner_in_id_alive`] to read back.
    pub(crate) fn new_id(&self) -> String {
        static MADE: AtomicU64 = AtomicU64::new(0);
        format!("{}-{}-{}", self.pid, self.start_time, MADE.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn is_alive(&self) -> bool {
        start_time_of(self.pid) == Some(self.start_time)
    }
}

/// The file in an environment's directory that names its cgroups
/// ([`cgroup::Cgroup::record`]): those of the rootless sandbox are under the
/// delegated subtree of the run that made them, not this one's.
pub(crate) const CGROUPS_RECORD: &str = "cgroups";

/// Removes every environment under `<home>/envs` whose owner is dead, and
/// every cgroup at `place` without a live environment.
pub(crate) fn sweep(home: &Path, place: &cgroup::Place) -> Result<SweepReport, EnvError> {
    let mut report = SweepReport::default();
    let envs = home.join("envs");
    let mut live = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&envs) {
        for entry in entries.flatten() {
            let dir = entry.path();
            let id = entry.file_name().to_string_lossy().into_owned();
            match Owner::read(&dir) {
                Some(owner) if owner.is_alive() => live.push(id),
                // An env dir whose owner file is not written yet is young:
                // only remove it once its id names a dead process.
                None if owner_in_id_alive(&id) => live.push(id),
                _ => {
                    remove_env(&dir, &id, place)?;
                    report.environments.push(id);
                }
            }
        }
    }
    for parent in place.parents() {
        let Ok(entries) = std::fs::read_dir(&parent) else { continue };
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && !live.contains(&id) && !owner_in_id_alive(&id) {
                cgroup::kill_all_in(&[entry.path()])?;
                cgroup::remove_dirs(&[entry.path()])?;
            }
        }
    }
    Ok(report)
}

/// Environment ids start with the owner's pid and start time.
pub(crate) fn owner_in_id_alive(id: &str) -> bool {
    let mut it = id.split('-');
    let owner = (|| Some(Owner { pid: it.next()?.parse().ok()?, start_time: it.next()?.parse().ok()? }))();
    owner.is_some_and(|o| o.is_alive())
}

fn remove_env(dir: &Path, id: &str, place: &cgroup::Place) -> Result<(), EnvError> {
    let dirs: Vec<PathBuf> = match std::fs::read_to_string(dir.join(CGROUPS_RECORD)) {
        Ok(record) => cgroup::read_record(&record),
        // Made before its cgroups were: they can only be at this place.
        Err(_) => place.parents().into_iter().map(|p| p.join(id)).collect(),
    };
    cgroup::kill_all_in(&dirs)?;
    cgroup::remove_dirs(&dirs)?;
    crate::removal::remove_dir_all_if_present(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trials that start together each sweep first: they find the same
    /// dead environments, and every one of them must still start.
    #[test]
    fn concurrent_sweeps_of_the_same_dead_environments_all_succeed() {
        let home = tempfile::tempdir().unwrap();
        let cgroups = tempfile::tempdir().unwrap();
        let place = cgroup::Place::Delegated(cgroups.path().to_path_buf());
        for n in 0..200 {
            // Pid 0 is never a live owner.
            let id = format!("0-0-{n}");
            let env = home.path().join("envs").join(&id);
            std::fs::create_dir_all(env.join("rootfs/usr/bin")).unwrap();
            let group = cgroups.path().join(&id);
            std::fs::create_dir(&group).unwrap();
            std::fs::write(env.join(CGROUPS_RECORD), format!("{}\n", group.display())).unwrap();
            std::fs::create_dir(cgroups.path().join(format!("0-0-orphan-{n}"))).unwrap();
        }
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            let sweeps: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        sweep(home.path(), &place)
                    })
                })
                .collect();
            for handle in sweeps {
                handle.join().unwrap().unwrap();
            }
        });
        assert_eq!(std::fs::read_dir(home.path().join("envs")).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(cgroups.path()).unwrap().count(), 0);
    }
}
