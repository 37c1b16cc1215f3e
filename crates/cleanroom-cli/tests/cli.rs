//! The real command line on real tasks in real sandboxes: example tasks,
//! tasks written by outsiders, adversarial agents, interruption and resume,
//! and what is left on the host afterwards. Needs root.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cleanroom_store::index::rusqlite::Connection;
use cleanroom_store::{AgentEntry, GateMode, RunConfig};
use common::*;
use serde_json::Value;

/// Every oracle trial of `results` passed and every other failed.
fn assert_oracle_passed_and_nop_failed(run_dir: &Path, results: &[Value]) {
    for r in results {
        let expected = if r["agent_id"] == "oracle" { "passed" } else { "failed" };
        assert_eq!(r["outcome"], expected, "{}", why(run_dir, r));
    }
}

/// What a test failing on trial `r` shows: whose trial, the harness's
/// error if any, and the verifier's log.
fn why(run_dir: &Path, r: &Value) -> String {
    let log = trial_file(run_dir, r, "verify.log");
    format!("{} on {}: error {}\n{log}", r["agent_id"], r["task"], r["error"])
}

fn run_config(run_dir: &Path) -> RunConfig {
    toml_edit::de::from_str(&std::fs::read_to_string(run_dir.join("run.toml")).unwrap()).unwrap()
}

fn by_agent<'a>(results: &'a [Value], agent_id: &str) -> Vec<&'a Value> {
    results.iter().filter(|r| r["agent_id"] == agent_id).collect()
}

fn trial_file(run_dir: &Path, r: &Value, name: &str) -> String {
    let path = run_dir
        .join("trials")
        .join(r["task"].as_str().unwrap())
        .join(r["agent_id"].as_str().unwrap())
        .join(r["trial"].to_string())
        .join(name);
    String::from_utf8_lossy(&std::fs::read(&path).unwrap_or_default()).into_owned()
}

/// Nothing of a finished cleanroom process is left on the host: no
/// environment directory, cgroup, mount or process.
fn assert_nothing_left(pid: u32) {
    let home = PathBuf::from(std::env::var("CLEANROOM_HOME").unwrap_or_else(|_| "/var/lib/cleanroom".into()));
    assert_nothing_left_in(pid, &home);
}

/// The same, for a run whose cleanroom home is `home`.
fn assert_nothing_left_in(pid: u32, home: &Path) {
    let prefix = format!("{pid}-");
    let mut places = vec![home.join("envs"), home.join("vm-envs")];
    for c in ["memory", "pids", "cpu", "freezer", ""] {
        places.push(Path::new("/sys/fs/cgroup").join(c).join("cleanroom"));
    }
    for dir in places {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(!name.starts_with(&prefix), "{} left behind in {}", name, dir.display());
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&format!("/envs/{prefix}")), "a mount of the run is left");
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat.rsplit(')').next().and_then(|s| s.split_whitespace().nth(1)).unwrap_or("");
        assert_ne!(ppid, pid.to_string(), "a child of the run outlived it: {stat}");
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains(&format!("/vm-envs/{prefix}")),
            "a machine of the run outlived it: {stat}"
        );
    }
}

/// How many sandbox environments the process `pid` has.
fn environments_of(pid: u32) -> usize {
    let home = PathBuf::from(std::env::var("CLEANROOM_HOME").unwrap_or_else(|_| "/var/lib/cleanroom".into()));
    let prefix = format!("{pid}-");
    let envs = std::fs::read_dir(home.join("envs")).into_iter().flatten().flatten();
    envs.filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).count()
}

/// Waits, checking every 100 ms, until `ready` holds; fails after `limit`.
fn wait_until(ready: impl Fn() -> bool, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "not there in {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn run_pid(run_dir: &Path) -> Option<u32> {
    // The run's environments are named after the process that made them;
    // the lock file holds that pid too.
    std::fs::read_to_string(run_dir.join(".lock")).ok()?.trim().parse().ok()
}

#[test]
fn examples_pass_with_the_oracle_and_fail_with_nop() {
    let out = temp_out("examples");
    let (output, run_dir) = run(
        &out,
        &["--tasks", &fixtures("examples/tasks"), "--agent", "oracle", "--agent", "nop", "--jobs", "2"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    let tasks = std::fs::read_dir(repo().join("examples/tasks")).unwrap().count();
    assert!(tasks >= 3);
    assert_eq!(results.len(), 2 * tasks);
    for r in by_agent(&results, "oracle") {
        assert_eq!(r["outcome"], "passed", "{}", why(&run_dir, r));
        assert_eq!(r["stage"], "results");
        assert_eq!(r["limits"]["memory"], "enforced");
    }
    for r in by_agent(&results, "nop") {
        assert_eq!(r["outcome"], "failed", "{}", why(&run_dir, r));
        assert_eq!(r["class"], "self_stop");
        assert_eq!(r["stop_reason"], "finished");
    }
    let summary: Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["planned"], 2 * tasks);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("oracle") && table.contains("nop"), "{table}");
    assert!(run_dir.join("run.toml").exists());
}

/// What `engine` holds of `what` (`ps -a`, `volume ls`, `images`), one
/// line each, from the engine's own client.
fn engine_holds(engine: &str, what: &[&str]) -> Vec<String> {
    let mut client = if engine == DOCKER_ENGINE {
        let mut docker = std::process::Command::new("docker");
        docker.args(["-H", engine]);
        docker
    } else {
        let mut podman = std::process::Command::new("podman");
        podman.args(["--remote", "--url", engine]);
        podman
    };
    let out = client.args(what).output().unwrap();
    assert!(out.status.success(), "{engine} {what:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

/// The examples in containers of Podman's engine: the same outcomes as in
/// the sandbox, the disk limit recorded as unenforced (the engine's
/// storage), and no container, volume or image of the run left in the
/// engine (the imported base image stays, as the sandbox's image does).
#[test]
fn examples_pass_in_podmans_containers_and_leave_nothing_in_the_engine() {
    examples_pass_in_containers_of(PODMAN_ENGINE);
}

/// The same in Docker's.
#[test]
fn examples_pass_in_dockers_containers_and_leave_nothing_in_the_engine() {
    examples_pass_in_containers_of(DOCKER_ENGINE);
}

fn examples_pass_in_containers_of(engine: &str) {
    let out = temp_out(&format!("examples-container-{}", engine_name(engine)));
    let images = || -> Vec<String> {
        let all = engine_holds(engine, &["images", "--format", "{{.Repository}}"]);
        // Cleanroom's caches (base images, built Dockerfiles) stay.
        let cached = |r: &String| r.contains("cleanroom/") || r.contains("cleanroom-build/");
        let mut others: Vec<String> = all.into_iter().filter(|r| !cached(r)).collect();
        others.sort();
        others
    };
    let (volumes, images_before) = (engine_holds(engine, &["volume", "ls", "-q"]), images());
    let mut command = cleanroom();
    command.env("DOCKER_HOST", engine);
    let args = ["--tasks", &fixtures("examples/tasks"), "--agent", "oracle", "--agent", "nop", "--jobs", "2"];
    let (output, run_dir) = run_with(command, &out, &[&args[..], &["--backend", "container"]].concat());
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    let tasks = std::fs::read_dir(repo().join("examples/tasks")).unwrap().count();
    assert_eq!(results.len(), 2 * tasks);
    for r in by_agent(&results, "oracle") {
        assert_eq!(r["outcome"], "passed", "{}", why(&run_dir, r));
        assert_eq!(r["limits"]["memory"], "enforced");
        assert_eq!(r["limits"]["disk"], "unenforced");
    }
    for r in by_agent(&results, "nop") {
        assert_eq!(r["outcome"], "failed", "{}", why(&run_dir, r));
    }
    let pid = run_pid(&run_dir).expect("the run's pid");
    let labels = engine_holds(engine, &["ps", "-a", "--format", "{{.Labels}}"]);
    // Podman shows a label as key:value, Docker as key=value.
    let of_the_run =
        |l: &&String| [':', '='].iter().any(|sep| l.contains(&format!("cleanroom.env{sep}{pid}-")));
    let left: Vec<&String> = labels.iter().filter(of_the_run).collect();
    assert!(left.is_empty(), "containers of the run left: {left:?}");
    assert_eq!(engine_holds(engine, &["volume", "ls", "-q"]), volumes, "volumes left");
    assert_eq!(images(), images_before, "images left");
}

/// `podman` or `docker`, for the names of a test's directories.
fn engine_name(engine: &str) -> &'static str {
    if engine == DOCKER_ENGINE {
        "docker"
    } else {
        "podman"
    }
}

/// Tasks written in Harbor's format (tests/fixtures/harbor) convert with
/// `tasks import harbor`, saying what was not carried over, and run in
/// containers: the oracle passes, nop fails, and an agent that plants
/// reward files (and forged outputs) fails, its rewards removed before
/// Harbor's test runs.
#[test]
fn harbor_tasks_import_and_their_planted_rewards_count_for_nothing() {
    let out = temp_out("harbor-import");
    let tasks = out.join("tasks");
    let import = |src: &str, dest: &Path| {
        cleanroom().args(["tasks", "import", "harbor", src]).arg(dest).output().unwrap()
    };
    // The folder of fixtures is a dataset: one import makes a task of each.
    let output = import(&fixtures("tests/fixtures/harbor"), &tasks);
    assert!(output.status.success(), "{}", text(&output));
    let notes = String::from_utf8_lossy(&output.stderr);
    for said in [
        "fix-script: not carried over: environment/Dockerfile builds the environment (its 1 RUN line(s))",
        "wordcount: not carried over: task.toml: task.domain",
    ] {
        assert!(notes.contains(said), "`{said}` not said: {notes}");
    }
    let single = out.join("single/wordcount");
    let output = import(&fixtures("tests/fixtures/harbor/wordcount"), &single);
    assert!(output.status.success() && single.join("task.toml").is_file(), "{}", text(&output));
    let again = import(&fixtures("tests/fixtures/harbor/wordcount"), &tasks.join("wordcount"));
    assert_eq!(again.status.code(), Some(2), "an import onto an existing task: {}", text(&again));
    let built = std::fs::read_to_string(tasks.join("fix-script/task.toml")).unwrap();
    assert!(
        built.contains("build = \"environment\"")
            && tasks.join("fix-script/environment/Dockerfile").is_file()
    );
    let mut command = cleanroom();
    command.env("DOCKER_HOST", PODMAN_ENGINE);
    let planter = fixtures("tests/fixtures/agents/plant-outputs.sh");
    let (output, run_dir) = run_with(
        command,
        &out.join("runs"),
        &[
            "--tasks",
            tasks.to_str().unwrap(),
            "--backend",
            "container",
            "--agent",
            "oracle",
            "--agent",
            "nop",
            "--agent",
            &format!("script:{planter}"),
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), 9);
    for r in &results {
        let log = trial_file(&run_dir, r, "verify.log");
        let expected = if r["agent_id"] == "oracle" { "passed" } else { "failed" };
        assert_eq!(r["outcome"], expected, "{}", why(&run_dir, r));
        if expected == "failed" {
            assert!(log.contains("FAIL reward: expected 1 (exact), observed 0"), "{log}");
        }
    }
}

/// A folder of Harbor tasks is a folder of tasks: each loads as it is
/// (imported into a copy of its own) and runs in Docker's containers, the
/// one whose Dockerfile does more than copy its files in (fix-script's
/// RUN line) in the image that Dockerfile builds. The sandbox, which
/// builds no Dockerfile, skips that one, saying so.
#[test]
fn harbor_tasks_load_as_they_are() {
    let (run_dir, results) = oracle_and_nop_on("tests/fixtures/harbor", Some(DOCKER_ENGINE));
    assert_eq!(results.len(), 6);
    assert_oracle_passed_and_nop_failed(&run_dir, &results);

    let out = temp_out("harbor-sandbox");
    let args = ["--tasks", &fixtures("tests/fixtures/harbor/fix-script"), "--agent", "oracle"];
    let (output, run_dir) = run(&out, &args);
    assert!(output.status.success(), "{}", text(&output));
    let skipped = &common::results(&run_dir)[0];
    assert_eq!(skipped["outcome"], "skipped", "{skipped}");
    let reason = skipped["skip_reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("build") && reason.contains("--backend container"), "{reason}");
}

/// Harbor itself (PyPI harbor 0.26, through Podman and podman-compose)
/// and cleanroom give the Harbor fixtures the same verdicts: the oracle
/// passes and nop fails in both, and on both of cleanroom's backends (the
/// sandbox skipping the task whose Dockerfile builds its environment);
/// agents that forge the reward never pass in cleanroom
/// (scripts/harbor-side-by-side.sh, which exits 1 otherwise).
#[test]
fn harbor_itself_gives_the_same_verdicts() {
    let output = Command::new("bash")
        .arg(repo().join("scripts/harbor-side-by-side.sh"))
        .env("CLEANROOM_BIN", env!("CARGO_BIN_EXE_cleanroom"))
        .env("DOCKER_HOST", PODMAN_ENGINE)
        // Verdicts only: the forged rewards in cleanroom (where they are
        // checked), no timings (the script's figures are for people).
        .env("N", "0")
        .env("ADVERSARIAL", "cleanroom")
        .output()
        .unwrap();
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    for task in ["checksum-json", "fix-script", "wordcount"] {
        for agent in ["oracle", "nop"] {
            let row = report.lines().find(|l| l.starts_with(task) && l.contains(&format!(" {agent} ")));
            assert!(row.is_some_and(|r| r.trim_end().ends_with("yes")), "{task} {agent}: {report}");
        }
    }
}

/// A Harbor registry.json is a list of datasets; `#name@version` picks one.
#[test]
fn a_harbor_registry_lists_its_datasets_tasks() {
    let registry = fixtures("tests/fixtures/harbor/registry.json");
    for (dataset, expected) in [
        ("", vec!["checksum-json", "fix-script", "wordcount"]),
        ("#cleanroom-fixtures@0.1", vec!["wordcount"]),
    ] {
        let list = cleanroom()
            .args(["tasks", "list", &format!("{registry}{dataset}"), "--format", "json"])
            .output()
            .unwrap();
        assert!(list.status.success(), "{}", text(&list));
        let listed: Vec<Value> = serde_json::from_slice(&list.stdout).unwrap();
        let ids: Vec<&str> = listed.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids, expected, "{dataset}");
    }
    let unknown = cleanroom().args(["tasks", "list", &format!("{registry}#nope")]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(
        text(&unknown)
            .contains("holds no dataset \"nope\"; it holds cleanroom-fixtures@1.0, cleanroom-fixtures@0.1"),
        "{}",
        text(&unknown)
    );
}

/// A dataset imports whole or not at all: every task that cannot be
/// imported is named with why, and nothing is written. A registry's dataset
/// imports as a folder does, and a folder of cleanroom tasks exports to a
/// folder of Harbor tasks.
#[test]
fn datasets_import_and_export_whole_or_not_at_all() {
    let out = temp_out("harbor-datasets");
    let mixed = out.join("mixed");
    let copy = |from: &str, to: &Path| {
        let status = Command::new("cp").arg("-r").arg(fixtures(from)).arg(to).status().unwrap();
        assert!(status.success());
    };
    std::fs::create_dir_all(&mixed).unwrap();
    copy("tests/fixtures/harbor/wordcount", &mixed.join("wordcount"));
    copy("tests/fixtures/harbor/wordcount", &mixed.join("broken"));
    std::fs::remove_file(mixed.join("broken/instruction.md")).unwrap();
    copy("tests/fixtures/harbor-export/column-stats", &mixed.join("column-stats"));
    let imported = out.join("imported");
    let output = cleanroom().args(["tasks", "import", "harbor"]).arg(&mixed).arg(&imported).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    for said in [
        "2 of the dataset's 3 tasks cannot be imported, so none was",
        "mixed/broken/instruction.md: No such file or directory",
        "mixed/column-stats: not a Harbor task",
    ] {
        assert!(text(&output).contains(said), "`{said}` not said: {}", text(&output));
    }
    assert!(!imported.exists(), "a refused dataset left {}", imported.display());

    let registry = fixtures("tests/fixtures/harbor/registry.json#cleanroom-fixtures@0.1");
    let output = cleanroom().args(["tasks", "import", "harbor", &registry]).arg(&imported).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let names: Vec<String> = std::fs::read_dir(&imported)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["wordcount"]);
    let check = cleanroom().args(["tasks", "check", "--no-run"]).arg(&imported).output().unwrap();
    assert!(check.status.success(), "{}", text(&check));

    let exported = out.join("exported");
    let output = cleanroom()
        .args(["tasks", "export", "harbor", &fixtures("tests/fixtures/harbor-export")])
        .arg(&exported)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("column-stats: not carried over: verify.network"),
        "{}",
        text(&output)
    );
    for harbor_file in
        ["task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"]
    {
        assert!(exported.join("column-stats").join(harbor_file).is_file(), "no {harbor_file}");
    }
}

/// A cleanroom task exported with `tasks export harbor` (onto a directory
/// that is not empty: refused) loads back as the Harbor task it is and
/// runs as the task itself does: the oracle passes, nop fails, the
/// export's checker judging inside the sandbox (its steps, mutation and
/// checks in the Harbor test's output).
#[test]
fn an_exported_task_runs_as_the_task_itself() {
    let out = temp_out("harbor-export");
    let task = fixtures("tests/fixtures/harbor-export/column-stats");
    let exported = out.join("tasks/column-stats-harbor");
    let export = || cleanroom().args(["tasks", "export", "harbor", &task]).arg(&exported).output().unwrap();
    let output = export();
    assert!(output.status.success(), "{}", text(&output));
    let notes = String::from_utf8_lossy(&output.stderr);
    assert!(
        notes.contains("not carried over: verify/checks.toml: check `table 1 read the tree's stats.awk`"),
        "{notes}"
    );
    let again = export();
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(
        text(&again).contains(&format!("{}: exists and is not empty", exported.display())),
        "{}",
        text(&again)
    );

    let exported = exported.display().to_string();
    let (output, run_dir) = run(
        &out.join("runs"),
        &["--tasks", &task, "--tasks", &exported, "--agent", "oracle", "--agent", "nop", "--jobs", "2"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), 4);
    assert_oracle_passed_and_nop_failed(&run_dir, &results);
    for r in results.iter().filter(|r| r["task"] == "column-stats-harbor") {
        let log = trial_file(&run_dir, r, "verify.log");
        let said: &[&str] = if r["agent_id"] == "oracle" {
            &["mutation 1: stats.awk changed", "PASS mutated probe: mean", "== verdict: passed"]
        } else {
            &["FAIL mean: expected 4.5 (abs_tol 1e-9), observed missing", "== verdict: failed"]
        };
        for line in said {
            assert!(log.contains(line), "{} on the export: `{line}` not in {log}", r["agent_id"]);
        }
    }
}

/// The oracle and nop on the tasks of a fixture directory, two at once.
fn oracle_and_nop_on(fixture: &str, engine: Option<&str>) -> (PathBuf, Vec<Value>) {
    let out = temp_out(fixture.rsplit('/').next().unwrap());
    let tasks = fixtures(fixture);
    let args = ["--tasks", &tasks, "--agent", "oracle", "--agent", "nop", "--jobs", "2"];
    let (output, run_dir) = match engine {
        Some(engine) => {
            let mut command = cleanroom();
            command.env("DOCKER_HOST", engine);
            run_with(command, &out, &[&args[..], &["--backend", "container"]].concat())
        }
        None => run(&out, &args),
    };
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    (run_dir, results)
}

/// An ordinary user's cleanroom runs the examples in the rootless sandbox
/// (docs/rootless.md): the same outcomes as root's, every limit recorded
/// as unenforced, the access checks of fd-anharmonic judged by the
/// rootless watch, and nothing of the run left.
#[test]
fn an_ordinary_user_runs_the_examples_rootless() {
    let user = test_user();
    let tasks = user.copy_in(&repo().join("examples/tasks"));
    let out = user.out_dir("examples");
    let refused = user
        .cleanroom()
        .args(["run", "--tasks"])
        .arg(&tasks)
        .args(["--agent", "oracle", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("--allow-unlimited"), "{}", text(&refused));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "a refused run made a run directory");
    let tasks = tasks.display().to_string();
    let (output, run_dir) = run_with(
        user.cleanroom(),
        &out,
        &["--tasks", &tasks, "--agent", "oracle", "--agent", "nop", "--jobs", "2", "--allow-unlimited"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), 6);
    assert_oracle_passed_and_nop_failed(&run_dir, &results);
    for r in &results {
        for limit in ["memory", "pids", "disk"] {
            assert_eq!(r["limits"][limit], "unenforced", "{r}");
        }
    }
    let fd = by_agent(&results, "oracle").into_iter().find(|r| r["task"] == "fd-anharmonic").unwrap();
    let checks = fd["verdict"]["checks"].as_array().unwrap();
    assert!(
        checks.iter().any(|c| c["observed"] == "executed: qwell" && c["passed"] == true),
        "the access check saw qwell run: {checks:?}"
    );
    assert_eq!(std::fs::metadata(run_dir.join("run.toml")).unwrap().uid(), user.uid, "the user's own files");
    assert_nothing_left_in(run_pid(&run_dir).unwrap(), &user.cleanroom_home());
}

#[test]
fn third_party_tasks_run_unchanged() {
    let (run_dir, results) = oracle_and_nop_on("tests/fixtures/tasks-thirdparty", None);
    assert_eq!(results.len(), 4);
    assert_oracle_passed_and_nop_failed(&run_dir, &results);
    let config = std::fs::read_to_string(run_dir.join("run.toml")).unwrap();
    assert!(
        config.contains("pypi-sdist") && config.contains("sha256"),
        "fetched artifacts are recorded: {config}"
    );
}

/// Every adversarial agent of tests/fixtures/agents.
const ADVERSARIES: [&str; 7] = [
    "search-verifier",
    "plant-outputs",
    "detached-tamper",
    "replace-tools",
    "probe-walls",
    "verify-hooks",
    "login-tamper",
];

#[test]
fn adversarial_agents_never_pass() {
    adversarial_agents_never_pass_on("sandbox", &ADVERSARIES, None);
}

/// In containers of Podman's engine, every adversary: the walls are the
/// engine's (its capabilities, seccomp profile and masked paths) and the
/// harness's (the network, seals, a container killed at each phase's end).
#[test]
fn adversarial_agents_never_pass_in_podmans_containers() {
    adversarial_agents_never_pass_on("container", &ADVERSARIES, None);
}

/// The same in Docker's.
#[test]
fn adversarial_agents_never_pass_in_dockers_containers() {
    adversarial_agents_never_pass_on("container-docker", &ADVERSARIES, None);
}

/// The same agents against the rootless sandbox (docs/rootless.md), run
/// by an ordinary user: the walls are the sandbox's, in the user's own
/// namespace.
#[test]
fn adversarial_agents_never_pass_rootless() {
    adversarial_agents_never_pass_on("sandbox", &ADVERSARIES, Some(test_user()));
}

/// On a machine the agent is root of its own kernel: of the walls probed,
/// only those in front of the host must hold (docs/backends.md). The
/// agents that attack what is particular to a backend (the hidden
/// verifier's files, forged outputs, processes that outlive the phase, the
/// walls); the verify phase's shell hygiene (replace-tools, verify-hooks)
/// is the pipeline's own, the same on every backend, and each trial of a
/// machine under TCG costs minutes.
#[test]
fn adversarial_agents_never_pass_on_a_machine() {
    adversarial_agents_never_pass_on(
        "vm",
        &["search-verifier", "plant-outputs", "detached-tamper", "probe-walls"],
        None,
    );
}

/// On hosts the agent is root of, as on a machine: only the walls in front
/// of this machine must hold; the agent's phase ends with the host's
/// reboot, which the worker that moves itself out of its cgroup does not
/// survive. The agents whose attacks meet the backend (the verifier's
/// copy, a survivor, the walls); what plant-outputs tries is the harness's
/// to stop on every backend, and costs minutes on emulated hosts.
#[test]
fn adversarial_agents_never_pass_on_hosts() {
    adversarial_agents_never_pass_on("ssh", &["search-verifier", "detached-tamper", "probe-walls"], None);
}

/// Runs `agents` on `target` as root, or as the ordinary `user` (the
/// rootless sandbox, which needs --allow-unlimited). The target is a
/// backend's name, or `container-docker` for the container backend on
/// Docker's engine (`container` alone is on Podman's).
fn adversarial_agents_never_pass_on(target: &str, agents: &[&str], user: Option<&TestUser>) {
    let (backend, engine) = match target {
        "container" => ("container", Some(PODMAN_ENGINE)),
        "container-docker" => ("container", Some(DOCKER_ENGINE)),
        backend => (backend, None),
    };
    let fixture = |rel: &str| match user {
        Some(user) => user.copy_in(&repo().join(rel)).display().to_string(),
        None => fixtures(rel),
    };
    let out = match user {
        Some(user) => user.out_dir(&format!("adversarial-{backend}")),
        None => temp_out(&format!("adversarial-{target}")),
    };
    let agent_dir = fixture("tests/fixtures/agents");
    let mut args = vec![
        "--tasks".to_string(),
        fixture("tests/fixtures/tasks-adversarial"),
        "--jobs".into(),
        "2".into(),
        "--backend".into(),
        backend.into(),
    ];
    if backend == "ssh" {
        args.extend(["--config".into(), TEST_HOSTS.into()]);
    }
    if user.is_some() {
        args.push("--allow-unlimited".into());
    }
    for a in agents {
        args.push("--agent".into());
        args.push(format!("script:{agent_dir}/{a}.sh"));
    }
    args.extend(["--agent".into(), "oracle".into()]);
    let hostname_before = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = user.map_or_else(cleanroom, TestUser::cleanroom);
    if let Some(engine) = engine {
        command.env("DOCKER_HOST", engine);
    }
    let (output, run_dir) = run_with(command, &out, &args);
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), agents.len() + 1);
    let shadow_line =
        std::fs::read_to_string("/etc/shadow").unwrap().lines().next().unwrap_or("root:").to_string();
    for r in &results {
        let id = r["agent_id"].as_str().unwrap();
        let verify_log = trial_file(&run_dir, r, "verify.log");
        if id == "oracle" {
            assert_eq!(r["outcome"], "passed", "{verify_log}");
            continue;
        }
        assert_eq!(r["outcome"], "failed", "{id} passed: {verify_log}");
        let record = r.to_string();
        assert!(
            !record.contains(&shadow_line) && !verify_log.contains(&shadow_line),
            "{id} made the harness read /etc/shadow"
        );
    }
    let search = by_agent(&results, "script-search-verifier-sh")[0];
    let log = trial_file(&run_dir, search, "agent.log");
    assert!(
        !log.contains("probe.csv") && !log.contains("reference values"),
        "the verifier was visible: {log}"
    );
    let probe = by_agent(&results, "script-probe-walls-sh")[0];
    let report = trial_file(&run_dir, probe, "agent.log");
    let host_facing = |l: &&str| l.starts_with("OPEN connect") || l.starts_with("OPEN cloud metadata");
    let open: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("OPEN"))
        .filter(|l| match backend {
            "sandbox" => true,
            // PID 1 of a container is catatonit, which root there
            // may read and trace (docs/backends.md); every other wall holds.
            "container" => !l.contains("pid 1's"),
            _ => host_facing(l),
        })
        .collect();
    assert!(open.is_empty(), "walls that did not hold:\n{}", open.join("\n"));
    if let Some(hooks) = by_agent(&results, "script-verify-hooks-sh").first() {
        let verify_log = trial_file(&run_dir, hooks, "verify.log");
        assert!(verify_log.contains("WRAPPER-RAN"), "the replaced tool ran in verification: {verify_log}");
        for forbidden in ["HOOK-RAN", "TAMPER-WORKED"] {
            assert!(
                !verify_log.contains(forbidden),
                "an agent's hook acted inside verification:\n{verify_log}"
            );
        }
        assert_eq!(hooks["tampered"], serde_json::json!([]), "{verify_log}");
    }
    // No deployment code runs between the tamper check and the seals: a
    // profile hook that waits for the agent's phase to be over never acts.
    if let Some(login) = by_agent(&results, "script-login-tamper-sh").first() {
        let verify_log = trial_file(&run_dir, login, "verify.log");
        assert!(
            !verify_log.contains("LOGIN-TAMPER-RAN"),
            "a login hook acted after the tamper check:\n{verify_log}"
        );
        assert_eq!(login["tampered"], serde_json::json!([]), "{verify_log}");
    }
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(), hostname_before);
    if let Some(pid) = run_pid(&run_dir) {
        match user {
            Some(user) => assert_nothing_left_in(pid, &user.cleanroom_home()),
            None => assert_nothing_left(pid),
        }
    }
}

#[test]
fn tasks_list_writes_the_three_formats() {
    let dir = fixtures("examples/tasks");
    let csv = cleanroom().args(["tasks", "list", &dir, "--format", "csv"]).output().unwrap();
    assert!(csv.status.success(), "{}", text(&csv));
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(
        csv.starts_with("task_name,paper_title,difficulty,agent_time,type,pre2020,gpu,main_language,qemu"),
        "{csv}"
    );
    let json = cleanroom().args(["tasks", "list", &dir, "--format", "json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&json.stdout).unwrap();
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"rff-ridge"), "{ids:?}");
    assert_eq!(csv.lines().count(), ids.len() + 1);
    let table = cleanroom().args(["tasks", "list", &dir]).output().unwrap();
    assert!(String::from_utf8_lossy(&table.stdout).contains("rff-ridge"));
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let out = temp_out("bad-input");
    let bad_task = out.join("bad");
    std::fs::create_dir_all(&bad_task).unwrap();
    std::fs::write(bad_task.join("task.toml"), "schema_version = 1\n[task]\ntitle = \"x\"\ndomain = \"ai\"\nallow_internet = true\n[agent]\ntimeout_sec = 10\n").unwrap();
    std::fs::write(bad_task.join("instruction.md"), "x").unwrap();
    for (args, needle) in [
        (vec!["run", "--tasks", bad_task.to_str().unwrap(), "--agent", "nop"], "task.toml:5"),
        (vec!["run", "--tasks", "/no/such/dir", "--agent", "nop"], "/no/such/dir"),
        (vec!["run", "--tasks", &fixtures("examples/tasks"), "--agent", "orcale"], "orcale"),
        (vec!["run", "--tasks", &fixtures("examples/tasks"), "--agent", "nop", "--task", "nope"], "nope"),
        (vec!["tasks", "list", bad_task.to_str().unwrap()], "allow_internet"),
    ] {
        let output =
            cleanroom().args(&args).arg("--out").arg(&out).output().unwrap_or_else(|_| panic!("{args:?}"));
        let output = if args[0] == "tasks" { cleanroom().args(&args).output().unwrap() } else { output };
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(text(&output).contains(needle), "{args:?}: {}", text(&output));
    }
}

#[test]
fn nonsense_flags_exit_2_and_say_what_to_do() {
    let out = temp_out("nonsense");
    let examples = fixtures("examples/tasks");
    let a_file = out.join("a-file");
    std::fs::write(&a_file, "").unwrap();
    let under_file = a_file.join("runs").display().to_string();
    let run_dir = out.join("some-run").display().to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--tasks", examples.as_str(), "--agent", "nop"];
        args.extend(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    for (args, needles) in [
        (run(&["--jobs", "0"]), vec!["--jobs", "must be at least 1"]),
        (owned(&["tasks", "check", &examples, "--jobs", "0"]), vec!["--jobs", "must be at least 1"]),
        (owned(&["tasks", "calibrate", &examples, "--jobs", "0"]), vec!["--jobs", "must be at least 1"]),
        (run(&["--trials", "0"]), vec!["--trials", "must be at least 1"]),
        (run(&["--trials", "-1"]), vec!["--trials", "at least 1"]),
        (run(&["--max-steps", "0"]), vec!["--max-steps", "must be at least 1"]),
        (run(&["--timeout-multiplier", "0"]), vec!["--timeout-multiplier", "above 0"]),
        (run(&["--timeout-multiplier", "NaN"]), vec!["--timeout-multiplier", "above 0"]),
        (run(&["--max-cost", "-1"]), vec!["--max-cost", "above 0"]),
        (run(&["--fail-under", "1.5"]), vec!["--fail-under", "from 0 to 1"]),
        (run(&["--gate", "off", "--gate", "enforced", "--gate", "off"]), vec!["--gate off is given twice"]),
        (run(&["--out", &under_file]), vec![under_file.as_str(), "give --out a directory"]),
        (run(&["--out", "/proc/cleanroom-out"]), vec!["/proc/cleanroom-out", "give --out a directory"]),
        (run(&["--backend", "nosuch"]), vec!["unknown backend `nosuch`", "available: sandbox"]),
        (owned(&["tasks", "check", &examples, "--backend", "nosuch"]), vec!["unknown backend `nosuch`"]),
        (owned(&["tasks", "calibrate", &examples, "--backend", "nosuch"]), vec!["unknown backend `nosuch`"]),
        (
            owned(&["tasks", "calibrate", &examples, "--setup", "/nonexistent/alt.sh"]),
            vec!["--setup /nonexistent/alt.sh", "no such file"],
        ),
        (
            owned(&["run", "--resume", &run_dir, "--trials", "2"]),
            vec!["--resume takes the plan from", "run.toml", "drop --trials"],
        ),
        (
            owned(&["run", "--resume", &run_dir, "--agent", "nop", "--retries", "3"]),
            vec!["drop --agent, --retries"],
        ),
        (owned(&["run", "--resume", &run_dir, "--gate", "off"]), vec!["drop --gate"]),
    ] {
        let output = cleanroom().args(&args).output().unwrap();
        let said = text(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {said}");
        for needle in needles {
            assert!(said.contains(needle), "{args:?}: {needle:?} not in {said}");
        }
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
}

#[test]
fn fail_under_judges_a_resumed_run() {
    let out = temp_out("fail-under");
    let (output, run_dir) =
        run(&out, &["--tasks", &fixtures("tests/fixtures/tasks-adversarial"), "--agent", "nop"]);
    assert!(output.status.success(), "{}", text(&output));
    let resume = |rate: &str| {
        cleanroom().arg("run").arg("--resume").arg(&run_dir).args(["--fail-under", rate]).output().unwrap()
    };
    let below = resume("0.5");
    assert_eq!(below.status.code(), Some(100), "nop passes nothing: {}", text(&below));
    assert!(text(&below).contains("below --fail-under 0.5"), "{}", text(&below));
    let config = std::fs::read_to_string(run_dir.join("run.toml")).unwrap();
    assert!(config.contains("fail_under = 0.5"), "the threshold judged is recorded: {config}");
    let met = resume("0");
    assert!(met.status.success(), "{}", text(&met));
    assert_eq!(results(&run_dir).len(), 1, "a finished run has nothing to rerun");
}

/// `--resume` takes no --config: the run reads again the file it was made
/// with, so a backend that lives in it (an ssh pool) is there again.
#[test]
fn a_resumed_run_reads_the_configuration_it_was_made_with() {
    let out = temp_out("resume-config");
    let config = out.join("hosts.toml");
    // A provisioner that never makes a host: each trial is an infra_error,
    // fast, and the run is there to resume.
    std::fs::write(&config, "[[ssh.pools]]\nname = \"none\"\ncreate = \"true\"\ndestroy = \"true\"\n")
        .unwrap();
    let runs = out.join("runs");
    let (output, run_dir) = run(
        &runs,
        &[
            "--backend",
            "ssh",
            "--config",
            &config.display().to_string(),
            "--tasks",
            &fixtures("tests/fixtures/tasks-adversarial"),
            "--agent",
            "nop",
            "--retries",
            "0",
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(results(&run_dir)[0]["outcome"], "infra_error");
    let resumed = cleanroom().arg("run").arg("--resume").arg(&run_dir).output().unwrap();
    assert!(resumed.status.success(), "the resumed run had no pool: {}", text(&resumed));
}

#[test]
fn tasks_list_and_check_work_from_inside_a_task() {
    let task = repo().join("examples/tasks/rff-ridge");
    let list = cleanroom().current_dir(&task).args(["tasks", "list", "."]).output().unwrap();
    assert!(list.status.success(), "{}", text(&list));
    let table = String::from_utf8_lossy(&list.stdout);
    assert_eq!(table.lines().filter(|l| l.starts_with("rff-ridge ")).count(), 1, "{table}");
    let check = cleanroom().current_dir(&task).args(["tasks", "check", ".", "--no-run"]).output().unwrap();
    let report = text(&check);
    assert!(check.status.success(), "{report}");
    assert!(report.lines().any(|l| l.starts_with("rff-ridge ")), "{report}");
    assert!(report.contains("1 ok, 0 with errors"), "{report}");
}

/// A task whose verify/ holds a FIFO, which the harness cannot copy into
/// an environment: every attempt ends in infra_error, after the agent ran.
fn make_infra_task(root: &Path, id: &str) {
    make_class_task(root, id, "");
    let fifo =
        std::ffi::CString::new(root.join(id).join("verify/pipe").into_os_string().into_encoded_bytes())
            .unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// The (task, agent id, trial, attempt) of every trial in the index.
fn indexed_attempts(out: &Path) -> Vec<(String, String, i64, i64)> {
    let db = Connection::open(out.join("index.sqlite")).unwrap();
    let mut stmt = db
        .prepare("SELECT task, agent_id, trial, attempt FROM trials ORDER BY task, agent_id, trial")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn result_attempts(results: &[Value]) -> Vec<(String, String, i64, i64)> {
    let mut v: Vec<_> = results
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("task"), s("agent_id"), r["trial"].as_i64().unwrap(), r["attempt"].as_i64().unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn every_attempt_of_a_retried_trial_keeps_its_record_and_files() {
    let out = temp_out("retries");
    let tasks = out.join("tasks");
    make_infra_task(&tasks, "no-verify");
    let agent = script(&out, "token.sh", "echo \"token $(cat /proc/sys/kernel/random/uuid)\"");
    let runs = out.join("runs");
    let (output, run_dir) =
        run(&runs, &["--tasks", tasks.to_str().unwrap(), "--agent", &agent, "--retries", "2"]);
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), 1);
    let last = &results[0];
    assert_eq!(
        (&last["outcome"], &last["attempt"]),
        (&Value::from("infra_error"), &Value::from(3)),
        "{last}"
    );
    assert!(last["error"].as_str().unwrap().contains("verify/"), "{last}");

    let trial = run_dir.join("trials/no-verify/script-token-sh/1");
    let mut tokens = Vec::new();
    for k in 1..=2 {
        let kept = read_json(&trial.join(format!("attempt-{k}.json")));
        assert_eq!(
            (&kept["outcome"], &kept["attempt"]),
            (&Value::from("infra_error"), &Value::from(k)),
            "{kept}"
        );
        let files = trial.join(format!("attempt-{k}"));
        for name in ["agent.log", "env-diff.txt", "changes.txt", "verify.log"] {
            assert!(files.join(name).is_file(), "attempt {k} lost its {name}");
        }
        tokens.push(std::fs::read_to_string(files.join("agent.log")).unwrap());
    }
    for name in ["env-diff.txt", "changes.txt", "verify.log"] {
        assert!(trial.join(name).is_file(), "the final attempt lost its {name}");
    }
    assert!(
        !trial.join("attempt-3.json").exists() && !trial.join("attempt-3").exists(),
        "the final attempt is result.json"
    );
    tokens.push(std::fs::read_to_string(trial.join("agent.log")).unwrap());
    assert!(tokens.iter().all(|t| t.contains("token ")), "{tokens:?}");
    // The terminal follows the runner's events: the plan, then each
    // attempt's start and its end.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| ["cleanroom: run ", "start ", "ERROR "].iter().any(|p| l.starts_with(p)))
        .map(|l| l.split("  infra_error").next().unwrap())
        .collect();
    assert!(progress[0].ends_with(": 1 trial(s) to run of 1"), "{stderr}");
    let attempt = |k: u32| if k > 1 { format!(" (attempt {k})") } else { String::new() };
    let expected: Vec<String> = (1..=3)
        .flat_map(|k| {
            [
                format!("start no-verify script-token-sh #1{}", attempt(k)),
                format!("ERROR no-verify  script-token-sh #1{}", attempt(k)),
            ]
        })
        .collect();
    assert_eq!(progress[1..], expected, "{stderr}");
    tokens.sort();
    tokens.dedup();
    assert_eq!(tokens.len(), 3, "each attempt has its own agent.log");
    assert_eq!(indexed_attempts(&runs), result_attempts(&results));
}

/// A script agent that takes a few seconds, then stops.
fn sleeper(dir: &Path) -> String {
    let path = dir.join("sleeper.sh");
    std::fs::write(&path, "#!/bin/bash\necho sleeping\nexec sleep 8\n").unwrap();
    format!("script:{}", path.display())
}

/// The run directory in `out`, once `ready` holds of it.
fn wait_for_run(out: &Path, ready: impl Fn(&Path) -> bool, limit: Duration) -> PathBuf {
    let run_dir = || std::panic::catch_unwind(|| only_run_dir(out)).ok().filter(|r| ready(r));
    wait_until(|| run_dir().is_some(), limit);
    run_dir().expect("it was there")
}

/// A run with retries, interrupted while a trial retries an infra error,
/// then resumed: every trial ends with exactly one result, and every
/// attempt, before and after the interruption, keeps its record and files.
fn interrupted_run_resumes(signal: i32, name: &str) {
    let out = temp_out(name);
    let agent = sleeper(&out);
    let tasks = out.join("tasks");
    make_infra_task(&tasks, "no-verify");
    let runs = out.join("runs");
    let mut child = cleanroom()
        .args(["run", "--tasks", tasks.to_str().unwrap(), "--agent", "nop", "--agent", &agent])
        .args(["--trials", "2", "--retries", "1", "--jobs", "1", "--out"])
        .arg(&runs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // nop's trials come first; once the sleeper's first attempt is kept,
    // its second is running.
    let first = |run_dir: &Path| run_dir.join("trials/no-verify/script-sleeper-sh/1");
    let run_dir =
        wait_for_run(&runs, |r| first(r).join("attempt-1.json").is_file(), Duration::from_secs(300));
    let kept = std::fs::read(first(&run_dir).join("attempt-1.json")).unwrap();
    let kept_log = std::fs::read(first(&run_dir).join("attempt-1/agent.log")).unwrap();
    // The running trial's environment, and the next one, made ahead of
    // need: what the signal leaves must go too.
    wait_until(|| environments_of(pid) >= 2, Duration::from_secs(60));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, signal) };
    let status = child.wait().unwrap();
    if signal == libc::SIGINT {
        assert_eq!(status.code(), Some(130), "Ctrl-C exits 130");
        assert_nothing_left(pid);
    }
    let before = results(&run_dir).len();
    assert!(before < 4, "the interrupted run should not have finished");

    let resumed = cleanroom().arg("run").arg("--resume").arg(&run_dir).output().unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    let after = results(&run_dir);
    assert_eq!(after.len(), 4, "every trial has exactly one result");
    let mut keys: Vec<String> =
        after.iter().map(|r| format!("{}/{}/{}", r["task"], r["agent_id"], r["trial"])).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 4);
    // Two attempts a trial (--retries 1), numbered on across the resume.
    for r in &after {
        assert_eq!((&r["outcome"], &r["attempt"]), (&Value::from("infra_error"), &Value::from(2)), "{r}");
        let trial = run_dir
            .join("trials/no-verify")
            .join(r["agent_id"].as_str().unwrap())
            .join(r["trial"].to_string());
        assert_eq!(read_json(&trial.join("attempt-1.json"))["attempt"], 1, "{}", trial.display());
        assert!(trial.join("attempt-1/agent.log").is_file() && trial.join("agent.log").is_file());
        assert!(!trial.join("attempt-2.json").exists() && !trial.join("attempt-2").exists());
    }
    assert_eq!(
        std::fs::read(first(&run_dir).join("attempt-1.json")).unwrap(),
        kept,
        "the resumed run kept it"
    );
    assert_eq!(std::fs::read(first(&run_dir).join("attempt-1/agent.log")).unwrap(), kept_log);
    assert_eq!(indexed_attempts(&runs), result_attempts(&after));
    // Whatever the killed run left, the resumed run swept.
    assert_nothing_left(pid);
}

#[test]
fn ctrl_c_leaves_a_resumable_run() {
    interrupted_run_resumes(libc::SIGINT, "sigint");
}

#[test]
fn kill_9_leaves_a_resumable_run() {
    interrupted_run_resumes(libc::SIGKILL, "sigkill");
}

/// A bash-only task made on the fly: deployed means /opt/deployed exists;
/// `data/` is protected.
fn make_class_task(root: &Path, id: &str, extra_task_keys: &str) {
    let dir = root.join(id);
    std::fs::create_dir_all(dir.join("artifact/data")).unwrap();
    std::fs::create_dir_all(dir.join("solution")).unwrap();
    std::fs::create_dir_all(dir.join("verify")).unwrap();
    std::fs::write(
        dir.join("task.toml"),
        format!("schema_version = 1\n[task]\ntitle = \"count lines\"\ndomain = \"systems\"\n{extra_task_keys}\n[environment]\ndisk_mb = 64\n[agent]\ntimeout_sec = 15\n[verify]\nprotected = [\"data/**\"]\n"),
    )
    .unwrap();
    std::fs::write(dir.join("instruction.md"), "Deploy the line counter.\n").unwrap();
    std::fs::write(dir.join("artifact/data/input.txt"), "a\nb\nc\n").unwrap();
    std::fs::write(dir.join("artifact/count.sh"), "wc -l < data/input.txt > \"$CLEANROOM_OUT/n.txt\"\n")
        .unwrap();
    std::fs::write(dir.join("solution/setup.sh"), "touch /opt/deployed\n").unwrap();
    std::fs::write(
        dir.join("verify/checks.toml"),
        "[[step]]\nname = \"count\"\nrun = \"test -f /opt/deployed && bash count.sh\"\n\n[[check]]\nname = \"lines\"\nfile = \"n.txt\"\nregex = '(\\d+)'\nexpect = 3\n",
    )
    .unwrap();
}

fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/bash\n{body}\n")).unwrap();
    format!("script:{}", path.display())
}

#[test]
fn outcome_classes_are_recorded() {
    let out = temp_out("classes");
    let tasks = out.join("tasks");
    make_class_task(&tasks, "count", "");
    make_class_task(&tasks, "count-gpu", "gpu = true");
    let agents = [
        script(&out, "tamper.sh", "touch /opt/deployed; chmod 600 /workspace/artifact/data/input.txt"),
        script(&out, "slow.sh", "sleep 100"),
        script(&out, "crash.sh", "kill -9 $$"),
        script(&out, "fails.sh", "touch /opt/deployed; exit 3"),
        script(
            &out,
            "fills-disk.sh",
            "touch /opt/deployed; head -c 100M /dev/zero > /fill; for i in {1..20000}; do : > /f$i || break; done 2>/dev/null",
        ),
    ];
    let mut args = vec!["--tasks", tasks.to_str().unwrap(), "--agent", "oracle"];
    for a in &agents {
        args.extend(["--agent", a.as_str()]);
    }
    let runs = out.join("runs");
    let (output, run_dir) = run(&runs, &args);
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    let get = |task: &str, agent: &str| {
        results
            .iter()
            .find(|r| r["task"] == task && r["agent_id"] == agent)
            .unwrap_or_else(|| panic!("{task} {agent}"))
    };
    assert_eq!(get("count", "oracle")["outcome"], "passed");
    let tamper = get("count", "script-tamper-sh");
    assert_eq!((&tamper["outcome"], &tamper["class"]), (&Value::from("failed"), &Value::from("tampered")));
    assert_eq!(tamper["tampered"], serde_json::json!(["data/input.txt"]));
    assert!(trial_file(&run_dir, tamper, "changes.txt").contains("M data/input.txt"));
    let slow = get("count", "script-slow-sh");
    assert_eq!((&slow["class"], &slow["stop_reason"]), (&Value::from("budget"), &Value::from("timeout")));
    let crash = get("count", "script-crash-sh");
    assert_eq!(
        (&crash["class"], &crash["stop_reason"]),
        (&Value::from("agent_error"), &Value::from("crash"))
    );
    let fails = get("count", "script-fails-sh");
    assert_eq!(fails["outcome"], "passed", "a script's exit code does not decide: the verifier does");
    assert_eq!((&fails["stop_reason"], &fails["exit_code"]), (&Value::from("finished"), &Value::from(3)));
    let full = get("count", "script-fills-disk-sh");
    assert_eq!(
        (&full["outcome"], &full["class"]),
        (&Value::from("failed"), &Value::from("self_stop")),
        "{full}"
    );
    for agent in ["oracle", "script-tamper-sh", "script-slow-sh", "script-crash-sh", "script-fails-sh"] {
        let r = get("count-gpu", agent);
        assert_eq!(r["outcome"], "skipped");
        assert!(r["skip_reason"].as_str().unwrap().starts_with("gpus"), "{r}");
        assert_eq!(r["class"], Value::Null);
    }
}

/// GPUs on the vm backend are the host's configuration's (`vm.gpus`,
/// checked against the host's own /sys): none configured skips a GPU task
/// saying what to configure; an entry that cannot be passed through is bad
/// input naming the file and the entry, before anything runs.
#[test]
fn gpus_on_a_machine_come_from_the_configuration() {
    let out = temp_out("vm-gpus");
    let tasks = out.join("tasks");
    make_class_task(&tasks, "count-gpu", "gpu = true");
    let runs = out.join("runs");
    let (output, run_dir) =
        run(&runs, &["--tasks", tasks.to_str().unwrap(), "--agent", "oracle", "--backend", "vm"]);
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["outcome"], "skipped");
    let reason = results[0]["skip_reason"].as_str().unwrap();
    assert!(reason.starts_with("gpus") && reason.contains("vm.gpus"), "{reason}");

    // A device of this host that is not bound to vfio-pci, where it has one.
    let bound_elsewhere =
        std::fs::read_dir("/sys/bus/pci/devices").into_iter().flatten().flatten().find(|d| {
            std::fs::read_link(d.path().join("driver"))
                .is_ok_and(|driver| driver.file_name().is_some_and(|n| n != "vfio-pci"))
        });
    let mut cases = vec![
        ("\"gpu0\"".to_string(), "vm.gpus[0]: \"gpu0\" is not a PCI address".to_string()),
        ("\"0000:ff:1f.7\"".to_string(), "vm.gpus[0]: no PCI device 0000:ff:1f.7 on this host".to_string()),
    ];
    if let Some(device) = bound_elsewhere {
        let address = device.file_name().to_string_lossy().into_owned();
        cases.push((format!("\"{address}\""), format!("vm.gpus[0]: {address} is bound to ")));
    }
    for (entry, expected) in cases {
        refuses_config(&out, &tasks, "vm", &format!("[vm]\ngpus = [{entry}]\n"), &expected);
    }
}

/// A run on `backend` with `config` as the configuration is bad input
/// (exit 2) that names the file and says `expected`, and writes nothing.
fn refuses_config(out: &Path, tasks: &Path, backend: &str, config: &str, expected: &str) {
    let file = out.join("cleanroom.toml");
    std::fs::write(&file, config).unwrap();
    let output = cleanroom()
        .arg("--config")
        .arg(&file)
        .args(["run", "--tasks", tasks.to_str().unwrap(), "--agent", "oracle", "--backend", backend, "--out"])
        .arg(out.join("refused"))
        .output()
        .unwrap();
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains(&format!("{}: {expected}", file.display())), "{said}");
    assert!(!out.join("refused").exists(), "a run directory was made: {said}");
}

/// The ssh backend's hosts come from the configuration: with none, or a
/// pool that is neither hosts nor a provisioner, the run is bad input
/// naming the file and the key, before anything runs; a GPU task that no
/// configured host can take is skipped, saying what to declare.
#[test]
fn ssh_hosts_come_from_the_configuration() {
    let out = temp_out("ssh-hosts");
    let tasks = out.join("tasks");
    make_class_task(&tasks, "count-gpu", "gpu = true");
    refuses_config(&out, &tasks, "ssh", "", "ssh.pools: the ssh backend has no hosts");
    refuses_config(
        &out,
        &tasks,
        "ssh",
        "[[ssh.pools]]\nname = \"cloud\"\ncreate = \"make-vm\"\n",
        "ssh.pools[0].destroy: a provisioner needs destroy too",
    );
    let (output, _) = run(
        &out.join("runs"),
        &[
            "--config",
            TEST_HOSTS,
            "--tasks",
            tasks.to_str().unwrap(),
            "--agent",
            "oracle",
            "--backend",
            "ssh",
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&only_run_dir(&out.join("runs")));
    assert_eq!(results[0]["outcome"], "skipped");
    let reason = results[0]["skip_reason"].as_str().unwrap();
    assert!(reason.starts_with("gpus") && reason.contains("declare `gpus`"), "{reason}");
}

#[test]
fn tasks_check_vets_the_examples() {
    let out = temp_out("check-examples");
    let output = cleanroom()
        .args(["tasks", "check", &fixtures("examples/tasks"), "--jobs", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    for id in ["fd-anharmonic", "rff-ridge", "sir-network-final-size"] {
        let row =
            report.lines().find(|l| l.starts_with(id)).unwrap_or_else(|| panic!("no row for {id}: {report}"));
        assert!(
            row.contains("passed") && row.contains("same") && row.contains("failed (self_stop)"),
            "{row}"
        );
    }
    assert!(report.contains("3 ok, 0 with errors"), "{report}");
}

#[test]
fn every_suite_task_validates() {
    let suite = repo().join("tasks");
    if !suite.exists() {
        return;
    }
    let output = cleanroom().args(["tasks", "check", "--no-run"]).arg(&suite).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn tasks_check_catches_a_leaky_task_that_nop_passes() {
    let out = temp_out("leaky");
    make_class_task(&out, "leaky", "");
    let task = out.join("leaky");
    // The answer in the instruction, a hidden file in the artifact, and a
    // verifier that passes whatever the agent did.
    std::fs::write(task.join("instruction.md"), "Count the lines; the answer is 0.012345.\n").unwrap();
    let checks = "[[step]]\nname = \"s\"\nrun = \"echo 'v: 0.012345' > $CLEANROOM_OUT/v.txt\"\n\n\
                  [[check]]\nname = \"value\"\nfile = \"v.txt\"\nregex = 'v: ([0-9.]+)'\nexpect = 0.012345\n";
    std::fs::write(task.join("verify/checks.toml"), checks).unwrap();
    let secret = "#!/bin/bash\n# the reference deployment, long enough to be recognised as a copy\ntouch /opt/deployed\n";
    std::fs::write(task.join("solution/setup.sh"), secret).unwrap();
    std::fs::write(task.join("artifact/setup-notes.sh"), secret).unwrap();
    let output =
        cleanroom().args(["tasks", "check", "--out"]).arg(out.join("runs")).arg(&task).output().unwrap();
    let report = text(&output);
    assert_eq!(output.status.code(), Some(2), "{report}");
    assert!(report.contains("instruction.md gives away the expected value 0.012345"), "{report}");
    assert!(
        report.contains("artifact file setup-notes.sh is a copy of the hidden solution/setup.sh"),
        "{report}"
    );
}

#[test]
fn tasks_new_makes_a_task_that_passes_its_check() {
    let out = temp_out("new");
    let made = cleanroom().args(["tasks", "new", "my-task", "--dir"]).arg(&out).output().unwrap();
    assert!(made.status.success(), "{}", text(&made));
    let check = cleanroom()
        .args(["tasks", "check", "--out"])
        .arg(out.join("runs"))
        .arg(out.join("my-task"))
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    let again = cleanroom().args(["tasks", "new", "my-task", "--dir"]).arg(&out).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "an existing task is not overwritten");
    let bad = cleanroom().args(["tasks", "new", "Bad Id", "--dir"]).arg(&out).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// A verify step that fails: `tasks check` names it with its exit code and
/// the log to read, and keeps the trial's files, what the step wrote to
/// CLEANROOM_OUT included.
#[test]
fn tasks_check_names_the_failed_step_its_exit_code_and_its_log() {
    let out = temp_out("check-failed-step");
    make_class_task(&out, "broken", "");
    let task = out.join("broken");
    let checks = "[[step]]\nname = \"count\"\nrun = \"echo partial > $CLEANROOM_OUT/partial.txt; echo counting went wrong; exit 7\"\n\n\
                  [[check]]\nname = \"lines\"\nfile = \"n.txt\"\nregex = '(\\d+)'\nexpect = 3\n";
    std::fs::write(task.join("verify/checks.toml"), checks).unwrap();
    let runs = out.join("runs");
    let output = cleanroom()
        .args(["tasks", "check", "--no-substitutes", "--out"])
        .arg(&runs)
        .arg(&task)
        .output()
        .unwrap();
    let report = text(&output);
    assert_eq!(output.status.code(), Some(2), "{report}");
    assert!(report.contains("broken oracle: failed: run step count exited 7"), "{report}");
    let log = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("log: "))
        .unwrap_or_else(|| panic!("no log path: {report}"));
    let log = Path::new(log);
    assert!(log.ends_with("trials/broken/oracle/1/verify.log") && log.starts_with(&runs), "{report}");
    assert!(std::fs::read_to_string(log).unwrap().contains("counting went wrong"), "{report}");
    let outputs = log.parent().unwrap().join("outputs/partial.txt");
    assert_eq!(std::fs::read_to_string(outputs).unwrap(), "partial\n", "what the step wrote is kept");
    assert!(log.with_file_name("agent.log").is_file());
}

/// `tasks new` with a registry source: a skeleton that loads, its
/// experiment in overlay/ when asked; a source the format refuses is bad
/// input and leaves nothing.
#[test]
fn tasks_new_makes_registry_skeletons_that_load() {
    let out = temp_out("new-registry");
    for (id, source) in
        [("deap-gp", "pypi:deap==1.3.3"), ("itoa-fmt", "crate:itoa@0.4.8"), ("sl-anim", "debian:sl=5.02-1")]
    {
        let made =
            cleanroom().args(["tasks", "new", id, "--source", source, "--dir"]).arg(&out).output().unwrap();
        assert!(made.status.success(), "{source}: {}", text(&made));
    }
    let overlay = cleanroom()
        .args(["tasks", "new", "deap-overlay", "--source", "pypi:deap==1.3.3", "--overlay", "--dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(overlay.status.success(), "{}", text(&overlay));
    assert!(out.join("deap-overlay/overlay/run.sh").is_file() && !out.join("deap-overlay/artifact").exists());
    let list = cleanroom().args(["tasks", "list", "--format", "json"]).arg(&out).output().unwrap();
    assert!(list.status.success(), "{}", text(&list));
    let listed = text(&list);
    for source in ["pypi-sdist", "crate", "debian-source"] {
        assert!(listed.contains(source), "{source}: {listed}");
    }
    for (source, overlay) in [("crate:itoa@1.0", false), ("pypi:deap", false), ("dir", true)] {
        let mut cmd = cleanroom();
        cmd.args(["tasks", "new", "refused", "--source", source, "--dir"]).arg(&out);
        if overlay {
            cmd.arg("--overlay");
        }
        let bad = cmd.output().unwrap();
        assert_eq!(bad.status.code(), Some(2), "{source}: {}", text(&bad));
        assert!(!out.join("refused").exists(), "{source}: nothing is left");
    }
}

/// An expected value written rounded, within its check's tolerance, is a
/// leak as much as the exact one; an unrelated number is not.
#[test]
fn tasks_check_finds_a_rounded_expected_value_in_the_instruction() {
    let out = temp_out("rounded-leak");
    make_class_task(&out, "rounded", "");
    let task = out.join("rounded");
    let checks = "[[step]]\nname = \"s\"\nrun = \"true\"\n\n\
                  [[check]]\nname = \"error\"\nfile = \"e.txt\"\nexpect = 0.123456\nabs_tol = 1e-3\n";
    std::fs::write(task.join("verify/checks.toml"), checks).unwrap();
    let check = |instruction: &str| {
        std::fs::write(task.join("instruction.md"), instruction).unwrap();
        cleanroom().args(["tasks", "check", "--no-run"]).arg(&task).output().unwrap()
    };
    let leaky = check("Run Table 2 with 1000 samples; the error comes out at about 0.1235.\n");
    let report = text(&leaky);
    assert_eq!(leaky.status.code(), Some(2), "{report}");
    assert!(report.contains("gives away a rounded expected value: 0.1235 (check `error`"), "{report}");
    let clean = check("Run Table 2 with 1000 samples and a step of 0.25.\n");
    assert!(clean.status.success(), "{}", text(&clean));
}

#[test]
fn calibrate_proposes_and_writes_tolerances() {
    let out = temp_out("calibrate");
    make_class_task(&out, "noisy", "");
    let task = out.join("noisy");
    // A measurement with run-to-run spread (the time's nanoseconds) and one
    // without.
    let checks = "[[step]]\nname = \"s\"\nrun = \"test -f /opt/deployed && { echo \\\"x: 1.$(date +%N)\\\"; echo 'y: 2.5'; } > $CLEANROOM_OUT/m.txt\"\n\n\
                  [[check]]\nname = \"noisy x\"\nfile = \"m.txt\"\nregex = 'x: ([0-9.]+)'\nexpect = 1.5\nabs_tol = 0.01\n\n\
                  # stays exact unless calibrated\n[[check]]\nname = \"steady y\"\nfile = \"m.txt\"\nregex = 'y: ([0-9.]+)'\nexpect = 2.5\n";
    std::fs::write(task.join("verify/checks.toml"), checks).unwrap();
    let output = cleanroom()
        .args(["tasks", "calibrate"])
        .arg(&task)
        .args(["--runs", "4", "--write"])
        .output()
        .unwrap();
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    let proposed = |check: &str| {
        let line = report.lines().find(|l| l.contains(check)).unwrap_or_else(|| panic!("{check}: {report}"));
        line.rsplit("  ").next().unwrap().trim().to_string()
    };
    // Widened from the author's 0.01, in the author's decimals.
    let noisy = proposed("noisy x");
    assert!(noisy.starts_with("abs_tol = ") && !noisy.contains('e') && noisy != "abs_tol = 0.01", "{report}");
    // An exact value gets the floor, in exponent form where decimals are long.
    assert_eq!(proposed("steady y"), "rel_tol = 1e-6", "{report}");
    let written = std::fs::read_to_string(task.join("verify/checks.toml")).unwrap();
    assert!(written.contains("# stays exact unless calibrated"), "comments are kept: {written}");
    for shown in [noisy, proposed("steady y")] {
        assert!(
            written.lines().any(|l| l.trim() == shown),
            "what was shown is written: {shown} in {written}"
        );
    }
}

/// A deliberate cross-version tolerance survives calibration, an analytic
/// range stays as written, and another correct deployment (here a value
/// within 1e-4 of the oracle's) still passes the calibrated task.
#[test]
fn calibrate_keeps_deliberate_tolerances_and_pools_deployments() {
    let out = temp_out("calibrate-deployments");
    let tasks = out.join("tasks");
    make_class_task(&tasks, "xver", "");
    let task = tasks.join("xver");
    std::fs::write(task.join("solution/setup.sh"), "echo '0.123456 7.0' > /opt/values\n").unwrap();
    let alt = script(&out, "alt.sh", "echo '0.12346 7.000001' > /opt/values");
    let checks = "[[step]]\nname = \"s\"\nrun = \"read v t < /opt/values && printf 'v: %s\\\\nt: %s\\\\npi: 3.14\\\\n' $v $t > $CLEANROOM_OUT/m.txt\"\n\n\
                  # what another release of the library gives\n[[check]]\nname = \"cross-version\"\nfile = \"m.txt\"\nregex = 'v: ([0-9.]+)'\nexpect = 0.123456\nrel_tol = 1e-4 # deliberate\n\n\
                  [[check]]\nname = \"too tight\"\nfile = \"m.txt\"\nregex = 't: ([0-9.]+)'\nexpect = 7.0\nrel_tol = 1e-9\n\n\
                  [[check]]\nname = \"analytic\"\nfile = \"m.txt\"\nregex = 'pi: ([0-9.]+)'\nrange = [3.0, 3.3]\n";
    std::fs::write(task.join("verify/checks.toml"), checks).unwrap();
    let output = cleanroom()
        .args(["tasks", "calibrate"])
        .arg(&task)
        .args(["--runs", "2", "--jobs", "2", "--write", "--setup", alt.strip_prefix("script:").unwrap()])
        .output()
        .unwrap();
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("N counts the values of oracle + script-alt-sh"), "{report}");
    let row = |check: &str| report.lines().find(|l| l.contains(check)).unwrap_or_else(|| panic!("{report}"));
    assert!(row("cross-version").contains(" 2+2 ") && row("cross-version").ends_with("keep"), "{report}");
    assert!(row("analytic").ends_with("keep"), "{report}");
    // Widened to the floor, written as the author writes small numbers.
    assert!(row("too tight").ends_with("rel_tol = 1e-6"), "{report}");
    let written = std::fs::read_to_string(task.join("verify/checks.toml")).unwrap();
    assert_eq!(
        written,
        checks.replace("rel_tol = 1e-9", "rel_tol = 1e-6"),
        "only the too-tight tolerance changes"
    );
    let runs = out.join("runs");
    let (output, run_dir) = run(&runs, &["--tasks", tasks.to_str().unwrap(), "--agent", &alt]);
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    let r = by_agent(&results, "script-alt-sh");
    assert_eq!(r[0]["outcome"], "passed", "{}", trial_file(&run_dir, r[0], "verify.log"));
}

#[test]
fn failed_trials_carry_tags_with_evidence() {
    let out = temp_out("tags");
    let agent = out.join("claims.sh");
    std::fs::write(
        &agent,
        "#!/bin/bash\necho 'ERROR: No matching distribution found for numpy==1.16.4'\n\
         echo \"AttributeError: module 'numpy' has no attribute 'float'\"\necho 'All done, the experiment works.'\n",
    )
    .unwrap();
    let spec = format!("script:{}", agent.display());
    let (output, run_dir) =
        run(&out.join("runs"), &["--tasks", &fixtures("tests/fixtures/tasks-adversarial"), "--agent", &spec]);
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    let tags: Vec<(String, u64)> = results[0]["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["evidence"][0]["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        tags,
        [
            ("dependency_repair".to_string(), 1),
            ("legacy_compat".to_string(), 2),
            ("weaker_target".to_string(), 3)
        ]
    );
}

#[test]
fn report_reads_every_run_of_the_index() {
    let out = temp_out("report-index");
    for agent in ["nop", "oracle"] {
        let run = cleanroom()
            .args([
                "run",
                "--tasks",
                &fixtures("tests/fixtures/tasks-adversarial"),
                "--agent",
                agent,
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", text(&run));
    }
    let report = cleanroom().args(["report", "--runs-dir"]).arg(&out).output().unwrap();
    let md = text(&report);
    assert!(report.status.success(), "{md}");
    let overall = md.lines().find(|l| l.starts_with("| **Overall**")).unwrap_or_else(|| panic!("{md}"));
    assert!(
        overall.contains("0/1 (0.0%)") && overall.contains("1/1 (100.0%)"),
        "both runs, from the index: {overall}"
    );
    let empty = temp_out("report-no-index");
    let none = cleanroom().args(["report", "--runs-dir"]).arg(&empty).output().unwrap();
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
}

/// `--gate off --gate enforced` runs every agent both ways, as agents of
/// their own on the same tasks, and the report pairs them; nop and the
/// oracle have no finish to gate (`unsupported`), which is all this needs:
/// the plan, the ids, run.toml, resume and the report.
#[test]
fn two_gates_run_each_agent_both_ways_and_the_report_pairs_them() {
    let out = temp_out("gates");
    let tasks = fixtures("tests/fixtures/tasks-adversarial");
    let (output, run_dir) = run(
        &out,
        &["--tasks", &tasks, "--agent", "nop", "--agent", "oracle", "--gate", "off", "--gate", "enforced"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let agents: Vec<(String, String, Option<GateMode>)> =
        run_config(&run_dir).agents.into_iter().map(|a| (a.spec, a.id, a.gate)).collect();
    let agent = |spec: &str, id: &str, gate| (spec.to_string(), id.to_string(), Some(gate));
    assert_eq!(
        agents,
        [
            agent("nop", "nop-gate-off", GateMode::Off),
            agent("nop", "nop-gate-enforced", GateMode::Enforced),
            agent("oracle", "oracle-gate-off", GateMode::Off),
            agent("oracle", "oracle-gate-enforced", GateMode::Enforced),
        ]
    );
    let recorded = results(&run_dir);
    assert_eq!(recorded.len(), 4);
    for (id, outcome, gate) in [
        ("nop-gate-off", "failed", "off"),
        ("nop-gate-enforced", "failed", "unsupported"),
        ("oracle-gate-off", "passed", "off"),
        ("oracle-gate-enforced", "passed", "unsupported"),
    ] {
        let r = by_agent(&recorded, id);
        assert_eq!((r.len(), &r[0]["outcome"], &r[0]["gate"]), (1, &outcome.into(), &gate.into()), "{id}");
    }
    // The plan of a resumed run is run.toml's: every trial is there.
    let resumed = cleanroom().arg("run").arg("--resume").arg(&run_dir).output().unwrap();
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(results(&run_dir).len(), 4, "nothing to rerun");

    let report = cleanroom().arg("report").arg(&run_dir).output().unwrap();
    let md = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{}", text(&report));
    let gate = &md[md.find("## Gate effect").unwrap_or_else(|| panic!("{md}"))..];
    // One task in common: shown, marked; nop's self-stop stays one.
    let row = |agent: &str| {
        let start = format!("| {agent}-gate-off → {agent}-gate-enforced | enforced | 1 (few) |");
        gate.lines()
            .find(|l| l.starts_with(&start))
            .unwrap_or_else(|| panic!("{start} in {gate}"))
            .to_string()
    };
    assert!(row("nop").ends_with("| 1 | 0 | 0 | 1 | 0 |"), "{}", row("nop"));
    assert!(row("oracle").ends_with("| 0 | 0 | 0 | 0 | 0 |"), "{}", row("oracle"));
}

/// One `--gate` is a run-wide mode as before: plain ids, no gate per agent.
#[test]
fn one_gate_keeps_the_plain_agent_ids() {
    let out = temp_out("one-gate");
    let tasks = fixtures("tests/fixtures/tasks-adversarial");
    let (output, run_dir) = run(&out, &["--tasks", &tasks, "--agent", "nop", "--gate", "enforced"]);
    assert!(output.status.success(), "{}", text(&output));
    let config = run_config(&run_dir);
    assert_eq!(config.gate, GateMode::Enforced);
    assert_eq!(config.agents, [AgentEntry { spec: "nop".into(), id: "nop".into(), gate: None }]);
    let recorded = results(&run_dir);
    assert_eq!((&recorded[0]["agent_id"], &recorded[0]["gate"]), (&"nop".into(), &"unsupported".into()));
    let report = cleanroom().arg("report").arg(&run_dir).output().unwrap();
    assert!(report.status.success(), "{}", text(&report));
    assert!(!String::from_utf8_lossy(&report.stdout).contains("Gate effect"));
}

/// What a finished `cleanroom run` used, from the kernel's accounting of
/// the child and the descendants it reaped: work, which a loaded machine
/// does not stretch as it stretches wall-clock time.
struct Used {
    /// Peak resident memory of the cleanroom process, KiB.
    max_rss_kib: i64,
    /// User and system CPU seconds.
    cpu_seconds: f64,
}

/// `cleanroom run ARGS --out OUT`, and what it used.
fn run_measured(out: &Path, args: &[&str]) -> (std::process::ExitStatus, PathBuf, Used) {
    // Reaped by wait4 below, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = cleanroom()
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain old data, filled by the kernel.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid pointers.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let status = std::os::unix::process::ExitStatusExt::from_raw(status);
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let used =
        Used { max_rss_kib: usage.ru_maxrss, cpu_seconds: seconds(usage.ru_utime) + seconds(usage.ru_stime) };
    (status, only_run_dir(out), used)
}

/// The class task with room for a big tree: 512 MB of disk, two minutes.
fn make_roomy_task(root: &Path, id: &str) {
    make_class_task(root, id, "");
    let toml = root.join(id).join("task.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text.replace("disk_mb = 64", "disk_mb = 512").replace("timeout_sec = 15", "timeout_sec = 120"),
    )
    .unwrap();
}

#[test]
fn what_an_agent_leaves_is_judged_within_bounds_and_never_an_infra_error() {
    let out = temp_out("bounds");
    let tasks = out.join("tasks");
    make_roomy_task(&tasks, "count");
    let agents = [
        // A 15 TiB sparse file for a protected one, and more elsewhere.
        script(
            &out,
            "sparse.sh",
            "truncate -s 15T /workspace/artifact/data/input.txt /workspace/artifact/huge.bin /tmp/huge.bin",
        ),
        // Chains of directories far deeper than PATH_MAX.
        script(
            &out,
            "deep.sh",
            "perl -e 'for my $top (\"/workspace/artifact\", \"/tmp\") { chdir $top or die; \
             for (1..2100) { mkdir \"dd\" or die $!; chdir \"dd\" or die $! } }'",
        ),
        // A machine the verifier cannot run on: no bash.
        script(&out, "breaks.sh", "touch /opt/deployed; rm -f /usr/bin/bash"),
    ];
    let mut args = vec!["--tasks", tasks.to_str().unwrap(), "--jobs", "2"];
    for a in &agents {
        args.extend(["--agent", a.as_str()]);
    }
    let (status, run_dir, used) = run_measured(&out.join("runs"), &args);
    assert!(status.success());
    // Under a second here; reading or hashing the sparse terabytes would
    // take hours.
    assert!(used.cpu_seconds < 60.0, "the run used {} CPU seconds", used.cpu_seconds);
    let results = results(&run_dir);
    let get =
        |agent: &str| results.iter().find(|r| r["agent_id"] == agent).unwrap_or_else(|| panic!("{agent}"));
    for r in &results {
        assert_eq!(r["outcome"], "failed", "{r}");
        let steps = r["verdict"]["steps"].as_array().unwrap();
        assert!(steps.iter().all(|step| step["status"] != "timed_out"), "{r}");
    }
    let sparse = get("script-sparse-sh");
    assert_eq!(sparse["class"], "tampered", "{sparse}");
    assert_eq!(sparse["tampered"], serde_json::json!(["data/input.txt"]));
    let changes = trial_file(&run_dir, sparse, "changes.txt");
    assert!(changes.contains("M data/input.txt\n") && changes.contains("A huge.bin\n"), "{changes}");
    assert!(trial_file(&run_dir, sparse, "env-diff.txt").contains("\nA /tmp/huge.bin\n"));

    let deep = get("script-deep-sh");
    assert_eq!(deep["class"], "self_stop", "{deep}");
    for name in ["changes.txt", "env-diff.txt"] {
        let listing = trial_file(&run_dir, deep, name);
        assert!(listing.contains("# incomplete: more than 128 directory levels\n"), "{name}: {listing}");
    }
    let breaks = get("script-breaks-sh");
    assert_eq!(breaks["class"], "self_stop", "{breaks}");
    assert_eq!(breaks["verdict"]["steps"][0]["exit_code"], 127, "{breaks}");
}

#[test]
fn hard_links_to_long_links_keep_the_harness_small() {
    let out = temp_out("hardlinks");
    let tasks = out.join("tasks");
    make_roomy_task(&tasks, "count");
    // 128,000 hard links to links with a 4,000-byte target (two of them: ext4
    // allows 65,000 links to one inode), in directories 3,500 bytes deep, in
    // the artifact and in /tmp: listed in full, about 2 GB of paths and
    // targets.
    let agent = script(
        &out,
        "links.sh",
        "perl -e 'for my $top (\"/workspace/artifact/links\", \"/tmp/links\") { my $d = $top; mkdir $d or die $!; \
         for (1..14) { $d .= \"/\" . (\"n\" x 250); mkdir $d or die $! } \
         for (0, 1) { symlink(\"t\" x 4000, \"$d/l$_\") or die $! } \
         for my $i (1..128000) { link(\"$d/l\" . $i % 2, \"$d/\" . (\"h\" x 200) . $i) or die \"link $i: $!\" } }'",
    );
    let (status, run_dir, used) =
        run_measured(&out.join("runs"), &["--tasks", tasks.to_str().unwrap(), "--agent", &agent]);
    assert!(status.success());
    // 4 s here; holding or sorting the 2 GB of paths would take minutes.
    assert!(used.cpu_seconds < 60.0, "the run used {} CPU seconds", used.cpu_seconds);
    let results = results(&run_dir);
    let r = &results[0];
    assert_eq!((&r["outcome"], &r["class"]), (&Value::from("failed"), &Value::from("self_stop")), "{r}");
    assert!(trial_file(&run_dir, r, "agent.log").is_empty(), "the links were all made");
    assert!(used.max_rss_kib < 300 * 1024, "the harness peaked at {} KiB", used.max_rss_kib);
    for name in ["changes.txt", "env-diff.txt"] {
        let listing = trial_file(&run_dir, r, name);
        assert!(listing.len() < (1 << 20) + 4096, "{name}: {} bytes", listing.len());
        assert!(
            listing.contains("# incomplete: more than "),
            "{name}: {}",
            &listing[..200.min(listing.len())]
        );
    }
}

/// Substitutes that give the paper's numbers without running the artifact's
/// own tree (a cached binary; a copy of the program run in its place) pass
/// every check but the mutated ones, which the oracle passes.
#[test]
fn substitutes_fail_only_the_mutated_checks() {
    let tasks = fixtures("examples/tasks");
    for (task, substitute, unmutated_checks) in
        [("fd-anharmonic", "prebuilt-fd", 10), ("sir-network-final-size", "frozen-sir", 14)]
    {
        let out = temp_out(&format!("mutation-{task}"));
        let agent = format!("script:{}", fixtures(&format!("tests/fixtures/agents/{substitute}.sh")));
        let args = ["--tasks", &tasks, "--task", task, "--agent", &agent, "--agent", "oracle", "--jobs", "2"];
        let (output, run_dir) = run(&out, &args);
        assert!(output.status.success(), "{}", text(&output));
        let results = results(&run_dir);
        let oracle = by_agent(&results, "oracle")[0];
        assert_eq!(oracle["outcome"], "passed", "{}", trial_file(&run_dir, oracle, "verify.log"));
        let trial = by_agent(&results, &format!("script-{substitute}-sh"))[0];
        let log = trial_file(&run_dir, trial, "verify.log");
        assert_eq!(trial["outcome"], "failed", "{log}");
        let failed: Vec<&str> = log.lines().filter(|l| l.starts_with("FAIL ")).collect();
        assert!(!failed.is_empty() && failed.iter().all(|l| l.starts_with("FAIL mutated probe:")), "{log}");
        let passed = log.lines().filter(|l| l.starts_with("PASS ")).count();
        assert_eq!(passed, unmutated_checks, "every check of the paper and the probe passes: {log}");
    }
}

#[test]
fn tasks_check_refuses_a_mutation_whose_text_the_artifact_lacks() {
    let out = temp_out("mutation-lint");
    let task = out.join("fd-anharmonic");
    let copied = std::process::Command::new("cp")
        .args(["-r", &fixtures("examples/tasks/fd-anharmonic"), task.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(copied.success());
    let checks = task.join("verify/checks.toml");
    let original = std::fs::read_to_string(&checks).unwrap();
    std::fs::write(
        &checks,
        original.replace("replace = \"POTEN = 0.5D0*X*X", "replace = \"POTEN = 0.7D0*X*X"),
    )
    .unwrap();
    let output = cleanroom().args(["tasks", "check", task.to_str().unwrap(), "--no-run"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output)
        .contains("[[mutation]] 1 of checks.toml: the artifact's qwell.f holds its text 0 times"));
}

#[test]
fn a_task_that_needs_a_machine_is_skipped_by_the_sandbox_with_why() {
    let out = temp_out("machine-on-sandbox");
    let tasks = fixtures("tasks");
    let args =
        ["--tasks", &tasks, "--task", "kmod-listsort-comparisons", "--task", "cachesrv-clock-hitratio"];
    let (output, run_dir) = run(&out, &[&args[..], &["--agent", "nop", "--backend", "sandbox"]].concat());
    assert!(output.status.success(), "{}", text(&output));
    let results = results(&run_dir);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert_eq!(r["outcome"], "skipped", "{r}");
        let why = r["skip_reason"].as_str().unwrap();
        assert!(why.starts_with("machine") && why.contains("--backend vm"), "{why}");
    }
    // tasks check says so too, and holds nothing against the task.
    let kmod = format!("{tasks}/kmod-listsort-comparisons");
    let check = cleanroom().args(["tasks", "check", &kmod, "--backend", "sandbox"]).output().unwrap();
    let report = text(&check);
    assert!(check.status.success(), "{report}");
    assert!(report.contains("warning: not run on the sandbox backend: machine"), "{report}");
}

/// `image export` and `image import` carry an image to another home (the
/// ordinary user's own, as docs/rootless.md has it) with its digest, and
/// an archive whose contents do not match its recorded digest is refused.
#[test]
fn an_exported_image_imports_with_its_digest_and_a_changed_one_is_refused() {
    let out = temp_out("image-archive");
    let bin = env!("CARGO_BIN_EXE_cleanroom");
    let cleanroom = |home: &Path, args: &[&str]| {
        std::process::Command::new(bin).env("CLEANROOM_HOME", home).args(args).output().unwrap()
    };
    let archive = out.join("image.tar");
    let built = std::process::Command::new(bin).args(["image", "build"]).output().unwrap();
    assert!(built.status.success(), "{}", text(&built));
    let exported =
        std::process::Command::new(bin).args(["image", "export", "-o"]).arg(&archive).output().unwrap();
    assert!(exported.status.success(), "{}", text(&exported));

    let home = out.join("home");
    let imported = cleanroom(&home, &["image", "import", &archive.display().to_string()]);
    assert!(imported.status.success(), "{}", text(&imported));
    let line = String::from_utf8_lossy(&imported.stdout).into_owned();
    let digest = line.split_whitespace().nth(1).unwrap().to_string();
    let json: Value =
        serde_json::from_slice(&std::fs::read(home.join("images/debian-12-minimal/image.json")).unwrap())
            .unwrap();
    assert_eq!(json["digest"], digest.as_str());

    // One file of the archive changed after export.
    let unpacked = out.join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    let sh = |script: &str| {
        let ok = std::process::Command::new("sh")
            .args(["-ec", script, "sh"])
            .arg(&unpacked)
            .arg(&archive)
            .status()
            .unwrap();
        assert!(ok.success(), "{script}");
    };
    sh("tar -C \"$1\" -xf \"$2\" && chmod u+w \"$1/rootfs/etc\" && echo planted >>\"$1/rootfs/etc/hostname\" && tar -C \"$1\" -cf \"$2.changed\" image.json rootfs");
    let changed = out.join("image.tar.changed");
    let other = out.join("other-home");
    let refused = cleanroom(&other, &["image", "import", &changed.display().to_string()]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("damaged or changed"), "{}", text(&refused));
    assert!(!other.join("images/debian-12-minimal").exists(), "a refused image was installed");
    let _ = std::process::Command::new("rm").arg("-rf").arg(&out).status();
}
