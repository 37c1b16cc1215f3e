//! The completion gate: when the agent says it is done, run the task's
//! public experiment in the agent's own environment and either pass the
//! report back (advisory) or refuse to finish until it succeeds (enforced).
//! The hidden verifier is never involved.

use std::time::{Duration, Instant};

use cleanroom_env::{CancelToken, EnvError, Environment, ExecRequest, ExitStatus};
use cleanroom_model::{AppliedGate, GateMode};
use cleanroom_task::Task;
use serde_json::{json, Value};

use crate::workspace::agent_environment;

/// Refusals before an enforced gate lets the agent go anyway.
pub const MAX_REFUSALS: u32 = 3;

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

/// What the gate says to a `finish`.
#[derive(Debug, Clone)]
pub enum Decision {
    Accept {
        report: Option<Report>,
        note: &'static str,
    },
    /// Do not finish; the report goes back to the agent.
    Report {
        report: Report,
        refused: bool,
    },
}

pub struct Gate {
    mode: GateMode,
    refusals: u32,
    /// An advisory report was given and nothing was done since.
    advised: bool,
}

impl Gate {
    pub fn new(mode: GateMode) -> Gate {
        Gate { mode, refusals: 0, advised: false }
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

    /// The agent ran a tool: an advisory report is stale.
    pub fn note_tool_call(&mut self) {
        self.advised = false;
    }

    pub fn on_finish(
        &mut self,
        env: &dyn Environment,
        task: &Task,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<Decision, EnvError> {
        let Some(command) = experiment_command(task) else {
            return Ok(Decision::Accept {
                report: None,
                note: if self.mode == GateMode::Off { "off" } else { "unavailable" },
            });
        };
        match self.mode {
            GateMode::Off => Ok(Decision::Accept { report: None, note: "off" }),
            GateMode::Advisory if self.advised => {
                Ok(Decision::Accept { report: None, note: "finished after the report" })
            }
            GateMode::Advisory => {
                let report = run_experiment(env, task, command, deadline, cancel)?;
                if report.succeeded() {
                    return Ok(Decision::Accept { report: Some(report), note: "experiment succeeded" });
                }
                self.advised = true;
                Ok(Decision::Report { report, refused: false })
            }
            GateMode::Enforced => {
                let report = run_experiment(env, task, command, deadline, cancel)?;
                if report.succeeded() {
                    return Ok(Decision::Accept { report: Some(report), note: "experiment succeeded" });
                }
                if self.refusals >= MAX_REFUSALS {
                    return Ok(Decision::Accept { report: Some(report), note: "refusals used up" });
                }
                self.refusals += 1;
                Ok(Decision::Report { report, refused: true })
            }
        }
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
