//! From what happened to the outcome and failure class (DESIGN.md,
//! "Outcomes"): `tampered`, then `agent_error`, then `budget`, then
//! `self_stop`, the first that applies.

use cleanroom_agent::Stop;
use cleanroom_store::{FailureClass, Outcome};

/// The outcome of a trial whose agent stopped for `stop` and whose
/// verifier said `verdict_passed`.
pub(crate) fn classify(stop: Stop, verdict_passed: bool, tampered: bool) -> (Outcome, Option<FailureClass>) {
    if verdict_passed && !tampered {
        return (Outcome::Passed, None);
    }
    let class = if tampered {
        FailureClass::Tampered
    } else {
        match stop {
            Stop::Crash => FailureClass::AgentError,
            Stop::Timeout | Stop::Budget => FailureClass::Budget,
            Stop::Finished | Stop::Interrupted => FailureClass::SelfStop,
        }
    };
    (Outcome::Failed, Some(class))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    #[test]
    fn tampering_fails_even_a_passing_verdict() {
        assert_eq!(classify(Stop::Finished, true, true), (Outcome::Failed, Some(FailureClass::Tampered)));
    }

    #[test]
    fn classes_follow_the_stop_reason() {
        assert_eq!(classify(Stop::Finished, true, false), (Outcome::Passed, None));
        assert_eq!(
            classify(Stop::Timeout, true, false),
            (Outcome::Passed, None),
            "verification decides, whatever the stop"
        );
        assert_eq!(classify(Stop::Finished, false, false).1, Some(FailureClass::SelfStop));
        assert_eq!(classify(Stop::Timeout, false, false).1, Some(FailureClass::Budget));
        assert_eq!(classify(Stop::Crash, false, false).1, Some(FailureClass::AgentError));
        assert_eq!(classify(Stop::Crash, false, true).1, Some(FailureClass::Tampered));
    }

    /// result.json's `stop_reason` and the trajectory's `extra.stop.reason`
    /// name every way an agent stops alike (a model API that failed for good
    /// is a `crash` in both).
    #[test]
    fn the_record_and_the_trajectory_name_a_stop_alike() {
        let expected = [
            (Stop::Finished, json!("finished")),
            (Stop::Timeout, json!("timeout")),
            (Stop::Budget, json!("budget")),
            (Stop::Crash, json!("crash")),
            (Stop::Interrupted, Value::Null),
        ];
        for (stop, name) in expected {
            let mut record = cleanroom_store::TrialRecord::new("t", "llm:m", "llm-m", 1, 1);
            record.stop_reason = stop.reason();
            let written = serde_json::to_value(&record).unwrap();
            assert_eq!(written["stop_reason"], name, "{stop:?} in result.json");
            assert_eq!(
                cleanroom_agent::trajectory_stop(stop, None)["reason"],
                name,
                "{stop:?} in the trajectory"
            );
        }
    }
}
