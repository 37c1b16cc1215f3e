//! `cleanroom index rebuild`: the results index (`<out>/index.sqlite`)
//! made again from the run directories, its source of truth. A run's own
//! writes to it are a reporter's (reporter/index.rs).

use cleanroom_store::Index;

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
