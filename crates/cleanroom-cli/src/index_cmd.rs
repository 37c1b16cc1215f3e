//! `cleanroom index rebuild`, and the run's writes to the results index
//! (`<out>/index.sqlite`). The run directories are the source of truth: a
//! failed index write is a warning, never a lost result, since the index
//! can be rebuilt from them.

use std::path::Path;

use cleanroom_store::{Index, RunConfig, RunDir, TrialRecord};

use crate::args::IndexRebuildArgs;
use crate::error::{input, CliError};

pub fn rebuild(args: IndexRebuildArgs) -> Result<(), CliError> {
    if !args.out.is_dir() {
        return Err(input(format!("--out {}: no such directory of runs", args.out.display())));
    }
    let report = Index::rebuild(&args.out)?;
    for skipped in &report.skipped {
        eprintln!("cleanroom: warning: skipped {}: {}", skipped.path.display(), skipped.reason);
    }
    println!(
        "indexed {} run(s), {} trial(s) in {} ({} skipped)",
        report.runs,
        report.trials,
        args.out.join(cleanroom_store::INDEX_FILE).display(),
        report.skipped.len()
    );
    Ok(())
}

/// Opens the index beside the run and records the run with the trials it
/// already has (a resumed run's, including any whose index write a kill
/// cut off). None, with a warning, when the index cannot be written.
pub fn open_for_run(run_dir: &RunDir, config: &RunConfig, existing: &[TrialRecord]) -> Option<Index> {
    let out = match run_dir.path().parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let opened = Index::open(out).and_then(|index| {
        index.record_results(config, run_dir.path(), existing)?;
        Ok(index)
    });
    match opened {
        Ok(index) => Some(index),
        Err(e) => {
            warn(&e);
            None
        }
    }
}

/// Records a trial whose result.json is written.
pub fn record_trial(index: Option<&Index>, run_dir: &RunDir, record: &TrialRecord) {
    if let Some(index) = index {
        if let Err(e) = index.record_trial(&run_dir.run_id(), record) {
            warn(&e);
        }
    }
}

fn warn(e: &dyn std::fmt::Display) {
    eprintln!("cleanroom: warning: {e} (results are kept in the run directory; `cleanroom index rebuild` restores the index)");
}
