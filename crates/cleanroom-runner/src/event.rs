//! The one stream the runner emits. Every output (terminal, run directory,
//! summary) is a consumer of it; the runner itself never prints.

use cleanroom_store::TrialRecord;

/// Which trial: task × agent × trial number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrialKey {
    pub task: String,
    pub agent_id: String,
    pub trial: u32,
}

/// A file of a trial's directory (agent.log, verify.log, changes.txt).
#[derive(Debug, Clone)]
pub struct TrialFile {
    pub name: String,
    pub bytes: Vec<u8>,
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
    /// An attempt that ended in infra_error and will be retried.
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
