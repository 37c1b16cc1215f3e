use std::collections::HashMap;
use std::convert::Infallible;
use std::time::SystemTime;

use cleanroom_store::{rfc3339_utc, Outcome};

use super::*;
use crate::event::TrialKey;
use crate::plan::Kept;
use crate::testing::{input, nop, task, temp_dir};
use crate::{AgentSetup, Staged};

/// A resumed run's memory: trial → (has its result, next attempt).
struct Memory(HashMap<u32, (bool, u32)>);

impl Kept for Memory {
    fn has_result(&self, key: &TrialKey) -> bool {
        self.0.get(&key.trial).is_some_and(|k| k.0)
    }

    fn next_attempt(&self, key: &TrialKey) -> u32 {
        self.0.get(&key.trial).map_or(1, |k| k.1)
    }
}

fn collect(input: &RunInput, plan: Plan) -> Vec<Event> {
    let mut events = Vec::new();
    let ran = run(input, plan, &mut |event| -> Result<(), Infallible> {
        events.push(event.clone());
        Ok(())
    });
    let Ok(()) = ran;
    events
}

/// What happened to trial `n`, in order: (kind, attempt), with each
/// record's own stamps checked against the events'.
fn story(events: &[Event], n: u32) -> Vec<(&'static str, u32)> {
    let mut story = Vec::new();
    let mut started = None;
    for event in events {
        match &event.kind {
            EventKind::TrialStarted { key, attempt } if key.trial == n => {
                started = Some(rfc3339_utc(event.timestamp));
                story.push(("started", *attempt));
            }
            EventKind::AttemptFailed { record, .. } | EventKind::TrialFinished { record, .. }
                if record.trial == n =>
            {
                let (started, ended) = (started.take().unwrap(), rfc3339_utc(event.timestamp));
                assert!(
                    started <= record.started_at
                        && record.started_at <= record.finished_at
                        && record.finished_at <= ended,
                    "trial {n}: started {started}, record {} to {}, reported {ended}",
                    record.started_at,
                    record.finished_at
                );
                let what =
                    if matches!(event.kind, EventKind::AttemptFailed { .. }) { "failed" } else { "finished" };
                story.push((what, record.attempt));
            }
            _ => {}
        }
    }
    story
}

#[test]
fn events_come_in_the_order_of_their_stamps_resumed_and_retried() {
    let root = temp_dir("events");
    let tasks = [task(&root, "t")];
    let agents = [nop()];
    let setup = AgentSetup::default();
    // No artifact staged: every attempt ends in infra_error, and is retried.
    let staged = Staged::new();
    let input = RunInput { trials: 3, ..input(&tasks, &agents, &setup, &staged) };
    // Trial 1 has its result; trial 2 kept two attempts, its retries spent.
    let kept = Memory(HashMap::from([(1, (true, 2)), (2, (false, 3))]));
    let plan = Plan::resume(&input, &kept);
    assert_eq!(plan.planned, 3);
    assert_eq!(
        plan.todo.iter().map(|t| (t.key.trial, t.first_attempt)).collect::<Vec<_>>(),
        [(2, 3), (3, 1)]
    );

    let before = SystemTime::now();
    let events = collect(&input, plan);
    assert!(matches!(events[0].kind, EventKind::Planned { trials: 2, of: 3 }), "{:?}", events[0]);
    assert!(matches!(events.last().unwrap().kind, EventKind::RunFinished { interrupted: false }));
    assert!(events[0].timestamp >= before);
    assert!(events.windows(2).all(|w| w[0].timestamp <= w[1].timestamp), "{events:#?}");
    assert_eq!(story(&events, 1), []);
    // A trial whose kept attempts used up its retries still gets one.
    assert_eq!(story(&events, 2), [("started", 3), ("finished", 3)]);
    assert_eq!(story(&events, 3), [("started", 1), ("failed", 1), ("started", 2), ("finished", 2)]);
    for event in &events {
        if let EventKind::AttemptFailed { record, .. } | EventKind::TrialFinished { record, .. } = &event.kind
        {
            assert_eq!(record.outcome, Outcome::InfraError);
            assert!(record.error.as_deref().unwrap().contains("was not staged"), "{record:?}");
        }
    }
}

#[test]
fn a_failing_reporter_cancels_the_run_and_still_hears_every_event() {
    let root = temp_dir("failing-reporter");
    let tasks = [task(&root, "t")];
    let agents = [nop()];
    let setup = AgentSetup::default();
    let staged = Staged::new();
    let input = RunInput { trials: 3, jobs: 1, retries: 0, ..input(&tasks, &agents, &setup, &staged) };
    let mut finished = 0;
    let mut last = None;
    let result = run(&input, Plan::resume(&input, &crate::NothingKept), &mut |event| {
        last = Some(event.kind.clone());
        match event.kind {
            EventKind::TrialFinished { .. } => {
                finished += 1;
                Err(format!("write {finished} failed"))
            }
            _ => Ok(()),
        }
    });
    assert_eq!(result, Err("write 1 failed".to_string()), "the first error is the run's");
    assert!(input.cancel.is_cancelled());
    assert!(matches!(last, Some(EventKind::RunFinished { interrupted: true })), "{last:?}");
    assert!(finished >= 1);
}
