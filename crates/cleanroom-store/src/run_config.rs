//! run.toml: the resolved configuration of a run, enough to resume it
//! without the original command line and to reproduce it later.

use std::collections::BTreeMap;

use cleanroom_model::GateMode;
use serde::{Deserialize, Serialize};

use crate::agent_id::{agent_ids, gated_id};
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
    /// The completion gate of every agent that names none of its own.
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
    /// The agents download from the registries directly, not through the
    /// package cache (`--no-cache`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cache: bool,
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
    /// Its own completion gate, when the run gives each SPEC several
    /// (`--gate off --gate enforced`); none: the run's `gate`. Runs made
    /// before agents had one name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateMode>,
}

impl AgentEntry {
    /// The agents of a run of `specs` under `gates`. With at most one gate
    /// (the run's), one agent per SPEC, ids as [`agent_ids`] makes them;
    /// with several, one per SPEC and gate, `<id>-gate-<mode>`, each with
    /// its own gate, so that both modes run the same tasks in one run.
    pub fn of_run(specs: &[String], gates: &[GateMode]) -> Vec<AgentEntry> {
        let ids = agent_ids(specs);
        let plain = |(spec, id): (&String, String)| AgentEntry { spec: spec.clone(), id, gate: None };
        if gates.len() < 2 {
            return specs.iter().zip(ids).map(plain).collect();
        }
        specs
            .iter()
            .zip(ids)
            .flat_map(|(spec, id)| {
                gates.iter().map(move |&gate| AgentEntry {
                    spec: spec.clone(),
                    id: gated_id(&id, gate),
                    gate: Some(gate),
                })
            })
            .collect()
    }
}

impl RunConfig {
    /// The completion gate `agent` runs under.
    pub fn gate_of(&self, agent: &AgentEntry) -> GateMode {
        agent.gate.unwrap_or(self.gate)
    }

    /// Each agent's completion gate, by agent id.
    pub fn agent_gates(&self) -> BTreeMap<String, GateMode> {
        self.agents.iter().map(|a| (a.id.clone(), self.gate_of(a))).collect()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(specs: &[&str]) -> Vec<String> {
        specs.iter().map(|s| s.to_string()).collect()
    }

    fn ids_and_gates(agents: &[AgentEntry]) -> Vec<(&str, Option<GateMode>)> {
        agents.iter().map(|a| (a.id.as_str(), a.gate)).collect()
    }

    #[test]
    fn one_gate_keeps_the_plain_ids_and_the_runs_gate() {
        let specs = specs(&["nop", "llm:local"]);
        let expected = [("nop", None), ("llm-local", None)];
        assert_eq!(ids_and_gates(&AgentEntry::of_run(&specs, &[])), expected);
        assert_eq!(ids_and_gates(&AgentEntry::of_run(&specs, &[GateMode::Enforced])), expected);
    }

    #[test]
    fn several_gates_make_an_agent_per_spec_and_gate() {
        let agents = AgentEntry::of_run(&specs(&["nop", "llm:local"]), &[GateMode::Off, GateMode::Enforced]);
        assert_eq!(
            ids_and_gates(&agents),
            [
                ("nop-gate-off", Some(GateMode::Off)),
                ("nop-gate-enforced", Some(GateMode::Enforced)),
                ("llm-local-gate-off", Some(GateMode::Off)),
                ("llm-local-gate-enforced", Some(GateMode::Enforced)),
            ]
        );
        assert_eq!(agents[3].spec, "llm:local", "the SPEC is kept as given");
    }

    #[test]
    fn an_agent_without_a_gate_has_the_runs() {
        let text = r#"
tool_version = "0.1.0"
created = "2026-01-01T00:00:00Z"
run_id = "r"
backend = "sandbox"
tasks = []
trials = 1
jobs = 1
gate = "advisory"
timeout_multiplier = 1.0
retries = 1

[[agents]]
spec = "nop"
id = "nop"

[[agents]]
spec = "nop"
id = "nop-gate-off"
gate = "off"
"#;
        let config: RunConfig = toml::from_str(text).unwrap();
        assert_eq!(config.agents[0].gate, None, "run.toml files of before keep loading");
        assert_eq!(
            config.agent_gates(),
            BTreeMap::from([("nop".into(), GateMode::Advisory), ("nop-gate-off".into(), GateMode::Off)])
        );
        let written = toml::to_string_pretty(&config).unwrap();
        assert_eq!(
            written.matches("gate = ").count(),
            2,
            "no gate written for an agent without one: {written}"
        );
        assert_eq!(toml::from_str::<RunConfig>(&written).unwrap(), config);
    }
}
