//! What makes a task pass only a real deployment, on real sandboxes:
//! `tasks check`'s substitution battery (shortcuts that skip the deployment
//! must fail), negative controls (tasks no correct deployment passes, whose
//! passes are flagged and counted in no rate), and access checks (evidence
//! from outside that a step used the artifact's own files). Needs root,
//! like the other CLI tests.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// A task whose deployment is `/opt/deployed` and whose experiment counts
/// the lines of data/input.txt (three) into results/n.txt; the verifier
/// reruns it and expects `expected` lines. `extra` is appended to task.toml.
fn make_task(root: &Path, id: &str, expected: u32, extra: &str) -> PathBuf {
    let dir = root.join(id);
    for sub in ["artifact/data", "solution", "verify", "substitutes"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let toml = format!(
        "schema_version = 1\n[task]\ntitle = \"count lines\"\ndomain = \"systems\"\n\
         [environment]\ndisk_mb = 256\n[agent]\ntimeout_sec = 120\n\
         [experiment]\ncommand = \"bash count.sh\"\noutputs = [\"results/n.txt\"]\n\
         [verify]\nprotected = [\"data/**\"]\n{extra}"
    );
    std::fs::write(dir.join("task.toml"), toml).unwrap();
    std::fs::write(dir.join("instruction.md"), "Deploy the line counter and run `bash count.sh`.\n").unwrap();
    std::fs::write(dir.join("artifact/data/input.txt"), "a\nb\nc\n").unwrap();
    std::fs::write(
        dir.join("artifact/count.sh"),
        "test -f /opt/deployed || exit 1\nmkdir -p results\nwc -l < data/input.txt > results/n.txt\ncat results/n.txt\n",
    )
    .unwrap();
    std::fs::write(dir.join("solution/setup.sh"), "touch /opt/deployed\n").unwrap();
    let checks = format!(
        "[[step]]\nname = \"count\"\nrun = \"bash count.sh && cp results/n.txt $CLEANROOM_OUT/n.txt\"\n\
         clean = [\"results/**\"]\n\n\
         [[check]]\nname = \"lines\"\nfile = \"n.txt\"\nregex = '(\\d+)'\nexpect = {expected}\n"
    );
    std::fs::write(dir.join("verify/checks.toml"), checks).unwrap();
    dir
}

/// `cleanroom tasks check --jobs 2` of `tasks`, its trials kept under `out`.
fn check(tasks: &Path, out: &Path) -> std::process::Output {
    cleanroom().args(["tasks", "check", "--jobs", "2", "--out"]).arg(out).arg(tasks).output().unwrap()
}

/// `cleanroom run` of the oracle and the script `agent` on `tasks`, which
/// must succeed; its output and its run directory.
fn run_oracle_and(tasks: &Path, agent: &Path, runs: &Path) -> (std::process::Output, PathBuf) {
    let output = cleanroom()
        .args(["run", "--tasks", tasks.to_str().unwrap(), "--agent", "oracle", "--agent"])
        .arg(format!("script:{}", agent.display()))
        .args(["--jobs", "2", "--out"])
        .arg(runs)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let run_dir = std::fs::read_dir(runs).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    (output, run_dir)
}

fn row<'a>(report: &'a str, task: &str) -> &'a str {
    report.lines().find(|l| l.starts_with(task)).unwrap_or_else(|| panic!("no row for {task}: {report}"))
}

/// A shortcut that a task's verifier accepts is an error of `tasks check`
/// that names it; the shortcuts it refuses are not. Here: a Debian package
/// (`bc`, which deploys nothing: refused), the task's own shortcut script
/// (accepted by the weak verifier), and the replay of the experiment's
/// output through a stand-in count.sh (accepted while count.sh is not
/// protected: nothing else tells the stand-in from the real one).
#[test]
fn tasks_check_runs_the_substitution_battery_and_names_what_passes() {
    let out = temp_out("battery");
    let extra = "[substitutes]\ndebian = [\"bc\"]\nagents = [\"substitutes/touch.sh\"]\n";
    let task = make_task(&out, "weak", 3, extra);
    std::fs::write(task.join("substitutes/touch.sh"), "touch /opt/deployed\n").unwrap();
    let output = check(&task, &out.join("checks"));
    let report = text(&output);
    assert_eq!(output.status.code(), Some(2), "{report}");
    assert!(row(&report, "weak").contains("1/3 failed"), "{report}");
    let errors: Vec<&str> = report.lines().filter(|l| l.contains(": error: ")).collect();
    let passes = |label: &str| {
        format!("  weak: error: substitute `{label}` passes: the verifier rewards a shortcut that does not deploy the artifact")
    };
    assert_eq!(errors, [passes("agent:substitutes/touch.sh"), passes("replay")], "{report}");

    // The same battery with the entry point protected and the shortcut
    // gone: every substitute fails and the task is fit.
    let extra = "[substitutes]\ndebian = [\"bc\"]\n";
    let task = make_task(&out, "fit", 3, extra);
    let toml = std::fs::read_to_string(task.join("task.toml")).unwrap();
    std::fs::write(task.join("task.toml"), toml.replace("[\"data/**\"]", "[\"data/**\", \"count.sh\"]"))
        .unwrap();
    let output = check(&task, &out.join("checks"));
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    assert!(row(&report, "fit").contains("2/2 failed"), "{report}");
    // A command that names no file of the artifact leaves the replay
    // nothing to swap: no replay, and a warning that says what to do.
    let unnamed = make_task(&out, "unnamed", 3, "");
    let toml = std::fs::read_to_string(unnamed.join("task.toml")).unwrap();
    std::fs::write(unnamed.join("task.toml"), toml.replace("bash count.sh", "make run")).unwrap();
    let output = cleanroom().args(["tasks", "check", "--no-run"]).arg(&unnamed).output().unwrap();
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains(
            "unnamed: warning: substitute `replay` not run: the experiment's command names no file"
        ),
        "{report}"
    );
    let skipped = cleanroom()
        .args(["tasks", "check", "--no-substitutes", "--out"])
        .arg(out.join("checks"))
        .arg(&task)
        .output()
        .unwrap();
    assert!(skipped.status.success() && row(&text(&skipped), "fit").contains(" - "), "{}", text(&skipped));
}

/// A negative control (the verifier expects four lines of a three-line
/// file): its oracle fails and that is what `tasks check` wants; an agent
/// that forges the output passes it, and every record and report flags the
/// pass and leaves it out of the rates.
#[test]
fn a_negative_control_fails_its_oracle_and_a_forged_pass_is_flagged_and_not_counted() {
    let out = temp_out("negative-control");
    let tasks = out.join("tasks");
    let extra = "[negative_control]\nreason = \"the paper says four lines; the data has three\"\n\
                 [substitutes]\nreplay = false\n";
    make_task(&tasks, "control", 4, extra);
    make_task(&tasks, "honest", 3, "[substitutes]\nreplay = false\n");
    let checked = check(&tasks, &out.join("checks"));
    assert!(checked.status.success(), "{}", text(&checked));
    assert!(row(&text(&checked), "control").starts_with("control  failed (self_stop)"), "{}", text(&checked));

    let forger = out.join("forger.sh");
    std::fs::write(
        &forger,
        "touch /opt/deployed\ncat > /workspace/artifact/count.sh <<'EOF'\nmkdir -p results; echo 4 > results/n.txt\nEOF\n",
    )
    .unwrap();
    let runs = out.join("runs");
    let (output, run_dir) = run_oracle_and(&tasks, &forger, &runs);
    let printed = text(&output);
    assert!(printed.contains("SUSPECT control  script-forger-sh #1  passed a negative control"), "{printed}");
    assert!(printed.contains("SUSPECT control script-forger-sh #1: passed a negative control"), "{printed}");
    let read =
        |rel: &str| -> Value { serde_json::from_slice(&std::fs::read(run_dir.join(rel)).unwrap()).unwrap() };
    let forged = read("trials/control/script-forger-sh/1/result.json");
    assert_eq!(
        (forged["outcome"].as_str(), forged["negative_control"].as_bool()),
        (Some("passed"), Some(true))
    );
    let honest = read("trials/honest/oracle/1/result.json");
    assert!(honest.get("negative_control").is_none(), "written only when true: {honest}");
    let summary = read("summary.json");
    assert_eq!(summary["suspected"], serde_json::json!(["control script-forger-sh #1"]));
    // The forger's only other trial (honest) failed: its rate is 0 of 1, not
    // 1 of 2; the oracle's is 1 of 1.
    let agents = summary["agents"].as_array().unwrap();
    let rate = |id: &str| agents.iter().find(|a| a["agent_id"] == id).unwrap()["pass_rate"].clone();
    assert_eq!((rate("oracle"), rate("script-forger-sh")), (serde_json::json!(1.0), serde_json::json!(0.0)));

    let report =
        cleanroom().args(["report", "--runs-dir"]).arg(&runs).args(["--format", "md"]).output().unwrap();
    let markdown = text(&report);
    assert!(report.status.success(), "{markdown}");
    assert!(
        markdown.contains("**Suspected:** control script-forger-sh \\#1 passed a negative control"),
        "{markdown}"
    );
}

/// Access checks: the harness sees from outside which of the artifact's
/// files a step executed and opened. The oracle's run of bin/count (a
/// script run through its #! line) reading data/input.txt passes both; a
/// stand-in that prints the right count without reading the data passes
/// every other check and fails the `opened` one; neither is tampered.
#[test]
fn access_checks_see_which_files_of_the_artifact_a_step_used() {
    let out = temp_out("access");
    let tasks = out.join("tasks");
    let task = make_task(&tasks, "counted", 3, "[substitutes]\nreplay = false\n");
    std::fs::create_dir_all(task.join("artifact/bin")).unwrap();
    let count = task.join("artifact/bin/count");
    std::fs::write(&count, "#!/bin/bash\nwc -l < \"$1\"\n").unwrap();
    std::process::Command::new("chmod").arg("755").arg(&count).status().unwrap();
    std::fs::write(
        task.join("artifact/count.sh"),
        "test -f /opt/deployed || exit 1\nmkdir -p results\n./bin/count data/input.txt > results/n.txt\ncat results/n.txt\n",
    )
    .unwrap();
    let checks = std::fs::read_to_string(task.join("verify/checks.toml")).unwrap()
        + "\n[[check]]\nname = \"the tree's counter ran\"\nexecuted = \"bin/*\"\nstep = \"count\"\n\n\
           [[check]]\nname = \"it read the data\"\nopened = \"data/input.txt\"\nstep = \"count\"\n";
    std::fs::write(task.join("verify/checks.toml"), checks).unwrap();
    let standin = out.join("standin.sh");
    std::fs::write(
        &standin,
        "touch /opt/deployed\nprintf '#!/bin/bash\\necho 3\\n' > /workspace/artifact/bin/count\n",
    )
    .unwrap();
    let (_, run_dir) = run_oracle_and(&tasks, &standin, &out.join("runs"));
    let checks_of = |agent: &str| -> Vec<(String, bool, String)> {
        let path = run_dir.join(format!("trials/counted/{agent}/1/result.json"));
        let r: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(r["tampered"], serde_json::json!([]), "{r}");
        r["verdict"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["passed"].as_bool().unwrap(),
                    c["observed"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let oracle = checks_of("oracle");
    assert_eq!(
        oracle[1],
        ("the tree's counter ran".into(), true, "executed: bin/count".into()),
        "{oracle:?}"
    );
    assert_eq!(oracle[2], ("it read the data".into(), true, "opened: data/input.txt".into()), "{oracle:?}");
    let standin = checks_of("script-standin-sh");
    assert!(standin[0].1 && standin[1].1, "the count and the execution pass: {standin:?}");
    assert_eq!(
        standin[2],
        ("it read the data".into(), false, "none of the 1 matching files of the artifact was opened".into()),
        "{standin:?}"
    );
}
