//! Environments made ahead of need, so that a trial starts at once: the
//! disk made and mounted, the overlay root, the cgroup, and an agent phase
//! already begun with outbound network (its PID namespace, its NAT), all
//! while earlier trials run.
//!
//! - **Bounded.** At most `size` environments wait (the run's `--jobs`);
//!   one thread makes them, one at a time.
//! - **Never handed out twice.** [`Pool::take`] removes the environment
//!   it returns; a used environment is destroyed, never put back.
//! - **Fitted at take.** Ready environments differ only by image and disk
//!   size (what cannot change later); memory, process and CPU limits are
//!   set when one is taken. Those of the most recently asked-for shapes
//!   are kept.
//! - **Drained.** Dropping the pool (with its backend, when the run ends)
//!   destroys what waits, in the thread that made it: the mount keeper and
//!   the phase die with the thread that started them, so that thread
//!   lives until then.
//! - **Swept after a crash.** A waiting environment is an ordinary one of
//!   this process (its owner file, its cgroup record): the next command's
//!   sweep removes it if the process died.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::backend::{EnvSpec, Environment, Network};
use crate::error::EnvError;
use crate::sandbox::SandboxEnv;

/// After this many failures in a row to make one shape, it is no longer
/// made ahead (each trial then makes its own, and reports the error).
const GIVE_UP_AFTER: u32 = 3;

/// What cannot be changed once an environment is made.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shape {
    image: String,
    disk_mb: u64,
    allow_unlimited: bool,
}

impl Shape {
    fn of(spec: &EnvSpec) -> Shape {
        Shape { image: spec.image.clone(), disk_mb: spec.disk_mb, allow_unlimited: spec.allow_unlimited }
    }
}

type Make = dyn Fn(&EnvSpec) -> Result<SandboxEnv, EnvError> + Send + Sync;

pub(crate) struct Pool {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    size: usize,
    ready: Vec<(Shape, SandboxEnv)>,
    /// Specs of the shapes asked for, most recent first, at most `size`.
    wanted: Vec<EnvSpec>,
    failures: u32,
    /// The thread is making one.
    making: bool,
    stopping: bool,
}

impl Pool {
    /// A pool keeping up to `size` environments, made by `make`.
    pub fn start(size: usize, make: Box<Make>) -> Result<Pool, EnvError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                size,
                ready: Vec::new(),
                wanted: Vec::new(),
                failures: 0,
                making: false,
                stopping: false,
            }),
            changed: Condvar::new(),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("sandbox-pool".into())
            .spawn(move || worker.fill(&make))
            .map_err(|e| EnvError::io("start the environment pool", e))?;
        Ok(Pool { shared, thread: Some(thread) })
    }

    /// A ready environment of `spec`'s shape with `spec`'s limits, if one
    /// waits; the pool then makes another. `spec` becomes the shape most
    /// recently asked for either way.
    pub fn take(&self, spec: &EnvSpec) -> Option<SandboxEnv> {
        let shape = Shape::of(spec);
        let mut state = self.shared.lock();
        state.wanted.retain(|w| Shape::of(w) != shape);
        state.wanted.insert(0, spec.clone());
        let size = state.size;
        state.wanted.truncate(size);
        let found = state.ready.iter().position(|(s, _)| *s == shape).map(|i| state.ready.remove(i).1);
        drop(state);
        self.shared.changed.notify_all();
        let mut env = found?;
        env.cgroup.set_limits(spec.memory_mb, spec.pids_max, spec.cpus);
        env.limits.memory = env.cgroup.limits.memory;
        env.limits.pids = env.cgroup.limits.pids;
        Some(env)
    }

    /// Waits until the pool is full (for a benchmark, which measures a
    /// start from it as a run's trials, minutes apart, would see it).
    pub fn wait_until_full(&self) {
        let mut state = self.shared.lock();
        while !state.stopping && !state.full() {
            state = self.shared.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl State {
    /// Nothing left to make: every wanted shape waits, or the pool holds
    /// `size`, or it gave up.
    fn full(&self) -> bool {
        !self.making && self.stale().is_none() && self.next().is_none()
    }

    /// A waiting environment whose shape is no longer wanted, when the
    /// pool is full and a wanted shape has none waiting: it makes room.
    fn stale(&self) -> Option<usize> {
        let waits = |spec: &EnvSpec| self.ready.iter().any(|(s, _)| *s == Shape::of(spec));
        if self.ready.len() < self.size || self.wanted.iter().all(waits) {
            return None;
        }
        self.ready.iter().position(|(s, _)| !self.wanted.iter().any(|w| Shape::of(w) == *s))
    }

    /// The spec to make next: the most recently wanted shape with the
    /// fewest waiting, while there is room.
    fn next(&self) -> Option<EnvSpec> {
        if self.ready.len() >= self.size || self.failures >= GIVE_UP_AFTER {
            return None;
        }
        let waiting = |spec: &EnvSpec| self.ready.iter().filter(|(s, _)| *s == Shape::of(spec)).count();
        self.wanted.iter().min_by_key(|spec| waiting(spec)).cloned()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pool's thread: makes environments while there is room, and
    /// destroys what waits when the pool stops.
    fn fill(&self, make: &Make) {
        loop {
            let mut state = self.lock();
            let spec = loop {
                if state.stopping {
                    let left: Vec<_> = state.ready.drain(..).collect();
                    drop(state);
                    for (_, env) in left {
                        let _ = Box::new(env).destroy();
                    }
                    return;
                }
                if let Some(i) = state.stale() {
                    let (_, env) = state.ready.remove(i);
                    drop(state);
                    let _ = Box::new(env).destroy();
                    state = self.lock();
                    continue;
                }
                if let Some(spec) = state.next() {
                    break spec;
                }
                state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
            };
            state.making = true;
            drop(state);
            let made = make_ready(make, &spec);
            let mut state = self.lock();
            state.making = false;
            match made {
                Ok(env) => {
                    state.failures = 0;
                    state.ready.push((Shape::of(&spec), env));
                }
                Err(_) => state.failures += 1,
            }
            drop(state);
            self.changed.notify_all();
        }
    }
}

/// An environment of `spec` with its agent phase begun, outbound.
fn make_ready(make: &Make, spec: &EnvSpec) -> Result<SandboxEnv, EnvError> {
    let mut env = make(spec)?;
    env.begin_phase(Network::Outbound)?;
    env.warm_phase = true;
    Ok(env)
}
