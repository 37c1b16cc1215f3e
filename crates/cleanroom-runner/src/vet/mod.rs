//! `tasks check`: is a task fit for a benchmark? Its artifact fetches, no
//! expected value leaks, the oracle passes (fails, on a negative control),
//! `nop` fails, a second verification of the oracle's environment gives the
//! same verdict, and every agent of the substitution battery (shortcuts that
//! skip deploying the artifact) fails.

mod lint;
mod rounded;

pub use lint::{Finding, Severity};

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;

use cleanroom_agent::{AgentSpec, GateMode};
use cleanroom_store::{agent_ids, Outcome, TrialRecord};
use cleanroom_task::{Substitute, Task};
use cleanroom_verify::{StepStatus, Verdict};

use crate::event::{EventKind, Todo, TrialFile, TrialKey};
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
    /// The substitution battery's trials, by the substitute's label.
    pub substitutes: Vec<(String, TrialRecord)>,
    /// The agent ids of the trials that went otherwise than the check
    /// wants (an oracle that fails, a substitute that passes), so that the
    /// author is shown their logs.
    pub faulted: Vec<String>,
}

impl TaskCheck {
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Error).count()
    }

    fn error(&mut self, message: String) {
        self.findings.push(Finding { severity: Severity::Error, message });
    }

    /// An error about the trial of `agent_id`.
    fn fault(&mut self, agent_id: &str, message: String) {
        self.error(message);
        if !self.faulted.iter().any(|id| id == agent_id) {
            self.faulted.push(agent_id.to_string());
        }
    }

    /// The records of the faulted trials, in the order they were judged.
    pub fn faulted_trials(&self) -> Vec<&TrialRecord> {
        let all = self.oracle.iter().chain(&self.nop).chain(self.substitutes.iter().map(|(_, r)| r));
        all.filter(|r| self.faulted.contains(&r.agent_id)).collect()
    }
}

/// What a check runs.
#[derive(Debug, Clone, Copy)]
pub struct CheckScope {
    /// Run trials at all; without, only what needs no environment (schema,
    /// artifact, leaks).
    pub run: bool,
    /// Run the substitution battery beside the oracle and nop.
    pub substitutes: bool,
}

/// Checks every task of `input`. A task that passes the checks without an
/// environment gets its trials: the oracle's (verified twice), nop's and,
/// with `scope.substitutes`, one per agent of its battery, run by the
/// runner `input.jobs` at a time, one attempt each. `done` hears of each
/// task as its check is complete; `finished` of each trial as it ends, with
/// its files, for the caller to keep.
pub fn check_tasks(
    input: &RunInput,
    scope: CheckScope,
    done: &mut dyn FnMut(&TaskCheck),
    finished: &mut dyn FnMut(&TrialRecord, &[TrialFile]),
) -> Vec<TaskCheck> {
    let mut checks: Vec<TaskCheck> = input.tasks.iter().map(|task| lint_task(input, task)).collect();
    let batteries: Vec<Vec<Substitute>> = checks
        .iter_mut()
        .zip(input.tasks)
        .map(|(check, task)| if scope.substitutes { battery(input, task, check) } else { Vec::new() })
        .collect();
    // One agent per distinct substitute across the tasks (an agent script's
    // path is relative to each task, so one label is one agent).
    let distinct: BTreeMap<String, Substitute> =
        batteries.iter().flatten().map(|s| (s.label(), s.clone())).collect();
    let specs: Vec<String> = distinct.keys().map(|label| format!("substitute:{label}")).collect();
    // Label to agent id, and back.
    let ids: BTreeMap<String, String> = distinct.keys().cloned().zip(agent_ids(&specs)).collect();
    let label_of: HashMap<&String, &String> = ids.iter().map(|(label, id)| (id, label)).collect();
    let mut agents = vec![
        AgentEntry {
            spec: AgentSpec::Oracle,
            spec_text: ORACLE.into(),
            id: ORACLE.into(),
            gate: GateMode::Off,
        },
        AgentEntry { spec: AgentSpec::Nop, spec_text: NOP.into(), id: NOP.into(), gate: GateMode::Off },
    ];
    agents.extend(distinct.into_iter().zip(specs).map(|((label, s), spec_text)| AgentEntry {
        id: ids[&label].clone(),
        spec: AgentSpec::Substitute(s),
        spec_text,
        gate: GateMode::Off,
    }));

    let mut todo = Vec::new();
    // Per task: the agent ids whose trials it waits for.
    let mut expected: HashMap<String, Vec<String>> = HashMap::new();
    for ((check, battery), task) in checks.iter_mut().zip(&batteries).zip(input.tasks) {
        let unmet = input.backend.unmet(&crate::trial::needs(task));
        if scope.run && !unmet.is_empty() {
            // Not this backend's to run: said, not held against the task.
            for u in unmet {
                check.findings.push(Finding {
                    severity: Severity::Warning,
                    message: format!(
                        "not run on the {} backend: {}: {}",
                        input.backend.name(),
                        u.need,
                        u.why
                    ),
                });
            }
            done(check);
        } else if scope.run && check.errors() == 0 {
            let key = |agent: &str| TrialKey { task: check.task.clone(), agent_id: agent.into(), trial: 1 };
            let mut mine = vec![ORACLE.to_string(), NOP.to_string()];
            mine.extend(battery.iter().map(|s| ids[&s.label()].clone()));
            todo.push(Todo { verify_twice: true, ..Todo::new(key(ORACLE)) });
            todo.extend(mine[1..].iter().map(|id| Todo::new(key(id))));
            expected.insert(check.task.clone(), mine);
        } else {
            done(check);
        }
    }
    let input = RunInput { agents: &agents, retries: 0, cancel: input.cancel.clone(), ..*input };
    let plan = Plan { planned: todo.len(), todo };
    // Each task is judged once all of its trials are in, in a fixed order
    // (oracle, nop, then the battery), so its findings come in the same
    // order whichever trial ends first.
    type Finished = (TrialRecord, Option<Result<Verdict, String>>);
    let mut waiting: HashMap<String, HashMap<String, Finished>> = HashMap::new();
    let judged = crate::run(&input, plan, &mut |event| -> Result<(), Infallible> {
        let EventKind::TrialFinished { record, second_verdict, files } = &event.kind else { return Ok(()) };
        finished(record, files);
        let Some(mine) = expected.get(&record.task) else { return Ok(()) };
        let got = waiting.entry(record.task.clone()).or_default();
        got.insert(record.agent_id.clone(), (record.clone(), second_verdict.clone()));
        if got.len() < mine.len() {
            return Ok(());
        }
        let Some(check) = checks.iter_mut().find(|c| c.task == record.task) else { return Ok(()) };
        let Some(mut got) = waiting.remove(&record.task) else { return Ok(()) };
        let mut take = |id: &str| got.remove(id).expect("every expected trial is in");
        let negative_control = record.negative_control;
        let (oracle, repeat) = take(ORACLE);
        judge_oracle(check, oracle, repeat, negative_control);
        judge_nop(check, take(NOP).0);
        for id in &mine[2..] {
            judge_substitute(check, label_of[id], take(id).0);
        }
        done(check);
        Ok(())
    });
    let Ok(()) = judged;
    checks.sort_by(|a, b| a.task.cmp(&b.task));
    checks
}

/// The task's battery. The replay needs a file of the artifact to swap: a
/// command that names none (`npm run table2`, a program built later) gets
/// no replay, and a warning that says so.
fn battery(input: &RunInput, task: &Task, check: &mut TaskCheck) -> Vec<Substitute> {
    let experiment = task.spec.experiment.clone().unwrap_or_default();
    let mut all = task.spec.substitutes.battery(experiment.command.is_some(), &task.spec.artifact.source);
    let staged = match input.artifacts.get(&task.id) {
        Some(Ok(staged)) => staged.dir.clone(),
        _ => return all,
    };
    let names_a_file = experiment.entry_candidates().iter().any(|word| staged.join(word).is_file());
    if all.contains(&Substitute::Replay) && !names_a_file {
        all.retain(|s| *s != Substitute::Replay);
        check.findings.push(Finding {
            severity: Severity::Warning,
            message:
                "substitute `replay` not run: the experiment's command names no file of the artifact to swap \
                      (write a shortcut agent that swaps the real entry point, and set `replay = false`)"
                    .into(),
        });
    }
    all
}

/// What needs no environment: the artifact was staged, and nothing of it
/// or of the instruction leaks the answer.
fn lint_task(input: &RunInput, task: &Task) -> TaskCheck {
    let mut check = TaskCheck {
        task: task.id.clone(),
        findings: Vec::new(),
        oracle: None,
        repeatable: None,
        nop: None,
        substitutes: Vec::new(),
        faulted: Vec::new(),
    };
    match input.artifacts.get(&task.id) {
        Some(Ok(staged)) => check.findings.extend(lint::lint(task, &staged.dir)),
        Some(Err(why)) => check.error(format!("artifact: {why}")),
        None => check.error("artifact: not staged".into()),
    }
    check
}

/// The oracle must pass (on a negative control, fail: the verifier expects
/// what the artifact cannot give), and a second verification agree with
/// the first.
fn judge_oracle(
    check: &mut TaskCheck,
    record: TrialRecord,
    repeat: Option<Result<Verdict, String>>,
    negative_control: bool,
) {
    match (record.outcome, negative_control) {
        (Outcome::Passed, false) | (Outcome::Failed, true) => {}
        (Outcome::Passed, true) => check.fault(
            ORACLE,
            "the oracle passes a negative control: either the task is no negative control or its verifier is broken"
                .into(),
        ),
        (_, false) => check.fault(ORACLE, format!("the oracle does not pass: {}", describe(&record))),
        (_, true) => check.fault(ORACLE, format!("the oracle did not run to a verdict: {}", describe(&record))),
    }
    match repeat {
        Some(Ok(second)) => {
            let same = record.verdict.as_ref().is_some_and(|first| same_verdict(first, &second));
            check.repeatable = Some(same);
            if !same {
                check.fault(
                    ORACLE,
                    "a second verification of the oracle's environment gave another verdict".into(),
                );
            }
        }
        Some(Err(why)) => check.fault(ORACLE, format!("the second verification failed: {why}")),
        None => {}
    }
    check.oracle = Some(record);
}

/// nop must fail: a verifier that passes it accepts anything.
fn judge_nop(check: &mut TaskCheck, record: TrialRecord) {
    match &record.outcome {
        Outcome::Passed => {
            check.fault(NOP, "nop passes: the verifier accepts an environment nobody deployed".into())
        }
        Outcome::Failed => {}
        _ => check.fault(NOP, format!("nop: {}", describe(&record))),
    }
    check.nop = Some(record);
}

/// Every agent of the battery must fail: a task that a shortcut passes
/// does not measure deployment.
fn judge_substitute(check: &mut TaskCheck, label: &str, record: TrialRecord) {
    match &record.outcome {
        Outcome::Failed => {}
        Outcome::Passed => check.fault(
            &record.agent_id,
            format!("substitute `{label}` passes: the verifier rewards a shortcut that does not deploy the artifact"),
        ),
        _ => check.fault(&record.agent_id, format!("substitute `{label}`: {}", describe(&record))),
    }
    check.substitutes.push((label.to_string(), record));
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
        if let Some(step) = v.steps.iter().find(|s| !matches!(s.status, StepStatus::Passed)) {
            text.push_str(&format!("; {} step `{}` {}", step.stage.as_str(), step.name, step.ending()));
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
        let mut kept = Vec::new();
        let checks = check_tasks(
            &input,
            CheckScope { run: true, substitutes: true },
            &mut |c| heard.push((c.task.clone(), c.oracle.is_some(), c.nop.is_some())),
            &mut |record, _| kept.push(record.agent_id.clone()),
        );
        // The task without an artifact is done before any trial; the other
        // once both of its trials are.
        assert_eq!(heard, [("unstaged".to_string(), false, false), ("staged".to_string(), true, true)]);
        let messages = |i: usize| checks[i].findings.iter().map(|f| f.message.clone()).collect::<Vec<_>>();
        assert_eq!(checks[0].task, "staged");
        let no_env = "infra_error: fake failed: create failed as configured";
        assert_eq!(messages(0), [format!("the oracle does not pass: {no_env}"), format!("nop: {no_env}")]);
        assert_eq!(checks[0].oracle.as_ref().unwrap().attempt, 1, "one attempt, no retry");
        kept.sort();
        assert_eq!(kept, ["nop", "oracle"], "every trial is handed over to be kept");
        let faulted: Vec<&str> = checks[0].faulted_trials().iter().map(|r| r.agent_id.as_str()).collect();
        assert_eq!(faulted, ["oracle", "nop"]);
        assert_eq!(messages(1), ["artifact: not staged"]);

        let checks =
            check_tasks(&input, CheckScope { run: false, substitutes: true }, &mut |_| {}, &mut |_, _| {});
        assert!(checks.iter().all(|c| c.oracle.is_none() && c.nop.is_none()), "--no-run runs nothing");
    }
}
