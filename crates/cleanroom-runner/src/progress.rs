//! What an attempt tells the run while it is under way, for progress
//! reports: the phase it entered, and the last line its agent printed. The
//! pool (schedule.rs) turns them into `PhaseChanged` events and, while an
//! attempt goes on, a `Progress` event every `RunInput::progress_every`.

use std::time::{Duration, Instant};

use cleanroom_env::LastLine;

use crate::event::{Phase, TrialKey};

pub struct AttemptProgress<'a> {
    phase: &'a dyn Fn(Phase),
    /// Fed with what the agent's commands print.
    pub output: LastLine,
}

impl<'a> AttemptProgress<'a> {
    pub fn new(phase: &'a dyn Fn(Phase), output: LastLine) -> AttemptProgress<'a> {
        AttemptProgress { phase, output }
    }

    /// The attempt entered `phase`.
    pub fn phase(&self, phase: Phase) {
        (self.phase)(phase)
    }
}

/// An attempt under way, as the pool watches it.
#[derive(Debug, Clone)]
pub(crate) struct Running {
    pub key: TrialKey,
    pub attempt: u32,
    pub started: Instant,
    pub phase: Option<Phase>,
    pub output: LastLine,
}

impl Running {
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}
