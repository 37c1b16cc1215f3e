//! `<out>/<run-id>/`: the one place a run's results live (DESIGN.md, "Run
//! directory"). A `RunDir` holds the run's lock for its whole life, so it is
//! the only writer; every whole-file write is atomic.
//!
//! A trial's directory, `trials/<task>/<agent-id>/<n>/`, keeps every
//! attempt, numbered from 1 across resumed runs:
//!
//! ```text
//! attempt-<k>.json   an attempt that ended in infra_error and was retried
//! attempt-<k>/       its files (agent.log, verify.log, changes.txt, ...)
//! result.json        the final attempt's record, written last
//! agent.log ...      the final attempt's files
//! ```

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::atomic::write_atomic;
use crate::error::StoreError;
use crate::lock::RunLock;
use crate::record::{TrialRecord, SCHEMA_VERSION};
use crate::run_config::RunConfig;
use crate::summary::Summary;
use cleanroom_env::time::run_id_stamp;

/// The trial's record. Only the store writes it; nothing copied out of an
/// environment may take the name.
pub const RESULT_FILE: &str = "result.json";
const RUN_CONFIG_FILE: &str = "run.toml";
const SUMMARY_FILE: &str = "summary.json";
const TRIALS_DIR: &str = "trials";
/// The directory of a trial's files that holds what the verify steps wrote
/// to `$CLEANROOM_OUT`, by their paths there.
pub const OUTPUTS_DIR: &str = "outputs";

/// A file of a trial's directory (agent.log, verify.log, changes.txt,
/// env-diff.txt, trajectory.json, `outputs/<path>`), as the runner made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    _lock: RunLock,
}

/// A fresh run id: the UTC time and 4 random hex digits, e.g.
/// `2026-11-29T21-12-55Z-3f9a`, so ids sort by start time and two runs
/// started in the same second do not collide.
pub fn new_run_id() -> String {
    format!("{}-{:04x}", run_id_stamp(SystemTime::now()), random_u16())
}

/// From /dev/urandom; without it, from the clock's nanoseconds and the pid,
/// which still differ between two runs started in one second.
fn random_u16() -> u16 {
    let mut buf = [0u8; 2];
    match File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)) {
        Ok(()) => u16::from_le_bytes(buf),
        Err(_) => {
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            (nanos ^ std::process::id().rotate_left(16) ^ (nanos >> 16)) as u16
        }
    }
}

/// Makes `out`, the directory of runs, if missing: before a run prepares
/// anything, so that an `--out` that cannot be is told at once.
pub fn make_out_dir(out: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(out).map_err(|source| StoreError::OutDir { path: out.to_path_buf(), source })
}

impl RunDir {
    /// Creates `<out>/<run_id>/` (and `out` if missing) and locks it. Fails
    /// if the run directory exists.
    pub fn create(out: &Path, run_id: &str) -> Result<RunDir, StoreError> {
        check_name("run id", run_id)?;
        make_out_dir(out)?;
        let path = out.join(run_id);
        if let Err(e) = fs::create_dir(&path) {
            return Err(match e.kind() {
                std::io::ErrorKind::AlreadyExists => StoreError::RunExists(path),
                _ => StoreError::OutDir { path: out.to_path_buf(), source: e },
            });
        }
        let lock = RunLock::acquire(&path)?;
        let trials = path.join(TRIALS_DIR);
        fs::create_dir(&trials).map_err(|e| StoreError::io("create directory", trials, e))?;
        Ok(RunDir { path, _lock: lock })
    }

    /// Opens an existing run (for `--resume`) and locks it. Fails if `path`
    /// has no run.toml or another process holds the run.
    pub fn open(path: &Path) -> Result<RunDir, StoreError> {
        if !path.join(RUN_CONFIG_FILE).is_file() {
            return Err(StoreError::NoRun(path.to_path_buf()));
        }
        let lock = RunLock::acquire(path)?;
        let trials = path.join(TRIALS_DIR);
        fs::create_dir_all(&trials).map_err(|e| StoreError::io("create directory", trials, e))?;
        Ok(RunDir { path: path.to_path_buf(), _lock: lock })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run directory's name.
    pub fn run_id(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }

    /// `trials/<task>/<agent_id>/<n>/`, created if missing.
    pub fn trial_dir(&self, task: &str, agent_id: &str, n: u32) -> Result<PathBuf, StoreError> {
        check_name("task id", task)?;
        check_name("agent id", agent_id)?;
        let dir = self.trial_path(task, agent_id, n);
        fs::create_dir_all(&dir).map_err(|e| StoreError::io("create directory", &dir, e))?;
        Ok(dir)
    }

    fn trial_path(&self, task: &str, agent_id: &str, n: u32) -> PathBuf {
        self.path.join(TRIALS_DIR).join(task).join(agent_id).join(n.to_string())
    }

    /// Whether the trial has its result; a resumed run reruns those without.
    pub fn has_result(&self, task: &str, agent_id: &str, n: u32) -> bool {
        check_name("task id", task).is_ok()
            && check_name("agent id", agent_id).is_ok()
            && self.trial_path(task, agent_id, n).join(RESULT_FILE).is_file()
    }

    /// The trial's final attempt: its files in the trial directory, then
    /// result.json, atomically and last. Refuses to replace a result: a
    /// trial has exactly one.
    pub fn write_result(&self, record: &TrialRecord, files: &[TrialFile]) -> Result<(), StoreError> {
        let dir = self.trial_dir(&record.task, &record.agent_id, record.trial)?;
        let path = dir.join(RESULT_FILE);
        // Checking first is enough: the lock makes this the only writer.
        if path.exists() {
            return Err(StoreError::ResultExists(path));
        }
        remove_unrecorded(&dir)?;
        write_files(&dir, files)?;
        write_json(&path, record)
    }

    /// Keeps an attempt that ended in infra_error, before the trial is
    /// retried: its files in `attempt-<k>/`, then its record as
    /// `attempt-<k>.json` (k = `record.attempt`), last, since the record is
    /// what makes the attempt kept. Refuses to replace a kept attempt.
    pub fn write_attempt(&self, record: &TrialRecord, files: &[TrialFile]) -> Result<(), StoreError> {
        let dir = self.trial_dir(&record.task, &record.agent_id, record.trial)?;
        let path = dir.join(attempt_file(record.attempt));
        if path.exists() {
            return Err(StoreError::AttemptExists(path));
        }
        remove_unrecorded(&dir)?;
        let files_dir = dir.join(attempt_dir(record.attempt));
        fs::create_dir(&files_dir).map_err(|e| StoreError::io("create directory", &files_dir, e))?;
        write_files(&files_dir, files)?;
        write_json(&path, record)
    }

    /// The attempt number after the ones already kept, so a resumed run does
    /// not overwrite the attempts of the run it resumes.
    pub fn next_attempt(&self, task: &str, agent_id: &str, n: u32) -> u32 {
        let dir = self.trial_path(task, agent_id, n);
        let kept = fs::read_dir(dir).into_iter().flatten().flatten().filter_map(|e| {
            let name = e.file_name();
            name.to_str()?.strip_prefix("attempt-")?.strip_suffix(".json")?.parse::<u32>().ok()
        });
        kept.max().unwrap_or(0) + 1
    }

    /// Every trial's result, ordered by task, agent id and trial number. A
    /// result.json that does not parse is an error that names it.
    pub fn load_results(&self) -> Result<Vec<TrialRecord>, StoreError> {
        read_results(&self.path)
    }

    pub fn write_run_config(&self, config: &RunConfig) -> Result<(), StoreError> {
        let path = self.path.join(RUN_CONFIG_FILE);
        let body = toml::to_string_pretty(config)
            .map_err(|e| StoreError::Encode { path: path.clone(), detail: e.to_string() })?;
        let text = format!(
            "# The resolved configuration of this run, written by cleanroom.\n\
             # It never holds secrets: API keys are named by variable only.\n\n{body}"
        );
        write_atomic(&path, text.as_bytes())
    }

    pub fn read_run_config(&self) -> Result<RunConfig, StoreError> {
        read_run_config(&self.path)
    }

    /// Rewrites summary.json, atomically.
    pub fn write_summary(&self, summary: &Summary) -> Result<(), StoreError> {
        write_json(&self.path.join(SUMMARY_FILE), summary)
    }
}

/// The run.toml of the run at `run`, read without taking the run's lock
/// (for readers such as the index; only writers lock).
pub fn read_run_config(run: &Path) -> Result<RunConfig, StoreError> {
    let path = run.join(RUN_CONFIG_FILE);
    let text = fs::read_to_string(&path).map_err(|e| StoreError::io("read", &path, e))?;
    toml::from_str(&text).map_err(|e| StoreError::BadConfig { path, source: Box::new(e) })
}

/// Every trial's result of the run at `run`, ordered as
/// [`RunDir::load_results`] orders them, read without taking the run's lock
/// (for readers such as `cleanroom status`).
pub fn read_results(run: &Path) -> Result<Vec<TrialRecord>, StoreError> {
    let found = result_files(run)?;
    let mut records = found.iter().map(|p| read_record(p)).collect::<Result<Vec<_>, _>>()?;
    records.sort_by(|a, b| (&a.task, &a.agent_id, a.trial).cmp(&(&b.task, &b.agent_id, b.trial)));
    Ok(records)
}

/// Whether `dir` looks like a run directory: it has a run.toml.
pub(crate) fn is_run(dir: &Path) -> bool {
    dir.join(RUN_CONFIG_FILE).is_file()
}

/// Every `trials/<task>/<agent-id>/<n>/result.json` of the run at `run`,
/// sorted by path; read without taking the run's lock.
pub(crate) fn result_files(run: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut found = Vec::new();
    for task in subdirs(&run.join(TRIALS_DIR))? {
        for agent in subdirs(&task)? {
            for trial in subdirs(&agent)? {
                let path = trial.join(RESULT_FILE);
                if path.is_file() {
                    found.push(path);
                }
            }
        }
    }
    Ok(found)
}

fn attempt_file(k: u32) -> String {
    format!("attempt-{k}.json")
}

fn attempt_dir(k: u32) -> String {
    format!("attempt-{k}")
}

/// result.json, attempt-<k>.json and attempt-<k>/ belong to the store.
fn is_record_name(name: &str) -> bool {
    name == RESULT_FILE || attempt_number(name).is_some()
}

/// k of `attempt-<k>.json` or `attempt-<k>`.
fn attempt_number(name: &str) -> Option<u32> {
    let k = name.strip_prefix("attempt-")?;
    k.strip_suffix(".json").unwrap_or(k).parse().ok()
}

/// Writes a trial's files into `dir`, refusing the store's own names and
/// anything that is not a plain file name or a path under `outputs/`.
fn write_files(dir: &Path, files: &[TrialFile]) -> Result<(), StoreError> {
    for f in files {
        if is_record_name(&f.name) {
            return Err(StoreError::ReservedName { dir: dir.to_path_buf(), name: f.name.clone() });
        }
        let path = trial_file_path(dir, &f.name)?;
        fs::write(&path, &f.bytes).map_err(|e| StoreError::io("write", path, e))?;
    }
    Ok(())
}

/// Where the trial file `name` goes in `dir`: a plain name, or `outputs/`
/// and a relative path of plain names, whose directories are made.
pub(crate) fn trial_file_path(dir: &Path, name: &str) -> Result<PathBuf, StoreError> {
    let Some(rel) = name.strip_prefix(OUTPUTS_DIR).and_then(|r| r.strip_prefix('/')) else {
        check_name("file name", name)?;
        return Ok(dir.join(name));
    };
    let mut path = dir.join(OUTPUTS_DIR);
    for part in rel.split('/') {
        check_name("file name", part)
            .map_err(|_| StoreError::BadName { what: "file name", name: name.into() })?;
        path.push(part);
    }
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| StoreError::io("create directory", parent, e))?;
    }
    Ok(path)
}

/// Removes what an attempt that a kill cut off before its record left in
/// the trial directory `dir`: loose files beside no result.json, and an
/// `attempt-<k>/` without its `attempt-<k>.json`. Only records make an
/// attempt kept, so nothing of a kept attempt is removed.
fn remove_unrecorded(dir: &Path) -> Result<(), StoreError> {
    let entries = fs::read_dir(dir).map_err(|e| StoreError::io("read directory", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_dir = entry.file_type().map_err(|e| StoreError::io("stat", &path, e))?.is_dir();
        let removed = if is_dir && name == OUTPUTS_DIR {
            fs::remove_dir_all(&path)
        } else if is_dir {
            match attempt_number(&name) {
                Some(k) if !name.ends_with(".json") && !dir.join(attempt_file(k)).exists() => {
                    fs::remove_dir_all(&path)
                }
                _ => continue,
            }
        } else if !is_record_name(&name) && !name.starts_with('.') {
            fs::remove_file(&path)
        } else {
            continue;
        };
        removed.map_err(|e| StoreError::io("remove", &path, e))?;
    }
    Ok(())
}

/// A single path component of our own: no separators, no `.`/`..`, and no
/// leading dot (those names are the store's: `.lock`, temporaries).
pub(crate) fn check_name(what: &'static str, name: &str) -> Result<(), StoreError> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\0']) {
        return Err(StoreError::BadName { what, name: name.to_string() });
    }
    Ok(())
}

pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), StoreError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| StoreError::Encode { path: path.to_path_buf(), detail: e.to_string() })?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

pub(crate) fn read_record(path: &Path) -> Result<TrialRecord, StoreError> {
    let text = fs::read(path).map_err(|e| StoreError::io("read", path, e))?;
    // The version first, so a newer schema gets its own message rather than
    // whatever field it changed.
    #[derive(serde::Deserialize)]
    struct Version {
        schema_version: u32,
    }
    if let Ok(Version { schema_version }) = serde_json::from_slice::<Version>(&text) {
        if schema_version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: schema_version,
                supported: SCHEMA_VERSION,
            });
        }
    }
    serde_json::from_slice(&text).map_err(|source| StoreError::BadRecord { path: path.to_path_buf(), source })
}

/// The directories in `dir`, sorted; none if `dir` does not exist.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io("read directory", dir, e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", dir, e))?;
        let is_dir = entry.file_type().map_err(|e| StoreError::io("stat", entry.path(), e))?.is_dir();
        if is_dir {
            dirs.push(entry.path());
        }
    }
    dirs.sort();
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_plain_components() {
        for bad in ["", ".", "..", ".lock", "a/b", "/abs", "nul\0"] {
            assert!(check_name("task id", bad).is_err(), "{bad:?}");
        }
        for good in ["sobol-seq", "agent.log", "a b", "x..y"] {
            assert!(check_name("task id", good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn record_names_are_reserved() {
        assert!(is_record_name("result.json"));
        assert!(is_record_name("attempt-3.json"));
        assert!(is_record_name("attempt-3"));
        assert!(!is_record_name("attempt-notes.json"));
        assert!(!is_record_name("agent.log"));
    }

    #[test]
    fn run_ids_look_right() {
        let id = new_run_id();
        assert_eq!(id.len(), "2026-11-29T21-12-55Z-3f9a".len(), "{id}");
        assert!(id.as_bytes()[10] == b'T' && id.as_bytes()[19] == b'Z', "{id}");
        assert!(id[21..].chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        assert!(check_name("run id", &id).is_ok());
    }
}
