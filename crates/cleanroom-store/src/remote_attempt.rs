//! An attempt that another process runs for the run (a Slurm job on a
//! node): what it reports through the run directory, under
//! `slurm/attempts/<task>/<agent-id>/<n>/<attempt>/`. The node writes the
//! phase it is in, then the attempt's files and last its record; the
//! process that owns the run reads them and records the attempt as its
//! own (result.json or attempt-<k>), so that the run directory keeps one
//! writer.

use std::fs;
use std::path::{Path, PathBuf};

use crate::atomic::write_atomic;
use crate::error::StoreError;
use crate::record::TrialRecord;
use crate::run_dir::{check_name, read_record, trial_file_path, write_json, TrialFile};

const ATTEMPTS_DIR: &str = "slurm/attempts";
const PHASE_FILE: &str = "phase";
const RECORD_FILE: &str = "record.json";
const FILES_DIR: &str = "files";

pub struct RemoteAttempt {
    dir: PathBuf,
}

/// An attempt a node has reported a phase of and not yet ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub task: String,
    pub agent_id: String,
    pub trial: u32,
    pub attempt: u32,
    pub phase: String,
}

/// Every attempt under way on the run's nodes, by task, agent, trial and
/// attempt.
pub fn in_flight(run: &Path) -> Vec<InFlight> {
    let names = |dir: &Path| -> Vec<(String, PathBuf)> {
        let mut out: Vec<(String, PathBuf)> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect();
        out.sort();
        out
    };
    let mut found = Vec::new();
    for (task, task_dir) in names(&run.join(ATTEMPTS_DIR)) {
        for (agent_id, agent_dir) in names(&task_dir) {
            for (trial, trial_dir) in names(&agent_dir) {
                for (attempt, dir) in names(&trial_dir) {
                    let (Ok(trial), Ok(attempt)) = (trial.parse(), attempt.parse()) else { continue };
                    let report = RemoteAttempt { dir };
                    if let (Some(phase), false) = (report.phase(), report.is_done()) {
                        found.push(InFlight {
                            task: task.clone(),
                            agent_id: agent_id.clone(),
                            trial,
                            attempt,
                            phase,
                        });
                    }
                }
            }
        }
    }
    found
}

impl RemoteAttempt {
    /// Where attempt `attempt` of trial `n` of `task` × `agent_id` reports.
    pub fn at(
        run: &Path,
        task: &str,
        agent_id: &str,
        n: u32,
        attempt: u32,
    ) -> Result<RemoteAttempt, StoreError> {
        check_name("task id", task)?;
        check_name("agent id", agent_id)?;
        let dir = run
            .join("slurm/attempts")
            .join(task)
            .join(agent_id)
            .join(n.to_string())
            .join(attempt.to_string());
        Ok(RemoteAttempt { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn made(&self) -> Result<(), StoreError> {
        fs::create_dir_all(&self.dir).map_err(|e| StoreError::io("create directory", &self.dir, e))
    }

    pub fn write_phase(&self, phase: &str) -> Result<(), StoreError> {
        self.made()?;
        write_atomic(&self.dir.join(PHASE_FILE), phase.as_bytes())
    }

    /// The phase the attempt last reported, if any.
    pub fn phase(&self) -> Option<String> {
        fs::read_to_string(self.dir.join(PHASE_FILE)).ok()
    }

    /// The attempt's end: its files, then its record, which makes it done.
    pub fn write_outcome(&self, record: &TrialRecord, files: &[TrialFile]) -> Result<(), StoreError> {
        let dir = self.dir.join(FILES_DIR);
        fs::create_dir_all(&dir).map_err(|e| StoreError::io("create directory", &dir, e))?;
        for f in files {
            write_atomic(&trial_file_path(&dir, &f.name)?, &f.bytes)?;
        }
        write_json(&self.dir.join(RECORD_FILE), record)
    }

    /// Whether the attempt has ended: its record is there.
    pub fn is_done(&self) -> bool {
        self.dir.join(RECORD_FILE).is_file()
    }

    /// The attempt's record and files once it is done; None before.
    pub fn outcome(&self) -> Result<Option<(TrialRecord, Vec<TrialFile>)>, StoreError> {
        if !self.is_done() {
            return Ok(None);
        }
        let record = read_record(&self.dir.join(RECORD_FILE))?;
        let dir = self.dir.join(FILES_DIR);
        let mut files = Vec::new();
        read_files(&dir, "", &mut files)?;
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Some((record, files)))
    }

    /// Removes the report once the run has recorded it.
    pub fn remove(&self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The files under `dir`, named by their path below the files' top
/// (`prefix`): `outputs/` is the one directory among them.
fn read_files(dir: &Path, prefix: &str, files: &mut Vec<TrialFile>) -> Result<(), StoreError> {
    for entry in fs::read_dir(dir).map_err(|e| StoreError::io("read directory", dir, e))?.flatten() {
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        // What a write cut off left (write_atomic's temporary files).
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            read_files(&entry.path(), &format!("{name}/"), files)?;
            continue;
        }
        let bytes = fs::read(entry.path()).map_err(|e| StoreError::io("read", entry.path(), e))?;
        files.push(TrialFile { name, bytes });
    }
    Ok(())
}
