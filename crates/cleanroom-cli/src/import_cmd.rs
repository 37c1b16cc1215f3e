//! `cleanroom tasks import FORMAT SRC DEST`: a task written for another
//! harness (Harbor's format) converted into a cleanroom task at DEST, then
//! loaded to check it; what could not be carried over is printed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use cleanroom_task::{dir_name, import_harbor, is_valid_task_id, load_task};

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
    let written = write(&args.dest, &imported);
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

fn write(dest: &Path, imported: &cleanroom_task::Imported) -> Result<(), CliError> {
    for (from, to) in &imported.trees {
        let to = dest.join(to);
        let fail = |e: String| internal(format!("copying {} to {}: {e}", from.display(), to.display()));
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail(e.to_string()))?;
        }
        // Modes and links as they are.
        let out = std::process::Command::new("cp").arg("-a").arg("--").arg(from).arg(&to).output();
        match out {
            Ok(out) if out.status.success() => {}
            Ok(out) => return Err(fail(String::from_utf8_lossy(&out.stderr).trim().to_string())),
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    for (rel, bytes, mode) in &imported.files {
        let path = dest.join(rel);
        let fail = |e: std::io::Error| internal(format!("{}: {e}", path.display()));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(fail)?;
        }
        std::fs::write(&path, bytes).map_err(fail)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).map_err(fail)?;
    }
    Ok(())
}
