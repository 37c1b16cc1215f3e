//! The one error type of the command line, and the one table that maps it
//! to exit codes (README, "Commands"): 2 for bad input, 1 for a failure of
//! cleanroom itself, 130 when interrupted, 100 when `--fail-under` is not
//! met. Errors of the libraries stay typed up to here, so which of them is
//! the user's to fix is decided in [`CliError::exit_code`] alone.

use std::process::ExitCode;

use cleanroom_agent::{ConfigError, SpecError};
use cleanroom_env::EnvError;
use cleanroom_store::{IndexError, StoreError};
use cleanroom_task::LoadErrors;

/// The exit codes.
pub const BAD_INPUT: u8 = 2;
pub const FAILURE: u8 = 1;
pub const INTERRUPTED: u8 = 130;
pub const BELOW_THRESHOLD: u8 = 100;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input that the command line finds itself (a flag, an argument,
    /// their combination, a task that fails its check); the message says
    /// what to do.
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Tasks(#[from] LoadErrors),
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Agent(#[from] SpecError),
    /// The run directory or `--out`.
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Index(#[from] IndexError),
    /// The environment backend and its images.
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("{0}")]
    Internal(String),
    #[error("interrupted: the run can be resumed with --resume {0}")]
    Interrupted(String),
    #[error("pass rate {rate:.3} is below --fail-under {threshold}")]
    BelowThreshold { rate: f64, threshold: f64 },
}

impl CliError {
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::Input(_) | CliError::Tasks(_) | CliError::Config(_) | CliError::Agent(_) => BAD_INPUT,
            CliError::Store(e) => store_code(e),
            CliError::Index(IndexError::Store(e)) => store_code(e),
            CliError::Index(IndexError::NewerSchema { .. } | IndexError::NoDir(_)) => BAD_INPUT,
            CliError::Index(_) => FAILURE,
            CliError::Env(EnvError::UnknownImage { .. } | EnvError::UnknownBackend { .. }) => BAD_INPUT,
            CliError::Env(_) | CliError::Internal(_) => FAILURE,
            CliError::Interrupted(_) => INTERRUPTED,
            CliError::BelowThreshold { .. } => BELOW_THRESHOLD,
        })
    }
}

/// What the user named (`--out`, `--resume RUN_DIR`, a run of `report`) and
/// can fix is bad input; a write that fails in a usable run directory is
/// cleanroom's failure.
fn store_code(e: &StoreError) -> u8 {
    match e {
        StoreError::OutDir { .. }
        | StoreError::RunExists(_)
        | StoreError::NoRun(_)
        | StoreError::InUse { .. }
        | StoreError::BadRecord { .. }
        | StoreError::NewerSchema { .. }
        | StoreError::BadConfig { .. }
        | StoreError::BadName { .. } => BAD_INPUT,
        StoreError::Io { .. }
        | StoreError::Encode { .. }
        | StoreError::ReservedName { .. }
        | StoreError::ResultExists(_)
        | StoreError::AttemptExists(_) => FAILURE,
    }
}

pub fn input(e: impl std::fmt::Display) -> CliError {
    CliError::Input(e.to_string())
}

pub fn internal(e: impl std::fmt::Display) -> CliError {
    CliError::Internal(e.to_string())
}
