//! `cleanroom tasks import FORMAT SRC DEST`: a task written for another
//! harness (Harbor's format) converted into a cleanroom task at DEST, then
//! loaded to check it; what could not be carried over is printed.
//!
//! SRC may also be a dataset: a directory of Harbor tasks, or a Harbor
//! registry.json (with `#NAME@VERSION` to pick one of its datasets). Then
//! DEST becomes a directory of tasks, one per task of the dataset, named by
//! its id. A dataset imports whole or not at all: every task that cannot be
//! imported is named with why, and nothing is written.

use std::path::Path;

use cleanroom_task::{
    dir_name, import_harbor, is_harbor_task, is_valid_task_id, listed_tasks, load_task, write_imported,
    Imported, ListedTask,
};

use crate::args::{ImportFormat, TasksImportArgs};
use crate::error::{input, internal, CliError};

pub fn import(args: TasksImportArgs) -> Result<(), CliError> {
    if args.dest.exists() {
        return Err(input(format!("{}: already exists", args.dest.display())));
    }
    // Harbor's is the one format; another would be matched here.
    let ImportFormat::Harbor = args.format;
    let single = args.src.join("task.toml").is_file();
    let imports = if single {
        let id = dir_name(&args.dest);
        if !is_valid_task_id(&id) {
            return Err(input(format!(
                "{}: the directory's name is the task id, and `{id}` is not one ([a-z0-9][a-z0-9_.-]{{0,63}})",
                args.dest.display()
            )));
        }
        vec![(args.dest.clone(), import_harbor(&args.src, &id).map_err(input)?)]
    } else {
        let listed = listed_tasks(&args.src).map_err(|e| input(e.to_string()))?;
        import_dataset(&listed, &args.dest)?
    };
    let written = imports.iter().try_for_each(|(dest, imported)| {
        write_imported(dest, imported).map_err(|e| internal(format!("writing {}: {e}", dest.display())))?;
        load_task(dest).map(|_| ()).map_err(|e| internal(format!("the imported task does not validate: {e}")))
    });
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&args.dest);
        return Err(e);
    }
    for (dest, imported) in &imports {
        let prefix = if single { String::new() } else { format!("{}: ", dir_name(dest)) };
        for note in &imported.notes {
            eprintln!("{prefix}not carried over: {note}");
        }
        println!("{}", dest.display());
    }
    Ok(())
}

/// Each task of a dataset imported in memory, to be written at `dest/ID`;
/// an error that names every task which could not be.
fn import_dataset(
    listed: &[ListedTask],
    dest: &Path,
) -> Result<Vec<(std::path::PathBuf, Imported)>, CliError> {
    let mut imports = Vec::new();
    let mut problems = Vec::new();
    for ListedTask { id, dir } in listed {
        if !is_harbor_task(dir) {
            problems.push(format!(
                "{}: not a Harbor task (a task.toml without `schema_version` and tests/test.sh)",
                dir.display()
            ));
        } else if !is_valid_task_id(id) {
            problems.push(format!(
                "{}: `{id}` is not a task id ([a-z0-9][a-z0-9_.-]{{0,63}}); rename the task",
                dir.display()
            ));
        } else {
            match import_harbor(dir, id) {
                Ok(imported) => imports.push((dest.join(id), imported)),
                Err(e) => problems.push(e),
            }
        }
    }
    if problems.is_empty() {
        Ok(imports)
    } else {
        Err(input(format!(
            "{} of the dataset's {} tasks cannot be imported, so none was:\n{}",
            problems.len(),
            listed.len(),
            problems.join("\n")
        )))
    }
}
