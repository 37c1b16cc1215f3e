//! The pool of a run. `jobs` workers take trials from one queue and run
//! each, retrying its infra errors; they stamp their events and send them
//! down one channel to the caller's thread, which alone hands them to the
//! reporter. A reporter that fails cancels the run: the running trials stop
//! without a record (a resumed run does them again), and every event still
//! reaches the reporter, so that nothing recorded is lost. The workers also
//! keep a list of the attempts under way, from which the caller's thread,
//! between events, reports each one that has run a while (`Progress`).

use std::collections::VecDeque;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Instant;

use cleanroom_env::LastLine;

use cleanroom_store::Outcome;

use crate::event::{Event, EventKind, Phase, Todo, TrialKey};
use crate::executor::{Executor, Local};
use crate::plan::Plan;
use crate::progress::{AttemptProgress, Running};
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
    let running = Mutex::new(Vec::new());
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let emitter = Emitter { tx: tx.clone(), order: &order, running: &running };
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
        let Some(every) = input.progress_every else {
            for event in rx {
                deliver(event);
            }
            return;
        };
        let mut next = Instant::now() + every;
        loop {
            match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(event) => deliver(event),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if Instant::now() >= next {
                let under_way = running.lock().unwrap_or_else(|p| p.into_inner()).clone();
                for r in under_way.into_iter().filter(|r| r.elapsed() >= every) {
                    let (elapsed, last_line) = (r.elapsed(), r.output.get());
                    deliver(Event::now(EventKind::Progress {
                        key: r.key,
                        attempt: r.attempt,
                        phase: r.phase,
                        elapsed,
                        last_line,
                    }));
                }
                next = Instant::now() + every;
            }
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
    /// The attempts under way, of every worker.
    running: &'a Mutex<Vec<Running>>,
}

impl Emitter<'_> {
    fn emit(&self, kind: EventKind) {
        let _order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        // The receiver lives until every worker has returned.
        let _ = self.tx.send(Event::now(kind));
    }

    fn under_way(&self) -> std::sync::MutexGuard<'_, Vec<Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An attempt starts: it is under way until `done`.
    fn started(&self, key: &TrialKey, attempt: u32) -> LastLine {
        let output = LastLine::new();
        let entry = Running {
            key: key.clone(),
            attempt,
            started: Instant::now(),
            phase: None,
            output: output.clone(),
        };
        self.under_way().push(entry);
        self.emit(EventKind::TrialStarted { key: key.clone(), attempt });
        output
    }

    fn phase(&self, key: &TrialKey, attempt: u32, phase: Phase) {
        if let Some(r) = self.under_way().iter_mut().find(|r| r.key == *key && r.attempt == attempt) {
            r.phase = Some(phase);
        }
        self.emit(EventKind::PhaseChanged { key: key.clone(), attempt, phase });
    }

    fn done(&self, key: &TrialKey, attempt: u32) {
        self.under_way().retain(|r| !(r.key == *key && r.attempt == attempt));
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
        let output = emitter.started(key, attempt);
        let phase = |phase| emitter.phase(key, attempt, phase);
        let progress = AttemptProgress::new(&phase, output);
        let end = executor.attempt(input, task, agent, key, attempt, todo.verify_twice, &progress);
        emitter.done(key, attempt);
        match end {
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
