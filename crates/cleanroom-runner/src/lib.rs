//! The runner owns a run: it prepares (sweep, images, artifacts), plans
//! trials = tasks × agents × trials less what an earlier run kept, runs
//! them `jobs` at a time, each attempt that ends in infra_error retried, up
//! to `retries + 1` attempts a trial in all (a resumed run counts those
//! already kept). It emits [`Event`]s and nothing else; reporters, the
//! caller's, decide what to print and write.

mod artifacts;
mod cache_offer;
pub mod calibrate;
pub mod calibrate_notation;
mod classify;
pub mod classify_tags;
pub mod classify_trajectory;
mod env_diff;
mod event;
mod executor;
mod plan;
mod prepare;
mod progress;
mod schedule;
#[cfg(test)]
mod testing;
mod trial;
mod vet;

pub use artifacts::{stage_artifacts, Staged, StagedArtifact};
pub use event::{Event, EventKind, Phase, Preparation, Todo, TrialFile, TrialKey};
pub use executor::{Executor, Local};
pub use plan::{plan, Kept, NothingKept, Plan};
pub use prepare::{prepare, Prepared};
pub use progress::AttemptProgress;
pub use schedule::{run, run_with};
pub use trial::{Attempt, AttemptEnd, PIDS_MAX};
pub use vet::{check_tasks, CheckScope, Finding, Severity, TaskCheck};

use std::collections::BTreeMap;
use std::path::PathBuf;

use cleanroom_agent::{AgentContext, AgentSpec, Config, GateMode};
use cleanroom_env::{Backend, CancelToken};
use cleanroom_task::Task;

/// An agent of the run: its parsed SPEC, the SPEC as given, its id, and
/// the completion gate it runs under (a run may give one SPEC several, as
/// agents of their own).
#[derive(Debug, Clone)]
pub struct AgentEntry {
    pub spec: AgentSpec,
    pub spec_text: String,
    pub id: String,
    pub gate: GateMode,
}

/// Everything one run needs; `artifacts` from [`prepare`].
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
    /// How often an attempt under way is reported (`EventKind::Progress`);
    /// none: never.
    pub progress_every: Option<std::time::Duration>,
    /// The package cache each trial's agent downloads through, when its
    /// task has network; none: straight from the registries.
    pub cache: Option<&'a cleanroom_cache::Cache>,
}

/// What agents that use models need: the configuration (models, external
/// agents), the installed external agents, budgets. The gate is each
/// agent's own ([`AgentEntry`]).
pub struct AgentSetup {
    pub config: Config,
    pub installed: BTreeMap<String, PathBuf>,
    pub max_steps: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
}

impl Default for AgentSetup {
    /// The built-in configuration, nothing installed, no budgets.
    fn default() -> AgentSetup {
        AgentSetup {
            config: Config::built_in(),
            installed: BTreeMap::new(),
            max_steps: None,
            max_tokens: None,
            max_cost_usd: None,
        }
    }
}

impl AgentSetup {
    /// What `agent` is run with.
    pub(crate) fn context(&self, agent: &AgentEntry, time_multiplier: f64) -> AgentContext<'_> {
        AgentContext {
            config: &self.config,
            max_steps: self.max_steps,
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
            gate: agent.gate,
            time_multiplier,
            installed: &self.installed,
            last_line: None,
        }
    }
}
