//! `cleanroom tasks calibrate DIR --runs N [--write]`: the oracle N times,
//! each numeric check's observed values, and a tolerance proposed from
//! their spread (see cleanroom_runner::calibrate); `--write` puts the
//! proposals into verify/checks.toml, keeping its comments and layout.

use std::convert::Infallible;

use cleanroom_agent::AgentSpec;
use cleanroom_env::CancelToken;
use cleanroom_runner::calibrate::{prediction_interval, propose, Proposal};
use cleanroom_runner::{AgentEntry, EventKind, NothingKept, Plan};
use cleanroom_store::{Outcome, TrialRecord};
use cleanroom_task::{load_task, Comparison, Task};

use crate::args::TasksCalibrateArgs;
use crate::error::{input, internal, CliError};
use crate::interrupt;
use crate::prepare::{self, ToolSetup};

pub fn calibrate(args: TasksCalibrateArgs, config_file: Option<&std::path::Path>) -> Result<(), CliError> {
    if args.runs < 2 {
        return Err(input("--runs must be at least 2: a spread needs two values"));
    }
    let tasks = prepare::task_dirs(std::slice::from_ref(&args.dir))?
        .iter()
        .map(|d| load_task(d))
        .collect::<Result<Vec<Task>, _>>()?;
    let setup = ToolSetup::prepare(&args.backend, config_file, &tasks, "calibrate")?;
    let cancel = CancelToken::new().map_err(internal)?;
    interrupt::watch(cancel.clone());
    let oracle = [AgentEntry { spec: AgentSpec::Oracle, spec_text: "oracle".into(), id: "oracle".into() }];
    let run_input = setup.input(&tasks, &oracle, args.runs, args.jobs, &cancel);
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
    println!("{:<24} {:<28} {:>3} {:>14} {:>12}  {:<26} PROPOSED", "TASK", "CHECK", "N", "MEAN", "SD", "NOW");
    for task in &tasks {
        let mine: Vec<&TrialRecord> = records.iter().filter(|r| r.task == task.id).collect();
        let failed = mine.iter().filter(|r| r.outcome != Outcome::Passed).count();
        if failed > 0 {
            eprintln!("cleanroom: {}: {failed} of {} oracle runs did not pass", task.id, mine.len());
        }
        let mut proposals = Vec::new();
        for check in &task.verify.checks {
            let values = observed(&mine, &check.name);
            let Some(proposal) = propose(&check.compare, &values) else { continue };
            let (mean, _) = prediction_interval(&values).unwrap_or((f64::NAN, 0.0));
            let sd = sd(&values);
            println!(
                "{:<24} {:<28} {:>3} {:>14.6e} {:>12.3e}  {:<26} {}",
                task.id,
                check.name,
                values.len(),
                mean,
                sd,
                now(&check.compare),
                show(&proposal)
            );
            proposals.push((check.name.clone(), proposal));
        }
        if args.write && !proposals.is_empty() {
            write(task, &proposals)?;
            println!("wrote {}", task.verify_dir().join("checks.toml").display());
        }
    }
    Ok(())
}

/// The numbers a check observed over the runs (runs where it had none are
/// left out).
fn observed(records: &[&TrialRecord], check: &str) -> Vec<f64> {
    records
        .iter()
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

fn now(c: &Comparison) -> String {
    match c {
        Comparison::Number { expect, abs_tol, rel_tol } => {
            let mut s = format!("expect {expect}");
            if let Some(a) = abs_tol {
                s.push_str(&format!(" abs {a}"));
            }
            if let Some(r) = rel_tol {
                s.push_str(&format!(" rel {r}"));
            }
            s
        }
        Comparison::Range { lo, hi } => format!("range [{lo}, {hi}]"),
        _ => String::new(),
    }
}

fn show(p: &Proposal) -> String {
    match p {
        Proposal::AbsTol(t) => format!("abs_tol = {t:.3e}"),
        Proposal::RelTol(t) => format!("rel_tol = {t:.1e}"),
        Proposal::Range(lo, hi) => format!("range = [{lo:.6e}, {hi:.6e}]"),
    }
}

/// Rounds up to 3 significant digits, so a written tolerance is never
/// narrower than proposed.
fn round_up(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(2 - x.abs().log10().floor() as i32);
    (x * scale).ceil() / scale
}

fn write(task: &Task, proposals: &[(String, Proposal)]) -> Result<(), CliError> {
    let path = task.verify_dir().join("checks.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| internal(format!("{}: {e}", path.display())))?;
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| input(format!("{}: {e}", path.display())))?;
    let Some(checks) = doc.get_mut("check").and_then(|c| c.as_array_of_tables_mut()) else {
        return Ok(());
    };
    for table in checks.iter_mut() {
        let name = table.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_string();
        let Some((_, proposal)) = proposals.iter().find(|(n, _)| *n == name) else { continue };
        match proposal {
            Proposal::AbsTol(t) => {
                table.remove("rel_tol");
                table["abs_tol"] = toml_edit::value(round_up(*t));
            }
            Proposal::RelTol(t) => {
                table.remove("abs_tol");
                table["rel_tol"] = toml_edit::value(round_up(*t));
            }
            Proposal::Range(lo, hi) => {
                let mut range = toml_edit::Array::new();
                range.push(-round_up(-lo));
                range.push(round_up(*hi));
                table["range"] = toml_edit::value(range);
            }
        }
    }
    std::fs::write(&path, doc.to_string()).map_err(|e| internal(format!("{}: {e}", path.display())))?;
    // What was written must still be a valid task.
    load_task(&task.dir).map_err(|e| internal(format!("calibrated checks.toml does not validate: {e}")))?;
    Ok(())
}
