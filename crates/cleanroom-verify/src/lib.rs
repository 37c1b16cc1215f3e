//! The hidden verification pipeline and its verdict: run the designated
//! experiment's steps in the environment after the agent phase, judge the
//! outputs from the host, and list what the agent changed in the artifact.

mod access;
mod changes;
mod checks;
mod login_env;
mod outputs;
mod pipeline;
mod verdict;

/// The task format's types that the verifier reads.
use cleanroom_task as task;

pub use changes::{Change, ChangeKind, Changes};
pub use checks::{evaluate, within, CheckResult};
pub use login_env::{read_login_env, LoginEnv};
pub use outputs::{Output, Outputs, MAX_KEPT_BYTES, MAX_KEPT_FILES};
pub use pipeline::{protected_paths, run_pipeline, Pipeline, READ_LIMIT, STEP_PATH};
pub use verdict::{stage_reached, StepResult, StepStatus, Verdict, VerdictStage};
