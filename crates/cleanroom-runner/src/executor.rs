//! Where a run's attempts execute, beside the backend (what they run in).
//! The runner's pool (schedule.rs) keeps the plan, the retries and the
//! events; an executor runs one attempt where it belongs and says how it
//! ended. [`Local`] runs it on a thread of this process; the CLI's Slurm
//! executor runs it as an element of a job array, on a node, with that
//! node's backend.

use cleanroom_task::Task;

use crate::event::{Todo, TrialKey};
use crate::progress::AttemptProgress;
use crate::trial::{self, AttemptEnd};
use crate::{AgentEntry, RunInput};

pub trait Executor: Sync {
    /// How many attempts may be under way at once, for a plan of `todo`
    /// trials of a run that asked for `jobs` at once.
    fn workers(&self, jobs: usize, _todo: usize) -> usize {
        jobs
    }

    /// Before any attempt, with the trials about to run (an executor that
    /// hands their first attempts over together does it here).
    fn begin(&self, _input: &RunInput, _todo: &[Todo]) {}

    /// Runs attempt `attempt` of the trial `key`, reporting its phases and
    /// its agent's output to `progress`.
    #[allow(clippy::too_many_arguments)]
    fn attempt(
        &self,
        input: &RunInput,
        task: &Task,
        agent: &AgentEntry,
        key: &TrialKey,
        attempt: u32,
        verify_twice: bool,
        progress: &AttemptProgress,
    ) -> AttemptEnd;
}

/// Attempts on threads of this process, `jobs` at once.
pub struct Local;

impl Executor for Local {
    fn attempt(
        &self,
        input: &RunInput,
        task: &Task,
        agent: &AgentEntry,
        key: &TrialKey,
        attempt: u32,
        verify_twice: bool,
        progress: &AttemptProgress,
    ) -> AttemptEnd {
        trial::attempt(input, task, agent, key, attempt, verify_twice, progress)
    }
}
