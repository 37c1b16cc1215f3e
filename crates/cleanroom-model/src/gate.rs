//! The completion gate as configured (run.toml's `gate`, `--gate`) and as
//! it applied to a trial (result.json's `gate`). They live here, below the
//! agents and the store, because the agents decide what applied and the
//! store writes both.

use serde::{Deserialize, Serialize};

/// The gate a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateMode {
    /// Raw agents, measured as they are.
    Off,
    /// On finish, the public experiment's report goes back to the agent.
    Advisory,
    /// The agent may not finish until the public experiment succeeds.
    Enforced,
}

impl GateMode {
    pub const ALL: [GateMode; 3] = [GateMode::Off, GateMode::Advisory, GateMode::Enforced];

    /// The name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            GateMode::Off => "off",
            GateMode::Advisory => "advisory",
            GateMode::Enforced => "enforced",
        }
    }
}

/// What the gate was for one trial: the mode, or why a mode other than
/// `off` did not apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppliedGate {
    Off,
    Advisory,
    Enforced,
    /// The task has no public experiment command to run.
    Unavailable,
    /// The agent has no finish the harness sees: oracle, nop and scripts,
    /// which are not agents that could be told to go on.
    Unsupported,
}

impl AppliedGate {
    pub const ALL: [AppliedGate; 5] = [
        AppliedGate::Off,
        AppliedGate::Advisory,
        AppliedGate::Enforced,
        AppliedGate::Unavailable,
        AppliedGate::Unsupported,
    ];

    /// The name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            AppliedGate::Off => "off",
            AppliedGate::Advisory => "advisory",
            AppliedGate::Enforced => "enforced",
            AppliedGate::Unavailable => "unavailable",
            AppliedGate::Unsupported => "unsupported",
        }
    }
}

/// What held an agent to the gate: the built-in agent's `finish`, a stop
/// hook of the agent's CLI, or a restart of a CLI that ended on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateMechanism {
    BuiltIn,
    Hook,
    Restart,
}

impl GateMechanism {
    pub const ALL: [GateMechanism; 3] = [GateMechanism::BuiltIn, GateMechanism::Hook, GateMechanism::Restart];

    /// The name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            GateMechanism::BuiltIn => "built_in",
            GateMechanism::Hook => "hook",
            GateMechanism::Restart => "restart",
        }
    }
}

/// What the gate said to one stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// The agent may stop.
    Accepted,
    /// Advisory: the report went back; the agent may stop again.
    Advised,
    /// Enforced: the agent may not stop yet; the report went back.
    Refused,
}

impl GateVerdict {
    pub const ALL: [GateVerdict; 3] = [GateVerdict::Accepted, GateVerdict::Advised, GateVerdict::Refused];

    /// The name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            GateVerdict::Accepted => "accepted",
            GateVerdict::Advised => "advised",
            GateVerdict::Refused => "refused",
        }
    }
}

/// One decision of the gate, as result.json keeps it (the trajectory keeps
/// the experiment's output too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    pub decision: GateVerdict,
    /// Why an accepted stop was accepted (`experiment succeeded`,
    /// `refusals used up`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The public experiment's exit code, when it ran and ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether it ran and succeeded (exit 0, every output present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<bool>,
    /// The declared outputs it did not write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_outputs: Vec<String>,
}

impl From<GateMode> for AppliedGate {
    /// The mode, where it applies.
    fn from(mode: GateMode) -> AppliedGate {
        match mode {
            GateMode::Off => AppliedGate::Off,
            GateMode::Advisory => AppliedGate::Advisory,
            GateMode::Enforced => AppliedGate::Enforced,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_the_serialized_ones() {
        for m in GateMode::ALL {
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
            assert_eq!(serde_json::from_value::<GateMode>(m.as_str().into()).unwrap(), m);
            assert_eq!(AppliedGate::from(m).as_str(), m.as_str(), "a mode that applies keeps its name");
        }
        for g in AppliedGate::ALL {
            assert_eq!(serde_json::to_value(g).unwrap(), g.as_str());
            assert_eq!(serde_json::from_value::<AppliedGate>(g.as_str().into()).unwrap(), g);
        }
        for v in GateVerdict::ALL {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
        for m in GateMechanism::ALL {
            assert_eq!(serde_json::to_value(m).unwrap(), m.as_str());
            assert_eq!(serde_json::from_value::<GateMechanism>(m.as_str().into()).unwrap(), m);
        }
    }
}
