//! The completion gate: when the agent says it is done, run the task's
//! public experiment in the agent's own environment and either pass the
//! report back (advisory) or refuse to finish until it succeeds (enforced).
//! The hidden verifier is never involved.

use std::time::{Duration, Instant};

use cleanroom_env::{CancelToken, EnvError, Environment, ExecRequest, ExitStatus};
use cleanroom_model::{AppliedGate, GateDecision, GateMode, GateVerdict};
use cleanroom_task::Task;
use serde_json::{json, Value};

use crate::workspace::agent_environment;

/// Reports (refusals, or advice) before the gate lets the agent go anyway.
pub const MAX_REPORTS: u32 = 3;

/// How much of the experiment's output the report shows (its end).
const REPORT_TAIL: usize = 3000;

/// One run of the public experiment.
#[derive(Debug, Clone)]
pub struct Report {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
    pub tail: String,
    /// Each declared output and whether it exists.
    pub outputs: Vec<(String, bool)>,
}

impl Report {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && self.outputs.iter().all(|(_, present)| *present)
    }

    pub fn to_json(&self) -> Value {
        let outputs: Vec<Value> = self.outputs.iter().map(|(p, e)| json!({"path": p, "exists": e})).collect();
        json!({"exit_code": self.exit_code, "timed_out": self.timed_out, "seconds": self.seconds,
            "succeeded": self.succeeded(), "outputs": outputs, "output_tail": self.tail})
    }

    /// The report as the agent reads it.
    pub fn to_text(&self, command: &str, dest: &str) -> String {
        let status = match (self.timed_out, self.exit_code) {
            (true, _) => "it did not finish in the time left".to_string(),
            (false, Some(c)) => format!("exit status {c}"),
            (false, None) => "it was killed".to_string(),
        };
        let mut text = format!("The designated experiment `{command}` (run in {dest}): {status}.\n");
        for (path, present) in &self.outputs {
            text.push_str(&format!("Output {path}: {}\n", if *present { "present" } else { "MISSING" }));
        }
        text.push_str(&format!("End of its output:\n{}", self.tail));
        text
    }
}

/// What the gate says to a stop.
#[derive(Debug, Clone)]
pub enum Decision {
    Accept {
        report: Option<Report>,
        note: String,
    },
    /// Do not stop; the report goes back to the agent.
    Report {
        report: Report,
        refused: bool,
    },
}

impl Decision {
    /// The decision as the trajectory keeps it, the experiment's output
    /// included.
    pub fn to_json(&self) -> Value {
        match self {
            Decision::Accept { report, note } => {
                json!({"decision": "accepted", "note": note, "report": report.as_ref().map(Report::to_json)})
            }
            Decision::Report { report, .. } => {
                json!({"decision": self.verdict().as_str(), "report": report.to_json()})
            }
        }
    }

    fn verdict(&self) -> GateVerdict {
        match self {
            Decision::Accept { .. } => GateVerdict::Accepted,
            Decision::Report { refused: true, .. } => GateVerdict::Refused,
            Decision::Report { refused: false, .. } => GateVerdict::Advised,
        }
    }

    /// The decision as result.json keeps it.
    fn summary(&self) -> GateDecision {
        let (report, note) = match self {
            Decision::Accept { report, note } => (report.as_ref(), Some(note.clone())),
            Decision::Report { report, .. } => (Some(report), None),
        };
        GateDecision {
            decision: self.verdict(),
            note,
            exit_code: report.and_then(|r| r.exit_code),
            succeeded: report.map(Report::succeeded),
            missing_outputs: report
                .map(|r| r.outputs.iter().filter(|(_, present)| !present).map(|(p, _)| p.clone()).collect())
                .unwrap_or_default(),
        }
    }

    /// What the agent is told of a report; `stop` names how it stops
    /// (`call finish`, `stop`).
    pub fn message(&self, task: &Task, stop: &str) -> Option<String> {
        let Decision::Report { report, refused } = self else { return None };
        let command = experiment_command(task).unwrap_or_default();
        let mut text = report.to_text(command, &task.spec.artifact.dest);
        text.push_str(&if *refused {
            format!("\n\nStopping is refused until the designated experiment succeeds: carry on, then {stop} again.")
        } else {
            format!("\n\nYou may {stop} again to end anyway.")
        });
        Some(text)
    }
}

/// The gate of one agent run: the same rules whatever holds the agent (its
/// `finish`, a stop hook, a restart).
pub struct Gate {
    mode: GateMode,
    /// Reports given so far (refusals, or advice).
    reports: u32,
    /// A report was given and the agent has not acted since.
    reported: bool,
    decisions: Vec<GateDecision>,
}

impl Gate {
    pub fn new(mode: GateMode) -> Gate {
        Gate { mode, reports: 0, reported: false, decisions: Vec::new() }
    }

    /// What result.json records: the mode, or `unavailable` for a task
    /// without a public experiment command.
    pub fn recorded(mode: GateMode, task: &Task) -> AppliedGate {
        match mode {
            GateMode::Off => AppliedGate::Off,
            _ if experiment_command(task).is_none() => AppliedGate::Unavailable,
            mode => mode.into(),
        }
    }

    /// Whether a gate holds an agent at all: a mode other than off, and a
    /// public experiment to run.
    pub fn applies(mode: GateMode, task: &Task) -> bool {
        matches!(Gate::recorded(mode, task), AppliedGate::Advisory | AppliedGate::Enforced)
    }

    /// The agent acted (ran a tool): a report given before is stale.
    pub fn note_action(&mut self) {
        self.reported = false;
    }

    /// Every decision so far, for result.json.
    pub fn decisions(&self) -> &[GateDecision] {
        &self.decisions
    }

    /// The agent wants to stop. Advisory: a failed experiment's report goes
    /// back, and a stop right after a report, with nothing done between, is
    /// accepted. Enforced: the stop is refused until the experiment
    /// succeeds. Either way at most [`MAX_REPORTS`] reports, then the agent
    /// is let go and the verifier decides.
    pub fn on_finish(
        &mut self,
        env: &dyn Environment,
        task: &Task,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<Decision, EnvError> {
        let decision = self.decide(env, task, deadline, cancel)?;
        if matches!(decision, Decision::Report { .. }) {
            self.reports += 1;
            self.reported = true;
        }
        if Gate::applies(self.mode, task) {
            self.decisions.push(decision.summary());
        }
        Ok(decision)
    }

    /// The gate could not run the experiment: the agent may stop, and the
    /// record says why.
    pub fn note_failure(&mut self, why: &str) -> Decision {
        let decision = Decision::Accept { report: None, note: format!("the gate could not run: {why}") };
        self.decisions.push(decision.summary());
        decision
    }

    fn decide(
        &mut self,
        env: &dyn Environment,
        task: &Task,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<Decision, EnvError> {
        let accept = |report, note: &str| Ok(Decision::Accept { report, note: note.to_string() });
        let Some(command) = experiment_command(task) else {
            return accept(None, if self.mode == GateMode::Off { "off" } else { "unavailable" });
        };
        if self.mode == GateMode::Off {
            return accept(None, "off");
        }
        if self.mode == GateMode::Advisory && self.reported {
            return accept(None, "stopped again after the report");
        }
        let report = run_experiment(env, task, command, deadline, cancel)?;
        if report.succeeded() {
            return accept(Some(report), "experiment succeeded");
        }
        if self.reports >= MAX_REPORTS {
            return accept(Some(report), "reports used up");
        }
        Ok(Decision::Report { report, refused: self.mode == GateMode::Enforced })
    }
}

pub fn experiment_command(task: &Task) -> Option<&str> {
    task.spec.experiment.as_ref()?.command.as_deref()
}

/// Runs the public experiment as a login shell in `artifact.dest`, within
/// the agent's remaining time, then looks for its declared outputs.
fn run_experiment(
    env: &dyn Environment,
    task: &Task,
    command: &str,
    deadline: Instant,
    cancel: &CancelToken,
) -> Result<Report, EnvError> {
    let dest = &task.spec.artifact.dest;
    let mut req = ExecRequest::login_shell(command, dest, agent_environment());
    req.timeout = Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1)));
    req.output_limit = 2 * REPORT_TAIL;
    let out = env.exec(&req, cancel)?;
    let (exit_code, timed_out) = match out.status {
        ExitStatus::Exited(c) => (Some(c), false),
        ExitStatus::Signaled(s) => (Some(128 + s), false),
        ExitStatus::TimedOut | ExitStatus::Cancelled => (None, true),
    };
    let text = out.combined.to_string_lossy();
    let tail = tail_chars(&text, REPORT_TAIL);
    let outputs = task.spec.experiment.as_ref().map(|e| e.outputs.clone()).unwrap_or_default();
    let mut present = Vec::new();
    if !outputs.is_empty() {
        let tests: Vec<String> = outputs
            .iter()
            .map(|o| format!("if [ -e '{}' ]; then echo 1; else echo 0; fi", o.replace('\'', r"'\''")))
            .collect();
        let mut check = ExecRequest::login_shell(&tests.join("\n"), dest, agent_environment());
        check.timeout = Some(Duration::from_secs(30));
        let flags = env.exec(&check, cancel)?.stdout.to_string_lossy();
        let flags: Vec<&str> = flags.lines().collect();
        for (i, o) in outputs.iter().enumerate() {
            present.push((o.clone(), flags.get(i) == Some(&"1")));
        }
    }
    Ok(Report { exit_code, timed_out, seconds: out.duration.as_secs_f64(), tail, outputs: present })
}

fn tail_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}
