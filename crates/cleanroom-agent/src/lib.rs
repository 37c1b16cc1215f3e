//! Agents: what acts in an environment before the hidden verifier runs.
//! `oracle` runs the task's reference setup, `nop` does nothing, `script:PATH`
//! runs a shell script of the user's as the agent.

mod spec;
mod workspace;

pub use spec::{AgentSpec, SpecError};
pub use workspace::{agent_environment, instruction_text, populate_workspace, WORKSPACE};

use std::time::{Duration, Instant};

use cleanroom_env::{CancelToken, Captured, EnvError, Environment, ExecRequest, ExitStatus};
use cleanroom_task::Task;

/// Why the agent phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The agent ended on its own, whatever its exit code.
    Finished,
    /// Its wall-clock budget ran out.
    Timeout,
    /// Killed by a signal the harness did not send (e.g. out of memory).
    Crash,
    /// The run was interrupted (Ctrl-C): the trial has no result.
    Interrupted,
}

/// What an agent did.
#[derive(Debug, Clone)]
pub struct AgentRun {
    pub stop: Stop,
    pub exit_code: Option<i32>,
    pub duration: Duration,
    /// Everything it printed, both streams in order (bounded: head and tail).
    pub output: Captured,
}

/// Most bytes of agent output kept (half head, half tail).
pub const AGENT_OUTPUT_LIMIT: usize = 8 << 20;

/// Runs `agent` in `env`, whose agent phase has begun and whose workspace
/// is populated. `time_multiplier` scales the task's budgets.
pub fn run_agent(
    agent: &AgentSpec,
    task: &Task,
    env: &dyn Environment,
    time_multiplier: f64,
    cancel: &CancelToken,
) -> Result<AgentRun, EnvError> {
    let started = Instant::now();
    let budget_sec = match agent {
        AgentSpec::Oracle => task.spec.oracle.timeout_sec,
        _ => task.spec.agent.timeout_sec,
    };
    let timeout = Duration::from_secs_f64(budget_sec as f64 * time_multiplier.max(0.0));
    let argv = match agent {
        AgentSpec::Nop => {
            return Ok(AgentRun {
                stop: Stop::Finished,
                exit_code: Some(0),
                duration: started.elapsed(),
                output: Captured::new(0),
            })
        }
        AgentSpec::Oracle => {
            let dir = workspace::copy_in_private(env, &task.solution_dir(), "solution")?;
            vec!["/bin/bash".to_string(), format!("{dir}/setup.sh")]
        }
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
    };
    let out = env.exec(&req, cancel)?;
    let (stop, exit_code) = match out.status {
        ExitStatus::Exited(code) => (Stop::Finished, Some(code)),
        ExitStatus::Signaled(sig) => (Stop::Crash, Some(128 + sig)),
        ExitStatus::TimedOut => (Stop::Timeout, None),
        ExitStatus::Cancelled => (Stop::Interrupted, None),
    };
    Ok(AgentRun { stop, exit_code, duration: started.elapsed(), output: out.combined })
}
