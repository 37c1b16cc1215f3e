//! The consumers of the runner's events: the terminal, the run directory,
//! the results index and summary.json, one each. `cleanroom run` hands
//! every event to each of them in turn.

mod index;
mod run_dir;
mod summary;
mod terminal;

pub use index::IndexReporter;
pub use run_dir::RunDirReporter;
pub use summary::SummaryReporter;
pub use terminal::{preparation_line, Terminal};

use cleanroom_runner::Event;

use crate::error::CliError;

pub trait Reporter {
    fn report(&mut self, event: &Event) -> Result<(), CliError>;
}

/// Hands `event` to each reporter in turn. One that fails stops the event
/// there, so a reporter after it (the index, the summary) never counts a
/// record that the run directory did not get.
pub fn report_to(reporters: &mut [&mut dyn Reporter], event: &Event) -> Result<(), CliError> {
    reporters.iter_mut().try_for_each(|r| r.report(event))
}

#[cfg(test)]
mod tests;
