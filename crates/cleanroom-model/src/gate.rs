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
    /// The agent has no finish the harness sees (oracle, nop, scripts,
    /// external agents without a stop hook).
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
    }
}
