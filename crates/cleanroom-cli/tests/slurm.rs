//! The Slurm executor against a real Slurm: the cluster of
//! `scripts/slurm-local.sh start` (slurmctld and two slurmd on this
//! machine, from Debian's packages; CI's .ci/run starts it). Each test
//! runs a whole `cleanroom run --executor slurm` and reads what it left,
//! as a user would.
//! They submit as the ordinary user `cleanroom-test`, whose trials run in
//! the rootless sandbox on the nodes; the examples are run by root too.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The cluster is up, or the test says how to start it. Its tests run one at
/// a time (the slurm-cluster group of .config/nextest.toml).
fn cluster_is_up() {
    let sinfo = Command::new("sinfo").args(["-h", "-o", "%T"]).output();
    let states = sinfo.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    assert!(
        states.lines().any(|s| s.trim() == "idle"),
        "no idle Slurm node ({states:?}): start the local cluster (scripts/slurm-local.sh start)"
    );
}

/// An agent that waits long enough for a test to act during its phase.
fn slow_agent(dir: &Path) -> String {
    let path = dir.join("slow.sh");
    std::fs::write(&path, "#!/bin/bash\nsleep 40\n").unwrap();
    format!("script:{}", path.display())
}

/// Who submits a test's run: root, or the ordinary user the tests run
/// as (its trials then run in the rootless sandbox on the nodes, and need
/// --allow-unlimited; the user reads copies of the binary and tasks).
#[derive(Clone, Copy)]
struct Submitter(Option<&'static TestUser>);

const ROOT: Submitter = Submitter(None);

/// The adversarial fixtures, whose `target` task deploys by writing one file.
const TARGET_TASKS: &str = "tests/fixtures/tasks-adversarial";

fn ordinary_user() -> Submitter {
    Submitter(Some(test_user()))
}

impl Submitter {
    fn cleanroom(self) -> Command {
        self.0.map_or_else(cleanroom, TestUser::cleanroom)
    }

    fn out(self, name: &str) -> PathBuf {
        self.0.map_or_else(|| temp_out(name), |user| user.out_dir(name))
    }

    /// `cleanroom run --executor slurm` of the adversarial fixtures' target,
    /// a task without installs: what a test of the executor runs.
    fn run(self, out: &Path, args: &[&str]) -> Child {
        self.run_tasks(TARGET_TASKS, out, args)
    }

    /// `cleanroom run --executor slurm` of the tasks in `tasks` (a
    /// directory of the repository).
    fn run_tasks(self, tasks: &str, out: &Path, args: &[&str]) -> Child {
        let tasks = match self.0 {
            Some(user) => user.copy_in(&repo().join(tasks)).display().to_string(),
            None => fixtures(tasks),
        };
        let mut cmd = self.cleanroom();
        cmd.args(["run", "--executor", "slurm", "--tasks", &tasks, "--jobs", "2"]).args(args);
        if self.0.is_some() {
            cmd.arg("--allow-unlimited");
        }
        cmd.arg("--out").arg(out).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    }
}

fn run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(out).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    assert_eq!(dirs.len(), 1, "one run directory expected in {}", out.display());
    dirs[0].clone()
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// Waits until `path` exists, at most `limit`: what the run reports as it
/// goes, polled as `cleanroom run` itself polls it.
fn wait_for(path: impl Fn() -> Option<PathBuf>, limit: Duration, what: &str) -> PathBuf {
    let began = Instant::now();
    loop {
        if let Some(found) = path() {
            return found;
        }
        assert!(began.elapsed() < limit, "{what} did not happen within {}s", limit.as_secs());
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The report of the slow agent's first attempt, once it is in its phase.
fn slow_agent_in_its_phase(out: &Path) -> PathBuf {
    wait_for(
        || {
            let run = std::fs::read_dir(out).ok()?.flatten().map(|e| e.path()).find(|p| p.is_dir())?;
            let phase = run.join("slurm/attempts/target").read_dir().ok()?.flatten().find_map(|agent| {
                let phase = agent.path().join("1/1/phase");
                let slow = agent.file_name().to_string_lossy().starts_with("script-slow");
                (slow && std::fs::read_to_string(&phase).ok()? == "agent").then_some(phase)
            })?;
            Some(phase)
        },
        Duration::from_secs(300),
        "the slow agent's phase",
    )
}

/// The node that element `index` of `job` runs on.
fn node_of(job: &str, index: usize) -> String {
    let out =
        Command::new("squeue").args(["-h", "-o", "%N", "-j", &format!("{job}_{index}")]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every job this run submitted: (job id, its list's agent ids).
fn submitted(run: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(run.join("slurm/jobs.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let agents = v["list"].as_array().unwrap().iter().map(|e| e["agent_id"].as_str().unwrap().into());
            (v["job"].as_str().unwrap().to_string(), agents.collect())
        })
        .collect()
}

fn slurm_local(args: &[&str]) {
    let status = Command::new("bash").arg(repo().join("scripts/slurm-local.sh")).args(args).status().unwrap();
    assert!(status.success(), "slurm-local.sh {args:?}");
}

/// Brings a killed node back, whatever the test's end.
struct Revive(String);

impl Drop for Revive {
    fn drop(&mut self) {
        slurm_local(&["restart-node", &self.0]);
    }
}

/// The examples through Slurm give what they give locally (every oracle
/// trial passes, no nop trial does), and every record names its job and
/// node. An ordinary user's run (the rootless sandbox on the nodes) gives
/// the same of the adversarial fixtures' target, a task without installs:
/// what differs for the user is the sandbox, not the deployments.
#[test]
fn the_examples_through_slurm_pass_as_locally_on_named_nodes() {
    cluster_is_up();
    let examples: &[&str] = &["fd-anharmonic", "rff-ridge", "sir-network-final-size"];
    for (submitter, dir, tasks) in
        [(ROOT, "examples/tasks", examples), (ordinary_user(), TARGET_TASKS, &["target"])]
    {
        let out = submitter.out("slurm-examples");
        let output = submitter
            .run_tasks(dir, &out, &["--agent", "oracle", "--agent", "nop"])
            .wait_with_output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output));
        let run = run_dir(&out);
        let mut outcomes = Vec::new();
        for task in tasks {
            for agent in ["oracle", "nop"] {
                let record = json(&run.join(format!("trials/{task}/{agent}/1/result.json")));
                let executor = &record["executor"];
                assert_eq!(executor["name"], "slurm", "{record}");
                assert!(executor["node"].as_str().unwrap().starts_with("crnode"), "{record}");
                assert!(executor["job_id"].as_str().unwrap().contains('_'), "{record}");
                let sandbox = if submitter.0.is_some() { "unenforced" } else { "enforced" };
                assert_eq!(record["limits"]["memory"], sandbox, "rootless only for the user: {record}");
                outcomes.push(format!("{task} {agent} {}", record["outcome"].as_str().unwrap()));
            }
        }
        let expected: Vec<String> =
            tasks.iter().flat_map(|t| [format!("{t} oracle passed"), format!("{t} nop failed")]).collect();
        assert_eq!(outcomes, expected);
        let config = std::fs::read_to_string(run.join("run.toml")).unwrap();
        assert!(config.contains("debian-12-minimal = \"sha256:"), "the image's digest is recorded: {config}");
        // The nodes' reports were taken up and removed; the run directory
        // has one writer.
        let left = files_under(&run.join("slurm/attempts"));
        assert!(left.is_empty(), "reports left: {left:?}");
    }
}

/// A node that dies in the middle of a trial: that attempt is an
/// infra_error naming the node, the trial runs again on another node, and
/// it ends with exactly one result.
#[test]
fn a_node_that_dies_mid_trial_is_retried_elsewhere() {
    cluster_is_up();
    let out = ordinary_user().out("slurm-node-dies");
    let slow = slow_agent(&out);
    let run = ordinary_user().run(&out, &["--task", "target", "--agent", &slow, "--agent", "oracle"]);
    slow_agent_in_its_phase(&out);
    let dir = run_dir(&out);
    let (job, agents) = submitted(&dir).remove(0);
    let index = agents.iter().position(|a| a.starts_with("script-slow")).unwrap();
    let node = node_of(&job, index);
    assert!(node.starts_with("crnode"), "{node:?}");
    let _revive = Revive(node.clone());
    slurm_local(&["kill-node", &node]);
    let output = run.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let trial = dir.join("trials/target").join(&agents[index]).join("1");
    let lost = json(&trial.join("attempt-1.json"));
    assert_eq!(lost["outcome"], "infra_error", "{lost}");
    assert!(lost["error"].as_str().unwrap().contains("NODE_FAIL"), "{lost}");
    assert_eq!(lost["executor"]["node"], node.as_str(), "{lost}");
    let result = json(&trial.join("result.json"));
    assert_eq!(
        (result["attempt"].as_u64(), result["outcome"].as_str()),
        (Some(2), Some("failed")),
        "{result}"
    );
    assert_ne!(result["executor"]["node"], node.as_str(), "the retry ran on a live node: {result}");
    let results = files_under(&dir.join("trials")).into_iter().filter(|p| p.ends_with("result.json")).count();
    assert_eq!(results, 2, "one result per trial");
}

/// The submitting command killed: the jobs go on, and `--resume` takes up
/// what they reported and waits for the rest, submitting nothing again.
#[test]
fn a_killed_submitter_is_resumed_without_submitting_again() {
    cluster_is_up();
    let user = ordinary_user();
    let out = user.out("slurm-resume");
    let slow = slow_agent(&out);
    let mut run = user.run(&out, &["--task", "target", "--agent", &slow, "--agent", "nop"]);
    slow_agent_in_its_phase(&out);
    run.kill().unwrap();
    run.wait().unwrap();
    let dir = run_dir(&out);
    let before = submitted(&dir);
    let slow_id = before[0].1.iter().find(|a| a.starts_with("script-slow")).unwrap().clone();
    // Meanwhile `cleanroom status` tells what runs where, and that nothing
    // is attached.
    let status = user.cleanroom().arg("status").arg(&dir).output().unwrap();
    let said = text(&status);
    assert!(status.status.success(), "{said}");
    assert!(said.contains("of 2 trial(s) have a result"), "{said}");
    assert!(said.contains(&format!("  target {slow_id} #1 attempt 1: agent")), "{said}");
    assert!(said.contains("no cleanroom run is attached: finish it with `cleanroom run --resume"), "{said}");
    let output = user.cleanroom().arg("run").arg("--resume").arg(&dir).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(submitted(&dir), before, "the resumed run submitted again");
    let status = user.cleanroom().arg("status").arg(&dir).output().unwrap();
    let said = text(&status);
    assert!(
        said.contains("2 of 2 trial(s) have a result (failed 2)") && !said.contains("attached"),
        "{said}"
    );
    for agent in ["nop", &slow_id] {
        let result = json(&dir.join(format!("trials/target/{agent}/1/result.json")));
        assert_eq!(
            (result["attempt"].as_u64(), result["outcome"].as_str()),
            (Some(1), Some("failed")),
            "{result}"
        );
    }
}

/// Ctrl-C ends the run's jobs with it.
#[test]
fn an_interrupted_run_cancels_its_jobs() {
    cluster_is_up();
    let out = ordinary_user().out("slurm-interrupt");
    let slow = slow_agent(&out);
    let run = ordinary_user().run(&out, &["--task", "target", "--agent", &slow]);
    slow_agent_in_its_phase(&out);
    let dir = run_dir(&out);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let output = run.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let (job, _) = submitted(&dir).remove(0);
    wait_for(
        || {
            let state =
                Command::new("squeue").args(["-h", "--states=all", "-o", "%T", "-j", &job]).output().ok()?;
            let state = String::from_utf8_lossy(&state.stdout).trim().to_string();
            (state.is_empty() || state == "CANCELLED").then(|| PathBuf::from(state))
        },
        Duration::from_secs(60),
        "the job's cancellation",
    );
}

/// Slurm's options belong to the Slurm executor: given alone they are bad
/// input, before anything runs.
#[test]
fn slurm_options_without_the_slurm_executor_are_refused() {
    let out = temp_out("slurm-refused");
    let output = cleanroom()
        .args([
            "run",
            "--tasks",
            &fixtures("examples/tasks"),
            "--agent",
            "nop",
            "--partition",
            "gpu",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("--partition is an option of --executor slurm"), "{}", text(&output));
    assert!(std::fs::read_dir(&out).unwrap().next().is_none(), "nothing was made");
}
