//! summary.json, rewritten after every trial's result, and the summary
//! that `cleanroom run` prints at the end.

use cleanroom_runner::{Event, EventKind};
use cleanroom_store::{RunDir, Summary, TrialRecord};

use super::Reporter;
use crate::error::CliError;

pub struct SummaryReporter<'a> {
    run_dir: &'a RunDir,
    records: Vec<TrialRecord>,
    planned: usize,
}

impl<'a> SummaryReporter<'a> {
    /// `kept`: the results the run already has (a resumed run's). The
    /// size of the plan comes with the first event, `Planned`.
    pub fn new(run_dir: &'a RunDir, kept: Vec<TrialRecord>) -> SummaryReporter<'a> {
        SummaryReporter { run_dir, planned: 0, records: kept }
    }

    pub fn summary(&self) -> Summary {
        Summary::from_records(&self.records, self.planned)
    }
}

impl Reporter for SummaryReporter<'_> {
    fn report(&mut self, event: &Event) -> Result<(), CliError> {
        match &event.kind {
            EventKind::Planned { of, .. } => self.planned = *of,
            EventKind::TrialFinished { record, .. } => {
                self.records.push(record.clone());
                self.run_dir.write_summary(&self.summary())?;
            }
            _ => {}
        }
        Ok(())
    }
}
