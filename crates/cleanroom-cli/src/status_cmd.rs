//! `cleanroom status RUN_DIR`: where a run stands, read from its directory
//! while it runs or after: how many of its trials have a result and with
//! which outcomes, the attempts its Slurm nodes are on and in which phase,
//! and whether a `cleanroom run` is attached to it (else: --resume).

use std::collections::BTreeMap;
use std::path::Path;

use cleanroom_store::{in_flight, read_results, read_run_config, RunDir, StoreError};
use cleanroom_task::load_tasks;

use crate::args::StatusArgs;
use crate::error::CliError;

pub fn status(args: StatusArgs) -> Result<(), CliError> {
    let dir = &args.run_dir;
    if !dir.join("run.toml").is_file() {
        return Err(StoreError::NoRun(dir.clone()).into());
    }
    let config = read_run_config(dir)?;
    let results = read_results(dir)?;
    let tasks = if config.task_ids.is_empty() {
        load_tasks(&config.tasks.iter().map(Into::into).collect::<Vec<_>>()).map(|t| t.len()).ok()
    } else {
        Some(config.task_ids.len())
    };
    let planned = tasks.map(|t| (t * config.agents.len() * config.trials as usize).to_string());
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &results {
        *outcomes.entry(r.outcome.as_str()).or_default() += 1;
    }
    let counts: Vec<String> = outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect();
    let executor = if config.slurm.is_some() { "slurm" } else { "local" };
    println!(
        "run {} ({executor}, backend {}): {} of {} trial(s) have a result{}",
        config.run_id,
        config.backend,
        results.len(),
        planned.as_deref().unwrap_or("?"),
        if counts.is_empty() { String::new() } else { format!(" ({})", counts.join(", ")) }
    );
    let flying = in_flight(dir);
    if !flying.is_empty() {
        println!("under way on the nodes:");
        for f in &flying {
            println!("  {} {} #{} attempt {}: {}", f.task, f.agent_id, f.trial, f.attempt, f.phase);
        }
    }
    let done = planned.as_deref() == Some(results.len().to_string().as_str());
    if !done {
        println!("{}", attached(dir)?);
    }
    Ok(())
}

/// Whether a `cleanroom run` holds the run now (its lock).
fn attached(dir: &Path) -> Result<String, CliError> {
    match RunDir::open(dir) {
        Ok(_released_at_once) => Ok(format!(
            "no cleanroom run is attached: finish it with `cleanroom run --resume {}`",
            dir.display()
        )),
        Err(StoreError::InUse { pid, .. }) => Ok(match pid {
            Some(pid) => format!("cleanroom run (pid {pid}) is attached"),
            None => "a cleanroom run is attached".to_string(),
        }),
        Err(e) => Err(e.into()),
    }
}
