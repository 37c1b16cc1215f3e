//! The run directory through its public API, on a real file system.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use cleanroom_store::{
    AgentEntry, AppliedGate, ArtifactEntry, ExecutorRecord, GateMode, Outcome, RemoteAttempt, RunConfig,
    RunDir, SlurmOptions, StoreError, Summary, TaskInfo, TrialFile, TrialRecord,
};

fn config(run_id: &str) -> RunConfig {
    RunConfig {
        tool_version: "0.1.0".into(),
        created: "2026-11-29T21:12:55.000Z".into(),
        run_id: run_id.into(),
        backend: "sandbox".into(),
        accelerator: None,
        images: BTreeMap::from([("debian-12-minimal".into(), "sha256:abc".into())]),
        tasks: vec!["/work/tasks".into()],
        task_ids: vec![],
        agents: vec![AgentEntry { spec: "nop".into(), id: "nop".into(), gate: None }],
        trials: 2,
        jobs: 4,
        gate: GateMode::Off,
        timeout_multiplier: 1.5,
        retries: 1,
        max_steps: None,
        max_tokens: None,
        max_cost_usd: None,
        config_sources: Vec::new(),
        models: Default::default(),
        external_agents: Default::default(),
        allow_unlimited: false,
        no_cache: false,
        fail_under: Some(0.5),
        artifacts: BTreeMap::from([(
            "sobol-seq".into(),
            ArtifactEntry {
                kind: "git".into(),
                location: "https://example.org/sobol.git".into(),
                sha256: None,
                revision: Some("0123abcd".into()),
            },
        )]),
        slurm: Some(SlurmOptions {
            partition: Some("gpu".into()),
            options: vec!["--qos=low".into()],
            ..Default::default()
        }),
        task_info: BTreeMap::from([(
            "sobol-seq".into(),
            TaskInfo {
                title: "Sobol sequences".into(),
                domain: "scientific".into(),
                difficulty: "easy".into(),
                languages: vec!["c".into()],
                legacy: true,
                year: Some(2003),
                tags: vec!["quasi-random".into()],
                ..Default::default()
            },
        )]),
    }
}

fn record(task: &str, agent_id: &str, n: u32) -> TrialRecord {
    let mut r = TrialRecord::new(task, agent_id, agent_id, n, 1);
    r.outcome = Outcome::Passed;
    r.started_at = "2026-11-29T21:12:55.000Z".into();
    r.finished_at = "2026-11-29T21:13:07.300Z".into();
    r
}

#[test]
fn create_refuses_an_existing_run_and_makes_out() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("runs");
    let run = RunDir::create(&out, "r1").unwrap();
    assert_eq!(run.run_id(), "r1");
    assert_eq!(run.path(), out.join("r1"));
    drop(run);
    let err = RunDir::create(&out, "r1").unwrap_err();
    assert!(matches!(err, StoreError::RunExists(_)), "{err}");
    assert!(err.to_string().contains("r1"), "{err}");
    assert!(matches!(RunDir::create(&out, "../escape"), Err(StoreError::BadName { .. })));
}

#[test]
fn open_needs_run_toml_and_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let path = run.path().to_path_buf();

    let err = RunDir::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NoRun(_)), "{err}");
    assert!(err.to_string().contains("run.toml"), "{err}");

    run.write_run_config(&config("r1")).unwrap();
    let err = RunDir::open(&path).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::InUse { pid: Some(p), .. } if p == std::process::id()), "{msg}");
    assert!(msg.contains("in use by another cleanroom process"), "{msg}");
    assert!(msg.contains(&format!("pid {}", std::process::id())), "{msg}");

    drop(run);
    let reopened = RunDir::open(&path).unwrap();
    assert_eq!(reopened.read_run_config().unwrap(), config("r1"));
}

#[test]
fn run_toml_round_trips_and_says_no_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let mut c = config("r1");
    c.max_steps = Some(30);
    c.fail_under = None;
    let model: cleanroom_model::ModelConfig = toml::from_str(
        "base_url = \"https://api.example.com/v1\"\napi_key_env = \"EXAMPLE_API_KEY\"\nmodel = \"big-1\"\n",
    )
    .unwrap();
    c.models.insert("big".into(), model);
    run.write_run_config(&c).unwrap();
    let text = fs::read_to_string(run.path().join("run.toml")).unwrap();
    assert!(text.contains("api_key_env = \"EXAMPLE_API_KEY\""), "{text}");
    assert_eq!(run.read_run_config().unwrap(), c);
    assert!(text.starts_with("# "), "{text}");
    assert!(text.contains("never holds secrets"), "{text}");
    assert!(text.contains("[[agents]]"), "{text}");
    assert_eq!(run.read_run_config().unwrap(), c);

    fs::write(run.path().join("run.toml"), "trials = \"many\"\n").unwrap();
    let err = run.read_run_config().unwrap_err().to_string();
    assert!(err.contains("run.toml"), "{err}");
}

#[test]
fn results_are_written_once_and_loaded_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    assert!(!run.has_result("sobol-seq", "nop", 1));
    for (task, n) in [("sobol-seq", 10), ("sobol-seq", 2), ("alpha", 1)] {
        run.write_result(&record(task, "nop", n), &[]).unwrap();
    }
    assert!(run.has_result("sobol-seq", "nop", 2));
    assert!(!run.has_result("sobol-seq", "nop", 3));
    assert!(!run.has_result("..", "nop", 2));
    let dir = run.path().join("trials/sobol-seq/nop/2");
    assert!(dir.join("result.json").is_file());
    // Only the result: no temporary left behind.
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);

    let err = run.write_result(&record("sobol-seq", "nop", 2), &[]).unwrap_err();
    assert!(matches!(err, StoreError::ResultExists(_)), "{err}");

    let loaded = run.load_results().unwrap();
    let keys: Vec<_> = loaded.iter().map(|r| (r.task.as_str(), r.trial)).collect();
    assert_eq!(keys, [("alpha", 1), ("sobol-seq", 2), ("sobol-seq", 10)]);
    assert_eq!(loaded[0], record("alpha", "nop", 1));
}

#[test]
fn a_corrupt_or_newer_result_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    run.write_result(&record("t", "nop", 1), &[]).unwrap();
    let dir = run.trial_dir("t", "nop", 2).unwrap();
    fs::write(dir.join("result.json"), "{\"schema_version\": 1, \"task\": ").unwrap();
    let err = run.load_results().unwrap_err().to_string();
    assert!(err.contains("trials/t/nop/2/result.json"), "{err}");

    let mut newer = serde_json::to_value(record("t", "nop", 2)).unwrap();
    newer["schema_version"] = 2.into();
    newer["outcome"] = "something_new".into();
    fs::write(dir.join("result.json"), newer.to_string()).unwrap();
    let err = run.load_results().unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found: 2, .. }), "{err}");
}

fn file(name: &str, text: &str) -> TrialFile {
    TrialFile { name: name.into(), bytes: text.as_bytes().to_vec() }
}

fn attempt(n: u32, k: u32) -> TrialRecord {
    let mut r = TrialRecord::new("t", "nop", "nop", n, k);
    r.error = Some(format!("overlay mount failed ({k})"));
    r
}

#[test]
fn every_attempt_keeps_its_record_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let dir = run.path().join("trials/t/nop/1");
    assert_eq!(run.next_attempt("t", "nop", 1), 1);
    for k in [1, 2] {
        run.write_attempt(&attempt(1, k), &[file("agent.log", &format!("attempt {k}\n"))]).unwrap();
        assert_eq!(run.next_attempt("t", "nop", 1), k + 1);
    }
    let err = run.write_attempt(&attempt(1, 2), &[]).unwrap_err();
    assert!(matches!(err, StoreError::AttemptExists(_)), "a kept attempt is never replaced: {err}");
    // An attempt is not a result.
    assert!(!run.has_result("t", "nop", 1));
    assert!(run.load_results().unwrap().is_empty());

    let mut last = record("t", "nop", 1);
    last.attempt = 3;
    run.write_result(&last, &[file("agent.log", "attempt 3\n"), file("verify.log", "ok\n")]).unwrap();
    for k in [1, 2] {
        let kept: TrialRecord =
            serde_json::from_slice(&fs::read(dir.join(format!("attempt-{k}.json"))).unwrap()).unwrap();
        assert_eq!((kept.attempt, kept.error), (k, attempt(1, k).error));
        let log = fs::read_to_string(dir.join(format!("attempt-{k}/agent.log"))).unwrap();
        assert_eq!(log, format!("attempt {k}\n"));
    }
    assert_eq!(fs::read_to_string(dir.join("agent.log")).unwrap(), "attempt 3\n");
    assert_eq!(run.load_results().unwrap(), [last]);
}

#[test]
fn what_a_killed_attempt_left_is_removed_and_kept_attempts_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let dir = run.path().join("trials/t/nop/1");
    run.write_attempt(&attempt(1, 1), &[file("agent.log", "kept\n")]).unwrap();
    // A run killed while writing attempt 2's files, then the final ones.
    fs::create_dir(dir.join("attempt-2")).unwrap();
    fs::write(dir.join("attempt-2/agent.log"), "cut off\n").unwrap();
    fs::write(dir.join("trajectory.json"), "cut off\n").unwrap();

    run.write_attempt(&attempt(1, 2), &[file("agent.log", "second\n")]).unwrap();
    let mut names: Vec<String> = fs::read_dir(dir.join("attempt-2"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["agent.log"]);
    assert_eq!(fs::read_to_string(dir.join("attempt-2/agent.log")).unwrap(), "second\n");
    assert!(!dir.join("trajectory.json").exists(), "not a file of any recorded attempt");
    assert_eq!(fs::read_to_string(dir.join("attempt-1/agent.log")).unwrap(), "kept\n");

    fs::create_dir(dir.join("attempt-3")).unwrap();
    run.write_result(&record("t", "nop", 1), &[]).unwrap();
    assert!(!dir.join("attempt-3").exists());
    assert!(dir.join("attempt-1.json").is_file() && dir.join("attempt-2.json").is_file());
}

#[test]
fn trial_files_take_no_record_name_and_no_path() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    for name in ["result.json", "attempt-2.json", "attempt-2"] {
        let err = run.write_result(&record("t", "nop", 1), &[file(name, "{}")]).unwrap_err();
        assert!(matches!(err, StoreError::ReservedName { .. }), "{err}");
    }
    for name in ["../result.json", "logs/agent.log", "", ".lock", "outputs/../x", "outputs/a//b", "outputs/"]
    {
        let err = run.write_attempt(&attempt(1, 1), &[file(name, "x")]).unwrap_err();
        assert!(matches!(err, StoreError::BadName { .. }), "{name:?}: {err}");
    }
    let dir = run.path().join("trials/t/nop/1");
    assert!(!dir.join("result.json").exists() && !dir.join("attempt-1.json").exists());
}

/// What the verify steps wrote is kept under outputs/ by its own paths; a
/// killed attempt's outputs are not mistaken for the final one's.
#[test]
fn outputs_are_kept_by_their_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let dir = run.path().join("trials/t/nop/1");
    fs::create_dir_all(dir.join("outputs/old")).unwrap();
    fs::write(dir.join("outputs/old/cut-off.csv"), "x").unwrap();
    let files =
        [file("verify.log", "ok\n"), file("outputs/table2.csv", "n,err\n"), file("outputs/plots/a.txt", "a")];
    run.write_result(&record("t", "nop", 1), &files).unwrap();
    assert_eq!(fs::read_to_string(dir.join("outputs/table2.csv")).unwrap(), "n,err\n");
    assert_eq!(fs::read_to_string(dir.join("outputs/plots/a.txt")).unwrap(), "a");
    assert!(!dir.join("outputs/old").exists(), "what a killed attempt left is gone");
}

#[test]
fn an_out_that_cannot_be_made_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    fs::write(&file, "").unwrap();
    let err = RunDir::create(&file.join("runs"), "r1").unwrap_err();
    assert!(matches!(err, StoreError::OutDir { .. }), "{err}");
    assert!(err.to_string().contains("a-file/runs") && err.to_string().contains("--out"), "{err}");
}

#[test]
fn summary_is_written_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let run = RunDir::create(tmp.path(), "r1").unwrap();
    let summary = Summary::from_records(&[record("t", "nop", 1)], 2);
    run.write_summary(&summary).unwrap();
    let back: Summary = serde_json::from_slice(&fs::read(run.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(back, summary);
}

/// A run directory written before the gate was an enum, verbatim but for
/// its gate values: a nop run of one trial, with `gate` `off` in both files.
const STRING_GATE_RUN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/string-gate-run");
const STRING_GATE_RESULT: &str = "trials/count/nop/1/result.json";

/// Copies the string-gate run into `dir`, with these gate values.
fn string_gate_run(dir: &Path, configured: &str, applied: &str) -> (String, String) {
    let from = Path::new(STRING_GATE_RUN);
    let run_toml = fs::read_to_string(from.join("run.toml")).unwrap();
    let result = fs::read_to_string(from.join(STRING_GATE_RESULT)).unwrap();
    assert_eq!(run_toml.matches("\ngate = \"off\"\n").count(), 1);
    assert_eq!(result.matches("\"gate\": \"off\",").count(), 1);
    let run_toml = run_toml.replace("\ngate = \"off\"\n", &format!("\ngate = \"{configured}\"\n"));
    let result = result.replace("\"gate\": \"off\",", &format!("\"gate\": \"{applied}\","));
    fs::create_dir_all(dir.join(STRING_GATE_RESULT).parent().unwrap()).unwrap();
    fs::write(dir.join("run.toml"), &run_toml).unwrap();
    fs::write(dir.join(STRING_GATE_RESULT), &result).unwrap();
    (run_toml, result)
}

#[test]
fn runs_written_with_string_gates_load_with_every_value_and_rewrite_the_same() {
    let configured =
        [("off", GateMode::Off), ("advisory", GateMode::Advisory), ("enforced", GateMode::Enforced)];
    let applied = [
        ("off", AppliedGate::Off),
        ("advisory", AppliedGate::Advisory),
        ("enforced", AppliedGate::Enforced),
        ("unavailable", AppliedGate::Unavailable),
        ("unsupported", AppliedGate::Unsupported),
    ];
    for (i, (applied_name, applied_gate)) in applied.into_iter().enumerate() {
        // The modes in turn, beside every applied value (not every
        // combination occurs, but each parses on its own).
        let (configured_name, configured_gate) = configured[i % configured.len()];
        let tmp = tempfile::tempdir().unwrap();
        let (run_toml, result) = string_gate_run(tmp.path(), configured_name, applied_name);

        let run = RunDir::open(tmp.path()).unwrap();
        let config = run.read_run_config().unwrap();
        assert_eq!(config.gate, configured_gate, "run.toml gate {configured_name}");
        let records = run.load_results().unwrap();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].gate, applied_gate, "result.json gate {applied_name}");

        // Written again, both files are as they were: same shape, same names.
        let written: serde_json::Value = serde_json::to_value(&records[0]).unwrap();
        assert_eq!(written, serde_json::from_str::<serde_json::Value>(&result).unwrap());
        run.write_run_config(&config).unwrap();
        assert_eq!(fs::read_to_string(tmp.path().join("run.toml")).unwrap(), run_toml);
    }
}

#[test]
fn an_unknown_gate_in_run_toml_or_result_json_names_the_file_and_the_value() {
    let tmp = tempfile::tempdir().unwrap();
    string_gate_run(tmp.path(), "strict", "off");
    let run = RunDir::open(tmp.path()).unwrap();
    let err = run.read_run_config().unwrap_err().to_string();
    assert!(err.contains("run.toml") && err.contains("strict"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    string_gate_run(tmp.path(), "off", "sometimes");
    let err = RunDir::open(tmp.path()).unwrap().load_results().unwrap_err().to_string();
    assert!(err.contains(STRING_GATE_RESULT) && err.contains("sometimes"), "{err}");
}

/// What a node reports of an attempt it ran for the run: the phase as it
/// goes, then its files and record, read back whole; nothing is done
/// before the record, and what a cut-off write left is not a file of it.
#[test]
fn a_remote_attempt_reports_its_phase_then_its_record_and_files() {
    let tmp = tempfile::tempdir().unwrap();
    let report = RemoteAttempt::at(tmp.path(), "t", "oracle", 1, 2).unwrap();
    assert!(report.phase().is_none());
    assert!(report.outcome().unwrap().is_none());
    report.write_phase("agent").unwrap();
    assert_eq!(report.phase().as_deref(), Some("agent"));
    assert!(report.outcome().unwrap().is_none(), "no record yet");
    let mut rec = record("t", "oracle", 1);
    rec.attempt = 2;
    rec.executor =
        Some(ExecutorRecord { name: "slurm".into(), job_id: "12_3".into(), node: "crnode2".into() });
    let files = vec![
        TrialFile { name: "agent.log".into(), bytes: b"ran\n".to_vec() },
        TrialFile { name: "outputs/plots/a.txt".into(), bytes: b"a\n".to_vec() },
        TrialFile { name: "verify.log".into(), bytes: b"checked\n".to_vec() },
    ];
    report.write_outcome(&rec, &files).unwrap();
    std::fs::write(report.dir().join("files/.agent.log.tmp-1"), "half").unwrap();
    let (read, read_files) = report.outcome().unwrap().unwrap();
    assert_eq!(read, rec);
    assert_eq!(read_files, files);
    report.remove();
    assert!(!report.dir().exists());
    assert!(RemoteAttempt::at(tmp.path(), "../t", "oracle", 1, 1).is_err(), "a task id is a name");
}
