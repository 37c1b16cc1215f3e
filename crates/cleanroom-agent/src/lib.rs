//! Agents: what acts in an environment before the hidden verifier runs.
//! `oracle` runs the task's reference setup, `nop` does nothing, `script:PATH`
//! runs a shell script of the user's as the agent, `llm:MODEL` is the
//! built-in tool-calling agent, `command:NAME` an external agent CLI.

pub mod config;
pub mod external;
pub mod llm;
mod restart;
mod spec;
mod substitute;
mod workspace;

pub use cleanroom_model::{AppliedGate, GateDecision, GateMechanism, GateMode};
pub use config::{Config, ConfigError};
pub use spec::{AgentSpec, SpecError};
pub use workspace::{agent_environment, populate_workspace, WORKSPACE};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cleanroom_env::{
    CancelToken, Captured, EnvError, Environment, ExecRequest, ExitStatus, HostMount, LastLine,
};
use cleanroom_model::{StopReason, Usage};
use cleanroom_task::Task;

/// Why the agent phase ended: a [`StopReason`], or an interruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The agent ended on its own, whatever its exit code.
    Finished,
    /// Its wall-clock budget ran out.
    Timeout,
    /// Its step, token or cost budget ran out.
    Budget,
    /// Killed by a signal the harness did not send (e.g. out of memory), or
    /// its model API failed for good (the model record's `error` says how).
    Crash,
    /// The run was interrupted (Ctrl-C): the trial has no result.
    Interrupted,
}

impl Stop {
    /// What result.json and the trajectory record; none for an
    /// interruption, which leaves no result.
    pub fn reason(self) -> Option<StopReason> {
        match self {
            Stop::Finished => Some(StopReason::Finished),
            Stop::Timeout => Some(StopReason::Timeout),
            Stop::Budget => Some(StopReason::Budget),
            Stop::Crash => Some(StopReason::Crash),
            Stop::Interrupted => None,
        }
    }
}

/// The trajectory's `extra.stop`: the reason under result.json's name (null
/// for an interruption) and what ended the agent, when something did.
pub fn trajectory_stop(stop: Stop, detail: Option<&str>) -> serde_json::Value {
    serde_json::json!({"reason": stop.reason(), "detail": detail})
}

/// What an agent did.
#[derive(Debug, Clone)]
pub struct AgentRun {
    pub stop: Stop,
    pub exit_code: Option<i32>,
    pub duration: Duration,
    /// Everything it printed, both streams in order (bounded: head and tail).
    pub output: Captured,
    /// The completion gate's decisions, in order.
    pub gate: Vec<GateDecision>,
    /// For agents that use a model: what that cost and what was said.
    pub model: Option<ModelRecord>,
}

/// The model side of an agent run.
#[derive(Debug, Clone, Default)]
pub struct ModelRecord {
    /// The model's name in the configuration.
    pub model: String,
    pub usage: Usage,
    pub cost_usd: f64,
    pub requests: u32,
    pub retries: u32,
    /// ATIF (trajectory.json).
    pub trajectory: Option<serde_json::Value>,
    /// Every request and response, as JSON lines (model-exchanges.jsonl).
    pub exchanges: Vec<u8>,
    /// The agent's own logs (file name, bytes), for external agents.
    pub native_logs: Vec<(String, Vec<u8>)>,
    /// Why the model side stopped the agent, if it did.
    pub error: Option<String>,
}

/// Most bytes of agent output kept (half head, half tail).
pub const AGENT_OUTPUT_LIMIT: usize = 8 << 20;

/// What agents of a run share: the configuration, budgets and the gate.
pub struct AgentContext<'a> {
    pub config: &'a Config,
    pub max_steps: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub gate: GateMode,
    pub time_multiplier: f64,
    /// Installed external agents by name (see [`external::install`]).
    pub installed: &'a std::collections::BTreeMap<String, PathBuf>,
    /// Fed with what the agent's commands print, for progress reports.
    pub last_line: Option<LastLine>,
}

impl AgentContext<'_> {
    fn timeout(&self, task: &Task, agent: &AgentSpec) -> Duration {
        let budget_sec = match agent {
            AgentSpec::Oracle => task.spec.oracle.timeout_sec,
            _ => task.spec.agent.timeout_sec,
        };
        Duration::from_secs_f64(budget_sec as f64 * self.time_multiplier.max(0.0))
    }
}

/// Host directories the agent's phase must show (an external agent's
/// installation, read-only).
pub fn phase_mounts(agent: &AgentSpec, ctx: &AgentContext) -> Vec<HostMount> {
    match agent {
        AgentSpec::Command { name, .. } => ctx
            .installed
            .get(name)
            .map(|prefix| {
                vec![HostMount { host: prefix.clone(), path: prefix.to_string_lossy().into_owned() }]
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The gate as result.json records it for this agent: every agent that
/// uses a model is held to it; oracle, nop and scripts are not agents that
/// could be told to go on.
pub fn recorded_gate(agent: &AgentSpec, ctx: &AgentContext, task: &Task) -> AppliedGate {
    match agent {
        AgentSpec::Llm { .. } | AgentSpec::Command { .. } => llm::gate::Gate::recorded(ctx.gate, task),
        _ if ctx.gate == GateMode::Off => AppliedGate::Off,
        _ => AppliedGate::Unsupported,
    }
}

/// What holds this agent to the gate, when one applies: the built-in
/// agent's `finish`, an external CLI's stop hook, or else a restart of the
/// CLI when it ends on its own.
pub fn gate_mechanism(agent: &AgentSpec, ctx: &AgentContext, task: &Task) -> Option<GateMechanism> {
    if !llm::gate::Gate::applies(ctx.gate, task) {
        return None;
    }
    match agent {
        AgentSpec::Llm { .. } => Some(GateMechanism::BuiltIn),
        AgentSpec::Command { name, .. } => {
            let hooked = ctx.config.agents.get(name).is_some_and(|a| a.stop_hook);
            Some(if hooked { GateMechanism::Hook } else { GateMechanism::Restart })
        }
        _ => None,
    }
}

/// Runs `agent` in `env`, whose agent phase has begun (with
/// [`phase_mounts`]) and whose workspace is populated.
pub fn run_agent(
    agent: &AgentSpec,
    task: &Task,
    env: &dyn Environment,
    ctx: &AgentContext,
    cancel: &CancelToken,
) -> Result<AgentRun, EnvError> {
    let started = Instant::now();
    let timeout = ctx.timeout(task, agent);
    let argv = match agent {
        AgentSpec::Nop => {
            return Ok(AgentRun {
                stop: Stop::Finished,
                exit_code: Some(0),
                duration: started.elapsed(),
                output: Captured::new(0),
                gate: Vec::new(),
                model: None,
            })
        }
        AgentSpec::Llm { model } => {
            let config = ctx.config.model(model).map_err(EnvError::Phase)?;
            let settings = llm::LlmSettings {
                last_line: ctx.last_line.clone(),
                model_name: model,
                model: config,
                max_steps: ctx.max_steps,
                max_tokens: ctx.max_tokens,
                max_cost_usd: ctx.max_cost_usd,
                gate: ctx.gate,
                timeout,
            };
            return llm::run_llm(task, env, &settings, cancel);
        }
        AgentSpec::Command { name, model } => {
            return external::run(name, model, task, env, ctx, timeout, cancel);
        }
        AgentSpec::Oracle => {
            let dir = workspace::copy_in_private(env, &task.solution_dir(), "solution")?;
            vec!["/bin/bash".to_string(), format!("{dir}/setup.sh")]
        }
        AgentSpec::Substitute(substitute) => substitute::argv(substitute, task, env)?,
        AgentSpec::Script(path) => {
            let dir = workspace::copy_in_private_file(env, path, "agent")?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let in_env = format!("{dir}/{name}");
            if spec::has_shebang(path) {
                vec![in_env]
            } else {
                vec!["/bin/bash".to_string(), in_env]
            }
        }
    };
    let req = ExecRequest {
        argv,
        cwd: WORKSPACE.to_string(),
        env: agent_environment(),
        timeout: Some(timeout),
        grace: Duration::from_secs(10),
        output_limit: AGENT_OUTPUT_LIMIT,
        last_line: ctx.last_line.clone(),
    };
    let out = env.exec(&req, cancel)?;
    let (stop, exit_code) = stop_of(&out.status);
    Ok(AgentRun {
        stop,
        exit_code,
        duration: started.elapsed(),
        output: out.combined,
        gate: Vec::new(),
        model: None,
    })
}

pub(crate) fn stop_of(status: &ExitStatus) -> (Stop, Option<i32>) {
    match status {
        ExitStatus::Exited(code) => (Stop::Finished, Some(*code)),
        ExitStatus::Signaled(sig) => (Stop::Crash, Some(128 + sig)),
        ExitStatus::TimedOut => (Stop::Timeout, None),
        ExitStatus::Cancelled => (Stop::Interrupted, None),
    }
}
