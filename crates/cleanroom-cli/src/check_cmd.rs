//! `cleanroom tasks check`: a table, one row per task, then every finding,
//! then each trial that went otherwise than the check wants, with what
//! failed and the log to read; exit 2 when any task has an error. The
//! trials' files are kept in a run directory of the check's own,
//! `<out>/check-<id>/trials/<task>/<agent-id>/1/`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use cleanroom_env::CancelToken;
use cleanroom_report::{escape_terminal, first_failure};
use cleanroom_runner::{check_tasks, CheckScope, Severity, TaskCheck};
use cleanroom_store::{new_run_id, Outcome, RunDir, StoreError, TrialRecord};
use cleanroom_task::{dir_name, load_task};

use crate::args::TasksCheckArgs;
use crate::error::{input, internal, CliError};
use crate::interrupt;
use crate::prepare::{self, ToolSetup};

pub fn check(args: TasksCheckArgs, config_file: Option<&std::path::Path>) -> Result<(), CliError> {
    let started = Instant::now();
    let mut rows: Vec<TaskCheck> = Vec::new();
    let mut tasks = Vec::new();
    for dir in prepare::task_dirs(&args.dirs)? {
        match load_task(&dir) {
            Ok(task) => tasks.push(task),
            Err(errors) => {
                let name = dir_name(&dir);
                let findings = errors
                    .0
                    .iter()
                    .map(|e| cleanroom_runner::Finding {
                        severity: Severity::Error,
                        message: format!("schema: {e}"),
                    })
                    .collect();
                rows.push(TaskCheck {
                    task: name,
                    findings,
                    oracle: None,
                    repeatable: None,
                    nop: None,
                    substitutes: Vec::new(),
                    faulted: Vec::new(),
                });
            }
        }
    }
    let setup = ToolSetup::prepare(&args.backend, config_file, &tasks, "check")?;
    let cancel = CancelToken::new().map_err(internal)?;
    interrupt::watch(cancel.clone());
    let run_input = setup.input(&tasks, &[], 1, args.jobs, &cancel);
    let scope = CheckScope { run: !args.no_run, substitutes: !args.no_substitutes };
    // Made (with --out) when the first trial ends, so a check that runs
    // none leaves nothing.
    let run_id = format!("check-{}", new_run_id());
    let mut run_dir: Option<RunDir> = None;
    let mut unkept: Option<StoreError> = None;
    let checked = check_tasks(
        &run_input,
        scope,
        &mut |c| {
            eprintln!("{} {}", if c.errors() == 0 { "ok   " } else { "ERROR" }, escape_terminal(&c.task))
        },
        &mut |record, files| {
            if unkept.is_some() {
                return;
            }
            if run_dir.is_none() {
                match RunDir::create(&args.out, &run_id) {
                    Ok(dir) => run_dir = Some(dir),
                    Err(e) => unkept = Some(e),
                }
            }
            if let Some(dir) = &run_dir {
                unkept = dir.write_result(record, files).err();
            }
        },
    );
    if cancel.is_cancelled() {
        return Err(CliError::Interrupted("(tasks check is not resumable: run it again)".into()));
    }
    rows.extend(checked);
    rows.sort_by(|a, b| a.task.cmp(&b.task));
    print!("{}", table(&rows, !args.no_run));
    // The verdicts stand even when their files could not be kept.
    if let Some(e) = unkept {
        return Err(e.into());
    }
    if let Some(dir) = &run_dir {
        print!("{}", faulted_trials(&rows, dir.path()));
        println!("the trials' files (agent.log, verify.log, ...) are in {}", dir.path().display());
    }
    let failing = rows.iter().filter(|r| r.errors() > 0).count();
    println!(
        "checked {} task(s) in {:.0}s: {} ok, {} with errors",
        rows.len(),
        started.elapsed().as_secs_f64(),
        rows.len() - failing,
        failing
    );
    if failing > 0 {
        return Err(input(format!("{failing} task(s) failed the check")));
    }
    Ok(())
}

/// Each trial that went otherwise than the check wants: what failed in
/// it (the step, with its exit code, or the check), and the log to read.
fn faulted_trials(rows: &[TaskCheck], run_dir: &Path) -> String {
    let mut out = String::new();
    for row in rows {
        for r in row.faulted_trials() {
            let what = first_failure(r)
                .or_else(|| r.error.as_deref().and_then(|e| e.lines().next()).map(str::to_string))
                .unwrap_or_else(|| r.outcome.as_str().to_string());
            out.push_str(&format!(
                "  {} {}: {}: {}\n    log: {}\n",
                escape_terminal(&r.task),
                escape_terminal(&r.agent_id),
                r.outcome.as_str(),
                escape_terminal(&what),
                log_of(run_dir, r).display()
            ));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\ntrials that failed the check:\n{out}")
}

/// The file of a trial's directory that shows what went wrong: verify.log
/// when the verifier ran, else agent.log, else the record itself.
fn log_of(run_dir: &Path, r: &TrialRecord) -> PathBuf {
    let dir = run_dir.join("trials").join(&r.task).join(&r.agent_id).join(r.trial.to_string());
    let names = if r.verdict.is_some() { &["verify.log", "agent.log"][..] } else { &["agent.log"][..] };
    names.iter().map(|n| dir.join(n)).find(|p| p.is_file()).unwrap_or_else(|| dir.join("result.json"))
}

fn trial_cell(record: &Option<TrialRecord>) -> String {
    match record {
        None => "-".into(),
        Some(r) => {
            let secs = r.timings.environment + r.timings.agent + r.timings.verify;
            match r.outcome {
                Outcome::Failed => {
                    format!("failed ({}) {secs:.0}s", r.class.map(|c| c.as_str()).unwrap_or(""))
                }
                other => format!("{} {secs:.0}s", other.as_str()),
            }
        }
    }
}

/// How many of the battery failed, as they must: `3/3 failed`.
fn battery_cell(check: &TaskCheck) -> String {
    if check.substitutes.is_empty() {
        return "-".into();
    }
    let failed = check.substitutes.iter().filter(|(_, r)| r.outcome == Outcome::Failed).count();
    format!("{failed}/{} failed", check.substitutes.len())
}

fn table(rows: &[TaskCheck], ran: bool) -> String {
    let mut lines = vec![if ran {
        vec![
            "TASK".to_string(),
            "ORACLE".into(),
            "REPEAT".into(),
            "NOP".into(),
            "SUBSTITUTES".into(),
            "ERRORS".into(),
            "WARNINGS".into(),
        ]
    } else {
        vec!["TASK".to_string(), "ERRORS".into(), "WARNINGS".into()]
    }];
    for r in rows {
        let warnings = r.findings.len() - r.errors();
        let mut line = vec![escape_terminal(&r.task).into_owned()];
        if ran {
            let repeat = match r.repeatable {
                Some(true) => "same",
                Some(false) => "DIFFERS",
                None => "-",
            };
            line.extend([trial_cell(&r.oracle), repeat.to_string(), trial_cell(&r.nop), battery_cell(r)]);
        }
        line.extend([r.errors().to_string(), warnings.to_string()]);
        lines.push(line);
    }
    let widths: Vec<usize> =
        (0..lines[0].len()).map(|i| lines.iter().map(|l| l[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for line in &lines {
        let cells: Vec<String> = line.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let findings: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            r.findings.iter().map(move |f| {
                let level = if f.severity == Severity::Error { "error" } else { "warning" };
                format!("  {}: {level}: {}", escape_terminal(&r.task), escape_terminal(&f.message))
            })
        })
        .collect();
    if !findings.is_empty() {
        out.push_str("\nfindings:\n");
        out.push_str(&findings.join("\n"));
        out.push('\n');
    }
    out
}
