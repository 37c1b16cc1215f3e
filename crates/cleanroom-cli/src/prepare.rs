//! What every command that runs environments does first: sweep what dead
//! runs left, make the backend, have every image the tasks name (built on
//! first use) and stage every task's artifact on the host.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cleanroom_env::{image, open_backend, Backend, CancelToken};
use cleanroom_runner::{stage_artifacts, AgentEntry, AgentSetup, RunInput, Staged};
use cleanroom_task::Task;

use crate::error::{input, CliError};

pub struct Prepared {
    pub backend: Box<dyn Backend>,
    /// Image name → its digest, for the record.
    pub image_digests: BTreeMap<String, String>,
    pub artifacts: Staged,
    staging: PathBuf,
    /// What the task tools' agents (oracle, nop) get: nothing.
    tool_agents: AgentSetup,
}

impl Prepared {
    /// Input for the task tools (check, calibrate): default budgets, limits
    /// enforced, the gate off.
    pub fn tool_input<'a>(
        &'a self,
        tasks: &'a [Task],
        agents: &'a [AgentEntry],
        trials: u32,
        jobs: usize,
        cancel: &CancelToken,
    ) -> RunInput<'a> {
        RunInput {
            tasks,
            agents,
            trials,
            jobs: jobs.max(1),
            retries: 1,
            timeout_multiplier: 1.0,
            allow_unlimited: false,
            agent_setup: &self.tool_agents,
            backend: self.backend.as_ref(),
            artifacts: &self.artifacts,
            cancel: cancel.clone(),
        }
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// The backend alone, so that a host that cannot run environments is told
/// before anything is written.
pub fn backend(name: &str) -> Result<Box<dyn Backend>, CliError> {
    Ok(open_backend(name, &image::cleanroom_home())?)
}

/// Prepares `tasks` for `backend`; `label` names the staging directory.
pub fn prepare(backend: Box<dyn Backend>, tasks: &[Task], label: &str) -> Result<Prepared, CliError> {
    let home = image::cleanroom_home();
    let swept = backend.sweep()?;
    if !swept.environments.is_empty() {
        eprintln!("cleanroom: removed {} environment(s) left by a dead run", swept.environments.len());
    }
    let mut names: Vec<&str> = tasks.iter().map(|t| t.spec.environment.image.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let image_digests = backend
        .prepare_images(&names, &mut |line| eprintln!("image: {line}"))?
        .into_iter()
        .map(|img| (img.name, img.digest))
        .collect();
    let staging = home.join("staging").join(format!("{label}-{}", std::process::id()));
    let refs: Vec<&Task> = tasks.iter().collect();
    let artifacts = stage_artifacts(&refs, &home.join("cache"), &staging, &mut |line| eprintln!("{line}"));
    Ok(Prepared { backend, image_digests, artifacts, staging, tool_agents: AgentSetup::default() })
}

/// The task directories that DIRS name: a directory holding task.toml is
/// one task, otherwise each immediate subdirectory holding one is.
pub fn task_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut out = Vec::new();
    for dir in dirs {
        if dir.join("task.toml").is_file() {
            out.push(dir.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| input(format!("{}: {e}", dir.display())))?;
        let mut found: Vec<PathBuf> =
            entries.flatten().map(|e| e.path()).filter(|p: &PathBuf| p.join("task.toml").is_file()).collect();
        if found.is_empty() {
            return Err(input(format!("{}: no task.toml in it or in its subdirectories", dir.display())));
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}
