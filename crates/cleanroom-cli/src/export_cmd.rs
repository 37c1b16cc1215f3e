//! `cleanroom tasks export FORMAT TASK DEST`: a cleanroom task written for
//! another harness (Harbor's format) at DEST, its artifact materialized as a
//! run materializes it (from the cache, or fetched), then loaded back to
//! check it; what could not be carried over is printed.

use std::path::Path;

use cleanroom_env::image;
use cleanroom_task::{export_harbor, load_task, materialize_artifact, write_exported};

use crate::args::{ExportFormat, TasksExportArgs};
use crate::error::{input, internal, CliError};

pub fn export(args: TasksExportArgs) -> Result<(), CliError> {
    let dest = &args.dest;
    let existed = match std::fs::read_dir(dest).map(|mut entries| entries.next().is_some()) {
        Ok(true) => return Err(input(format!("{}: exists and is not empty", dest.display()))),
        Ok(false) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(input(format!("{}: {e}", dest.display()))),
    };
    let task = load_task(&args.task)?;
    let staging = std::env::temp_dir().join(format!("cleanroom-export-{}", std::process::id()));
    let artifact = staging.join("artifact");
    let cache = image::cleanroom_home().join("cache");
    let made = materialize_artifact(&task, &cache, &artifact)
        .map_err(|e| internal(format!("the artifact of {}: {e}", task.id)))
        .and_then(|_| match args.format {
            ExportFormat::Harbor => export_harbor(&task, &artifact).map_err(input),
        })
        .and_then(|exported| {
            write_exported(dest, &exported)
                .map_err(|e| internal(format!("writing {}: {e}", dest.display())))
                .map(|()| exported)
        });
    let _ = std::fs::remove_dir_all(&staging);
    let checked = made.and_then(|exported| {
        load_task(dest)
            .map_err(|e| internal(format!("the exported task does not load back: {e}")))
            .map(|_| exported)
    });
    let exported = match checked {
        Ok(exported) => exported,
        Err(e) => {
            undo(dest, existed);
            return Err(e);
        }
    };
    for note in &exported.notes {
        eprintln!("not carried over: {note}");
    }
    println!("{}", dest.display());
    Ok(())
}

/// Leaves `dest` as it was: gone, or the empty directory it was.
fn undo(dest: &Path, existed: bool) {
    let _ = std::fs::remove_dir_all(dest);
    if existed {
        let _ = std::fs::create_dir(dest);
    }
}
