//! run.toml: the resolved configuration of a run, enough to resume it
//! without the original command line and to reproduce it later.

use std::collections::BTreeMap;

use cleanroom_model::GateMode;
use serde::{Deserialize, Serialize};

use crate::TaskInfo;

/// The resolved configuration of a run, written to run.toml.
///
/// Never put a secret here: run.toml is shared with results. Models name
/// their API key by environment variable only (DESIGN.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// The cleanroom version that made the run.
    pub tool_version: String,
    /// RFC 3339, UTC.
    pub created: String,
    pub run_id: String,
    /// The environment backend, e.g. `sandbox`.
    pub backend: String,
    /// How the backend's machines run their CPUs (`kvm`, `tcg`), for a
    /// backend of virtual machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// Base image name to its digest.
    #[serde(default)]
    pub images: BTreeMap<String, String>,
    /// The task directories as given, made absolute.
    pub tasks: Vec<String>,
    /// The `--task` selections; empty means every task.
    #[serde(default)]
    pub task_ids: Vec<String>,
    pub agents: Vec<AgentEntry>,
    pub trials: u32,
    pub jobs: u32,
    pub gate: GateMode,
    pub timeout_multiplier: f64,
    pub retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The configuration files read, for the record.
    #[serde(default)]
    pub config_sources: Vec<String>,
    /// The models the run's agents use, as configured (keys by variable
    /// name only).
    #[serde(default)]
    pub models: BTreeMap<String, cleanroom_model::ModelConfig>,
    /// The external agents the run uses, with their scripts.
    #[serde(default)]
    pub external_agents: BTreeMap<String, cleanroom_model::ExternalAgent>,
    #[serde(default)]
    pub allow_unlimited: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_under: Option<f64>,
    /// Task id to the artifact it was run against.
    #[serde(default)]
    pub artifacts: BTreeMap<String, ArtifactEntry>,
    /// The run's trials go to a Slurm cluster (`--executor slurm`), with
    /// these options; none: on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<cleanroom_env::SlurmOptions>,
    /// Task id to its metadata when the run started; empty in runs made
    /// before cleanroom kept it, whose reports load the task directories.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_info: BTreeMap<String, TaskInfo>,
}

/// An agent of the run: its SPEC as given and its id in trial paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEntry {
    pub spec: String,
    pub id: String,
}

/// Where a task's artifact came from, pinned as far as its kind allows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactEntry {
    /// E.g. `git`, `archive`, `directory`.
    pub kind: String,
    /// A URL or a path.
    pub location: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A git commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}
