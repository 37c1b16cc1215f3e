//! What every job of a Slurm run is submitted with (`--executor slurm`),
//! from the flags and the configuration's `[slurm]` section, recorded in
//! run.toml.

use serde::{Deserialize, Serialize};

/// What every job of a Slurm run is submitted with, beyond each task's own
/// resources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// A job's time limit as sbatch takes it; without one, each task's own
    /// budget decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// More sbatch options, each one argument (`--qos=low`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}
