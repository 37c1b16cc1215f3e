//! `cleanroom report` on a real run: the nop agent, twice, on the fast
//! adversarial target task with a title that tries to inject a script.
//! Needs root (the sandbox), like the other CLI tests.

#[path = "../../cleanroom-report/tests/support/xml.rs"]
mod xml;

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

const EVIL_TITLE: &str = "station-stats <script>alert(1)</script> & co";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The adversarial target task under a new name, with an evil title.
fn make_task(root: &Path) -> PathBuf {
    let tasks = root.join("tasks");
    let dir = tasks.join("evil-title");
    copy_dir(&repo().join("tests/fixtures/tasks-adversarial/target"), &dir);
    let toml = std::fs::read_to_string(dir.join("task.toml")).unwrap();
    let start = toml.find("title = ").unwrap();
    let end = start + toml[start..].find('\n').unwrap();
    let toml = format!("{}title = {:?}{}", &toml[..start], EVIL_TITLE, &toml[end..]);
    std::fs::write(dir.join("task.toml"), toml).unwrap();
    tasks
}

fn report(runs: &Path, args: &[&str]) -> Output {
    cleanroom().arg("report").arg("--runs-dir").arg(runs).args(args).output().unwrap()
}

/// What scripts/junit-check.sh says of a JUnit file: valid against Jenkins
/// xunit's junit-10.xsd, read alike by junitparser and xunitparser.
fn junit_check(file: &Path) -> String {
    let out = Command::new("bash").arg(repo().join("scripts/junit-check.sh")).arg(file).output().unwrap();
    assert!(out.status.success(), "CI readers reject {}:\n{}", file.display(), text(&out));
    text(&out)
}

#[test]
fn report_on_a_nop_run_in_every_format() {
    let root = std::env::temp_dir().join(format!("cleanroom-cli-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let tasks = make_task(&root);
    let runs = root.join("runs");
    let out = cleanroom()
        .args(["run", "--agent", "nop", "--trials", "2", "--jobs", "2", "--tasks"])
        .arg(&tasks)
        .arg("--out")
        .arg(&runs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let run_dir = std::fs::read_dir(&runs).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    let run_id = run_dir.file_name().unwrap().to_str().unwrap().to_string();

    // Markdown on standard output, by run id: DeployBench's table.
    let out = report(&runs, &[&run_id]);
    assert!(out.status.success(), "{}", text(&out));
    let md = String::from_utf8(out.stdout).unwrap();
    let table: Vec<&str> = md
        .split("## Pass rate")
        .nth(1)
        .unwrap()
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    // Wilson 0/2: centre (0 + 3.84146/4)/(1 + 3.84146/2) = .32881 = half-width -> [0, 65.8].
    assert_eq!(
        table,
        [
            "| by domain | nop |",
            "|---|---:|",
            "| **Overall** | 0/2 (0.0%) [0.0–65.8] |",
            "| scientific (1 task) | 0/2 (0.0%) [0.0–65.8] |",
            "| infra_error (outside n) | 0 |",
            "| skipped (outside n) | 0 |",
        ],
        "{md}"
    );
    assert!(md.contains("| evil-title | scientific | ✗✗ 0/2 |"), "{md}");
    assert!(md.contains("| self_stop | 2 (100%) | 2 (100%) |"), "{md}");
    assert!(!md.chars().any(|c| c.is_control() && c != '\n'), "no escape sequence reaches the terminal");

    // HTML into a file, by run directory: escaped, self-contained, well formed.
    let html_path = root.join("report.html");
    let out =
        report(&runs, &[run_dir.to_str().unwrap(), "--format", "html", "--out", html_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(!html.contains("<script"), "the title's script is escaped");
    assert!(html.contains("station-stats &lt;script&gt;alert(1)&lt;/script&gt; &amp; co"));
    let names = xml::check_xml(&html).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(names.iter().filter(|n| *n == "svg").count(), 3);

    // JUnit: valid XML, one suite, a failed testcase per trial, as CI
    // servers read it.
    let junit_path = root.join("report.xml");
    let out = report(&runs, &[&run_id, "--format", "junit", "--out", junit_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let junit = std::fs::read_to_string(&junit_path).unwrap();
    let names = xml::check_xml(&junit).unwrap_or_else(|e| panic!("{e}\n{junit}"));
    assert_eq!(names.iter().filter(|n| *n == "testsuite").count(), 1);
    assert_eq!(names.iter().filter(|n| *n == "testcase").count(), 2);
    assert_eq!(names.iter().filter(|n| *n == "failure").count(), 2);
    assert!(junit.contains("<testcase name=\"evil-title #1\" classname=\"nop\""), "{junit}");
    assert!(
        junit_check(&junit_path).contains("1 suites, 2 tests, 2 failures, 0 errors, 0 skipped"),
        "{junit}"
    );

    // JSON and CSV with the task's metadata beside each trial.
    let out = report(&runs, &[&run_id, "--format", "json", "--by", "language"]);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["trials"].as_array().unwrap().len(), 2);
    assert_eq!(v["trials"][0]["title"], EVIL_TITLE);
    assert_eq!(v["trials"][0]["main_language"], "shell");
    assert_eq!(v["summary"]["slices"][0]["label"], "shell");
    let out = report(&runs, &[&run_id, "--format", "csv"]);
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("run_id,task,agent,"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");

    // Without its tasks the report slices by the metadata run.toml kept.
    std::fs::remove_dir_all(&tasks).unwrap();
    let out = report(&runs, &[&run_id]);
    assert!(out.status.success(), "{}", text(&out));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("| scientific"), "{md}");
    // A run made before run.toml kept it goes on without slices, and says why.
    let run_toml = run_dir.join("run.toml");
    let config = std::fs::read_to_string(&run_toml).unwrap();
    let older = &config[..config.find("[task_info").expect("run.toml keeps the task's metadata")];
    std::fs::write(&run_toml, older).unwrap();
    let out = report(&runs, &[&run_id]);
    assert!(out.status.success(), "{}", text(&out));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("> Note: task metadata could not be loaded"), "{md}");
    assert!(!md.contains("| scientific"), "{md}");

    // A run that is not there is bad input.
    let out = report(&runs, &["no-such-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no-such-run: not a run directory"), "{}", text(&out));

    let _ = std::fs::remove_dir_all(&root);
}

/// `cleanroom run ARGS --out OUT`, which must succeed: the run's directory.
fn run_into(out: &Path, args: &[&str]) -> PathBuf {
    let done = cleanroom().arg("run").args(args).arg("--out").arg(out).output().unwrap();
    assert!(done.status.success(), "{}", text(&done));
    std::fs::read_dir(out).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap()
}

/// Every kind of testcase in one JUnit file, from real runs: a pass (the
/// oracle), a failure (nop), an agent error (a script that kills itself),
/// skipped trials (a task that needs a machine of its own, on the sandbox
/// backend) and an infra error (an ssh pool whose provisioner never makes a
/// host).
#[test]
fn junit_with_every_outcome_is_read_by_ci_servers() {
    let root = std::env::temp_dir().join(format!("cleanroom-cli-report-junit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let tasks = make_task(&root);
    let with_machine = root.join("with-machine");
    copy_dir(&tasks, &with_machine);
    copy_dir(&tasks.join("evil-title"), &with_machine.join("needs-a-machine"));
    let toml = with_machine.join("needs-a-machine/task.toml");
    std::fs::write(
        &toml,
        std::fs::read_to_string(&toml).unwrap().replace("[environment]\n", "[environment]\nmachine = true\n"),
    )
    .unwrap();
    let crash = root.join("crash.sh");
    std::fs::write(&crash, "#!/bin/bash\nkill -9 $$\n").unwrap();
    let crash = format!("script:{}", crash.display());
    let hosts = root.join("hosts.toml");
    std::fs::write(&hosts, "[[ssh.pools]]\nname = \"none\"\ncreate = \"true\"\ndestroy = \"true\"\n")
        .unwrap();
    let local = run_into(
        &root.join("local"),
        &[
            "--agent",
            "oracle",
            "--agent",
            "nop",
            "--agent",
            &crash,
            "--jobs",
            "2",
            "--tasks",
            with_machine.to_str().unwrap(),
        ],
    );
    let ssh = run_into(
        &root.join("ssh"),
        &[
            "--agent",
            "nop",
            "--backend",
            "ssh",
            "--config",
            hosts.to_str().unwrap(),
            "--retries",
            "0",
            "--tasks",
            tasks.to_str().unwrap(),
        ],
    );

    let junit_path = root.join("report.xml");
    let out = report(
        &root,
        &[
            local.to_str().unwrap(),
            ssh.to_str().unwrap(),
            "--format",
            "junit",
            "--out",
            junit_path.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let junit = std::fs::read_to_string(&junit_path).unwrap();
    for element in [
        "<failure type=\"self_stop\"",
        "<error type=\"agent_error\"",
        "<error type=\"infra_error\"",
        "<skipped message=\"machine:",
    ] {
        assert!(junit.contains(element), "{element} in {junit}");
    }
    let said = junit_check(&junit_path);
    assert!(said.contains("4 suites, 7 tests, 1 failures, 2 errors, 3 skipped"), "{said}\n{junit}");

    // The check can fail: junit-10.xsd has no `skipped` on <testsuites>.
    let rejected = root.join("rejected.xml");
    std::fs::write(
        &rejected,
        "<testsuites tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\">\n  \
         <testsuite name=\"a\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\">\n    \
         <testcase name=\"t\"><skipped/></testcase>\n  </testsuite>\n</testsuites>\n",
    )
    .unwrap();
    let out =
        Command::new("bash").arg(repo().join("scripts/junit-check.sh")).arg(&rejected).output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("/testsuites: 'skipped' attribute not allowed"), "{}", text(&out));

    let _ = std::fs::remove_dir_all(&root);
}
