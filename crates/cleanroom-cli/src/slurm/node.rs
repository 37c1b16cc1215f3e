//! `cleanroom slurm-trial --run-dir RUN --list FILE`: one element of a
//! Slurm run's job array, on its node. It reads the run's plan (run.toml)
//! and its element of FILE (`SLURM_ARRAY_TASK_ID`), prepares that task on
//! this node's backend, runs the one attempt, and reports its phases and
//! its end through the run directory (cleanroom_store::RemoteAttempt),
//! naming its job and node; the process that submitted records it.

use std::path::Path;

use cleanroom_env::{CancelToken, LastLine};
use cleanroom_runner::{AttemptEnd, AttemptProgress, Executor, Local, Phase, RunInput, TrialKey};
use cleanroom_store::{read_run_config, RemoteAttempt};
use cleanroom_task::load_tasks;

use super::{Element, Listed};
use crate::args::SlurmTrialArgs;
use crate::error::{input, internal, CliError};
use crate::{interrupt, prepare, run_cmd};

pub fn run(args: SlurmTrialArgs, config_file: Option<&Path>) -> Result<(), CliError> {
    let index: usize =
        std::env::var("SLURM_ARRAY_TASK_ID").ok().and_then(|v| v.parse().ok()).ok_or_else(|| {
            input("slurm-trial runs as an element of a Slurm job array (no SLURM_ARRAY_TASK_ID)")
        })?;
    let text = std::fs::read(&args.list).map_err(|e| input(format!("{}: {e}", args.list.display())))?;
    let list: Vec<Listed> =
        serde_json::from_slice(&text).map_err(|e| input(format!("{}: {e}", args.list.display())))?;
    let listed =
        list.get(index).ok_or_else(|| input(format!("{}: no element {index}", args.list.display())))?;
    let config = read_run_config(&args.run_dir)?;
    let agent_config = run_cmd::agent_config(&config);
    let backend = prepare::backend(&config.backend, config_file)?;
    let tasks = load_tasks(&config.tasks.iter().map(Into::into).collect::<Vec<_>>())?;
    let task = tasks
        .into_iter()
        .find(|t| t.id == listed.task)
        .ok_or_else(|| input(format!("task {} is not in the run's tasks", listed.task)))?;
    let agent = run_cmd::parse_agents(&config, &agent_config)?
        .into_iter()
        .find(|a| a.id == listed.agent_id)
        .ok_or_else(|| input(format!("agent {} is not in the run", listed.agent_id)))?;
    let tasks = [task];
    let agents = [agent];
    let prepared = prepare::prepare(backend.as_ref(), &tasks, &config.run_id)?;
    let setup = run_cmd::agent_setup(&config, agent_config)?;
    let cancel = CancelToken::new().map_err(internal)?;
    interrupt::watch(cancel.clone());
    // Each node keeps its own cache, under its cleanroom home.
    let cache = (!config.no_cache).then(|| prepare::package_cache(None, None)).flatten();
    let input = RunInput {
        cache: cache.as_ref(),
        jobs: 1,
        retries: 0,
        // The submitting process reports; nothing watches this one.
        progress_every: None,
        ..run_cmd::run_input(&config, &tasks, &agents, &setup, backend.as_ref(), &prepared.artifacts, &cancel)
    };
    let key = TrialKey { task: listed.task.clone(), agent_id: listed.agent_id.clone(), trial: listed.trial };
    let report = RemoteAttempt::at(&args.run_dir, &key.task, &key.agent_id, key.trial, listed.attempt)?;
    let phase = |p: Phase| {
        let _ = report.write_phase(match p {
            Phase::Agent => "agent",
            Phase::Verify => "verify",
        });
    };
    let progress = AttemptProgress::new(&phase, LastLine::new());
    match Local.attempt(&input, &tasks[0], &agents[0], &key, listed.attempt, false, &progress) {
        AttemptEnd::Interrupted => {
            Err(internal("the attempt was interrupted (scancel, or a signal): no record"))
        }
        AttemptEnd::Done(done) => {
            let mut record = done.record;
            let element = Element { job: std::env::var("SLURM_ARRAY_JOB_ID").unwrap_or_default(), index };
            record.executor = Some(element.record(&std::env::var("SLURMD_NODENAME").unwrap_or_default()));
            report.write_outcome(&record, &done.files)?;
            Ok(())
        }
    }
}
