//! The run's rows in the results index (`<out>/index.sqlite`). The run
//! directories are the source of truth: a failed index write is a warning,
//! never a lost result, since the index can be rebuilt from them.

use std::path::Path;

use cleanroom_runner::{Event, EventKind};
use cleanroom_store::{Index, RunConfig, RunDir, TrialRecord};

use super::Reporter;
use crate::error::CliError;

pub struct IndexReporter<'a> {
    /// None when the index cannot be written (already warned of).
    index: Option<Index>,
    run_dir: &'a RunDir,
}

impl<'a> IndexReporter<'a> {
    /// Opens the index beside the run and records the run with the trials
    /// it already has (a resumed run's, including any whose index write a
    /// kill cut off).
    pub fn open(run_dir: &'a RunDir, config: &RunConfig, existing: &[TrialRecord]) -> IndexReporter<'a> {
        let out = match run_dir.path().parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let opened = Index::open(out).and_then(|index| {
            index.record_results(config, run_dir.path(), existing)?;
            Ok(index)
        });
        let index = opened.map_err(|e| warn(&e)).ok();
        IndexReporter { index, run_dir }
    }
}

impl Reporter for IndexReporter<'_> {
    /// Records a trial whose result.json is written.
    fn report(&mut self, event: &Event) -> Result<(), CliError> {
        if let (Some(index), EventKind::TrialFinished { record, .. }) = (&self.index, &event.kind) {
            if let Err(e) = index.record_trial(&self.run_dir.run_id(), record) {
                warn(&e);
            }
        }
        Ok(())
    }
}

fn warn(e: &dyn std::fmt::Display) {
    eprintln!("cleanroom: warning: {e} (results are kept in the run directory; `cleanroom index rebuild` restores the index)");
}
