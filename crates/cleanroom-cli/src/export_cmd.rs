//! `cleanroom tasks export FORMAT TASK DEST`: a cleanroom task written for
//! another harness (Harbor's format) at DEST, its artifact materialized as a
//! run materializes it (from the cache, or fetched), then loaded back to
//! check it; what could not be carried over is printed.
//!
//! TASK may also be a directory of tasks: then DEST becomes a directory of
//! their exports, each named by its task's id, all of them or none.

use std::path::{Path, PathBuf};

use cleanroom_env::image;
use cleanroom_task::{
    export_harbor, load_task, load_tasks, materialize_artifact, write_exported, Exported, Task,
};

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
    // Harbor's is the one format; another would be matched here.
    let ExportFormat::Harbor = args.format;
    let single = args.task.join("task.toml").is_file();
    let exports: Vec<(Task, PathBuf)> = if single {
        vec![(load_task(&args.task)?, dest.clone())]
    } else {
        load_tasks(std::slice::from_ref(&args.task))?
            .into_iter()
            .map(|task| {
                let to = dest.join(&task.id);
                (task, to)
            })
            .collect()
    };
    let mut notes = Vec::new();
    for (task, to) in &exports {
        match export_one(task, to) {
            Ok(exported) => notes.push((to, task, exported)),
            Err(e) => {
                undo(dest, existed);
                return Err(e);
            }
        }
    }
    for (to, task, exported) in notes {
        let prefix = if single { String::new() } else { format!("{}: ", task.id) };
        for note in &exported.notes {
            eprintln!("{prefix}not carried over: {note}");
        }
        println!("{}", to.display());
    }
    Ok(())
}

/// `task` written as a Harbor task at `dest`, and loaded back.
fn export_one(task: &Task, dest: &Path) -> Result<Exported, CliError> {
    let staging = std::env::temp_dir().join(format!("cleanroom-export-{}", std::process::id()));
    let artifact = staging.join("artifact");
    let cache = image::cleanroom_home().join("cache");
    let made = materialize_artifact(task, &cache, &artifact)
        .map_err(|e| internal(format!("the artifact of {}: {e}", task.id)))
        .and_then(|_| export_harbor(task, &artifact).map_err(input))
        .and_then(|exported| {
            write_exported(dest, &exported)
                .map_err(|e| internal(format!("writing {}: {e}", dest.display())))
                .map(|()| exported)
        });
    let _ = std::fs::remove_dir_all(&staging);
    made.and_then(|exported| {
        load_task(dest)
            .map_err(|e| internal(format!("the exported task does not load back: {e}")))
            .map(|_| exported)
    })
}

/// Leaves `dest` as it was: gone, or the empty directory it was.
fn undo(dest: &Path, existed: bool) {
    let _ = std::fs::remove_dir_all(dest);
    if existed {
        let _ = std::fs::create_dir(dest);
    }
}
