//! From what happened to the outcome and failure class (DESIGN.md,
//! "Outcomes"): `tampered`, then `agent_error`, then `budget`, then
//! `self_stop`, the first that applies.

use cleanroom_agent::Stop;
use cleanroom_store::{FailureClass, Outcome, StopReason};

pub(crate) fn stop_reason(stop: Stop) -> Option<StopReason> {
    match stop {
        Stop::Finished => Some(StopReason::Finished),
        Stop::Timeout => Some(StopReason::Timeout),
        Stop::Budget => Some(StopReason::Budget),
        // A model API that failed for good ends the agent as a crash would.
        Stop::Crash | Stop::ModelError => Some(StopReason::Crash),
        Stop::Interrupted => None,
    }
}

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
            Stop::Crash | Stop::ModelError => FailureClass::AgentError,
            Stop::Timeout | Stop::Budget => FailureClass::Budget,
            Stop::Finished | Stop::Interrupted => FailureClass::SelfStop,
        }
    };
    (Outcome::Failed, Some(class))
}

#[cfg(test)]
mod tests {
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
}
