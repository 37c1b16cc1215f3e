//! What the viewer reads: the directory of runs, each run's run.toml,
//! summary.json and trial records, and the files of a trial directory.
//! Nothing here writes or locks: a run being written is read as far as it
//! got. Records come from the results index when it holds all of a run's
//! trials (one query for thousands), else from the run directory, which
//! is the source of truth.

use std::fs;
use std::path::{Path, PathBuf};

use cleanroom_store::{
    read_results, read_run_config, run_in_use, Index, RunConfig, StoreError, Summary, TrialRecord,
    OUTPUTS_DIR,
};

/// Bytes of a trial file shown; a longer one is cut, and the page says so.
pub const FILE_SHOWN: u64 = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("no such {what}: {name}")]
    NotFound { what: &'static str, name: String },
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Whether a run is still being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// A cleanroom process holds the run.
    Running,
    /// Not every planned trial has a result and nothing holds the run: it
    /// was interrupted (`cleanroom run --resume` finishes it).
    Stopped,
    Finished,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Stopped => "stopped",
            RunState::Finished => "finished",
        }
    }
}

/// A run as the runs page lists it.
#[derive(Debug, Clone)]
pub struct RunEntry {
    pub run_id: String,
    pub config: RunConfig,
    /// None before the first trial ended.
    pub summary: Option<Summary>,
    /// Trials the run planned: its summary's count, or before the first
    /// trial ended, its tasks × agents × trials from run.toml.
    pub planned: usize,
    pub state: RunState,
}

/// A run with all its trial records.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    pub entry: RunEntry,
    pub records: Vec<TrialRecord>,
}

/// The directory of runs the viewer shows.
#[derive(Debug, Clone)]
pub struct Library {
    dir: PathBuf,
}

impl Library {
    pub fn new(dir: impl Into<PathBuf>) -> Library {
        Library { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every run directory (one with a run.toml), newest first. A run whose
    /// run.toml does not read is left out.
    pub fn runs(&self) -> Result<Vec<RunEntry>, SourceError> {
        let entries =
            fs::read_dir(&self.dir).map_err(|source| SourceError::Io { path: self.dir.clone(), source })?;
        let mut runs: Vec<RunEntry> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| self.entry(&e.file_name().to_string_lossy()).ok())
            .collect();
        runs.sort_by(|a, b| (&b.config.created, &b.run_id).cmp(&(&a.config.created, &a.run_id)));
        Ok(runs)
    }

    fn run_path(&self, run_id: &str) -> Result<PathBuf, SourceError> {
        let path = self.dir.join(safe_name("run", run_id)?);
        if !path.join("run.toml").is_file() {
            return Err(SourceError::NotFound { what: "run", name: run_id.to_string() });
        }
        Ok(path)
    }

    fn entry(&self, run_id: &str) -> Result<RunEntry, SourceError> {
        let path = self.run_path(run_id)?;
        let config = read_run_config(&path)?;
        let summary: Option<Summary> =
            fs::read(path.join("summary.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let state = if run_in_use(&path) {
            RunState::Running
        } else if summary.as_ref().is_some_and(|s| s.complete) {
            RunState::Finished
        } else {
            RunState::Stopped
        };
        let planned = summary
            .as_ref()
            .map_or(config.task_info.len() * config.agents.len() * config.trials as usize, |s| s.planned);
        Ok(RunEntry { run_id: run_id.to_string(), config, summary, planned, state })
    }

    /// The run and its records, from the index when it has every trial the
    /// run's summary counts, else from the run directory.
    pub fn run(&self, run_id: &str) -> Result<LoadedRun, SourceError> {
        let entry = self.entry(run_id)?;
        let recorded = entry.summary.as_ref().map(|s| s.totals.recorded);
        let indexed = Index::open_read_only(&self.dir).ok().and_then(|index| {
            let complete = index.trial_count(run_id).ok()? == recorded?;
            complete.then(|| index.trials(&[run_id.to_string()]).ok()).flatten()
        });
        let records = match indexed {
            Some(records) => records,
            None => read_results(&self.run_path(run_id)?)?,
        };
        Ok(LoadedRun { entry, records })
    }

    /// `<run>/trials/<task>/<agent>/<n>`, which must exist.
    pub fn trial_dir(
        &self,
        run_id: &str,
        task: &str,
        agent_id: &str,
        n: u32,
    ) -> Result<PathBuf, SourceError> {
        let dir = self
            .run_path(run_id)?
            .join("trials")
            .join(safe_name("task", task)?)
            .join(safe_name("agent", agent_id)?)
            .join(n.to_string());
        if !dir.is_dir() {
            return Err(SourceError::NotFound { what: "trial", name: format!("{task}/{agent_id}/{n}") });
        }
        Ok(dir)
    }

    /// The trial's record, read from its result.json.
    pub fn trial(
        &self,
        run_id: &str,
        task: &str,
        agent_id: &str,
        n: u32,
    ) -> Result<TrialRecord, SourceError> {
        let path = self.trial_dir(run_id, task, agent_id, n)?.join(cleanroom_store::RESULT_FILE);
        let bytes = fs::read(&path).map_err(|_| SourceError::NotFound {
            what: "trial result",
            name: format!("{task}/{agent_id}/{n}"),
        })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| SourceError::Store(StoreError::Encode { path: path.clone(), detail: e.to_string() }))
    }
}

/// Files listed of a trial's `outputs/` (the verify steps' own files).
const OUTPUTS_LISTED: usize = 1000;

/// The regular files of a trial directory, and of its `outputs/` at any
/// depth (as `outputs/a/b`), sorted, with their sizes; links are never
/// followed.
pub fn trial_files(dir: &Path) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    collect_files(dir, "", &mut files, 0);
    files.sort();
    files
}

fn collect_files(dir: &Path, prefix: &str, files: &mut Vec<(String, u64)>, depth: usize) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else { continue };
        let Ok(name) = entry.file_name().into_string() else { continue };
        if name.starts_with('.') || files.len() >= OUTPUTS_LISTED {
            continue;
        }
        let shown = format!("{prefix}{name}");
        if meta.is_file() {
            files.push((shown, meta.len()));
        } else if meta.is_dir() && (depth > 0 || name == OUTPUTS_DIR) && depth < 8 {
            collect_files(&entry.path(), &format!("{shown}/"), files, depth + 1);
        }
    }
}

/// A file of the trial directory (`NAME`, or `outputs/` and a relative
/// path): at most `FILE_SHOWN` bytes of it, lossy UTF-8, and whether it
/// was cut. Every component must be a plain name and a real directory or,
/// last, a regular file: nothing is read through a link.
pub fn read_trial_file(dir: &Path, name: &str) -> Result<(String, bool), SourceError> {
    let missing = || SourceError::NotFound { what: "file", name: name.to_string() };
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1 && parts[0] != OUTPUTS_DIR {
        return Err(missing());
    }
    let mut path = dir.to_path_buf();
    for (k, part) in parts.iter().enumerate() {
        path.push(safe_name("file", part)?);
        let meta = path.symlink_metadata().map_err(|_| missing())?;
        let last = k + 1 == parts.len();
        if (last && !meta.is_file()) || (!last && !meta.is_dir()) {
            return Err(missing());
        }
    }
    use std::io::Read;
    let file = fs::File::open(&path).map_err(|source| SourceError::Io { path: path.clone(), source })?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::new();
    file.take(FILE_SHOWN)
        .read_to_end(&mut bytes)
        .map_err(|source| SourceError::Io { path: path.clone(), source })?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), len > FILE_SHOWN))
}

/// A file of the trial directory if it is there, else none.
pub fn optional_file(dir: &Path, name: &str) -> Option<(String, bool)> {
    read_trial_file(dir, name).ok()
}

/// A name from a URL that may stand for one path component.
fn safe_name<'a>(what: &'static str, name: &'a str) -> Result<&'a str, SourceError> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
        return Err(SourceError::NotFound { what, name: name.to_string() });
    }
    Ok(name)
}
