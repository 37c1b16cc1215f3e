//! Finding task directories and loading them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::checks::VerifySpec;
use crate::checks_toml::read_checks_toml;
use crate::error::{LoadError, LoadErrors};
use crate::harbor;
use crate::harbor_import;
use crate::harbor_registry::{self, ListedTask};
use crate::spec::TaskSpec;
use crate::task_toml::read_task_toml;
use crate::toml_read::Reader;

/// A loaded, validated task.
#[derive(Debug, Clone, Serialize)]
pub struct Task {
    pub id: String,
    /// The task directory, as found from the paths given.
    pub dir: PathBuf,
    pub spec: TaskSpec,
    /// verify/checks.toml.
    pub verify: VerifySpec,
    /// instruction.md, verbatim.
    pub instruction: String,
}

impl Task {
    /// The instruction as the agent reads it: instruction.md verbatim, then
    /// the public `[experiment]` when the task has one.
    pub fn agent_instruction(&self) -> String {
        let mut text = self.instruction.clone();
        if let Some(exp) = &self.spec.experiment {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("\n## Designated experiment\n\n");
            if let Some(cmd) = &exp.command {
                text.push_str(&format!("Command, run in `{}`: `{cmd}`\n", self.spec.artifact.dest));
            }
            if !exp.outputs.is_empty() {
                text.push_str("Outputs (relative to the artifact): ");
                let outs: Vec<String> = exp.outputs.iter().map(|o| format!("`{o}`")).collect();
                text.push_str(&outs.join(", "));
                text.push('\n');
            }
        }
        text
    }

    /// verify/: hidden from the agent.
    pub fn verify_dir(&self) -> PathBuf {
        self.dir.join("verify")
    }

    /// verify/checks.toml: never copied into an environment.
    pub fn checks_path(&self) -> PathBuf {
        self.verify_dir().join("checks.toml")
    }

    /// solution/: hidden from the agent; for the oracle alone.
    pub fn solution_dir(&self) -> PathBuf {
        self.dir.join("solution")
    }

    /// paper/, when the task has it.
    pub fn paper_dir(&self) -> Option<PathBuf> {
        let p = self.dir.join("paper");
        p.is_dir().then_some(p)
    }

    /// artifact/ (used when `artifact.source = "dir"`).
    pub fn artifact_dir(&self) -> PathBuf {
        self.dir.join("artifact")
    }

    /// overlay/, when the task has it.
    pub fn overlay_dir(&self) -> Option<PathBuf> {
        let p = self.dir.join("overlay");
        p.is_dir().then_some(p)
    }
}

/// Loads the tasks under `paths`: a path holding task.toml is one task; a
/// Harbor registry.json stands for its datasets' tasks (harbor_registry.rs);
/// otherwise each immediate subdirectory holding task.toml is one, sorted by
/// id. Errors of every task are collected; duplicate ids are an error.
pub fn load_tasks(paths: &[PathBuf]) -> Result<Vec<Task>, LoadErrors> {
    let mut errors = Vec::new();
    let mut tasks = Vec::new();
    for path in paths {
        let listed = match listed_tasks(path) {
            Ok(listed) => listed,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let mut found = Vec::new();
        for ListedTask { id, dir } in listed {
            let loaded = if harbor_import::is_harbor_task(&dir) {
                load_harbor_task(&dir, &id)
            } else {
                load_task(&dir)
            };
            match loaded {
                Ok(t) => found.push(t),
                Err(e) => errors.extend(e.0),
            }
        }
        found.sort_by(|a, b| a.id.cmp(&b.id));
        tasks.extend(found);
    }
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for t in &tasks {
        if let Some(first) = seen.insert(&t.id, &t.dir) {
            errors.push(LoadError::new(
                t.dir.join("task.toml"),
                None,
                Some("task.id"),
                format!(
                    "duplicate task id {:?}, also the id of {}; task ids must be unique",
                    t.id,
                    first.display()
                ),
            ));
        }
    }
    if errors.is_empty() {
        Ok(tasks)
    } else {
        Err(LoadErrors(errors))
    }
}

/// The tasks that `path` stands for, each with its id, not yet loaded: the
/// task in `path`, the tasks of a Harbor registry's datasets, or those in
/// the immediate subdirectories of `path`.
pub fn listed_tasks(path: &Path) -> Result<Vec<ListedTask>, LoadError> {
    if harbor_registry::is_registry(path) {
        return harbor_registry::registry_tasks(path);
    }
    let dirs = task_dirs(path)?;
    Ok(dirs.into_iter().map(|dir| ListedTask { id: dir_name(&dir), dir }).collect())
}

/// The task directories that `path` stands for.
fn task_dirs(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    if path.join("task.toml").is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| {
        let what = if e.kind() == std::io::ErrorKind::NotFound {
            "no such directory".to_owned()
        } else {
            format!("cannot read the directory: {e}")
        };
        LoadError::file(path, format!("{what}; expected a task directory or a directory of tasks"))
    })?;
    let mut dirs: Vec<PathBuf> =
        entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.join("task.toml").is_file()).collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(LoadError::file(
            path,
            "holds no task.toml, and none of its subdirectories does; expected a task directory or a directory of tasks",
        ));
    }
    Ok(dirs)
}

/// The Harbor task in `dir`, imported as task `id`.
fn load_harbor_task(dir: &Path, id: &str) -> Result<Task, LoadErrors> {
    let copy = harbor_import::imported_copy(dir, id)
        .map_err(|e| LoadErrors(vec![LoadError::file(dir, format!("as a Harbor task: {e}"))]))?;
    load_task(&copy)
}

/// The name of the directory `dir`, also where it is given as `.` or `..`
/// (a task checked from inside its directory): a task's default id.
pub fn dir_name(dir: &Path) -> String {
    let name = match dir.file_name() {
        Some(name) => Some(name.to_owned()),
        None => dir.canonicalize().ok().and_then(|p| p.file_name().map(|n| n.to_owned())),
    };
    name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Loads and validates the task in `dir`. A Harbor task loads as it is:
/// imported (harbor_import.rs) into a copy of its own, which is loaded.
pub fn load_task(dir: &Path) -> Result<Task, LoadErrors> {
    if harbor_import::is_harbor_task(dir) {
        return load_harbor_task(dir, &dir_name(dir));
    }
    let mut errors = Vec::new();

    let toml_path = dir.join("task.toml");
    let spec = match read_text(&toml_path) {
        Ok(text) => {
            let (mut r, doc) = Reader::parse(toml_path.clone(), &text);
            let spec = doc.and_then(|doc| read_task_toml(&mut r, &doc, dir));
            r.errors.sort_by_key(|e| e.line);
            errors.append(&mut r.errors);
            spec
        }
        Err(msg) => {
            errors.push(LoadError::file(&toml_path, msg));
            None
        }
    };

    let instruction_path = dir.join("instruction.md");
    let instruction = match read_text(&instruction_path) {
        Ok(text) if text.trim().is_empty() => {
            errors.push(LoadError::file(
                &instruction_path,
                "is empty; it tells the agent what to deploy and which experiment to run",
            ));
            None
        }
        Ok(text) => Some(text),
        Err(msg) => {
            errors.push(LoadError::file(
                &instruction_path,
                format!("{msg}; every task needs instruction.md, what the agent is told"),
            ));
            None
        }
    };

    let checks_path = dir.join("verify").join("checks.toml");
    let verify = match read_text(&checks_path) {
        Ok(text) => {
            let (mut r, doc) = Reader::parse(checks_path.clone(), &text);
            let verify = doc.and_then(|doc| read_checks_toml(&mut r, &doc));
            r.errors.sort_by_key(|e| e.line);
            errors.append(&mut r.errors);
            verify
        }
        Err(msg) => {
            let mut msg = format!("{msg}; every task needs verify/checks.toml, its hidden steps and checks");
            if let Some(h) = harbor::layout_hint(dir) {
                msg = format!("{msg} ({h})");
            }
            errors.push(LoadError::file(&checks_path, msg));
            None
        }
    };

    match (spec, verify, instruction) {
        (Some(spec), Some(verify), Some(instruction)) if errors.is_empty() => {
            Ok(Task { id: spec.task.id.clone(), dir: dir.to_path_buf(), spec, verify, instruction })
        }
        _ => {
            if errors.is_empty() {
                // Defensive: every path to a missing part records an error.
                errors.push(LoadError::file(dir, "the task could not be loaded"));
            }
            Err(LoadErrors(errors))
        }
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| "is not valid utf-8 text".to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("missing".to_owned()),
        Err(e) => Err(format!("cannot be read: {}", e.to_string().to_lowercase())),
    }
}
