//! `tasks check`: is a task fit for a benchmark? Its artifact fetches, no
//! expected value leaks, the oracle passes, `nop` fails, and a second
//! verification of the oracle's environment gives the same verdict.

mod lint;

pub use lint::{Finding, Severity};

use std::collections::VecDeque;
use std::sync::Mutex;

use cleanroom_agent::AgentSpec;
use cleanroom_store::{Outcome, TrialRecord};
use cleanroom_task::Task;
use cleanroom_verify::Verdict;

use crate::event::TrialKey;
use crate::trial::{self, AttemptEnd};
use crate::{AgentEntry, RunInput};

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
/// environment (schema, artifact, leaks). `done` hears of each task as it
/// finishes. Tasks are checked `input.jobs` at a time.
pub fn check_tasks(input: &RunInput, run: bool, done: &(dyn Fn(&TaskCheck) + Sync)) -> Vec<TaskCheck> {
    let queue = Mutex::new(input.tasks.iter().collect::<VecDeque<_>>());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..input.jobs.max(1) {
            scope.spawn(|| loop {
                if input.cancel.is_cancelled() {
                    return;
                }
                let Some(task) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() else { return };
                let check = check_task(input, task, run);
                done(&check);
                results.lock().unwrap_or_else(|p| p.into_inner()).push(check);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by(|a, b| a.task.cmp(&b.task));
    results
}

fn check_task(input: &RunInput, task: &Task, run: bool) -> TaskCheck {
    let mut check =
        TaskCheck { task: task.id.clone(), findings: Vec::new(), oracle: None, repeatable: None, nop: None };
    match input.artifacts.get(&task.id) {
        Some(Ok(staged)) => check.findings.extend(lint::lint(task, &staged.dir)),
        Some(Err(why)) => check.error(format!("artifact: {why}")),
        None => check.error("artifact: not staged".into()),
    }
    if !run || check.errors() > 0 {
        return check;
    }
    let oracle = AgentEntry { spec: AgentSpec::Oracle, spec_text: "oracle".into(), id: "oracle".into() };
    if let Some((record, repeat)) = trial_of(input, task, &oracle, true) {
        match &record.outcome {
            Outcome::Passed => {}
            _ => check.error(format!("the oracle does not pass: {}", describe(&record))),
        }
        match repeat {
            Some(Ok(second)) => {
                let same = record.verdict.as_ref().is_some_and(|first| same_verdict(first, &second));
                check.repeatable = Some(same);
                if !same {
                    check.error(
                        "a second verification of the oracle's environment gave another verdict".into(),
                    );
                }
            }
            Some(Err(why)) => check.error(format!("the second verification failed: {why}")),
            None => {}
        }
        check.oracle = Some(record);
    }
    let nop = AgentEntry { spec: AgentSpec::Nop, spec_text: "nop".into(), id: "nop".into() };
    if let Some((record, _)) = trial_of(input, task, &nop, false) {
        match &record.outcome {
            Outcome::Passed => {
                check.error("nop passes: the verifier accepts an environment nobody deployed".into())
            }
            Outcome::Failed => {}
            _ => check.error(format!("nop: {}", describe(&record))),
        }
        check.nop = Some(record);
    }
    check
}

fn trial_of(
    input: &RunInput,
    task: &Task,
    agent: &AgentEntry,
    verify_twice: bool,
) -> Option<(TrialRecord, Option<Result<Verdict, String>>)> {
    let key = TrialKey { task: task.id.clone(), agent_id: agent.id.clone(), trial: 1 };
    match trial::attempt(input, task, agent, &key, 1, verify_twice) {
        AttemptEnd::Done(done) => Some((done.record, done.repeat)),
        AttemptEnd::Interrupted => None,
    }
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
