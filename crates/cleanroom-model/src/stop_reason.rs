//! Why an agent's phase ended, as result.json (`stop_reason`) and the
//! trajectory (`extra.stop.reason`) both name it: one enum, one spelling.
//! It lives here, below the agents and the store, because both write it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The agent ended on its own, whatever its exit code.
    Finished,
    /// Its wall-clock budget ran out.
    Timeout,
    /// Its step, token or cost budget ran out.
    Budget,
    /// It died of a signal the harness did not send (e.g. out of memory),
    /// or its model API failed for good (stalled, kept failing, answered
    /// garbage); the record's `error` says which.
    Crash,
}

impl StopReason {
    pub const ALL: [StopReason; 4] =
        [StopReason::Finished, StopReason::Timeout, StopReason::Budget, StopReason::Crash];

    /// The name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Finished => "finished",
            StopReason::Timeout => "timeout",
            StopReason::Budget => "budget",
            StopReason::Crash => "crash",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_serialized_one() {
        for r in StopReason::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
            assert_eq!(serde_json::from_value::<StopReason>(r.as_str().into()).unwrap(), r);
        }
    }
}
