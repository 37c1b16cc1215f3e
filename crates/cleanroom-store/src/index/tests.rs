use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::types::Value;

use super::*;
use crate::record::{Evidence, FailureClass, Outcome, Tag};
use crate::run_config::AgentEntry;
use crate::run_dir::RunDir;
use crate::{GateMode, StopReason};
use cleanroom_verify::{CheckResult, StepResult, StepStatus, Verdict, VerdictStage};

fn config(run_id: &str, created: &str) -> RunConfig {
    RunConfig {
        tool_version: "0.1.0".into(),
        created: created.into(),
        run_id: run_id.into(),
        backend: "sandbox".into(),
        accelerator: None,
        images: BTreeMap::new(),
        tasks: vec!["/tasks".into()],
        task_ids: vec![],
        agents: vec![
            AgentEntry { spec: "oracle".into(), id: "oracle".into(), gate: None },
            AgentEntry { spec: "nop".into(), id: "nop".into(), gate: None },
        ],
        trials: 2,
        jobs: 1,
        gate: GateMode::Off,
        timeout_multiplier: 1.0,
        retries: 1,
        max_steps: None,
        max_tokens: None,
        max_cost_usd: None,
        config_sources: Vec::new(),
        models: Default::default(),
        external_agents: Default::default(),
        allow_unlimited: false,
        no_cache: false,
        fail_under: None,
        artifacts: BTreeMap::new(),
        slurm: None,
        task_info: BTreeMap::new(),
    }
}

/// A record with a verdict (two checks, three steps) and a tag.
fn record(task: &str, agent: &str, trial: u32) -> TrialRecord {
    let mut r = TrialRecord::new(task, agent, agent, trial, 1);
    let passed = agent == "oracle";
    r.outcome = if passed { Outcome::Passed } else { Outcome::Failed };
    r.class = if passed { None } else { Some(FailureClass::SelfStop) };
    r.stop_reason = Some(StopReason::Finished);
    r.exit_code = Some(0);
    r.stage = if passed { VerdictStage::Results } else { VerdictStage::Setup };
    r.timings.environment = 0.25;
    r.timings.agent = 1.5 + trial as f64;
    r.timings.verify = 0.125;
    r.tokens.prompt = 1000;
    r.tokens.completion = 200;
    r.tokens.cached = 10;
    r.cost_usd = 0.0125;
    // The stage type belongs to the task crate; build steps as read.
    let step = |name: &str, stage: &str, status: StepStatus| -> StepResult {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "stage": stage,
            "exit_code": if status == StepStatus::Passed { Some(0) } else { None },
            "seconds": 0.5,
            "status": status,
        }))
        .unwrap()
    };
    r.verdict = Some(Verdict {
        steps: vec![
            step("setup", "setup", StepStatus::Passed),
            step("build", "build", if passed { StepStatus::Passed } else { StepStatus::Failed }),
            step("run", "run", if passed { StepStatus::Passed } else { StepStatus::NotRun }),
        ],
        checks: vec![
            CheckResult {
                name: "rmse".into(),
                passed,
                expected: "0.1 (abs_tol 0.01)".into(),
                observed: "0.1".into(),
            },
            CheckResult {
                name: "n".into(),
                passed: true,
                expected: "3 (exact)".into(),
                observed: "3".into(),
            },
        ],
        stage: r.stage,
        passed,
    });
    r.tags = vec![Tag {
        name: "network".into(),
        evidence: vec![Evidence { file: "agent.log".into(), line: 7, text: "curl: (6) 'quoted'".into() }],
    }];
    r
}

/// Every row of every table, in key order, as text: what "the same index"
/// means (the migration rows' times aside).
fn dump(index: &Index) -> Vec<String> {
    let mut out = Vec::new();
    for table in ["runs", "trials", "checks", "steps", "tags"] {
        let mut stmt =
            index.connection().prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2, 3, 4, 5")).unwrap();
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |row| {
                let values: Vec<Value> = (0..n).map(|i| row.get(i)).collect::<Result<_, _>>()?;
                Ok(format!("{table}: {values:?}"))
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

fn count(index: &Index, sql: &str) -> i64 {
    index.connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn migrations_from_empty() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path()).unwrap();
    assert_eq!(index.schema_version().unwrap(), INDEX_SCHEMA_VERSION);
    assert_eq!(INDEX_SCHEMA_VERSION, 3);
    assert!(dir.path().join(INDEX_FILE).is_file());
    for table in ["runs", "trials", "checks", "steps", "tags", "tasks", "schema_migrations"] {
        let n = count(
            &index,
            &format!("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '{table}'"),
        );
        assert_eq!(n, 1, "table {table}");
    }
    assert_eq!(count(&index, "SELECT COUNT(*) FROM schema_migrations"), 3);
    let mode: String = index.connection().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    assert!(index.runs().unwrap().is_empty());
    assert!(index.trials(&[]).unwrap().is_empty());
}

#[test]
fn reopening_keeps_the_schema_and_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-a");
    std::fs::create_dir(&run).unwrap();
    {
        let index = Index::open(dir.path()).unwrap();
        index.record_run(&config("run-a", "2026-01-01T00:00:00Z"), &run).unwrap();
        index.record_trial("run-a", &record("t", "oracle", 1)).unwrap();
    }
    let index = Index::open(dir.path()).unwrap();
    assert_eq!(index.schema_version().unwrap(), 3);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM schema_migrations"), 3, "no migration applied twice");
    assert_eq!(index.trials(&[]).unwrap(), vec![record_like(&index, "t", "oracle", 1)]);
    let runs = index.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].run_id, "run-a");
    assert_eq!(runs[0].path, dir.path().join("run-a"), "stored relative, resolved on reading");
    assert_eq!(runs[0].config, config("run-a", "2026-01-01T00:00:00Z"));
    let stored: String = index.connection().query_row("SELECT path FROM runs", [], |r| r.get(0)).unwrap();
    assert_eq!(stored, "run-a");
}

/// The one stored record of a trial (its timestamps are the record's own).
fn record_like(index: &Index, task: &str, agent: &str, trial: u32) -> TrialRecord {
    index
        .trials(&[])
        .unwrap()
        .into_iter()
        .find(|r| r.task == task && r.agent_id == agent && r.trial == trial)
        .expect("recorded")
}

#[test]
fn recording_a_trial_again_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path()).unwrap();
    index.record_run(&config("r", "2026-01-01T00:00:00Z"), &dir.path().join("r")).unwrap();
    let first = record("t", "nop", 1);
    index.record_trial("r", &first).unwrap();
    assert_eq!(count(&index, "SELECT COUNT(*) FROM trials"), 1);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM checks"), 2);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM steps"), 3);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM tags"), 1);
    let (outcome, class, stage, tokens, cost): (String, Option<String>, String, i64, f64) = index
        .connection()
        .query_row("SELECT outcome, class, stage, prompt_tokens, cost_usd FROM trials", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap();
    assert_eq!((outcome.as_str(), class.as_deref(), stage.as_str()), ("failed", Some("self_stop"), "setup"));
    assert_eq!((tokens, cost), (1000, 0.0125));
    let statuses: Vec<String> = index
        .connection()
        .prepare("SELECT status FROM steps ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(statuses, ["passed", "failed", "not_run"]);
    let evidence: String =
        index.connection().query_row("SELECT evidence_json FROM tags", [], |r| r.get(0)).unwrap();
    assert!(evidence.contains("curl: (6)"), "{evidence}");

    // Again, and again changed: one row, children replaced.
    index.record_trial("r", &first).unwrap();
    let mut second = first.clone();
    second.outcome = Outcome::InfraError;
    second.class = None;
    second.attempt = 2;
    second.verdict.as_mut().unwrap().checks.truncate(1);
    second.tags.clear();
    index.record_trial("r", &second).unwrap();
    assert_eq!(count(&index, "SELECT COUNT(*) FROM trials"), 1);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM checks"), 1);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM steps"), 3);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM tags"), 0);
    assert_eq!(index.trials(&["r".into()]).unwrap(), vec![second]);
    // Recording the run again keeps its trials.
    index.record_run(&config("r", "2026-01-01T00:00:00Z"), &dir.path().join("r")).unwrap();
    assert_eq!(count(&index, "SELECT COUNT(*) FROM trials"), 1);
}

#[test]
fn a_trial_of_an_unknown_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path()).unwrap();
    let err = index.record_trial("nope", &record("t", "nop", 1)).unwrap_err();
    assert!(matches!(err, IndexError::UnknownRun { .. }), "{err}");
}

/// Two runs in `out` written through RunDir, the way `cleanroom run` does,
/// recording each in the index as it goes.
fn two_runs(out: &Path, index: &Index) {
    for (id, created) in [("run-b", "2026-01-02T00:00:00Z"), ("run-a", "2026-01-01T00:00:00Z")] {
        let run = RunDir::create(out, id).unwrap();
        let config = config(id, created);
        run.write_run_config(&config).unwrap();
        index.record_results(&config, run.path(), &[]).unwrap();
        for task in ["alpha", "beta"] {
            for agent in ["oracle", "nop"] {
                for n in 1..=2 {
                    let r = record(task, agent, n);
                    run.write_result(&r, &[]).unwrap();
                    index.record_trial(&run.run_id(), &r).unwrap();
                }
            }
        }
    }
}

#[test]
fn rebuild_equals_incremental() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let index = Index::open(out).unwrap();
    two_runs(out, &index);
    std::fs::create_dir(out.join("not-a-run")).unwrap();
    std::fs::write(out.join("notes.txt"), "a file, not a directory: ignored").unwrap();
    let incremental = dump(&index);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM trials"), 16);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM checks"), 32);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM steps"), 48);
    drop(index);

    let report = Index::rebuild(out).unwrap();
    assert_eq!((report.runs, report.trials), (2, 16));
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert_eq!(report.skipped[0].path, out.join("not-a-run"));
    assert!(report.skipped[0].reason.contains("run.toml"));
    let index = Index::open(out).unwrap();
    assert_eq!(dump(&index), incremental);

    // From nothing, too.
    drop(index);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(out.join(format!("{INDEX_FILE}{suffix}")));
    }
    Index::rebuild(out).unwrap();
    let index = Index::open(out).unwrap();
    assert_eq!(dump(&index), incremental);

    // Queries: runs oldest first, trials by the runs asked for.
    let runs: Vec<String> = index.runs().unwrap().into_iter().map(|r| r.run_id).collect();
    assert_eq!(runs, ["run-a", "run-b"]);
    let b = index.trials_by_run(&["run-b".into()]).unwrap();
    assert_eq!(b.len(), 8);
    assert!(b.iter().all(|(run, _)| run == "run-b"));
    let keys: Vec<(String, String, u32)> =
        b.iter().map(|(_, r)| (r.task.clone(), r.agent_id.clone(), r.trial)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let both = index.trials(&["run-b".into(), "run-a".into()]).unwrap();
    assert_eq!(both.len(), 16);
    assert_eq!(&both[..8], &b.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>()[..], "in the order asked");
    assert!(index.trials(&["no-such-run".into()]).unwrap().is_empty());
}

#[test]
fn rebuild_drops_what_is_no_longer_on_disk_and_skips_bad_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let index = Index::open(out).unwrap();
    two_runs(out, &index);
    drop(index);
    std::fs::remove_dir_all(out.join("run-b")).unwrap();
    let bad = out.join("run-a/trials/alpha/nop/1/result.json");
    std::fs::write(&bad, "{not json").unwrap();
    let report = Index::rebuild(out).unwrap();
    assert_eq!((report.runs, report.trials), (1, 7));
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].path, bad);
    let index = Index::open(out).unwrap();
    assert_eq!(index.runs().unwrap().len(), 1);
    assert_eq!(index.trials(&[]).unwrap().len(), 7);
}

#[test]
fn rebuild_replaces_a_file_that_is_no_database() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(INDEX_FILE), vec![b'x'; 4096]).unwrap();
    assert!(Index::open(dir.path()).is_err());
    let report = Index::rebuild(dir.path()).unwrap();
    assert_eq!((report.runs, report.trials), (0, 0));
    assert_eq!(Index::open(dir.path()).unwrap().schema_version().unwrap(), INDEX_SCHEMA_VERSION);
}

#[test]
fn a_newer_schema_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = Index::open(dir.path()).unwrap();
        index
            .connection()
            .execute("INSERT INTO schema_migrations (version, applied_at) VALUES (7, 'later')", [])
            .unwrap();
    }
    let err = Index::open(dir.path()).unwrap_err();
    match &err {
        IndexError::NewerSchema { found, supported, .. } => {
            assert_eq!((*found, *supported), (7, INDEX_SCHEMA_VERSION))
        }
        other => panic!("expected NewerSchema, got {other}"),
    }
    let message = err.to_string();
    assert!(message.contains("index.sqlite") && message.contains("upgrade cleanroom"), "{message}");
    assert!(
        matches!(Index::rebuild(dir.path()), Err(IndexError::NewerSchema { .. })),
        "rebuild never downgrades"
    );
}

#[test]
fn a_missing_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = Index::open(&dir.path().join("nope")).unwrap_err();
    assert!(matches!(err, IndexError::NoDir(_)), "{err}");
}

#[test]
fn two_writers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_path_buf();
    {
        let index = Index::open(&out).unwrap();
        for id in ["w0", "w1"] {
            index.record_run(&config(id, "2026-01-01T00:00:00Z"), &out.join(id)).unwrap();
        }
    }
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let out = out.clone();
            std::thread::spawn(move || {
                // Each its own connection, as two processes would have.
                let index = Index::open(&out).unwrap();
                for n in 1..=40 {
                    index.record_trial(&format!("w{w}"), &record("t", "nop", n)).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let index = Index::open(&out).unwrap();
    assert_eq!(index.trials(&[]).unwrap().len(), 80);
}

#[test]
fn an_index_of_version_1_gains_the_negative_control_column_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-a");
    std::fs::create_dir(&run).unwrap();
    {
        // What a cleanroom of schema 1 left: its tables and one trial.
        let conn = rusqlite::Connection::open(dir.path().join(INDEX_FILE)).unwrap();
        conn.execute_batch(super::schema::MIGRATIONS[0]).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY NOT NULL, applied_at TEXT NOT NULL);
             INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00Z');",
        )
        .unwrap();
    }
    {
        // Rows written through the version-1 columns only.
        let index = Index::open(dir.path()).unwrap();
        index.record_run(&config("run-a", "2026-01-01T00:00:00Z"), &run).unwrap();
        index.record_trial("run-a", &record("t", "oracle", 1)).unwrap();
    }
    let index = Index::open(dir.path()).unwrap();
    assert_eq!(index.schema_version().unwrap(), INDEX_SCHEMA_VERSION);
    assert_eq!(count(&index, "SELECT COUNT(*) FROM trials WHERE negative_control = 0"), 1);
    let mut control = record("control", "oracle", 1);
    control.negative_control = true;
    index.record_trial("run-a", &control).unwrap();
    assert_eq!(count(&index, "SELECT COUNT(*) FROM trials WHERE negative_control = 1"), 1);
    assert!(index.trials(&[]).unwrap().iter().any(|r| r.negative_control), "read back from record_json");
}

fn info(domain: &str, languages: &[&str], year: Option<i64>) -> crate::TaskInfo {
    crate::TaskInfo {
        title: format!("a {domain} paper"),
        domain: domain.into(),
        difficulty: "easy".into(),
        languages: languages.iter().map(|l| l.to_string()).collect(),
        year,
        ..Default::default()
    }
}

#[test]
fn a_pass_rate_per_domain_is_one_query_over_the_tasks_table() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run-a");
    std::fs::create_dir(&run).unwrap();
    let mut config = config("run-a", "2026-01-01T00:00:00Z");
    config.task_info = BTreeMap::from([
        ("t-ai".to_string(), info("ai", &["python", "c"], Some(2018))),
        ("t-sys".to_string(), info("systems", &["c"], None)),
    ]);
    let index = Index::open(dir.path()).unwrap();
    let records: Vec<TrialRecord> = ["t-ai", "t-sys"]
        .iter()
        .flat_map(|t| [record(t, "oracle", 1), record(t, "oracle", 2), record(t, "nop", 1)])
        .collect();
    index.record_results(&config, &run, &records).unwrap();
    let rows: Vec<(String, String, i64, i64)> = index
        .connection()
        .prepare(
            "SELECT k.domain, t.agent_id, SUM(t.outcome = 'passed'), COUNT(*)
             FROM trials t JOIN tasks k USING (run_id, task)
             GROUP BY k.domain, t.agent_id ORDER BY k.domain, t.agent_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        [
            ("ai".into(), "nop".into(), 0, 1),
            ("ai".into(), "oracle".into(), 2, 2),
            ("systems".into(), "nop".into(), 0, 1),
            ("systems".into(), "oracle".into(), 2, 2),
        ]
    );
    let (language, languages, year): (String, String, Option<i64>) = index
        .connection()
        .query_row("SELECT language, languages_json, year FROM tasks WHERE task = 't-ai'", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!((language.as_str(), languages.as_str(), year), ("python", r#"["python","c"]"#, Some(2018)));

    // Recording the run again replaces its tasks; a rebuild reads them
    // back from run.toml.
    config.task_info.remove("t-sys");
    index.record_run(&config, &run).unwrap();
    assert_eq!(count(&index, "SELECT COUNT(*) FROM tasks"), 1);
    RunDir::create(dir.path(), "run-b")
        .unwrap()
        .write_run_config(&{
            let mut b = config.clone();
            b.run_id = "run-b".into();
            b
        })
        .unwrap();
    std::fs::remove_dir_all(&run).unwrap();
    drop(index);
    Index::rebuild(dir.path()).unwrap();
    let index = Index::open(dir.path()).unwrap();
    assert_eq!(count(&index, "SELECT COUNT(*) FROM tasks WHERE run_id = 'run-b' AND domain = 'ai'"), 1);
}
