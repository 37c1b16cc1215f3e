//! `cleanroom tasks calibrate DIR --runs N [--setup PATH]... [--tighten]
//! [--write]`: the oracle and each other correct deployment (a setup
//! script, run as `script:PATH`) N times, each numeric check's values
//! pooled over them, and a tolerance proposed from their spread (see
//! cleanroom_runner::calibrate); `--write` writes what is shown into
//! verify/checks.toml, keeping its comments and layout (calibrate_edit).

use std::convert::Infallible;
use std::path::PathBuf;

use cleanroom_agent::{AgentSpec, Config, GateMode, SpecError};
use cleanroom_env::CancelToken;
use cleanroom_runner::calibrate::{prediction_interval, propose};
use cleanroom_runner::{AgentEntry, EventKind, NothingKept, Plan};
use cleanroom_store::{agent_ids, Outcome, TrialRecord};
use cleanroom_task::{load_task, Comparison, Task};

use crate::args::TasksCalibrateArgs;
use crate::calibrate_edit::{self, Edit};
use crate::error::{input, internal, CliError};
use crate::interrupt;
use crate::prepare::{self, ToolSetup};

pub fn calibrate(args: TasksCalibrateArgs, config_file: Option<&std::path::Path>) -> Result<(), CliError> {
    if args.runs < 2 {
        return Err(input("--runs must be at least 2: a spread needs two values"));
    }
    let deployments = deployments(&args.setups)?;
    let tasks = prepare::task_dirs(std::slice::from_ref(&args.dir))?
        .iter()
        .map(|d| load_task(d))
        .collect::<Result<Vec<Task>, _>>()?;
    let setup = ToolSetup::prepare(&args.backend, config_file, &tasks, "calibrate")?;
    let cancel = CancelToken::new().map_err(internal)?;
    interrupt::watch(cancel.clone());
    let run_input = setup.input(&tasks, &deployments, args.runs, args.jobs, &cancel);
    let mut records = Vec::new();
    let plan = Plan::resume(&run_input, &NothingKept);
    let ran = cleanroom_runner::run(&run_input, plan, &mut |event| -> Result<(), Infallible> {
        if let EventKind::TrialFinished { record, .. } = &event.kind {
            eprintln!("{}", cleanroom_report::trial_line(record));
            records.push(record.clone());
        }
        Ok(())
    });
    let Ok(()) = ran;
    if cancel.is_cancelled() {
        return Err(CliError::Interrupted("(calibrate keeps nothing: run it again)".into()));
    }
    if deployments.len() > 1 {
        let names: Vec<&str> = deployments.iter().map(|d| d.id.as_str()).collect();
        println!("N counts the values of {}", names.join(" + "));
    }
    println!("{:<24} {:<28} {:>7} {:>14} {:>12}  {:<32} PROPOSED", "TASK", "CHECK", "N", "MEAN", "SD", "NOW");
    for task in &tasks {
        let mine: Vec<&TrialRecord> = records.iter().filter(|r| r.task == task.id).collect();
        for d in &deployments {
            let runs: Vec<&&TrialRecord> = mine.iter().filter(|r| r.agent_id == d.id).collect();
            let failed = runs.iter().filter(|r| r.outcome != Outcome::Passed).count();
            if failed > 0 {
                eprintln!(
                    "cleanroom: {}: {failed} of {} runs of {} did not pass",
                    task.id,
                    runs.len(),
                    d.spec_text
                );
            }
        }
        calibrate_task(task, &mine, &deployments, &args)?;
    }
    Ok(())
}

/// The oracle, then each `--setup` script as an agent.
fn deployments(setups: &[PathBuf]) -> Result<Vec<AgentEntry>, CliError> {
    let specs: Vec<String> = std::iter::once("oracle".to_string())
        .chain(setups.iter().map(|p| format!("script:{}", p.display())))
        .collect();
    let ids = agent_ids(&specs);
    specs
        .into_iter()
        .zip(ids)
        .map(|(spec_text, id)| {
            let spec = AgentSpec::parse(&spec_text, &Config::default()).map_err(|e| match e {
                SpecError::Script { path, why, .. } => input(format!("--setup {path}: {why}")),
                other => input(other.to_string()),
            })?;
            Ok(AgentEntry { spec, spec_text, id, gate: GateMode::Off })
        })
        .collect()
}

/// One task's table rows, and with `--write` its checks.toml rewritten
/// with exactly the edits shown.
fn calibrate_task(
    task: &Task,
    records: &[&TrialRecord],
    deployments: &[AgentEntry],
    args: &TasksCalibrateArgs,
) -> Result<(), CliError> {
    let path = task.checks_path();
    let text = std::fs::read_to_string(&path).map_err(|e| internal(format!("{}: {e}", path.display())))?;
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| input(format!("{}: {e}", path.display())))?;
    let mut tables = calibrate_edit::check_tables(&mut doc);
    let mut changes: Vec<(usize, Vec<Edit>)> = Vec::new();
    for check in &task.verify.checks {
        if !matches!(check.compare, Comparison::Number { .. } | Comparison::Range { .. }) {
            continue;
        }
        let Some(index) =
            tables.iter().position(|t| t.get("name").and_then(|n| n.as_str()) == Some(check.name.as_str()))
        else {
            continue;
        };
        let per_deployment: Vec<Vec<f64>> =
            deployments.iter().map(|d| observed(records, &d.id, &check.name)).collect();
        let counts: Vec<String> = per_deployment.iter().map(|v| v.len().to_string()).collect();
        let values = per_deployment.concat();
        let table = &*tables[index];
        let proposed = match propose(&check.compare, &values, args.tighten) {
            Some(proposal) => {
                let edits = calibrate_edit::edits(table, &proposal);
                let shown = calibrate_edit::show(&edits);
                changes.push((index, edits));
                shown
            }
            None => "- (needs two values)".into(),
        };
        let (mean, sd) = match prediction_interval(&values) {
            Some((mean, _)) => (format!("{mean:.6e}"), format!("{:.3e}", sd(&values))),
            None => ("-".into(), "-".into()),
        };
        println!(
            "{:<24} {:<28} {:>7} {:>14} {:>12}  {:<32} {proposed}",
            task.id,
            check.name,
            counts.join("+"),
            mean,
            sd,
            calibrate_edit::now(table),
        );
    }
    if !args.write || changes.iter().all(|(_, edits)| edits.is_empty()) {
        return Ok(());
    }
    for (index, edits) in &changes {
        calibrate_edit::apply(&mut *tables[*index], edits)
            .map_err(|e| internal(format!("{}: {e}", path.display())))?;
    }
    std::fs::write(&path, doc.to_string()).map_err(|e| internal(format!("{}: {e}", path.display())))?;
    // What was written must still be a valid task.
    load_task(&task.dir).map_err(|e| internal(format!("calibrated checks.toml does not validate: {e}")))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// The numbers a check observed in one deployment's runs (runs where it
/// had none are left out).
fn observed(records: &[&TrialRecord], agent_id: &str, check: &str) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.agent_id == agent_id)
        .filter_map(|r| r.verdict.as_ref()?.checks.iter().find(|c| c.name == check))
        .filter_map(|c| c.observed.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .collect()
}

fn sd(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}
