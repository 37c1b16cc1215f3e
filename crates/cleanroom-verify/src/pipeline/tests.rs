//! The step logic against the fake backend: the environment's root is a
//! real temporary directory, and the clock only moves when a step "runs"
//! (by what the script says it took).

use std::sync::{Arc, Mutex};

use cleanroom_env::fake::{Call, FakeBackend, Reply};
use cleanroom_env::{Backend, EnvSpec};

use super::*;
use crate::task::{Check, Comparison, Selector, Stage, Step};

/// The fake clock: what the commands so far took.
impl Clock for FakeBackend {
    fn now(&self) -> Duration {
        self.elapsed()
    }
}

fn exited(code: i32, seconds: u64, stdout: &str) -> Reply {
    Reply::exit(code).after(Duration::from_secs(seconds)).stdout(stdout)
}

/// A login environment as a deployment may leave it: a venv on PATH, a
/// variable of its own, and hooks that must not reach a step.
fn deployed_login_env() -> Vec<u8> {
    let vars = [
        "PATH=/opt/venv/bin:/usr/bin:/bin",
        "HOME=/root",
        "MARK=kept",
        "BASH_FUNC_python3%%=() {  echo forged; }",
        "BASH_ENV=/etc/hook.sh",
        "LD_PRELOAD=/tmp/hook.so",
        "CLEANROOM_OUT=/forged",
    ];
    let mut out = b"motd from a profile hook\n".to_vec();
    out.extend_from_slice(crate::login_env::MARKER);
    for v in vars {
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

fn is_login_shell(req: &ExecRequest) -> bool {
    req.argv.last().is_some_and(|a| a == crate::login_env::SCRIPT)
}

/// A task directory, and a fake environment with an artifact.
struct Fixture {
    _task: tempfile::TempDir,
    _home: tempfile::TempDir,
    verify_dir: PathBuf,
    backend: FakeBackend,
    env: Box<dyn Environment>,
    /// What the login shell prints (see crate::login_env::SCRIPT).
    login_env: Arc<Mutex<Vec<u8>>>,
    protected: Vec<String>,
    /// What the last run kept of `$CLEANROOM_OUT`.
    outputs: crate::Outputs,
}

const DEST: &str = "/workspace/artifact";

/// `steps` answers every command but the login shell, which prints
/// `Fixture::login_env`.
fn fixture(
    steps: impl Fn(&ExecRequest, &Path) -> Result<Reply, EnvError> + Send + Sync + 'static,
) -> Fixture {
    let task = tempfile::tempdir().unwrap();
    let verify_dir = task.path().join("verify");
    std::fs::create_dir_all(verify_dir.join("data")).unwrap();
    std::fs::write(verify_dir.join("checks.toml"), "[[check]]\nexpect = 42\n").unwrap();
    std::fs::write(verify_dir.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(verify_dir.join("data/ref.txt"), "ref").unwrap();
    let login_env = Arc::new(Mutex::new(b"no marker: the login shell printed nothing useful".to_vec()));
    let printed = login_env.clone();
    let home = tempfile::tempdir().unwrap();
    let backend = FakeBackend::new(home.path(), move |req, root| {
        if is_login_shell(req) {
            return Ok(Reply::exit(0).stdout(printed.lock().unwrap().clone()));
        }
        steps(req, root)
    });
    let spec = EnvSpec {
        image: "debian-12-minimal".into(),
        cpus: 1,
        memory_mb: 512,
        disk_mb: 512,
        pids_max: 64,
        gpus: 0,
        gpu_driver: Default::default(),
        allow_unlimited: false,
        build: None,
    };
    let env = backend.create(&spec).unwrap();
    let root = backend.root_of(env.id());
    std::fs::create_dir_all(root.join("workspace/artifact/results")).unwrap();
    std::fs::write(root.join("workspace/artifact/results/old.csv"), "stale").unwrap();
    std::fs::write(root.join("workspace/artifact/main.py"), "print()").unwrap();
    Fixture {
        _task: task,
        _home: home,
        verify_dir,
        backend,
        env,
        login_env,
        protected: Vec::new(),
        outputs: Default::default(),
    }
}

fn step(name: &str, stage: Stage, run: &str) -> Step {
    Step { name: name.into(), stage, run: run.into(), timeout_sec: None, clean: Vec::new(), mutated: false }
}

fn check(name: &str, file: CheckFile, select: Option<Selector>, compare: Comparison) -> Check {
    Check { name: name.into(), file, select, compare }
}

fn var<'r>(req: &'r ExecRequest, name: &str) -> &'r str {
    &req.env.iter().find(|(k, _)| k == name).unwrap_or_else(|| panic!("no {name}")).1
}

/// The host path of a path inside the environment.
fn host(root: &Path, env_path: &str) -> PathBuf {
    root.join(env_path.trim_start_matches('/'))
}

impl Fixture {
    fn run(
        &mut self,
        spec: &VerifySpec,
        timeout_sec: u64,
        network: bool,
    ) -> (Result<Verdict, EnvError>, String) {
        let pipeline = Pipeline {
            verify_dir: self.verify_dir.clone(),
            artifact_dest: DEST,
            timeout: Duration::from_secs(timeout_sec),
            network,
            protected: &self.protected,
            spec,
        };
        let mut log = Vec::new();
        let cancel = CancelToken::new().unwrap();
        // The agent's phase, at whose end the trial reads the login
        // environment.
        self.env.begin_phase(Network::LoopbackOnly).unwrap();
        let login = crate::read_login_env(self.env.as_ref(), &cancel);
        self.env.end_phase().unwrap();
        let verdict = pipeline.run_with_clock(
            self.env.as_mut(),
            &login,
            &cancel,
            &mut log,
            Some(&mut self.outputs),
            &self.backend,
        );
        self.assert_phases_kept_apart();
        (verdict, String::from_utf8(log).unwrap())
    }

    /// What every run must hold: the verifier mounts nothing of the host,
    /// and the login shell runs in the agent's phase (the first here),
    /// never in the verifier's.
    fn assert_phases_kept_apart(&self) {
        let mut phase = 0;
        let mut in_phase = Vec::new();
        for call in self.backend.calls() {
            match call {
                Call::BeganPhase { options, .. } => {
                    assert!(options.mounts.is_empty(), "the verifier mounts nothing of the host");
                    phase += 1;
                }
                Call::Exec { request, .. } => in_phase.push((phase, is_login_shell(&request))),
                _ => {}
            }
        }
        if in_phase.iter().any(|(_, login)| *login) {
            assert_eq!(in_phase[0], (1, true), "the login shell runs in the agent's phase: {in_phase:?}");
            assert!(in_phase[1..].iter().all(|(phase, _)| *phase > 1), "and alone: {in_phase:?}");
        }
    }

    /// The commands of the steps (not the login shell).
    fn requests(&self) -> Vec<ExecRequest> {
        self.backend.requests().into_iter().filter(|r| !is_login_shell(r)).collect()
    }

    /// The network of each phase, in order.
    fn phases(&self) -> Vec<Network> {
        self.began().into_iter().map(|(network, _)| network).collect()
    }

    /// The sealed paths of each phase, in order.
    fn sealed(&self) -> Vec<Vec<String>> {
        self.began().into_iter().map(|(_, options)| options.sealed).collect()
    }

    fn began(&self) -> Vec<(Network, PhaseOptions)> {
        let calls = self.backend.calls().into_iter();
        calls
            .filter_map(|c| match c {
                Call::BeganPhase { network, options, .. } => Some((network, options)),
                _ => None,
            })
            .collect()
    }

    /// Phases ended, and whether one is still running.
    fn ended(&self) -> (usize, bool) {
        let ended = self.backend.calls().iter().filter(|c| matches!(c, Call::EndedPhase { .. })).count();
        (ended, self.began().len() > ended)
    }
}

/// A script that answers by command: "ok", "fail", "slow", "hang", or
/// "write" (writes table.json into CLEANROOM_OUT).
fn by_command() -> impl Fn(&ExecRequest, &Path) -> Result<Reply, EnvError> + Send + Sync + 'static {
    |req, root| {
        let script = req.argv.last().unwrap();
        Ok(match script.as_str() {
            "ok" => exited(0, 1, "all good\n"),
            "fail" => exited(3, 2, "it broke\n"),
            "slow" => exited(0, 60, "slow\n"),
            "hang" => Reply::status(ExitStatus::TimedOut).after(Duration::from_secs(30)).stdout("partial"),
            "write" => {
                let out = host(root, var(req, "CLEANROOM_OUT"));
                std::fs::write(out.join("table.json"), r#"{"n64": {"err": 1.25e-4}}"#).unwrap();
                exited(0, 1, "checksum: 0252ff0a0004de61\n")
            }
            other => panic!("unexpected command {other}"),
        })
    }
}

fn json_check(name: &str) -> Check {
    check(
        name,
        CheckFile::Path("table.json".into()),
        Some(Selector::Json("/n64/err".into())),
        Comparison::Number { expect: 1.23e-4, abs_tol: None, rel_tol: Some(0.05) },
    )
}

fn stdout_check(step: &str) -> Check {
    check(
        "checksum",
        CheckFile::StepStdout(step.into()),
        Some(Selector::Regex(regex::Regex::new("(?m)^checksum: ([0-9a-f]{16})$").unwrap())),
        Comparison::Equals("0252ff0a0004de61".into()),
    )
}

#[test]
fn a_passing_pipeline_reaches_results() {
    let mut f = fixture(by_command());
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![step("env", Stage::Setup, "ok"), step("experiment", Stage::Run, "write")],
        checks: vec![json_check("err"), stdout_check("experiment")],
    };
    let (verdict, log) = f.run(&spec, 900, false);
    let verdict = verdict.unwrap();
    assert!(verdict.passed, "{verdict:?}\n{log}");
    assert_eq!(verdict.stage, crate::VerdictStage::Results);
    assert_eq!(verdict.steps[1].exit_code, Some(0));
    assert_eq!(verdict.steps[1].seconds, 1.0);
    assert_eq!(f.phases(), [Network::LoopbackOnly, Network::LoopbackOnly]);
    assert_eq!(f.ended(), (2, false));
    assert!(log.contains("== step 2/2: experiment (run)\n$ write\n-- passed: exit 0 after 1.000s\nchecksum: 0252ff0a0004de61\n"), "{log}");
    assert!(log.contains("PASS err: expected 1.23e-4 (rel_tol 0.05), observed 0.000125"), "{log}");
    assert!(log.ends_with("== verdict: passed, stage results\n"), "{log}");
    let kept: Vec<&str> = f.outputs.files.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(kept, ["table.json"], "what the steps wrote is kept for the author");
    assert_eq!(f.outputs.files[0].bytes, br#"{"n64": {"err": 1.25e-4}}"#);
    assert!(log.contains("== outputs: 1 file(s) kept\n"), "{log}");
}

#[test]
fn steps_get_the_documented_environment() {
    let mut f = fixture(by_command());
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "ok")], checks: vec![] };
    f.run(&spec, 900, false).0.unwrap();
    let req = &f.requests()[0];
    assert_eq!(req.argv, ["/bin/bash", "--noprofile", "--norc", "-c", "ok"]);
    assert_eq!(req.cwd, DEST);
    let names: Vec<&str> = req.env.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["PATH", "HOME", "LANG", "TERM", "CLEANROOM_OUT", "CLEANROOM_VERIFY", "CLEANROOM_ARTIFACT"]
    );
    assert_eq!(var(req, "PATH"), STEP_PATH);
    assert_eq!(var(req, "HOME"), "/root");
    assert_eq!(var(req, "CLEANROOM_ARTIFACT"), DEST);
    let out = var(req, "CLEANROOM_OUT");
    let verify = var(req, "CLEANROOM_VERIFY");
    for p in [out, verify] {
        let hex = p.strip_prefix("/.cleanroom-").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    assert_ne!(out, verify);
}

/// Only regular files of plain names are kept of what the steps wrote: a
/// link is not followed, a dotfile is named as left out.
#[test]
fn outputs_keep_regular_files_and_name_what_they_leave_out() {
    let mut f = fixture(|req, root| {
        let out = host(root, var(req, "CLEANROOM_OUT"));
        std::fs::create_dir_all(out.join("plots")).unwrap();
        std::fs::write(out.join("plots/a.txt"), "a").unwrap();
        std::fs::write(out.join(".hidden"), "h").unwrap();
        std::os::unix::fs::symlink("/etc/shadow", out.join("link")).unwrap();
        Ok(exited(0, 1, ""))
    });
    let spec = VerifySpec { mutations: vec![], steps: vec![step("s", Stage::Run, "write")], checks: vec![] };
    let (verdict, log) = f.run(&spec, 900, false);
    assert!(verdict.unwrap().passed, "{log}");
    let kept: Vec<&str> = f.outputs.files.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(kept, ["plots/a.txt"]);
    assert_eq!(f.outputs.left_out, [".hidden (a name the run directory does not take)"]);
    assert!(log.contains("== outputs: 1 file(s) kept\nleft out: .hidden"), "{log}");
}

#[test]
fn verify_files_but_checks_toml_are_copied_in_and_out_starts_empty() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen2 = seen.clone();
    let mut f = fixture(move |req, root| {
        let verify = host(root, var(req, "CLEANROOM_VERIFY"));
        let out = host(root, var(req, "CLEANROOM_OUT"));
        let mut s = seen2.lock().unwrap();
        s.push(format!("checks.toml:{}", verify.join("checks.toml").exists()));
        s.push(format!("run.sh:{}", verify.join("run.sh").is_file()));
        s.push(std::fs::read_to_string(verify.join("data/ref.txt")).unwrap());
        s.push(format!("out:{}", std::fs::read_dir(out).unwrap().count()));
        Ok(exited(0, 1, ""))
    });
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "x")], checks: vec![] };
    f.run(&spec, 900, false).0.unwrap();
    assert_eq!(*seen.lock().unwrap(), ["checks.toml:false", "run.sh:true", "ref", "out:0"]);
}

#[test]
fn the_first_failing_step_ends_the_steps_but_every_check_is_evaluated() {
    let mut f = fixture(by_command());
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![
            step("experiment", Stage::Build, "write"),
            step("broken", Stage::Run, "fail"),
            step("later", Stage::Run, "ok"),
        ],
        checks: vec![json_check("err"), stdout_check("experiment"), stdout_check("later")],
    };
    let (verdict, log) = f.run(&spec, 900, false);
    let verdict = verdict.unwrap();
    assert_eq!(f.requests().len(), 2, "the step after a failure never runs");
    let statuses: Vec<StepStatus> = verdict.steps.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [StepStatus::Passed, StepStatus::Failed, StepStatus::NotRun]);
    assert_eq!(verdict.steps[1].exit_code, Some(3));
    assert_eq!(verdict.steps[2].exit_code, None);
    assert_eq!(verdict.steps[2].seconds, 0.0);
    // Outputs written before the failure are still judged.
    assert!(verdict.checks[0].passed);
    assert!(verdict.checks[1].passed);
    assert!(!verdict.checks[2].passed);
    assert_eq!(verdict.checks[2].observed, "missing");
    assert_eq!(verdict.stage, crate::VerdictStage::Build);
    assert!(!verdict.passed);
    assert!(log.contains("-- failed: exit 3 after 2.000s\nit broke\n"), "{log}");
    assert!(log.contains("== step 3/3: later (run)\n$ ok\n-- not run: an earlier step failed\n"), "{log}");
    assert_eq!(f.ended(), (2, false));
}

#[test]
fn a_missing_output_says_missing() {
    let mut f = fixture(by_command());
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![step("a", Stage::Run, "ok")],
        checks: vec![json_check("err")],
    };
    let verdict = f.run(&spec, 900, false).0.unwrap();
    assert_eq!(verdict.checks[0].observed, "missing");
    assert_eq!(verdict.stage, crate::VerdictStage::Run);
}

#[test]
fn a_linked_output_is_not_followed() {
    let mut f = fixture(|req, root| {
        let out = host(root, var(req, "CLEANROOM_OUT"));
        std::os::unix::fs::symlink("/etc/passwd", out.join("table.json")).unwrap();
        Ok(exited(0, 1, ""))
    });
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![step("a", Stage::Run, "x")],
        checks: vec![json_check("err")],
    };
    let verdict = f.run(&spec, 900, false).0.unwrap();
    assert!(!verdict.checks[0].passed);
    assert_eq!(verdict.checks[0].observed, "symlink in path");
}

#[test]
fn step_timeouts_are_capped_by_what_is_left() {
    let mut f = fixture(by_command());
    let mut capped = step("capped", Stage::Run, "ok");
    capped.timeout_sec = Some(120);
    let mut short = step("short", Stage::Run, "ok");
    short.timeout_sec = Some(10);
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![step("slow", Stage::Setup, "slow"), capped, short, step("rest", Stage::Run, "ok")],
        checks: vec![],
    };
    let verdict = f.run(&spec, 100, false).0.unwrap();
    assert!(verdict.passed);
    let timeouts: Vec<Option<Duration>> = f.requests().iter().map(|r| r.timeout).collect();
    let secs = |s| Some(Duration::from_secs(s));
    // 100 in all; the slow step takes 60, each later one 1.
    assert_eq!(timeouts, [secs(100), secs(40), secs(10), secs(38)]);
}

#[test]
fn a_spent_budget_times_out_the_next_step_without_running_it() {
    let mut f = fixture(by_command());
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![
            step("slow", Stage::Setup, "slow"),
            step("next", Stage::Run, "ok"),
            step("last", Stage::Run, "ok"),
        ],
        checks: vec![],
    };
    let (verdict, log) = f.run(&spec, 60, false);
    let verdict = verdict.unwrap();
    assert_eq!(f.requests().len(), 1);
    let statuses: Vec<StepStatus> = verdict.steps.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [StepStatus::Passed, StepStatus::TimedOut, StepStatus::NotRun]);
    assert_eq!(verdict.stage, crate::VerdictStage::Build);
    assert!(log.contains("verify.timeout_sec ran out before this step"), "{log}");
}

#[test]
fn a_timed_out_step_keeps_its_partial_output() {
    let mut f = fixture(by_command());
    let mut hang = step("hang", Stage::Run, "hang");
    hang.timeout_sec = Some(30);
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![hang, step("after", Stage::Run, "ok")],
        checks: vec![check(
            "partial",
            CheckFile::StepStdout("hang".into()),
            None,
            Comparison::Equals("partial".into()),
        )],
    };
    let (verdict, log) = f.run(&spec, 900, false);
    let verdict = verdict.unwrap();
    assert_eq!(verdict.steps[0].status, StepStatus::TimedOut);
    assert_eq!(verdict.steps[0].exit_code, None);
    assert_eq!(verdict.steps[0].seconds, 30.0);
    assert_eq!(verdict.steps[1].status, StepStatus::NotRun);
    assert!(verdict.checks[0].passed);
    assert_eq!(verdict.stage, crate::VerdictStage::Build);
    assert!(log.contains("-- timed out: no exit within 30s after 30.000s\npartial\n"), "{log}");
}

#[test]
fn clean_removes_matching_artifact_paths_from_the_host_before_the_step() {
    let mut f = fixture(|_req, root| {
        let results = root.join("workspace/artifact/results");
        assert!(results.is_dir());
        assert!(!results.join("old.csv").exists(), "cleaned before the step");
        assert!(root.join("workspace/artifact/main.py").exists());
        Ok(exited(0, 1, ""))
    });
    let mut s = step("experiment", Stage::Run, "x");
    s.clean = vec!["results/**".into()];
    let spec = VerifySpec { mutations: vec![], steps: vec![s], checks: vec![] };
    let (verdict, log) = f.run(&spec, 900, false);
    assert!(verdict.unwrap().passed);
    assert!(log.contains("clean: removed results/old.csv\n"), "{log}");
}

#[test]
fn clean_never_follows_a_linked_artifact() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("results")).unwrap();
    std::fs::write(outside.path().join("results/keep"), "keep").unwrap();
    let mut f = fixture(|_, _| Ok(exited(0, 1, "")));
    let artifact = f.backend.root_of(f.env.id()).join("workspace/artifact");
    std::fs::remove_dir_all(&artifact).unwrap();
    std::os::unix::fs::symlink(outside.path(), &artifact).unwrap();
    let mut s = step("experiment", Stage::Run, "x");
    s.clean = vec!["results/**".into()];
    let spec = VerifySpec { mutations: vec![], steps: vec![s], checks: vec![] };
    let (verdict, log) = f.run(&spec, 900, false);
    assert!(verdict.unwrap().passed);
    assert!(log.contains("clean: nothing to remove"), "{log}");
    assert!(outside.path().join("results/keep").exists());
}

#[test]
fn a_tree_too_deep_to_clean_fails_the_step_not_the_harness() {
    let mut f = fixture(|_, _| Ok(exited(0, 1, "")));
    let mut deep = f.backend.root_of(f.env.id()).join("workspace/artifact/results");
    for _ in 0..cleanroom_env::MAX_DEPTH + 5 {
        deep = deep.join("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let mut s = step("experiment", Stage::Run, "x");
    s.clean = vec!["results".into()];
    let spec = VerifySpec { mutations: vec![], steps: vec![s], checks: vec![] };
    let (verdict, log) = f.run(&spec, 900, false);
    let verdict = verdict.unwrap();
    assert_eq!(verdict.steps[0].status, StepStatus::Failed);
    assert!(log.contains("-- failed: clean: /workspace/artifact: more than 128 directory levels\n"), "{log}");
    assert!(f.requests().is_empty(), "the step did not run");
}

#[test]
fn network_follows_verify_network() {
    let mut f = fixture(by_command());
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "ok")], checks: vec![] };
    f.run(&spec, 900, true).0.unwrap();
    assert_eq!(f.phases(), [Network::LoopbackOnly, Network::Outbound]);
}

#[test]
fn an_environment_failure_is_an_error_and_the_phase_still_ends() {
    let mut f = fixture(|_, _| Err(EnvError::Command { program: "fake".into(), detail: "broken".into() }));
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "ok")], checks: vec![] };
    assert!(f.run(&spec, 900, false).0.is_err());
    assert_eq!(f.ended(), (2, false));
}

#[test]
fn a_cancel_is_an_error_and_the_phase_still_ends() {
    let mut f = fixture(|_, _| Ok(Reply::status(ExitStatus::Cancelled).after(Duration::from_secs(1))));
    let spec = VerifySpec {
        mutations: vec![],
        steps: vec![step("a", Stage::Run, "ok"), step("b", Stage::Run, "ok")],
        checks: vec![],
    };
    let err = f.run(&spec, 900, false).0.unwrap_err();
    assert!(err.to_string().contains("cancelled"), "{err}");
    assert_eq!(f.requests().len(), 1);
    assert_eq!(f.ended(), (2, false));
}

#[test]
fn a_signal_is_a_failure_with_the_shell_code() {
    let mut f = fixture(|_, _| Ok(Reply::status(ExitStatus::Signaled(9)).after(Duration::from_secs(1))));
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Setup, "ok")], checks: vec![] };
    let (verdict, log) = f.run(&spec, 900, false);
    let verdict = verdict.unwrap();
    assert_eq!(verdict.steps[0].status, StepStatus::Failed);
    assert_eq!(verdict.steps[0].exit_code, Some(137));
    assert_eq!(verdict.stage, crate::VerdictStage::None);
    assert!(log.contains("killed by signal 9"), "{log}");
}

#[test]
fn steps_get_the_login_variables_but_none_of_its_hooks() {
    let mut f = fixture(by_command());
    *f.login_env.lock().unwrap() = deployed_login_env();
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "ok")], checks: vec![] };
    let (verdict, log) = f.run(&spec, 900, false);
    verdict.unwrap();
    let req = &f.requests()[0];
    assert_eq!(var(req, "PATH"), "/opt/venv/bin:/usr/bin:/bin");
    assert_eq!(var(req, "MARK"), "kept");
    for hook in ["BASH_FUNC_python3%%", "BASH_ENV", "LD_PRELOAD"] {
        assert!(!req.env.iter().any(|(k, _)| k == hook), "{hook} reached the step");
    }
    assert!(var(req, "CLEANROOM_OUT").starts_with("/.cleanroom-"), "the harness's own variables win");
    assert!(log.contains("login environment: 4 variables"), "{log}");
}

#[test]
fn without_a_login_report_steps_get_the_default_environment() {
    let mut f = fixture(by_command());
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "ok")], checks: vec![] };
    let (_, log) = f.run(&spec, 900, false);
    assert_eq!(var(&f.requests()[0], "PATH"), STEP_PATH);
    assert!(log.contains("login environment: not reported (no variables printed)"), "{log}");
}

#[test]
fn the_verifier_and_the_protected_files_are_sealed_during_the_steps() {
    let mut f = fixture(by_command());
    f.protected = vec![format!("{DEST}/main.py"), format!("{DEST}/results/old.csv")];
    let spec = VerifySpec { mutations: vec![], steps: vec![step("a", Stage::Run, "ok")], checks: vec![] };
    f.run(&spec, 900, false).0.unwrap();
    let req = &f.requests()[0];
    let sealed = f.sealed();
    assert_eq!(sealed[0], Vec::<String>::new(), "the agent's phase seals nothing");
    assert_eq!(
        sealed[1],
        [
            format!("{DEST}/main.py"),
            format!("{DEST}/results/old.csv"),
            var(req, "CLEANROOM_VERIFY").to_string()
        ]
    );
}

#[test]
fn protected_paths_are_the_original_regular_files_the_globs_match() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data/sub")).unwrap();
    std::fs::write(dir.path().join("data/sub/a.csv"), "1").unwrap();
    std::fs::write(dir.path().join("run.sh"), "x").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("data/link")).unwrap();
    let original = cleanroom_env::Manifest::of_host_dir(dir.path()).unwrap();
    let globs = Globs::new(&["data/**".to_string(), "run.sh".to_string()]).unwrap();
    assert_eq!(protected_paths("/w/a/", &original, &globs), ["/w/a/data/sub/a.csv", "/w/a/run.sh"]);
}

/// A plain step, then a mutated one, with main.py's `replace` made `with`.
fn plain_then_mutated(replace: &str, with: &str) -> VerifySpec {
    let mut mutated = step("mutated", Stage::Run, "again");
    mutated.mutated = true;
    let mutation =
        crate::task::Mutation { file: "main.py".into(), replace: replace.into(), with: with.into() };
    VerifySpec {
        steps: vec![step("plain", Stage::Run, "once"), mutated],
        checks: vec![],
        mutations: vec![mutation],
    }
}

#[test]
fn mutated_steps_run_in_a_phase_of_their_own_on_the_changed_source() {
    // Each step reports what main.py holds when it runs.
    let mut f = fixture(|_, root| {
        let text = std::fs::read_to_string(root.join("workspace/artifact/main.py")).unwrap();
        Ok(exited(0, 1, &text))
    });
    let spec = plain_then_mutated("print()", "print(1)");
    let (verdict, log) = f.run(&spec, 900, false);
    assert!(verdict.unwrap().passed, "{log}");
    let outputs: Vec<String> = log.lines().filter(|l| l.starts_with("print")).map(str::to_string).collect();
    assert_eq!(outputs, ["print()", "print(1)"], "{log}");
    assert!(log.contains("mutation 1: main.py changed") && !log.contains("print(1)\n-- "), "{log}");
    // The agent's (its login shell), unmutated steps, mutated steps: three phases.
    let phases = f.backend.calls().iter().filter(|c| matches!(c, Call::BeganPhase { .. })).count();
    assert_eq!(phases, 3);
    // The source is put back, so a second verification starts as the first.
    let root = f.backend.root_of(f.env.id());
    assert_eq!(std::fs::read_to_string(root.join("workspace/artifact/main.py")).unwrap(), "print()");
    let (again, log) = f.run(&spec, 900, false);
    assert!(again.unwrap().passed, "{log}");
}

#[test]
fn a_mutation_whose_text_the_deployment_changed_fails_the_mutated_step() {
    let mut f = fixture(|_, _| Ok(exited(0, 1, "")));
    let spec = plain_then_mutated("absent", "x");
    let (verdict, log) = f.run(&spec, 900, false);
    let verdict = verdict.unwrap();
    assert!(!verdict.passed);
    assert_eq!(verdict.steps[1].status, StepStatus::Failed);
    assert!(
        log.contains("-- failed: mutation: main.py: mutation 1 found its text 0 times, not once"),
        "{log}"
    );
}

#[test]
fn two_mutations_of_one_file_are_both_undone() {
    let mut f = fixture(|_, _| Ok(exited(0, 1, "")));
    let mut spec = plain_then_mutated("print()", "print(1)");
    spec.mutations.push(crate::task::Mutation {
        file: "main.py".into(),
        replace: "print".into(),
        with: "echo".into(),
    });
    let (verdict, log) = f.run(&spec, 900, false);
    assert!(verdict.unwrap().passed, "{log}");
    let root = f.backend.root_of(f.env.id());
    assert_eq!(std::fs::read_to_string(root.join("workspace/artifact/main.py")).unwrap(), "print()");
}
