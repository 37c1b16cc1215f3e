//! The one stream the runner emits. Every output (terminal, run directory,
//! index, summary) is a consumer of it; the runner itself never prints.
//!
//! In order: `Preparing` lines (from [`crate::prepare`]), then, from
//! [`crate::run`], `Planned`, and for each trial `TrialStarted`, the
//! `PhaseChanged` of its phases (and `Progress` while a long one goes on),
//! `AttemptFailed` and `TrialStarted` again
//! for each retry, and `TrialFinished`; `RunFinished` last. The events of
//! trials that run at once interleave; each event is stamped when it
//! happens, and the stream is in the order of its stamps.

use std::time::SystemTime;

pub use cleanroom_store::TrialFile;
use cleanroom_store::TrialRecord;
use cleanroom_verify::Verdict;

/// Which trial: task × agent × trial number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrialKey {
    pub task: String,
    pub agent_id: String,
    pub trial: u32,
}

/// A trial to run, and the number of its first attempt: 1, or the one
/// after the attempts that an interrupted run of it kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    pub key: TrialKey,
    pub first_attempt: u32,
    /// Verify the environment a second time, for `tasks check`: the
    /// second verdict comes with [`EventKind::TrialFinished`].
    pub verify_twice: bool,
}

impl Todo {
    /// A trial no run has attempted yet.
    pub fn new(key: TrialKey) -> Todo {
        Todo { key, first_attempt: 1, verify_twice: false }
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    /// When it happened (wall clock; records print it as RFC 3339 UTC).
    pub timestamp: SystemTime,
    pub kind: EventKind,
}

impl Event {
    pub(crate) fn now(kind: EventKind) -> Event {
        Event { timestamp: SystemTime::now(), kind }
    }
}

#[derive(Debug, Clone)]
pub enum EventKind {
    /// Work before the trials, a step at a time.
    Preparing(Preparation),
    /// The trials about to run (`trials`), of the run's whole plan (`of`):
    /// the trials of a resumed run that have a result are not run again.
    Planned {
        trials: usize,
        of: usize,
    },
    TrialStarted {
        key: TrialKey,
        attempt: u32,
    },
    /// An attempt entered one of its phases.
    PhaseChanged {
        key: TrialKey,
        attempt: u32,
        phase: Phase,
    },
    /// An attempt still under way, every `RunInput::progress_every`: its
    /// phase (none before the agent starts), how long it has run, and the
    /// last line its agent printed.
    Progress {
        key: TrialKey,
        attempt: u32,
        phase: Option<Phase>,
        elapsed: std::time::Duration,
        last_line: Option<String>,
    },
    /// An attempt that ended in infra_error and will be retried; its
    /// record and files are kept beside the trial's result.
    AttemptFailed {
        record: TrialRecord,
        files: Vec<TrialFile>,
    },
    /// The trial's final record: written last, as result.json.
    TrialFinished {
        record: TrialRecord,
        files: Vec<TrialFile>,
        /// The second verdict of a [`Todo::verify_twice`] trial, or why it
        /// could not be had; None for every other trial.
        second_verdict: Option<Result<Verdict, String>>,
    },
    /// No more trials start; `interrupted` when the run was cancelled
    /// (Ctrl-C, or a reporter that failed).
    RunFinished {
        interrupted: bool,
    },
}

/// A step of the preparation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Preparation {
    /// The sweep removed what runs that died left of this many
    /// environments (sent only when there were some).
    Swept { environments: usize },
    /// A line of the backend's progress in making the tasks' images ready.
    Image(String),
    /// A task's artifact is being staged, from a source of this kind.
    Artifact { task: String, source: &'static str },
}

/// The phases of an attempt that the runner reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The agent runs in the fresh environment.
    Agent,
    /// Every agent process is gone; the environment is compared with the
    /// artifact and the hidden verifier runs.
    Verify,
}
