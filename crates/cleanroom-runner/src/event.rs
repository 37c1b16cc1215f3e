//! The one stream the runner emits. Every output (terminal, run directory,
//! summary) is a consumer of it; the runner itself never prints.

pub use cleanroom_store::TrialFile;
use cleanroom_store::TrialRecord;

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
}

impl Todo {
    /// A trial no run has attempted yet.
    pub fn new(key: TrialKey) -> Todo {
        Todo { key, first_attempt: 1 }
    }
}

#[derive(Debug)]
pub enum Event {
    /// Work before the trials: an image being built, an artifact fetched.
    Preparing(String),
    /// The trials about to run (those of a resumed run that have a result
    /// are not among them).
    Planned {
        trials: usize,
    },
    TrialStarted {
        key: TrialKey,
        attempt: u32,
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
    },
    /// No more trials start; `interrupted` when Ctrl-C stopped the run.
    Finished {
        interrupted: bool,
    },
}
