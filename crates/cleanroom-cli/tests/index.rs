//! The results index (index.sqlite beside the run directories) against the
//! run directories it is derived from: written as a run goes, rebuilt by
//! `cleanroom index rebuild`, and still in agreement after a `kill -9` and
//! `--resume`. Runs real sandboxes: needs root.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use cleanroom_store::index::rusqlite::Connection;
use common::*;
use serde_json::Value;

fn adversarial_tasks() -> String {
    repo().join("tests/fixtures/tasks-adversarial").display().to_string()
}

fn run_dirs(out: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("run.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

type Key = (String, String, String, u32);

fn key(run_id: &str, r: &Value) -> Key {
    (
        run_id.to_string(),
        r["task"].as_str().unwrap().to_string(),
        r["agent_id"].as_str().unwrap().to_string(),
        r["trial"].as_u64().unwrap() as u32,
    )
}

/// Every result.json of every run in `out`, read as an outside script would.
fn results_on_disk(out: &Path) -> BTreeMap<Key, Value> {
    let mut found = BTreeMap::new();
    for run in run_dirs(out) {
        let run_id = run.file_name().unwrap().to_string_lossy().into_owned();
        for task in std::fs::read_dir(run.join("trials")).into_iter().flatten().flatten() {
            for agent in std::fs::read_dir(task.path()).unwrap().flatten() {
                for n in std::fs::read_dir(agent.path()).unwrap().flatten() {
                    let path = n.path().join("result.json");
                    if path.exists() {
                        let r: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                        assert!(found.insert(key(&run_id, &r), r).is_none());
                    }
                }
            }
        }
    }
    found
}

/// The trial rows of `out/index.sqlite`: each key once, with its columns
/// checked against its stored record, and its checks, steps and tags
/// against the record's.
fn results_in_index(out: &Path) -> BTreeMap<Key, Value> {
    let db = Connection::open(out.join("index.sqlite")).unwrap();
    let rows: i64 = db.query_row("SELECT COUNT(*) FROM trials", [], |r| r.get(0)).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT run_id, task, agent_id, trial, outcome, class, stage, attempt, prompt_tokens, agent_seconds,
                    record_json
             FROM trials",
        )
        .unwrap();
    let mut found = BTreeMap::new();
    let mut rows_seen = 0;
    let mut q = stmt.query([]).unwrap();
    while let Some(row) = q.next().unwrap() {
        rows_seen += 1;
        let run_id: String = row.get(0).unwrap();
        let record: Value = serde_json::from_str(&row.get::<_, String>(10).unwrap()).unwrap();
        let k = key(&run_id, &record);
        assert_eq!(
            (
                row.get::<_, String>(1).unwrap(),
                row.get::<_, String>(2).unwrap(),
                row.get::<_, u32>(3).unwrap()
            ),
            (k.1.clone(), k.2.clone(), k.3)
        );
        assert_eq!(record["outcome"], row.get::<_, String>(4).unwrap().as_str());
        assert_eq!(
            record["class"],
            row.get::<_, Option<String>>(5).unwrap().map_or(Value::Null, Value::from)
        );
        assert_eq!(record["stage"], row.get::<_, String>(6).unwrap().as_str());
        assert_eq!(record["attempt"], row.get::<_, i64>(7).unwrap());
        assert_eq!(record["tokens"]["prompt"], row.get::<_, i64>(8).unwrap());
        assert_eq!(record["timings"]["agent"].as_f64().unwrap(), row.get::<_, f64>(9).unwrap());
        for (table, field) in [("checks", "checks"), ("steps", "steps")] {
            let n: i64 = db
                .query_row(
                    &format!(
                        "SELECT COUNT(*) FROM {table} WHERE run_id = ?1 AND task = ?2 AND agent_id = ?3 AND trial = ?4"
                    ),
                    (&k.0, &k.1, &k.2, k.3),
                    |r| r.get(0),
                )
                .unwrap();
            let expected = record["verdict"][field].as_array().map_or(0, Vec::len);
            assert_eq!(n as usize, expected, "{table} of {k:?}");
        }
        let tags: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM tags WHERE run_id = ?1 AND task = ?2 AND agent_id = ?3 AND trial = ?4",
                (&k.0, &k.1, &k.2, k.3),
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tags as usize, record["tags"].as_array().unwrap().len());
        assert!(found.insert(k.clone(), record).is_none(), "{k:?} indexed twice");
    }
    assert_eq!(rows, rows_seen);
    let runs: Vec<String> = db
        .prepare("SELECT run_id FROM runs ORDER BY run_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let on_disk: Vec<String> =
        run_dirs(out).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(runs, on_disk, "the runs table lists the run directories");
    found
}

fn assert_index_agrees(out: &Path) {
    let disk = results_on_disk(out);
    let index = results_in_index(out);
    assert_eq!(
        index.keys().collect::<Vec<_>>(),
        disk.keys().collect::<Vec<_>>(),
        "every trial exactly one row"
    );
    for (k, r) in &disk {
        assert_eq!(&index[k], r, "the stored record of {k:?} is its result.json");
    }
}

fn remove_index(out: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(out.join(format!("index.sqlite{suffix}")));
    }
}

#[test]
fn a_run_is_indexed_and_rebuilt_alike() {
    let out = temp_out("run");
    let output = cleanroom()
        .args(["run", "--tasks", &adversarial_tasks(), "--agent", "nop", "--agent", "oracle", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(!text(&output).contains("index rebuild"), "no index warning: {}", text(&output));
    let disk = results_on_disk(&out);
    assert_eq!(disk.len(), 2);
    let outcomes: Vec<&str> = disk.values().map(|r| r["outcome"].as_str().unwrap()).collect();
    assert!(outcomes.contains(&"passed") && outcomes.contains(&"failed"), "{outcomes:?}");
    assert_index_agrees(&out);
    let before = results_in_index(&out);

    remove_index(&out);
    std::fs::create_dir(out.join("not-a-run")).unwrap();
    let rebuilt = cleanroom().args(["index", "rebuild", "--out"]).arg(&out).output().unwrap();
    assert!(rebuilt.status.success(), "{}", text(&rebuilt));
    let stdout = String::from_utf8_lossy(&rebuilt.stdout);
    assert!(stdout.contains("1 run(s), 2 trial(s)"), "{stdout}");
    let stderr = String::from_utf8_lossy(&rebuilt.stderr);
    assert!(stderr.contains("warning") && stderr.contains("not-a-run"), "{stderr}");
    assert_index_agrees(&out);
    assert_eq!(results_in_index(&out), before);

    // Rebuilding over an index that has it all already changes nothing.
    let again = cleanroom().args(["index", "rebuild", "--out"]).arg(&out).output().unwrap();
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(results_in_index(&out), before);

    let missing = cleanroom().args(["index", "rebuild", "--out"]).arg(out.join("nope")).output().unwrap();
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    let _ = std::fs::remove_dir_all(&out);
}

/// `cleanroom run --resume RUN`. Right after a kill -9 the run's lock can
/// still be held for a moment by a child that was forked but had not yet
/// exec'd (it inherits the lock's descriptor); wait that out.
fn resume(run: &Path) -> Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let output = cleanroom().arg("run").arg("--resume").arg(run).output().unwrap();
        if output.status.success()
            || !text(&output).contains("in use by another")
            || Instant::now() > deadline
        {
            return output;
        }
        eprintln!("run still locked: {}", lock_holders(run).join("; "));
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The processes with the run's lock file open.
fn lock_holders(run: &Path) -> Vec<String> {
    let lock = run.join(".lock");
    let mut holders = Vec::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        for fd in std::fs::read_dir(p.path().join("fd")).into_iter().flatten().flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|t| t == lock) {
                let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
                let status = std::fs::read_to_string(p.path().join("status")).unwrap_or_default();
                let ppid = status.lines().find(|l| l.starts_with("PPid")).unwrap_or("").to_string();
                holders.push(format!(
                    "{} {} ({ppid})",
                    p.file_name().to_string_lossy(),
                    String::from_utf8_lossy(&cmd).replace('\0', " ")
                ));
            }
        }
    }
    holders
}

#[test]
fn kill_9_then_resume_leaves_the_index_agreeing() {
    let out = temp_out("kill9");
    let sleeper = out.join("sleeper.sh");
    std::fs::write(&sleeper, "#!/bin/bash\necho sleeping\nexec sleep 8\n").unwrap();
    let mut child = cleanroom()
        .args(["run", "--tasks", &adversarial_tasks(), "--agent", "nop", "--agent"])
        .arg(format!("script:{}", sleeper.display()))
        .args(["--trials", "3", "--jobs", "1", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // nop trials come first; once they are recorded, the sleeper is running.
    let deadline = Instant::now() + Duration::from_secs(300);
    while results_on_disk(&out).len() < 3 {
        assert!(Instant::now() < deadline, "no results appeared");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let run = run_dirs(&out).pop().unwrap();
    assert!(results_on_disk(&out).len() < 6, "the killed run should not have finished");

    let resumed = resume(&run);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(results_on_disk(&out).len(), 6, "every trial has exactly one result");
    assert_index_agrees(&out);
    let _ = std::fs::remove_dir_all(&out);
}
