//! The trial record, result.json (DESIGN.md, "Run directory" and
//! "Outcomes"). Scripts outside the project read it: field names and
//! spellings are a public contract, guarded by a test against DESIGN.md's
//! example. Unknown fields are ignored on reading, so newer writers with
//! extra fields stay readable.

use serde::{Deserialize, Serialize};

use cleanroom_env::Limits;
use cleanroom_model::{AppliedGate, GateDecision, GateMechanism, StopReason};
use cleanroom_verify::{Verdict, VerdictStage};

use cleanroom_env::time::rfc3339_utc_now;

/// The `schema_version` this crate writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub schema_version: u32,
    /// The task id.
    pub task: String,
    /// The agent SPEC as given, e.g. `script:/path/to/agent.sh`.
    pub agent: String,
    /// The file-name-safe slug of `agent`, unique within the run.
    pub agent_id: String,
    /// The model id for `llm:` agents.
    pub model: Option<String>,
    /// The trial number, from 1.
    pub trial: u32,
    pub outcome: Outcome,
    /// Set only when `outcome` is `failed`.
    pub class: Option<FailureClass>,
    /// Set only when `outcome` is `skipped`: what the backend cannot provide.
    pub skip_reason: Option<String>,
    /// Why the agent phase ended; none when it never started.
    pub stop_reason: Option<StopReason>,
    /// The agent's exit code, when it had one.
    pub exit_code: Option<i32>,
    /// How far the hidden pipeline got; `none` without a verdict.
    pub stage: VerdictStage,
    /// The completion gate as it applied to this trial.
    pub gate: AppliedGate,
    /// What held the agent to the gate, when one applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_mechanism: Option<GateMechanism>,
    /// Every decision of the gate, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gate_decisions: Vec<GateDecision>,
    pub timings: Timings,
    pub tokens: Tokens,
    pub cost_usd: f64,
    pub verdict: Option<Verdict>,
    pub tags: Vec<Tag>,
    /// Which resource limits held; none when no environment was made.
    pub limits: Option<Limits>,

    // Beyond DESIGN.md's minimum. Defaulted on reading, so that records
    // written with only the documented fields still load.
    /// Which attempt this is, from 1; earlier ones ended in infra errors.
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// The infra error, when `outcome` is `infra_error`; the model API's
    /// failure or the budget that ran out, for agents that use a model.
    #[serde(default)]
    pub error: Option<String>,
    /// How the trial's machine ran its CPUs (`kvm`, `tcg`), on a backend of
    /// virtual machines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator: Option<String>,
    /// The host the trial ran on, on a backend of remote hosts (ssh): its
    /// name, GPUs and driver as seen when the trial took it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<cleanroom_env::MachineRecord>,
    /// Where the attempt ran when not in the process that ran the run: the
    /// Slurm executor's job and node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<ExecutorRecord>,
    /// Model requests made, for agents that use a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<u32>,
    /// Of those, answers retried (429, 5xx, dropped connections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_retries: Option<u32>,
    /// RFC 3339, UTC.
    #[serde(default)]
    pub started_at: String,
    /// RFC 3339, UTC.
    #[serde(default)]
    pub finished_at: String,
    /// How many files of the artifact the agent added, removed, modified.
    #[serde(default)]
    pub changes: Option<ChangeCounts>,
    /// The protected files that the agent changed (class `tampered`).
    #[serde(default)]
    pub tampered: Vec<String>,
    /// The task is a negative control: no correct deployment passes it, so
    /// a pass is a suspected forgery or a broken verifier, and the trial is
    /// kept out of every pass rate. Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub negative_control: bool,
    /// What the package cache moved for the agent's downloads; none when
    /// the trial had no cache (`--no-cache`, a task without network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheBytes>,
}

/// Bytes of packages (wheels, .debs, tarballs, crates, and their indexes)
/// a trial's downloads took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheBytes {
    /// Fetched from the registries.
    pub bytes_upstream: u64,
    /// Served from the cache without asking the registries.
    pub bytes_from_cache: u64,
}

/// An attempt's place in a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutorRecord {
    /// `slurm`.
    pub name: String,
    /// The job array element, `JOBID_INDEX`.
    pub job_id: String,
    /// The node it ran on, as the scheduler names it.
    pub node: String,
}

fn first_attempt() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
    InfraError,
    Skipped,
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [Outcome::Passed, Outcome::Failed, Outcome::InfraError, Outcome::Skipped];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::InfraError => "infra_error",
            Outcome::Skipped => "skipped",
        }
    }
}

/// Why a trial failed. Declared in the order reports list them; the
/// classifier's precedence (tampered first) lives in the classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    SelfStop,
    Budget,
    AgentError,
    Tampered,
}

impl FailureClass {
    pub const ALL: [FailureClass; 4] =
        [FailureClass::SelfStop, FailureClass::Budget, FailureClass::AgentError, FailureClass::Tampered];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::SelfStop => "self_stop",
            FailureClass::Budget => "budget",
            FailureClass::AgentError => "agent_error",
            FailureClass::Tampered => "tampered",
        }
    }
}

/// Seconds spent in each phase.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Timings {
    pub environment: f64,
    pub agent: f64,
    pub verify: f64,
}

impl Timings {
    pub fn total(&self) -> f64 {
        self.environment + self.agent + self.verify
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

/// A classifier tag and the lines that triggered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    pub name: String,
    pub evidence: Vec<Evidence>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// A file of the trial directory, e.g. `agent.log`.
    pub file: String,
    /// 1-based.
    pub line: u64,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChangeCounts {
    pub added: u64,
    pub removed: u64,
    pub modified: u64,
}

impl TrialRecord {
    /// A record with neutral defaults for callers to fill in: outcome
    /// `infra_error` (so a trial cut short is never counted as passed or
    /// failed), no class, stage `none`, gate `off`, zero timings, tokens and
    /// cost, and both timestamps now (set `finished_at` when the trial ends).
    pub fn new(
        task: impl Into<String>,
        agent: impl Into<String>,
        agent_id: impl Into<String>,
        trial: u32,
        attempt: u32,
    ) -> TrialRecord {
        let now = rfc3339_utc_now();
        TrialRecord {
            schema_version: SCHEMA_VERSION,
            task: task.into(),
            agent: agent.into(),
            agent_id: agent_id.into(),
            model: None,
            trial,
            outcome: Outcome::InfraError,
            class: None,
            skip_reason: None,
            stop_reason: None,
            exit_code: None,
            stage: VerdictStage::None,
            gate: AppliedGate::Off,
            gate_mechanism: None,
            gate_decisions: Vec::new(),
            timings: Timings::default(),
            tokens: Tokens::default(),
            cost_usd: 0.0,
            verdict: None,
            tags: Vec::new(),
            limits: None,
            attempt,
            error: None,
            accelerator: None,
            machine: None,
            executor: None,
            steps: None,
            model_retries: None,
            started_at: now.clone(),
            finished_at: now,
            changes: None,
            tampered: Vec::new(),
            negative_control: false,
            cache: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_env::LimitState;
    use serde_json::{json, Value};

    /// DESIGN.md's example result.json, with one value picked where it
    /// lists the alternatives, and the verdict's own fields added.
    fn design_example() -> Value {
        json!({"schema_version": 1,
         "task": "sobol-seq", "agent": "script:/path/to/agent.sh", "agent_id": "script-agent-sh", "model": null,
         "trial": 1,
         "outcome": "failed",
         "class": "self_stop",
         "skip_reason": null,
         "stop_reason": "finished",
         "exit_code": 0,
         "stage": "run",
         "gate": "off",
         "timings": {"environment": 0.01, "agent": 12.3, "verify": 4.5},
         "tokens": {"prompt": 0, "completion": 0, "cached": 0}, "cost_usd": 0.0,
         "verdict": {"steps": [{"name": "...", "stage": "run", "exit_code": 0, "seconds": 1.2, "status": "passed"}],
                     "checks": [{"name": "...", "passed": false, "expected": "...", "observed": "..."}],
                     "stage": "run", "passed": false},
         "tags": [{"name": "dependency_repair", "evidence": [{"file": "agent.log", "line": 120, "text": "..."}]}],
         "limits": {"memory": "enforced", "pids": "enforced", "disk": "enforced"}})
    }

    /// Sorted, whether or not serde_json preserves order.
    fn keys(v: &Value) -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    }

    #[test]
    fn design_example_round_trips_with_its_keys() {
        let example = design_example();
        let record: TrialRecord = serde_json::from_value(example.clone()).unwrap();
        assert_eq!(record.outcome, Outcome::Failed);
        assert_eq!(record.class, Some(FailureClass::SelfStop));
        assert_eq!(record.stage, VerdictStage::Run);
        assert_eq!(record.attempt, 1);
        assert_eq!(record.limits.unwrap().disk, LimitState::Enforced);

        let written = serde_json::to_value(&record).unwrap();
        let extras = ["attempt", "error", "started_at", "finished_at", "changes", "tampered"];
        let documented: Vec<String> =
            keys(&written).into_iter().filter(|k| !extras.contains(&k.as_str())).collect();
        assert_eq!(documented, keys(&example), "result.json's documented keys");
        for key in keys(&example) {
            assert_eq!(written[&key], example[&key], "field {key}");
        }
    }

    #[test]
    fn new_record_has_every_documented_key_and_neutral_values() {
        let r = TrialRecord::new("sobol-seq", "nop", "nop", 3, 1);
        let v = serde_json::to_value(&r).unwrap();
        for key in keys(&design_example()) {
            assert!(v.get(&key).is_some(), "missing {key}");
        }
        assert_eq!(v["outcome"], "infra_error");
        assert_eq!(v["class"], Value::Null);
        assert_eq!(v["stage"], "none");
        assert_eq!(v["gate"], "off");
        assert_eq!(v["trial"], 3);
        assert_eq!(v["limits"], Value::Null);
        assert!(r.started_at.ends_with('Z'));
    }

    #[test]
    fn enum_spellings() {
        let s = |v: Value| v.as_str().unwrap().to_string();
        assert_eq!(Outcome::ALL.map(Outcome::as_str), ["passed", "failed", "infra_error", "skipped"]);
        for o in Outcome::ALL {
            assert_eq!(s(serde_json::to_value(o).unwrap()), o.as_str());
        }
        for c in FailureClass::ALL {
            assert_eq!(s(serde_json::to_value(c).unwrap()), c.as_str());
        }
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let mut v = serde_json::to_value(TrialRecord::new("t", "nop", "nop", 1, 2)).unwrap();
        v["from_the_future"] = json!({"x": 1});
        let r: TrialRecord = serde_json::from_value(v).unwrap();
        assert_eq!(r.attempt, 2);
    }
}
