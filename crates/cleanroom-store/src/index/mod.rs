//! The results database (DESIGN.md, "Run directory"): `<out>/index.sqlite`
//! beside the run directories, with every run and trial of `<out>` in
//! tables that reports query across runs. The run directories stay the
//! source of truth: the index is derived from them, written as trials end,
//! and can be rebuilt from them at any time (`Index::rebuild`).
//!
//! Several cleanroom processes may write one index at once (WAL mode and a
//! busy timeout); each trial is written in one transaction.

mod migrations;
mod schema;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{
    params, Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};

use crate::error::StoreError;
use crate::record::TrialRecord;
use crate::run_config::RunConfig;
use crate::run_dir::{is_run, read_record, read_run_config, result_files};

pub use migrations::INDEX_SCHEMA_VERSION;
/// The SQLite binding the index uses, for callers that query it directly.
pub use rusqlite;

/// The index's file name in the directory of runs.
pub const INDEX_FILE: &str = "index.sqlite";

/// How long a writer waits for another process's transaction to end.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("results index {}: {source}", path.display())]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("results index {}: migration to version {version} failed: {source}", path.display())]
    Migration {
        path: PathBuf,
        version: u32,
        #[source]
        source: rusqlite::Error,
    },
    #[error("results index {} has schema version {found}, newer than this cleanroom reads ({supported}): upgrade cleanroom, or move the file away and run `cleanroom index rebuild`", path.display())]
    NewerSchema { path: PathBuf, found: u32, supported: u32 },
    #[error("results index {} has schema version {found}, not the {supported} this cleanroom reads without writing: run `cleanroom index rebuild`", path.display())]
    OtherSchema { path: PathBuf, found: u32, supported: u32 },
    #[error("cannot make a results index in {}: no such directory", .0.display())]
    NoDir(PathBuf),
    #[error("results index {}: run {run_id} is not recorded; record the run before its trials", path.display())]
    UnknownRun { path: PathBuf, run_id: String },
    #[error("results index {}: cannot read the stored record of {what}: {source}", path.display())]
    BadRow {
        path: PathBuf,
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Attaches the index's path to SQLite errors.
pub(crate) trait At<T> {
    fn at(self, path: &Path) -> Result<T, IndexError>;
}

impl<T> At<T> for Result<T, rusqlite::Error> {
    fn at(self, path: &Path) -> Result<T, IndexError> {
        self.map_err(|source| IndexError::Sqlite { path: path.to_path_buf(), source })
    }
}

/// An open results index.
#[derive(Debug)]
pub struct Index {
    conn: Connection,
    /// The directory of runs the index is in.
    dir: PathBuf,
    path: PathBuf,
}

/// A run as the index has it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedRun {
    pub run_id: String,
    /// The run directory (resolved against the index's directory).
    pub path: PathBuf,
    pub created: String,
    pub tool_version: String,
    pub backend: String,
    pub config: RunConfig,
}

/// What `Index::rebuild` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RebuildReport {
    pub runs: usize,
    pub trials: usize,
    /// Directories that are not runs and result files that could not be
    /// read, with why; they are left out of the index.
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

impl Index {
    /// Opens `<out_dir>/index.sqlite`, creating it if missing, and brings
    /// its schema up to date. Fails on an index newer than this cleanroom.
    pub fn open(out_dir: &Path) -> Result<Index, IndexError> {
        if !out_dir.is_dir() {
            return Err(IndexError::NoDir(out_dir.to_path_buf()));
        }
        let path = out_dir.join(INDEX_FILE);
        let conn = Connection::open(&path).at(&path)?;
        conn.busy_timeout(BUSY_TIMEOUT).at(&path)?;
        // WAL lets readers go on while a run writes; NORMAL is durable
        // enough for an index that can be rebuilt.
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).at(&path)?;
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;").at(&path)?;
        let index = Index { conn, dir: out_dir.to_path_buf(), path };
        let tx = index.write()?;
        migrations::apply(&tx, &index.path)?;
        tx.commit().at(&index.path)?;
        Ok(index)
    }

    /// Opens `<out_dir>/index.sqlite` for reading only, for readers that
    /// must change nothing (the viewer). Fails unless its schema is the one
    /// this cleanroom writes: a writer or `cleanroom index rebuild` brings
    /// an older one up to date.
    pub fn open_read_only(out_dir: &Path) -> Result<Index, IndexError> {
        let path = out_dir.join(INDEX_FILE);
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .at(&path)?;
        conn.busy_timeout(BUSY_TIMEOUT).at(&path)?;
        let found = migrations::current_version(&conn, &path)?;
        if found != INDEX_SCHEMA_VERSION {
            return Err(IndexError::OtherSchema { path, found, supported: INDEX_SCHEMA_VERSION });
        }
        Ok(Index { conn, dir: out_dir.to_path_buf(), path })
    }

    /// How many trials of `run_id` the index has.
    pub fn trial_count(&self, run_id: &str) -> Result<usize, IndexError> {
        let n: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM trials WHERE run_id = ?1", [run_id], |r| r.get(0))
            .at(&self.path)?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// `<out>/index.sqlite`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection, for queries this type has no helper for.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The index's schema version.
    pub fn schema_version(&self) -> Result<u32, IndexError> {
        migrations::current_version(&self.conn, &self.path)
    }

    /// A write transaction, taken at once so that waiting for another
    /// writer goes through the busy timeout.
    fn write(&self) -> Result<Transaction<'_>, IndexError> {
        Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).at(&self.path)
    }

    /// Records the run (its run.toml and directory); again replaces it and
    /// keeps its trials. The run id is the run directory's name.
    pub fn record_run(&self, config: &RunConfig, run_path: &Path) -> Result<(), IndexError> {
        let tx = self.write()?;
        self.insert_run(&tx, config, run_path)?;
        tx.commit().at(&self.path)
    }

    /// Records one trial of a recorded run, in one transaction: again
    /// replaces its row and its checks, steps and tags.
    pub fn record_trial(&self, run_id: &str, record: &TrialRecord) -> Result<(), IndexError> {
        let tx = self.write()?;
        self.insert_trial(&tx, run_id, record)?;
        tx.commit().at(&self.path)
    }

    /// Records the run and the trials it has so far, in one transaction:
    /// what a run (or a resumed one) does when it starts, so that results
    /// written while the index was not (a kill at the wrong moment) are
    /// indexed again.
    pub fn record_results(
        &self,
        config: &RunConfig,
        run_path: &Path,
        records: &[TrialRecord],
    ) -> Result<(), IndexError> {
        let tx = self.write()?;
        let run_id = self.insert_run(&tx, config, run_path)?;
        for record in records {
            self.insert_trial(&tx, &run_id, record)?;
        }
        tx.commit().at(&self.path)
    }

    /// Drops the index of `out_dir` and rebuilds it from every run
    /// directory there (`<out>/*/run.toml` and the trials' result.json),
    /// in one transaction. Runs being written meanwhile lose nothing: their
    /// writes wait for the rebuild and then land on top of it.
    pub fn rebuild(out_dir: &Path) -> Result<RebuildReport, IndexError> {
        let index = match Index::open(out_dir) {
            Err(IndexError::Sqlite { source, .. }) if is_not_a_database(&source) => {
                // The file is no database at all: it is only derived data.
                remove_index_files(out_dir)?;
                Index::open(out_dir)?
            }
            other => other?,
        };
        index.rebuild_in_place()
    }

    fn rebuild_in_place(&self) -> Result<RebuildReport, IndexError> {
        let tx = self.write()?;
        for table in schema::TABLES {
            tx.execute_batch(&format!("DROP TABLE IF EXISTS {table}")).at(&self.path)?;
        }
        migrations::apply(&tx, &self.path)?;

        let mut report = RebuildReport::default();
        let entries = fs::read_dir(&self.dir).map_err(|e| StoreError::io("read directory", &self.dir, e))?;
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        dirs.sort();
        for dir in dirs {
            if !is_run(&dir) {
                report
                    .skipped
                    .push(Skipped { path: dir, reason: "not a run directory: it has no run.toml".into() });
                continue;
            }
            let config = match read_run_config(&dir) {
                Ok(config) => config,
                Err(e) => {
                    report.skipped.push(Skipped { path: dir, reason: e.to_string() });
                    continue;
                }
            };
            let run_id = self.insert_run(&tx, &config, &dir)?;
            report.runs += 1;
            let files = match result_files(&dir) {
                Ok(files) => files,
                Err(e) => {
                    report.skipped.push(Skipped { path: dir, reason: e.to_string() });
                    continue;
                }
            };
            for file in files {
                match read_record(&file) {
                    Ok(record) => {
                        self.insert_trial(&tx, &run_id, &record)?;
                        report.trials += 1;
                    }
                    Err(e) => report.skipped.push(Skipped { path: file, reason: e.to_string() }),
                }
            }
        }
        tx.commit().at(&self.path)?;
        Ok(report)
    }

    /// Every recorded run, oldest first.
    pub fn runs(&self) -> Result<Vec<IndexedRun>, IndexError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, path, created, tool_version, backend, config_json
                 FROM runs ORDER BY created, run_id",
            )
            .at(&self.path)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .at(&self.path)?;
        let mut runs = Vec::new();
        for row in rows {
            let (run_id, path, created, tool_version, backend, config_json) = row.at(&self.path)?;
            let config = serde_json::from_str(&config_json).map_err(|source| IndexError::BadRow {
                path: self.path.clone(),
                what: format!("run {run_id}"),
                source,
            })?;
            runs.push(IndexedRun {
                path: self.dir.join(path),
                run_id,
                created,
                tool_version,
                backend,
                config,
            });
        }
        Ok(runs)
    }

    /// The trials of the given runs (every run when `run_ids` is empty),
    /// as their records: by run in the order given, then by task, agent id
    /// and trial number. An unknown run id has no trials.
    pub fn trials(&self, run_ids: &[String]) -> Result<Vec<TrialRecord>, IndexError> {
        Ok(self.trials_by_run(run_ids)?.into_iter().map(|(_, record)| record).collect())
    }

    /// Like `trials`, with each record's run id.
    pub fn trials_by_run(&self, run_ids: &[String]) -> Result<Vec<(String, TrialRecord)>, IndexError> {
        const COLUMNS: &str = "SELECT run_id, task, agent_id, trial, record_json FROM trials";
        const ORDER: &str = "ORDER BY run_id, task, agent_id, trial";
        let mut found = Vec::new();
        if run_ids.is_empty() {
            let mut stmt = self.conn.prepare(&format!("{COLUMNS} {ORDER}")).at(&self.path)?;
            self.collect_trials(&mut stmt, [], &mut found)?;
        } else {
            let mut stmt =
                self.conn.prepare(&format!("{COLUMNS} WHERE run_id = ?1 {ORDER}")).at(&self.path)?;
            for run_id in run_ids {
                self.collect_trials(&mut stmt, [run_id], &mut found)?;
            }
        }
        Ok(found)
    }

    fn collect_trials(
        &self,
        stmt: &mut rusqlite::Statement<'_>,
        params: impl rusqlite::Params,
        found: &mut Vec<(String, TrialRecord)>,
    ) -> Result<(), IndexError> {
        let rows = stmt
            .query_map(params, |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .at(&self.path)?;
        for row in rows {
            let (run_id, task, agent_id, trial, json) = row.at(&self.path)?;
            let record = serde_json::from_str(&json).map_err(|source| IndexError::BadRow {
                path: self.path.clone(),
                what: format!("trial {run_id}/{task}/{agent_id}/{trial}"),
                source,
            })?;
            found.push((run_id, record));
        }
        Ok(())
    }

    /// Upserts the run's row (never deleting it, which would take its
    /// trials along); returns its run id.
    fn insert_run(
        &self,
        tx: &Transaction<'_>,
        config: &RunConfig,
        run_path: &Path,
    ) -> Result<String, IndexError> {
        let run_id = run_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| config.run_id.clone());
        let config_json = serde_json::to_string(config)
            .map_err(|e| StoreError::Encode { path: run_path.join("run.toml"), detail: e.to_string() })?;
        tx.execute(
            "INSERT INTO runs (run_id, path, created, tool_version, backend, config_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (run_id) DO UPDATE SET
                 path = excluded.path, created = excluded.created,
                 tool_version = excluded.tool_version, backend = excluded.backend,
                 config_json = excluded.config_json",
            params![
                run_id,
                self.stored_path(run_path),
                config.created,
                config.tool_version,
                config.backend,
                config_json
            ],
        )
        .at(&self.path)?;
        self.insert_tasks(tx, &run_id, config)?;
        Ok(run_id)
    }

    /// Replaces the run's task rows with those of its run.toml.
    fn insert_tasks(&self, tx: &Transaction<'_>, run_id: &str, config: &RunConfig) -> Result<(), IndexError> {
        tx.execute("DELETE FROM tasks WHERE run_id = ?1", [run_id]).at(&self.path)?;
        let mut insert = tx
            .prepare(
                "INSERT INTO tasks (run_id, task, title, domain, difficulty, language, languages_json,
                     legacy, gpu, qemu, year, tags_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .at(&self.path)?;
        for (task, info) in &config.task_info {
            insert
                .execute(params![
                    run_id,
                    task,
                    info.title,
                    info.domain,
                    info.difficulty,
                    info.languages.first(),
                    json_list(&info.languages),
                    info.legacy,
                    info.gpu,
                    info.qemu,
                    info.year,
                    json_list(&info.tags),
                ])
                .at(&self.path)?;
        }
        Ok(())
    }

    fn insert_trial(&self, tx: &Transaction<'_>, run_id: &str, r: &TrialRecord) -> Result<(), IndexError> {
        let known: Option<i64> = tx
            .query_row("SELECT 1 FROM runs WHERE run_id = ?1", [run_id], |row| row.get(0))
            .optional()
            .at(&self.path)?;
        if known.is_none() {
            return Err(IndexError::UnknownRun { path: self.path.clone(), run_id: run_id.to_string() });
        }
        let key = params![run_id, r.task, r.agent_id, r.trial];
        for table in ["checks", "steps", "tags"] {
            tx.execute(
                &format!(
                    "DELETE FROM {table} WHERE run_id = ?1 AND task = ?2 AND agent_id = ?3 AND trial = ?4"
                ),
                key,
            )
            .at(&self.path)?;
        }
        let record_json = serde_json::to_string(r).map_err(|e| StoreError::Encode {
            path: PathBuf::from(format!("{run_id}/trials/{}/{}/{}", r.task, r.agent_id, r.trial)),
            detail: e.to_string(),
        })?;
        tx.execute(
            "INSERT INTO trials (run_id, task, agent, agent_id, model, trial, attempt, outcome, class, stage,
                 stop_reason, exit_code, skip_reason, error, gate, started_at, finished_at,
                 env_seconds, agent_seconds, verify_seconds,
                 prompt_tokens, completion_tokens, cached_tokens, cost_usd, record_json, negative_control)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)
             ON CONFLICT (run_id, task, agent_id, trial) DO UPDATE SET
                 agent = excluded.agent, model = excluded.model, attempt = excluded.attempt,
                 outcome = excluded.outcome, class = excluded.class, stage = excluded.stage,
                 stop_reason = excluded.stop_reason, exit_code = excluded.exit_code,
                 skip_reason = excluded.skip_reason, error = excluded.error, gate = excluded.gate,
                 started_at = excluded.started_at, finished_at = excluded.finished_at,
                 env_seconds = excluded.env_seconds, agent_seconds = excluded.agent_seconds,
                 verify_seconds = excluded.verify_seconds, prompt_tokens = excluded.prompt_tokens,
                 completion_tokens = excluded.completion_tokens, cached_tokens = excluded.cached_tokens,
                 cost_usd = excluded.cost_usd, record_json = excluded.record_json,
                 negative_control = excluded.negative_control",
            params![
                run_id,
                r.task,
                r.agent,
                r.agent_id,
                r.model,
                r.trial,
                r.attempt,
                r.outcome.as_str(),
                r.class.map(|c| c.as_str()),
                r.stage.as_str(),
                r.stop_reason.map(|s| s.as_str()),
                r.exit_code,
                r.skip_reason,
                r.error,
                r.gate.as_str(),
                r.started_at,
                r.finished_at,
                r.timings.environment,
                r.timings.agent,
                r.timings.verify,
                sql_int(r.tokens.prompt),
                sql_int(r.tokens.completion),
                sql_int(r.tokens.cached),
                r.cost_usd,
                record_json,
                r.negative_control,
            ],
        )
        .at(&self.path)?;
        let Some(verdict) = &r.verdict else {
            return self.insert_tags(tx, run_id, r);
        };
        let mut check = tx
            .prepare(
                "INSERT INTO checks (run_id, task, agent_id, trial, seq, name, passed, expected, observed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )
            .at(&self.path)?;
        for (seq, c) in (0i64..).zip(&verdict.checks) {
            check
                .execute(params![
                    run_id, r.task, r.agent_id, r.trial, seq, c.name, c.passed, c.expected, c.observed
                ])
                .at(&self.path)?;
        }
        let mut step = tx
            .prepare(
                "INSERT INTO steps (run_id, task, agent_id, trial, seq, name, stage, status, exit_code, seconds)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )
            .at(&self.path)?;
        for (seq, s) in (0i64..).zip(&verdict.steps) {
            step.execute(params![
                run_id,
                r.task,
                r.agent_id,
                r.trial,
                seq,
                s.name,
                s.stage.as_str(),
                enum_name(&s.status),
                s.exit_code,
                s.seconds
            ])
            .at(&self.path)?;
        }
        self.insert_tags(tx, run_id, r)
    }

    fn insert_tags(&self, tx: &Transaction<'_>, run_id: &str, r: &TrialRecord) -> Result<(), IndexError> {
        let mut tag = tx
            .prepare(
                "INSERT INTO tags (run_id, task, agent_id, trial, seq, name, evidence_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .at(&self.path)?;
        for (seq, t) in (0i64..).zip(&r.tags) {
            let evidence = serde_json::to_string(&t.evidence).unwrap_or_else(|_| "[]".into());
            tag.execute(params![run_id, r.task, r.agent_id, r.trial, seq, t.name, evidence]).at(&self.path)?;
        }
        Ok(())
    }

    /// The run directory as the index keeps it: its name when it is
    /// directly in the index's directory (so the directory of runs can be
    /// moved), its absolute path otherwise.
    fn stored_path(&self, run_path: &Path) -> String {
        let absolute = fs::canonicalize(run_path).unwrap_or_else(|_| run_path.to_path_buf());
        let dir = fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) if parent == dir => name.to_string_lossy().into_owned(),
            _ => absolute.display().to_string(),
        }
    }
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

/// Token counts fit in SQLite's signed integers; saturate rather than fail.
fn sql_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The JSON spelling of a unit enum, e.g. `timed_out`.
fn enum_name(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn is_not_a_database(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt))
}

fn remove_index_files(out_dir: &Path) -> Result<(), IndexError> {
    for suffix in ["", "-wal", "-shm"] {
        let path = out_dir.join(format!("{INDEX_FILE}{suffix}"));
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("remove", path, e).into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
