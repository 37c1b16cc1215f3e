//! `tasks check`: is a task fit for a benchmark? Its artifact fetches, no
//! expected value leaks, the oracle passes, `nop` fails, and a second
//! verification of the oracle's environment gives the same verdict.

mod lint;

pub use lint::{Finding, Severity};

use std::collections::HashMap;
use std::convert::Infallible;

use cleanroom_agent::AgentSpec;
use cleanroom_store::{Outcome, TrialRecord};
use cleanroom_task::Task;
use cleanroom_verify::Verdict;

use crate::event::{EventKind, Todo, TrialKey};
use crate::plan::Plan;
use crate::{AgentEntry, RunInput};

/// The agents of a check, by SPEC (which is also their id).
const ORACLE: &str = "oracle";
const NOP: &str = "nop";

/// What `tasks check` found for one task.
#[derive(Debug)]
pub struct TaskCheck {
    pub task: String,
    pub findings: Vec<Finding>,
    pub oracle: Option<TrialRecord>,
    /// Whether the second verification agreed with the first.
    pub repeatable: Option<bool>,
    pub nop: Option<TrialRecord>,
}

impl TaskCheck {
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Error).count()
    }

    fn error(&mut self, message: String) {
        self.findings.push(Finding { severity: Severity::Error, message });
    }
}

/// Checks every task of `input`; with `run` false only what needs no
/// environment (schema, artifact, leaks). A task that passes those gets
/// two trials, the oracle's (verified twice) and nop's, run by the runner
/// `input.jobs` at a time, one attempt each. `done` hears of each task as
/// its check is complete.
pub fn check_tasks(input: &RunInput, run: bool, done: &mut dyn FnMut(&TaskCheck)) -> Vec<TaskCheck> {
    let mut checks: Vec<TaskCheck> = input.tasks.iter().map(|task| lint_task(input, task)).collect();
    let mut todo = Vec::new();
    for check in &checks {
        if run && check.errors() == 0 {
            let key = |agent: &str| TrialKey { task: check.task.clone(), agent_id: agent.into(), trial: 1 };
            todo.push(Todo { verify_twice: true, ..Todo::new(key(ORACLE)) });
            todo.push(Todo::new(key(NOP)));
        } else {
            done(check);
        }
    }
    let agent = |spec, id: &str| AgentEntry { spec, spec_text: id.into(), id: id.into() };
    let agents = [agent(AgentSpec::Oracle, ORACLE), agent(AgentSpec::Nop, NOP)];
    let input = RunInput { agents: &agents, retries: 0, cancel: input.cancel.clone(), ..*input };
    let plan = Plan { planned: todo.len(), todo };
    // Each task is judged once both of its trials are in, the oracle first,
    // so its findings come in the same order whichever trial ends first.
    type Oracle = (TrialRecord, Option<Result<Verdict, String>>);
    let mut waiting: HashMap<String, (Option<Oracle>, Option<TrialRecord>)> = HashMap::new();
    let judged = crate::run(&input, plan, &mut |event| -> Result<(), Infallible> {
        let EventKind::TrialFinished { record, second_verdict, .. } = &event.kind else { return Ok(()) };
        let pair = waiting.entry(record.task.clone()).or_default();
        if record.agent_id == ORACLE {
            pair.0 = Some((record.clone(), second_verdict.clone()));
        } else {
            pair.1 = Some(record.clone());
        }
        let Some(check) = checks.iter_mut().find(|c| c.task == record.task) else { return Ok(()) };
        if let (Some((oracle, repeat)), Some(nop)) = pair {
            judge_oracle(check, oracle.clone(), repeat.clone());
            judge_nop(check, nop.clone());
            done(check);
        }
        Ok(())
    });
    let Ok(()) = judged;
    checks.sort_by(|a, b| a.task.cmp(&b.task));
    checks
}

/// What needs no environment: the artifact was staged, and nothing of it
/// or of the instruction leaks the answer.
fn lint_task(input: &RunInput, task: &Task) -> TaskCheck {
    let mut check =
        TaskCheck { task: task.id.clone(), findings: Vec::new(), oracle: None, repeatable: None, nop: None };
    match input.artifacts.get(&task.id) {
        Some(Ok(staged)) => check.findings.extend(lint::lint(task, &staged.dir)),
        Some(Err(why)) => check.error(format!("artifact: {why}")),
        None => check.error("artifact: not staged".into()),
    }
    check
}

/// The oracle must pass, and a second verification agree with the first.
fn judge_oracle(check: &mut TaskCheck, record: TrialRecord, repeat: Option<Result<Verdict, String>>) {
    if record.outcome != Outcome::Passed {
        check.error(format!("the oracle does not pass: {}", describe(&record)));
    }
    match repeat {
        Some(Ok(second)) => {
            let same = record.verdict.as_ref().is_some_and(|first| same_verdict(first, &second));
            check.repeatable = Some(same);
            if !same {
                check.error("a second verification of the oracle's environment gave another verdict".into());
            }
        }
        Some(Err(why)) => check.error(format!("the second verification failed: {why}")),
        None => {}
    }
    check.oracle = Some(record);
}

/// nop must fail: a verifier that passes it accepts anything.
fn judge_nop(check: &mut TaskCheck, record: TrialRecord) {
    match &record.outcome {
        Outcome::Passed => {
            check.error("nop passes: the verifier accepts an environment nobody deployed".into())
        }
        Outcome::Failed => {}
        _ => check.error(format!("nop: {}", describe(&record))),
    }
    check.nop = Some(record);
}

/// Same outcome for every step and check, and the same stage.
fn same_verdict(a: &Verdict, b: &Verdict) -> bool {
    a.passed == b.passed
        && a.stage == b.stage
        && a.steps.iter().map(|s| &s.status).eq(b.steps.iter().map(|s| &s.status))
        && a.checks.iter().map(|c| c.passed).eq(b.checks.iter().map(|c| c.passed))
}

/// The outcome and the first thing that went wrong, in a line.
fn describe(r: &TrialRecord) -> String {
    let mut text = r.outcome.as_str().to_string();
    if let Some(error) = &r.error {
        text.push_str(&format!(": {}", error.lines().next().unwrap_or("")));
    }
    if let Some(v) = &r.verdict {
        if let Some(step) = v.steps.iter().find(|s| !matches!(s.status, cleanroom_verify::StepStatus::Passed))
        {
            text.push_str(&format!("; step `{}` {:?}", step.name, step.status).to_lowercase());
        }
        if let Some(c) = v.checks.iter().find(|c| !c.passed) {
            text.push_str(&format!("; check `{}`: expected {}, observed {}", c.name, c.expected, c.observed));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage_artifacts;
    use crate::testing::{input, task, temp_dir};
    use crate::AgentSetup;

    #[test]
    fn a_check_runs_the_oracle_and_nop_through_the_runner() {
        let root = temp_dir("check");
        let tasks = [task(&root, "staged"), task(&root, "unstaged")];
        let staged = stage_artifacts(&[&tasks[0]], &root.join("cache"), &root.join("staging"), &mut |_| {});
        assert!(staged["staged"].is_ok(), "{:?}", staged["staged"]);
        let setup = AgentSetup::default();
        let input = input(&tasks, &[], &setup, &staged);
        let mut heard = Vec::new();
        let checks = check_tasks(&input, true, &mut |c| {
            heard.push((c.task.clone(), c.oracle.is_some(), c.nop.is_some()))
        });
        // The task without an artifact is done before any trial; the other
        // once both of its trials are.
        assert_eq!(heard, [("unstaged".to_string(), false, false), ("staged".to_string(), true, true)]);
        let messages = |i: usize| checks[i].findings.iter().map(|f| f.message.clone()).collect::<Vec<_>>();
        assert_eq!(checks[0].task, "staged");
        let no_env = "infra_error: fake failed: create failed as configured";
        assert_eq!(messages(0), [format!("the oracle does not pass: {no_env}"), format!("nop: {no_env}")]);
        assert_eq!(checks[0].oracle.as_ref().unwrap().attempt, 1, "one attempt, no retry");
        assert_eq!(messages(1), ["artifact: not staged"]);

        let checks = check_tasks(&input, false, &mut |_| {});
        assert!(checks.iter().all(|c| c.oracle.is_none() && c.nop.is_none()), "--no-run runs nothing");
    }
}
