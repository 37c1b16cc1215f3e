//! The run directory's records: each retried attempt as attempt-<k>, each
//! trial's final one as result.json, with their files (cleanroom-store).

use cleanroom_runner::{Event, EventKind};
use cleanroom_store::RunDir;

use super::Reporter;
use crate::error::CliError;

pub struct RunDirReporter<'a> {
    run_dir: &'a RunDir,
}

impl<'a> RunDirReporter<'a> {
    pub fn new(run_dir: &'a RunDir) -> RunDirReporter<'a> {
        RunDirReporter { run_dir }
    }
}

impl Reporter for RunDirReporter<'_> {
    fn report(&mut self, event: &Event) -> Result<(), CliError> {
        match &event.kind {
            EventKind::AttemptFailed { record, files } => self.run_dir.write_attempt(record, files)?,
            EventKind::TrialFinished { record, files, .. } => self.run_dir.write_result(record, files)?,
            _ => {}
        }
        Ok(())
    }
}
