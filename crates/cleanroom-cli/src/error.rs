//! The one error type of the command line, and its exit codes (DESIGN.md):
//! 2 for bad input, 1 for a failure of cleanroom itself, 130 when
//! interrupted, 100 when `--fail-under` is not met.

use std::process::ExitCode;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A task, a flag, the configuration.
    #[error("{0}")]
    Input(String),
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
            CliError::Input(_) => 2,
            CliError::Internal(_) => 1,
            CliError::Interrupted(_) => 130,
            CliError::BelowThreshold { .. } => 100,
        })
    }
}

pub fn input(e: impl std::fmt::Display) -> CliError {
    CliError::Input(e.to_string())
}

pub fn internal(e: impl std::fmt::Display) -> CliError {
    CliError::Internal(e.to_string())
}
