//! Harbor's datasets: a registry.json lists datasets, each a name, a
//! version and its tasks; a task is a directory at `path`, in the git
//! repository `git_url` at `git_commit_id`, or on this machine (relative to
//! the registry file) when there is no `git_url`.
//!
//! `--tasks registry.json` stands for the tasks of every dataset in it;
//! `--tasks registry.json#NAME` or `#NAME@VERSION` for one dataset's.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::LoadError;
use crate::fetch::{git, tree::hex};
use crate::placed::made_once;
use crate::rules::{is_valid_task_id, relative_path_problem};

/// One dataset; its description and metrics are Harbor's to show.
#[derive(Deserialize)]
struct Dataset {
    name: String,
    version: Option<String>,
    tasks: Vec<RegistryTask>,
}

#[derive(Deserialize)]
struct RegistryTask {
    name: String,
    git_url: Option<String>,
    git_commit_id: Option<String>,
    path: PathBuf,
}

/// One task that a path names (a registry's, or a directory's): its id and
/// the directory that holds it.
#[derive(Debug)]
pub struct ListedTask {
    pub id: String,
    pub dir: PathBuf,
}

/// `path` names a registry (a .json file, with or without a `#dataset`
/// selector) rather than a task directory.
pub(crate) fn is_registry(path: &Path) -> bool {
    let (file, _) = split_selector(path);
    file.extension().is_some_and(|e| e == "json") && !path.is_dir()
}

/// The registry file and the dataset selector after its `#`, if any (a
/// file whose own name holds `#` is taken whole).
fn split_selector(path: &Path) -> (PathBuf, Option<String>) {
    let text = path.to_string_lossy();
    match text.rsplit_once('#') {
        Some((file, selector)) if !path.exists() => (PathBuf::from(file), Some(selector.to_owned())),
        _ => (path.to_path_buf(), None),
    }
}

/// The tasks of the registry at `path` (with its selector), each git
/// repository's commit fetched once into the system's temporary directory.
pub(crate) fn registry_tasks(path: &Path) -> Result<Vec<ListedTask>, LoadError> {
    let (file, selector) = split_selector(path);
    let text =
        std::fs::read_to_string(&file).map_err(|e| LoadError::file(&file, format!("cannot read it: {e}")))?;
    let datasets: Vec<Dataset> = serde_json::from_str(&text).map_err(|e| {
        LoadError::new(
            &file,
            Some(e.line()),
            None,
            format!("{e}; expected Harbor's registry.json: a list of datasets, each {{name, version, description, tasks: [{{name, git_url, git_commit_id, path}}]}}"),
        )
    })?;
    let chosen: Vec<(usize, &Dataset)> = datasets
        .iter()
        .enumerate()
        .filter(|(_, d)| selector.as_deref().is_none_or(|s| selects(s, d)))
        .collect();
    if chosen.is_empty() {
        let names: Vec<String> = datasets.iter().map(label).collect();
        return Err(LoadError::file(
            &file,
            format!(
                "holds no dataset {:?}; it holds {}",
                selector.unwrap_or_default(),
                if names.is_empty() { "none".to_owned() } else { names.join(", ") }
            ),
        ));
    }
    let base = file.parent().unwrap_or(Path::new("."));
    let mut listed: Vec<ListedTask> = Vec::new();
    for (i, dataset) in chosen {
        for (j, task) in dataset.tasks.iter().enumerate() {
            let key = |field: &str| format!("[{i}].tasks[{j}].{field}");
            if !is_valid_task_id(&task.name) {
                return Err(LoadError::new(
                    &file,
                    None,
                    Some(&key("name")),
                    format!("{:?} is not a valid task id; expected lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64", task.name),
                ));
            }
            let dir = task_dir(base, task)
                .map_err(|(field, message)| LoadError::new(&file, None, Some(&key(field)), message))?;
            // The same task in two datasets is listed once.
            if !listed.iter().any(|t| t.id == task.name && t.dir == dir) {
                listed.push(ListedTask { id: task.name.clone(), dir });
            }
        }
    }
    Ok(listed)
}

fn label(d: &Dataset) -> String {
    match &d.version {
        Some(v) => format!("{}@{v}", d.name),
        None => d.name.clone(),
    }
}

fn selects(selector: &str, d: &Dataset) -> bool {
    match selector.split_once('@') {
        Some((name, version)) => d.name == name && d.version.as_deref() == Some(version),
        None => d.name == selector,
    }
}

/// Where `task` is on this machine; an error names the field at fault.
fn task_dir(base: &Path, task: &RegistryTask) -> Result<PathBuf, (&'static str, String)> {
    let rel = task.path.to_string_lossy();
    let Some(url) = &task.git_url else {
        let dir = if task.path.is_absolute() { task.path.clone() } else { base.join(&task.path) };
        return existing(dir);
    };
    if let Some(problem) = relative_path_problem(&rel) {
        return Err(("path", format!("{rel:?} {problem}")));
    }
    let Some(commit) =
        task.git_commit_id.as_deref().filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return Err((
            "git_commit_id",
            format!("{:?} is not a commit id; expected the 40 hex digits of the commit to fetch {url} at, so that the task is the same on every run", task.git_commit_id.as_deref().unwrap_or("")),
        ));
    };
    let tree = fetched_tree(url, commit).map_err(|e| ("git_url", e))?;
    existing(tree.join(&task.path))
}

fn existing(dir: PathBuf) -> Result<PathBuf, (&'static str, String)> {
    if dir.join("task.toml").is_file() {
        Ok(dir)
    } else {
        Err(("path", format!("{} holds no task.toml; expected a task directory", dir.display())))
    }
}

/// The tree of `commit` of `url`, fetched once (placed.rs; the bare
/// repository beside it).
fn fetched_tree(url: &str, commit: &str) -> Result<PathBuf, String> {
    let url_key = hex(&Sha256::digest(url.as_bytes()));
    let cache = std::env::temp_dir().join("cleanroom-harbor");
    made_once(&format!("git-{}-{}", &url_key[..16], &commit[..16]), |fresh| {
        git::fetch(&cache, url, commit, fresh).map_err(|e| e.to_string())
    })
}
