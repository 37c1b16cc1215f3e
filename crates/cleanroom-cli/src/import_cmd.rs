//! `cleanroom tasks import FORMAT SRC DEST`: a task written for another
//! harness (Harbor's format) converted into a cleanroom task at DEST, then
//! loaded to check it; what could not be carried over is printed.

use cleanroom_task::{dir_name, import_harbor, is_valid_task_id, load_task, write_imported};

use crate::args::{ImportFormat, TasksImportArgs};
use crate::error::{input, internal, CliError};

pub fn import(args: TasksImportArgs) -> Result<(), CliError> {
    if args.dest.exists() {
        return Err(input(format!("{}: already exists", args.dest.display())));
    }
    let id = dir_name(&args.dest);
    if !is_valid_task_id(&id) {
        return Err(input(format!(
            "{}: the directory's name is the task id, and `{id}` is not one ([a-z0-9][a-z0-9_.-]{{0,63}})",
            args.dest.display()
        )));
    }
    let imported = match args.format {
        ImportFormat::Harbor => import_harbor(&args.src, &id).map_err(input)?,
    };
    let written = write_imported(&args.dest, &imported)
        .map_err(|e| internal(format!("writing {}: {e}", args.dest.display())));
    let loaded = written.and_then(|()| {
        load_task(&args.dest).map_err(|e| internal(format!("the imported task does not validate: {e}")))
    });
    if let Err(e) = loaded {
        let _ = std::fs::remove_dir_all(&args.dest);
        return Err(e);
    }
    for note in &imported.notes {
        eprintln!("not carried over: {note}");
    }
    println!("{}", args.dest.display());
    Ok(())
}
