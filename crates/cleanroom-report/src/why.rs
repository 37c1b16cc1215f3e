//! Why a trial did not pass, in one line, and which file of its trial
//! directory shows it: what every report names for each failed trial, and
//! what the viewer's trial page shows first.

use cleanroom_store::{FailureClass, Outcome, TrialRecord};
use cleanroom_verify::StepStatus;

use crate::class_row::ClassRow;
use crate::model::{Report, Trial};

/// A trial's first failure. Unescaped: it holds step, check and file names
/// and an error text that came from a task or an environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Why {
    /// `failed, self_stop (stage build): build step make exited 2`.
    pub text: String,
    /// The file of the trial directory to read first.
    pub log: &'static str,
}

/// None for a trial that passed or was skipped.
pub fn why(r: &TrialRecord) -> Option<Why> {
    match r.outcome {
        Outcome::Passed | Outcome::Skipped => None,
        Outcome::InfraError => Some(Why {
            text: format!(
                "infra_error: {}",
                r.error.as_deref().and_then(|e| e.lines().next()).unwrap_or("no detail recorded")
            ),
            log: "result.json",
        }),
        Outcome::Failed => {
            let head = format!("failed, {} (stage {})", ClassRow::of(r.class).as_str(), r.stage);
            if r.class == Some(FailureClass::Tampered) && !r.tampered.is_empty() {
                return Some(Why {
                    text: format!("{head}: protected files changed: {}", r.tampered.join(", ")),
                    log: "changes.txt",
                });
            }
            let error = r.error.as_deref().and_then(|e| e.lines().next());
            let (text, log) = match (first_failure(r), error) {
                (Some(what), Some(error)) => (format!("{head}: {what}; agent: {error}"), "verify.log"),
                (Some(what), None) => (format!("{head}: {what}"), "verify.log"),
                (None, Some(error)) => (format!("{head}: {error}"), "agent.log"),
                (None, None) => (format!("{head}: {}", stopped(r)), "agent.log"),
            };
            Some(Why { text, log })
        }
    }
}

/// What made a trial fail, in one line: the first verification step that
/// failed or timed out, else the first check that failed. Unescaped.
pub fn first_failure(r: &TrialRecord) -> Option<String> {
    let verdict = r.verdict.as_ref()?;
    if let Some(step) =
        verdict.steps.iter().find(|s| matches!(s.status, StepStatus::Failed | StepStatus::TimedOut))
    {
        return Some(format!("{} step {} {}", step.stage.as_str(), step.name, step.ending()));
    }
    let check = verdict.checks.iter().find(|c| !c.passed)?;
    Some(format!("check {}: expected {}, observed {}", check.name, check.expected, check.observed))
}

/// How the agent phase ended, for a failure without a verdict to name.
fn stopped(r: &TrialRecord) -> String {
    let stop = r.stop_reason.map_or("never started", |s| s.as_str());
    match r.exit_code {
        Some(code) => format!("the agent stopped ({stop}, exit {code}) and no verification ran"),
        None => format!("the agent stopped ({stop}) and no verification ran"),
    }
}

/// `<run>/trials/<task>/<agent_id>/<n>`, where a trial's files are.
pub fn trial_dir(run_id: &str, r: &TrialRecord) -> String {
    format!("{run_id}/trials/{}/{}/{}", r.task, r.agent_id, r.trial)
}

/// Every trial that failed or hit an infra error, with its first failure,
/// in the report's order; negative controls, which are meant to fail, are
/// left out.
pub fn failed_trials(report: &Report) -> Vec<(&Trial, Why)> {
    report
        .trials
        .iter()
        .filter(|t| !t.record.negative_control)
        .filter_map(|t| Some((t, why(&t.record)?)))
        .collect()
}
