//! What every command that runs environments does first: make the backend,
//! then have the runner prepare the tasks (sweep what dead runs left, make
//! every image ready, stage every artifact), its progress printed.

use std::path::{Path, PathBuf};

use cleanroom_agent::{Config, ConfigError};
use cleanroom_cache::Cache;
use cleanroom_env::privilege::{self, Privilege};
use cleanroom_env::{image, open_backend, Backend, CancelToken, EnvError, HostConfig};
use cleanroom_runner::{AgentEntry, AgentSetup, Prepared, RunInput};
use cleanroom_task::Task;

use crate::error::{input, CliError};
use crate::reporter::preparation_line;

/// The backend alone, with what the host's configuration (`config_file`
/// or the default locations) gives it, so that a host that cannot run
/// environments is told before anything is written.
pub fn backend(name: &str, config_file: Option<&Path>) -> Result<Box<dyn Backend>, CliError> {
    let config = Config::load(config_file)?;
    if name == "sandbox" {
        enter_user_namespace_if_unprivileged()?;
    }
    let file = match name {
        "ssh" => config.ssh.file.clone(),
        // Found through DOCKER_HOST or a default socket, not the file.
        "container" => Some("the container engine".into()),
        _ => config.vm.file.clone(),
    };
    let host = HostConfig { vm_gpus: config.vm.gpus, ssh: config.ssh };
    open_backend(name, &image::cleanroom_home(), &host).map_err(|e| match e {
        EnvError::Config(message) => CliError::Config(ConfigError {
            file: file
                .or(config_file.map(|f| f.display().to_string()))
                .unwrap_or_else(|| "(configuration)".into()),
            message,
        }),
        other => other.into(),
    })
}

/// An ordinary user's command goes on as root of a user namespace (the
/// rootless sandbox), in a cgroup scope delegated to it where the user's
/// systemd makes one: this process is then only its waiting parent. Done
/// before anything is written, the command runs there from its start.
pub fn enter_user_namespace_if_unprivileged() -> Result<(), CliError> {
    if privilege::current() == Privilege::User {
        crate::user_scope::run_in_delegated_scope_if_possible()?;
        crate::rootless::run_in_user_namespace()?;
    }
    Ok(())
}

/// Prepares `tasks` on `backend` (cleanroom_runner::prepare), printing its
/// progress; `label` names this process's staging directory.
pub fn prepare(backend: &dyn Backend, tasks: &[Task], label: &str) -> Result<Prepared, CliError> {
    let home = image::cleanroom_home();
    let staging = home.join("staging").join(format!("{label}-{}", std::process::id()));
    let prepared = cleanroom_runner::prepare(backend, tasks, &home.join("cache"), staging, &mut |event| {
        if let cleanroom_runner::EventKind::Preparing(step) = &event.kind {
            eprintln!("{}", preparation_line(step));
        }
    })?;
    Ok(prepared)
}

/// The package cache in `dir` (default: under cleanroom's home), holding
/// at most `size_gib` (default 20). Where it cannot be opened the run goes
/// on without it, saying why.
pub fn package_cache(dir: Option<&Path>, size_gib: Option<u64>) -> Option<Cache> {
    let dir = dir.map_or_else(|| cleanroom_cache::dir_under(&image::cleanroom_home()), Path::to_path_buf);
    let limit = size_gib.map_or(cleanroom_cache::DEFAULT_LIMIT, |gib| gib.saturating_mul(1 << 30));
    match Cache::open(&dir, limit) {
        Ok(cache) => {
            eprintln!(
                "cleanroom: package cache {} holds {:.1} of {:.1} GiB",
                dir.display(),
                cache.size() as f64 / (1u64 << 30) as f64,
                limit as f64 / (1u64 << 30) as f64
            );
            if let Some(why) = cache.apt_unverifiable() {
                eprintln!("cleanroom: the package cache keeps no Debian packages: {why}");
            }
            Some(cache)
        }
        Err(why) => {
            eprintln!("cleanroom: the agents download without the package cache: {why}");
            None
        }
    }
}

/// What the task tools (check, calibrate) run with: the backend, what it
/// prepared, and the setup of their agents (oracle, nop), which is none.
pub struct ToolSetup {
    backend: Box<dyn Backend>,
    prepared: Prepared,
    agents: AgentSetup,
    cache: Option<Cache>,
}

impl ToolSetup {
    /// Opens the backend `name` and prepares `tasks` on it.
    pub fn prepare(
        name: &str,
        config_file: Option<&Path>,
        tasks: &[Task],
        label: &str,
    ) -> Result<ToolSetup, CliError> {
        let backend = backend(name, config_file)?;
        if let Some(why) = backend.limits_never_enforced() {
            // A task's timings and its oracle's verdict are judged under
            // the limits it declares.
            return Err(input(format!(
                "the task tools run under enforced limits, which the {name} backend cannot give here ({why})"
            )));
        }
        let prepared = prepare(backend.as_ref(), tasks, label)?;
        Ok(ToolSetup { backend, prepared, agents: AgentSetup::default(), cache: package_cache(None, None) })
    }

    /// Input for the task tools: default budgets, limits enforced, the
    /// gate off.
    pub fn input<'a>(
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
            agent_setup: &self.agents,
            backend: self.backend.as_ref(),
            artifacts: &self.prepared.artifacts,
            cancel: cancel.clone(),
            progress_every: None,
            cache: self.cache.as_ref(),
        }
    }
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
