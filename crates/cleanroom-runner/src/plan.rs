//! What a run does: every trial of tasks × agents × trials, less those an
//! earlier run of the same plan finished, each resumed at the attempt after
//! the ones that run kept.

use cleanroom_store::RunDir;
use cleanroom_task::Task;

use crate::event::{Todo, TrialKey};
use crate::{AgentEntry, RunInput};

/// Every trial of the run in a stable order: task, then agent, then number.
pub fn plan(tasks: &[Task], agents: &[AgentEntry], trials: u32) -> Vec<TrialKey> {
    let mut keys = Vec::new();
    for task in tasks {
        for agent in agents {
            for trial in 1..=trials {
                keys.push(TrialKey { task: task.id.clone(), agent_id: agent.id.clone(), trial });
            }
        }
    }
    keys
}

/// The trials to run, in order, and the size of the whole plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub todo: Vec<Todo>,
    pub planned: usize,
}

impl Plan {
    /// The trials of `input` that `kept` has no result for, their attempts
    /// numbered on from those it kept.
    pub fn resume(input: &RunInput, kept: &dyn Kept) -> Plan {
        let keys = plan(input.tasks, input.agents, input.trials);
        let planned = keys.len();
        let todo = keys
            .into_iter()
            .filter(|key| !kept.has_result(key))
            .map(|key| Todo { first_attempt: kept.next_attempt(&key), ..Todo::new(key) })
            .collect();
        Plan { todo, planned }
    }
}

/// What an earlier run of the same plan kept: which trials have their
/// result, and how many attempts of the others it numbered.
pub trait Kept {
    fn has_result(&self, key: &TrialKey) -> bool;
    /// The number of the trial's next attempt: 1 when none was kept.
    fn next_attempt(&self, key: &TrialKey) -> u32;
}

/// A run that resumes nothing.
pub struct NothingKept;

impl Kept for NothingKept {
    fn has_result(&self, _: &TrialKey) -> bool {
        false
    }

    fn next_attempt(&self, _: &TrialKey) -> u32 {
        1
    }
}

/// A run directory keeps what its runs recorded (result.json,
/// attempt-<k>.json).
impl Kept for RunDir {
    fn has_result(&self, key: &TrialKey) -> bool {
        RunDir::has_result(self, &key.task, &key.agent_id, key.trial)
    }

    fn next_attempt(&self, key: &TrialKey) -> u32 {
        RunDir::next_attempt(self, &key.task, &key.agent_id, key.trial)
    }
}

#[cfg(test)]
mod tests {
    use cleanroom_store::TrialRecord;

    use super::*;
    use crate::testing::{input, nop, task, temp_dir};
    use crate::{AgentSetup, Staged};

    #[test]
    fn a_run_directory_resumes_what_it_has_not_finished() {
        let root = temp_dir("kept");
        let run_dir = RunDir::create(&root.join("runs"), "run-1").unwrap();
        let record = |trial, attempt| TrialRecord::new("t", "nop", "nop", trial, attempt);
        run_dir.write_result(&record(1, 1), &[]).unwrap();
        run_dir.write_attempt(&record(2, 1), &[]).unwrap();
        run_dir.write_attempt(&record(2, 2), &[]).unwrap();

        let tasks = [task(&root, "t")];
        let agents = [nop()];
        let setup = AgentSetup::default();
        let staged = Staged::new();
        let input = RunInput { trials: 3, ..input(&tasks, &agents, &setup, &staged) };
        let plan = Plan::resume(&input, &run_dir);
        assert_eq!(plan.planned, 3);
        let todo: Vec<(u32, u32)> = plan.todo.iter().map(|t| (t.key.trial, t.first_attempt)).collect();
        assert_eq!(todo, [(2, 3), (3, 1)]);
        assert!(plan.todo.iter().all(|t| !t.verify_twice));

        let fresh = Plan::resume(&input, &NothingKept);
        assert_eq!(
            fresh.todo.iter().map(|t| (t.key.trial, t.first_attempt)).collect::<Vec<_>>(),
            [(1, 1), (2, 1), (3, 1)]
        );
    }
}
