//! Progress on stderr: what preparation does, the plan, each trial's start,
//! while a long one goes on its phase, time and the last line its agent
//! printed, and the line of each attempt's record.

use std::io::Write;
use std::path::{Path, PathBuf};

use std::time::Duration;

use cleanroom_report::{escape_terminal, trial_line};
use cleanroom_runner::{Event, EventKind, Phase, Preparation, TrialKey};

use super::Reporter;
use crate::error::CliError;

pub struct Terminal<W: Write> {
    out: W,
    run_id: String,
    run_path: PathBuf,
}

impl<W: Write> Terminal<W> {
    /// Progress of the run `run_id` at `run_path`, written to `out`.
    pub fn new(out: W, run_id: String, run_path: &Path) -> Terminal<W> {
        Terminal { out, run_id, run_path: run_path.to_path_buf() }
    }
}

impl<W: Write> Reporter for Terminal<W> {
    fn report(&mut self, event: &Event) -> Result<(), CliError> {
        let line = match &event.kind {
            EventKind::Preparing(step) => preparation_line(step),
            EventKind::Planned { trials, of } => format!(
                "cleanroom: run {} in {}: {trials} trial(s) to run of {of}",
                self.run_id,
                self.run_path.display()
            ),
            EventKind::TrialStarted { key, attempt } => {
                let again = if *attempt > 1 { format!(" (attempt {attempt})") } else { String::new() };
                format!("start {} {} #{}{again}", key.task, key.agent_id, key.trial)
            }
            EventKind::Progress { key, attempt, phase, elapsed, last_line } => {
                progress_line(key, *attempt, *phase, *elapsed, last_line.as_deref())
            }
            EventKind::AttemptFailed { record, .. } | EventKind::TrialFinished { record, .. } => {
                trial_line(record)
            }
            EventKind::PhaseChanged { .. } | EventKind::RunFinished { .. } => return Ok(()),
        };
        // Progress is no record: a terminal that is gone stops nothing.
        let _ = writeln!(self.out, "{line}");
        Ok(())
    }
}

/// Characters of an agent's last line shown.
const LAST_LINE_SHOWN: usize = 100;

/// `… t nop #2: agent phase, 4m10s: Building wheel for numpy`, the agent's
/// line escaped for the terminal and cut short.
pub fn progress_line(
    key: &TrialKey,
    attempt: u32,
    phase: Option<Phase>,
    elapsed: Duration,
    last_line: Option<&str>,
) -> String {
    let again = if attempt > 1 { format!(" (attempt {attempt})") } else { String::new() };
    let phase = match phase {
        None => "starting",
        Some(Phase::Agent) => "agent phase",
        Some(Phase::Verify) => "verify phase",
    };
    let secs = elapsed.as_secs();
    let mut line = format!(
        "… {} {} #{}{again}: {phase}, {}m{:02}s",
        key.task,
        key.agent_id,
        key.trial,
        secs / 60,
        secs % 60
    );
    if let Some(last) = last_line.filter(|_| phase == "agent phase") {
        let shown: String = escape_terminal(last).chars().take(LAST_LINE_SHOWN).collect();
        line.push_str(": ");
        line.push_str(&shown);
    }
    line
}

/// A step of the preparation, as every command that prepares prints it.
pub fn preparation_line(step: &Preparation) -> String {
    match step {
        Preparation::Swept { environments } => {
            format!("cleanroom: removed {environments} environment(s) left by a dead run")
        }
        Preparation::Image(line) => format!("image: {line}"),
        Preparation::Artifact { task, source } => format!("artifact of {task}: {source}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use cleanroom_store::{Outcome, TrialRecord};

    use super::*;

    #[test]
    fn prints_what_users_have_always_seen() {
        let key = TrialKey { task: "t".into(), agent_id: "nop".into(), trial: 2 };
        let mut failed = TrialRecord::new("t", "nop", "nop", 2, 1);
        failed.error = Some("verify/ could not be copied\nmore".into());
        let mut finished = TrialRecord::new("t", "nop", "nop", 2, 2);
        finished.outcome = Outcome::Passed;
        let kinds = [
            EventKind::Preparing(Preparation::Swept { environments: 3 }),
            EventKind::Preparing(Preparation::Image("building debian".into())),
            EventKind::Preparing(Preparation::Artifact { task: "t".into(), source: "git" }),
            EventKind::Planned { trials: 1, of: 4 },
            EventKind::TrialStarted { key: key.clone(), attempt: 1 },
            EventKind::PhaseChanged { key: key.clone(), attempt: 1, phase: Phase::Agent },
            EventKind::Progress {
                key: key.clone(),
                attempt: 1,
                phase: Some(Phase::Agent),
                elapsed: Duration::from_secs(250),
                last_line: Some("Building wheel\x1b]0;pwn\x07 for numpy".into()),
            },
            EventKind::AttemptFailed { record: failed, files: Vec::new() },
            EventKind::TrialStarted { key, attempt: 2 },
            EventKind::TrialFinished { record: finished, files: Vec::new(), second_verdict: None },
            EventKind::RunFinished { interrupted: false },
        ];
        let mut out = Vec::new();
        let mut terminal = Terminal::new(&mut out, "run-1".into(), Path::new("runs/run-1"));
        for kind in kinds {
            terminal.report(&Event { timestamp: SystemTime::now(), kind }).unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "cleanroom: removed 3 environment(s) left by a dead run\n\
             image: building debian\n\
             artifact of t: git\n\
             cleanroom: run run-1 in runs/run-1: 1 trial(s) to run of 4\n\
             start t nop #2\n\
             … t nop #2: agent phase, 4m10s: Building wheel\\x1b]0;pwn\\x07 for numpy\n\
             ERROR t  nop #2  infra_error: verify/ could not be copied  0.0s\n\
             start t nop #2 (attempt 2)\n\
             PASS  t  nop #2 (attempt 2)  0.0s\n"
        );
    }
}
