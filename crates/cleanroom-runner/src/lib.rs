//! The runner: trials = tasks × agents × trials, run `jobs` at a time, each
//! attempt that ends in infra_error retried, up to `retries + 1` attempts a
//! trial in all (a resumed run counts those already kept). It emits
//! [`Event`]s and nothing else; the caller decides what to print and write.

mod artifacts;
pub mod calibrate;
mod classify;
pub mod classify_tags;
pub mod classify_trajectory;
mod env_diff;
mod event;
mod trial;
mod vet;

pub use artifacts::{stage_artifacts, Staged, StagedArtifact};
pub use event::{Event, Todo, TrialFile, TrialKey};
pub use trial::PIDS_MAX;
pub use vet::{check_tasks, Finding, Severity, TaskCheck};

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::sync::Mutex;

use cleanroom_agent::{AgentContext, AgentSpec, Config, GateMode};
use cleanroom_env::{Backend, CancelToken};
use cleanroom_store::Outcome;
use cleanroom_task::Task;

use crate::trial::AttemptEnd;

/// An agent of the run: its parsed SPEC, the SPEC as given, its id.
#[derive(Debug, Clone)]
pub struct AgentEntry {
    pub spec: AgentSpec,
    pub spec_text: String,
    pub id: String,
}

/// Everything one run needs.
pub struct RunInput<'a> {
    pub tasks: &'a [Task],
    pub agents: &'a [AgentEntry],
    pub trials: u32,
    pub jobs: usize,
    pub retries: u32,
    pub timeout_multiplier: f64,
    pub allow_unlimited: bool,
    pub agent_setup: &'a AgentSetup,
    pub backend: &'a dyn Backend,
    pub artifacts: &'a Staged,
    pub cancel: CancelToken,
}

/// What agents that use models need: the configuration (models, external
/// agents), the installed external agents, budgets, the gate.
pub struct AgentSetup {
    pub config: Config,
    pub installed: BTreeMap<String, PathBuf>,
    pub max_steps: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub gate: GateMode,
}

impl Default for AgentSetup {
    /// The built-in configuration, nothing installed, no budgets, no gate.
    fn default() -> AgentSetup {
        AgentSetup {
            config: Config::built_in(),
            installed: BTreeMap::new(),
            max_steps: None,
            max_tokens: None,
            max_cost_usd: None,
            gate: GateMode::Off,
        }
    }
}

impl AgentSetup {
    pub(crate) fn context(&self, time_multiplier: f64) -> AgentContext<'_> {
        AgentContext {
            config: &self.config,
            max_steps: self.max_steps,
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
            gate: self.gate,
            time_multiplier,
            installed: &self.installed,
        }
    }
}

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

/// Runs `todo` (from [`plan`], less what a resumed run already has) and
/// sends every event to `events`. Returns when every trial has a record or
/// the cancel token fired and the running trials have stopped.
pub fn run(input: &RunInput, todo: Vec<Todo>, events: Sender<Event>) {
    let _ = events.send(Event::Planned { trials: todo.len() });
    let queue = Mutex::new(VecDeque::from(todo));
    std::thread::scope(|scope| {
        for _ in 0..input.jobs.max(1) {
            let events = events.clone();
            let queue = &queue;
            scope.spawn(move || loop {
                if input.cancel.is_cancelled() {
                    return;
                }
                let Some(todo) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() else {
                    return;
                };
                run_trial(input, &todo, &events);
            });
        }
    });
    let _ = events.send(Event::Finished { interrupted: input.cancel.is_cancelled() });
}

fn run_trial(input: &RunInput, todo: &Todo, events: &Sender<Event>) {
    let key = &todo.key;
    let (Some(task), Some(agent)) =
        (input.tasks.iter().find(|t| t.id == key.task), input.agents.iter().find(|a| a.id == key.agent_id))
    else {
        return;
    };
    // A trial always gets one attempt, even if the kept ones used up its
    // retries.
    let last = (input.retries + 1).max(todo.first_attempt);
    for attempt in todo.first_attempt..=last {
        let _ = events.send(Event::TrialStarted { key: key.clone(), attempt });
        match trial::attempt(input, task, agent, key, attempt, false) {
            AttemptEnd::Interrupted => return,
            AttemptEnd::Done(done) => {
                let trial::Attempt { record, files, .. } = *done;
                let retry =
                    record.outcome == Outcome::InfraError && attempt < last && !input.cancel.is_cancelled();
                let _ = events.send(if retry {
                    Event::AttemptFailed { record, files }
                } else {
                    Event::TrialFinished { record, files }
                });
                if !retry {
                    return;
                }
            }
        }
    }
}
