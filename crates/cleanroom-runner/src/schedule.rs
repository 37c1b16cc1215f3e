//! The pool of a run. `jobs` workers take trials from one queue and run
//! each, retrying its infra errors; they stamp their events and send them
//! down one channel to the caller's thread, which alone hands them to the
//! reporter. A reporter that fails cancels the run: the running trials stop
//! without a record (a resumed run does them again), and every event still
//! reaches the reporter, so that nothing recorded is lost.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Sender};
use std::sync::Mutex;

use cleanroom_store::Outcome;

use crate::event::{Event, EventKind, Todo};
use crate::executor::{Executor, Local};
use crate::plan::Plan;
use crate::trial::{self, AttemptEnd};
use crate::RunInput;

/// Runs the trials of `plan` on this machine ([`Local`]) and hands every
/// event to `report`. Returns when every trial has its record, or the run
/// was cancelled and its running trials have stopped; with the reporter's
/// first error, if any.
pub fn run<E>(
    input: &RunInput,
    plan: Plan,
    report: &mut dyn FnMut(&Event) -> Result<(), E>,
) -> Result<(), E> {
    run_with(input, plan, &Local, report)
}

/// [`run`], each attempt run by `executor`.
pub fn run_with<E>(
    input: &RunInput,
    plan: Plan,
    executor: &dyn Executor,
    report: &mut dyn FnMut(&Event) -> Result<(), E>,
) -> Result<(), E> {
    let mut first_error = None;
    let mut deliver = |event: Event| {
        if let Err(e) = report(&event) {
            input.cancel.cancel();
            first_error.get_or_insert(e);
        }
    };
    deliver(Event::now(EventKind::Planned { trials: plan.todo.len(), of: plan.planned }));
    executor.begin(input, &plan.todo);
    let workers = executor.workers(input.jobs, plan.todo.len()).max(1);
    let queue = Mutex::new(VecDeque::from(plan.todo));
    let order = Mutex::new(());
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let emitter = Emitter { tx: tx.clone(), order: &order };
            let queue = &queue;
            scope.spawn(move || loop {
                if input.cancel.is_cancelled() {
                    return;
                }
                let Some(todo) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front() else {
                    return;
                };
                run_trial(input, executor, &todo, &emitter);
            });
        }
        drop(tx);
        for event in rx {
            deliver(event);
        }
    });
    deliver(Event::now(EventKind::RunFinished { interrupted: input.cancel.is_cancelled() }));
    first_error.map_or(Ok(()), Err)
}

/// A worker's end of the channel.
struct Emitter<'a> {
    tx: Sender<Event>,
    /// Held while an event is stamped and sent, so that the stream is in
    /// the order of its stamps.
    order: &'a Mutex<()>,
}

impl Emitter<'_> {
    fn emit(&self, kind: EventKind) {
        let _order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        // The receiver lives until every worker has returned.
        let _ = self.tx.send(Event::now(kind));
    }
}

fn run_trial(input: &RunInput, executor: &dyn Executor, todo: &Todo, emitter: &Emitter) {
    let key = &todo.key;
    let (Some(task), Some(agent)) =
        (input.tasks.iter().find(|t| t.id == key.task), input.agents.iter().find(|a| a.id == key.agent_id))
    else {
        return;
    };
    // A trial always gets one attempt, even if the kept ones used up its
    // retries.
    let last = (input.retries + 1).max(todo.first_attempt);
    for attempt in todo.first_attempt..=last {
        emitter.emit(EventKind::TrialStarted { key: key.clone(), attempt });
        let phase = |phase| emitter.emit(EventKind::PhaseChanged { key: key.clone(), attempt, phase });
        match executor.attempt(input, task, agent, key, attempt, todo.verify_twice, &phase) {
            AttemptEnd::Interrupted => return,
            AttemptEnd::Done(done) => {
                let trial::Attempt { record, files, repeat } = *done;
                let retry =
                    record.outcome == Outcome::InfraError && attempt < last && !input.cancel.is_cancelled();
                if retry {
                    emitter.emit(EventKind::AttemptFailed { record, files });
                } else {
                    emitter.emit(EventKind::TrialFinished { record, files, second_verdict: repeat });
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
