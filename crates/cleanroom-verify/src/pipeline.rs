//! The hidden verification pipeline (TASK_FORMAT.md, "The pipeline's
//! semantics").
//!
//! Design note. It runs after the agent phase has ended, so no process of the
//! agent is left. It:
//!
//! 1. takes the deployment's login environment as a login shell reported
//!    it at the end of the agent's phase ([`crate::login_env`]): the
//!    deployment's code ran there, before the tamper check, and nothing of
//!    the deployment's runs between that check and the seals below;
//! 2. makes `CLEANROOM_VERIFY` and `CLEANROOM_OUT` at fresh paths with 128
//!    random bits each, directly under the environment's `/` (one component
//!    that the harness itself creates: no link the agent left can lie on the
//!    path, so outputs are readable without following any link), and copies
//!    verify/ but checks.toml into the first;
//! 3. starts the verification phase with the verifier's directory and every
//!    file under `protected` sealed (read-only, not removable, no directory
//!    above them renamable: see the backend's PhaseOptions), so nothing that
//!    runs during verification can change them, even for a moment;
//! 4. runs the steps in order in `artifact.dest`, each in bash without
//!    profile or rc files, with the login environment's variables less those
//!    that inject code (exported functions and the like), after
//!    removing its `clean` globs from the host side (never by a process in
//!    the environment, which the agent may have replaced); the first step
//!    that fails or times out ends the steps; each step's timeout is capped
//!    by what is left of `verify.timeout_sec`;
//! 5. ends the phase (every process a step left is killed), and only then
//!    reads outputs and evaluates every check, so nothing in the environment
//!    can change a file while the harness reads it.
//!
//! What a step trusts of the deployment: its files (interpreters, libraries,
//! installed packages and their start-up files such as `.pth`), which are
//! what was deployed, and the variables its login shell sets (a virtual
//! environment on `PATH`). Not its shell hooks: profile scripts, rc files,
//! `BASH_ENV`, functions and aliases never run inside a step.
//!
//! Infrastructure failures (the environment cannot run a command, the
//! harness cannot copy verify/ in) are errors, not verdicts; so is a cancel
//! (Ctrl-C). Whatever the steps do in the environment is a verdict.

use std::collections::HashMap;
use std::fmt::Display;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cleanroom_env::{
    CancelToken, EntryKind, EnvError, Environment, ExecOutcome, ExecRequest, ExitStatus, Files, Globs,
    Manifest, Network, PhaseOptions,
};

use crate::access;
use crate::checks::{self, CheckResult};
use crate::login_env::LoginEnv;
use crate::outputs::Outputs;
use crate::task::{CheckFile, Task, VerifySpec};
use crate::verdict::{StepResult, StepStatus, Verdict};

/// Most bytes of one output file that the harness reads.
pub const READ_LIMIT: u64 = 64 << 20;

/// `PATH` of every step.
pub const STEP_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Most `clean` removals listed per step in verify.log, and most outputs
/// left out.
const LOGGED_REMOVALS: usize = 20;

/// Runs the hidden pipeline of `task` in `env`, whose agent phase has ended,
/// and judges it; the steps get the variables of `login`. verify.log goes
/// to `log` (write errors are ignored: the log never decides the verdict),
/// and what the steps wrote to `$CLEANROOM_OUT` to `outputs`, when given.
/// `protected` are the artifact's protected files, sealed during the steps
/// ([`protected_paths`]).
pub fn run_pipeline(
    env: &mut dyn Environment,
    task: &Task,
    protected: &[String],
    login: &LoginEnv,
    cancel: &CancelToken,
    log: &mut dyn Write,
    outputs: Option<&mut Outputs>,
) -> Result<Verdict, EnvError> {
    Pipeline { protected, ..Pipeline::of_task(task) }.run(env, login, cancel, log, outputs)
}

/// The regular files of the original artifact (its staged manifest) that
/// `protected` matches, as absolute paths under `dest`: what verification
/// seals. A protected file the agent replaced by a link is not followed
/// when sealing (and is tampering already).
pub fn protected_paths(dest: &str, original: &Manifest, protected: &Globs) -> Vec<String> {
    original
        .entries
        .iter()
        .filter(|(rel, entry)| entry.kind == EntryKind::File && protected.is_match(rel))
        .map(|(rel, _)| format!("{}/{}", dest.trim_end_matches('/'), rel))
        .collect()
}

/// What the pipeline needs of a task.
#[derive(Debug, Clone)]
pub struct Pipeline<'a> {
    /// The task's verify/ on the host.
    pub verify_dir: PathBuf,
    pub artifact_dest: &'a str,
    /// `verify.timeout_sec`: the whole pipeline's budget.
    pub timeout: Duration,
    /// `verify.network`.
    pub network: bool,
    /// Absolute paths of the protected files, sealed during the steps.
    pub protected: &'a [String],
    pub spec: &'a VerifySpec,
}

impl<'a> Pipeline<'a> {
    pub fn of_task(task: &'a Task) -> Pipeline<'a> {
        Pipeline {
            verify_dir: task.verify_dir(),
            artifact_dest: &task.spec.artifact.dest,
            timeout: Duration::from_secs(task.spec.verify.timeout_sec),
            network: task.spec.verify.network,
            protected: &[],
            spec: &task.verify,
        }
    }

    pub fn run(
        &self,
        env: &mut dyn Environment,
        login: &LoginEnv,
        cancel: &CancelToken,
        log: &mut dyn Write,
        outputs: Option<&mut Outputs>,
    ) -> Result<Verdict, EnvError> {
        self.run_with_clock(env, login, cancel, log, outputs, &SystemClock(Instant::now()))
    }

    fn run_with_clock(
        &self,
        env: &mut dyn Environment,
        login: &LoginEnv,
        cancel: &CancelToken,
        log: &mut dyn Write,
        outputs: Option<&mut Outputs>,
        clock: &dyn Clock,
    ) -> Result<Verdict, EnvError> {
        let mut log = Log(log);
        let start = clock.now();
        log.line(format_args!(
            "cleanroom verify: {} steps, {} checks, {}s in all, network {}",
            self.spec.steps.len(),
            self.spec.checks.len(),
            self.timeout.as_secs(),
            if self.network { "on" } else { "off" },
        ));
        log.line(format_args!("login environment: {}", login.report));
        let root = env.files();
        let verify_env = fresh_dir(root)?;
        root.copy_tree_in(&self.verify_dir, &verify_env, &|rel| rel == Path::new("checks.toml"))
            .map_err(|e| EnvError::io("copying verify/ into the environment", e))?;
        let out_dir = fresh_dir(root)?;
        let mut sealed = self.protected.to_vec();
        sealed.push(verify_env.clone());
        let vars = self.step_env(login.vars.clone(), &verify_env, &out_dir);
        let phase = PhaseOptions { sealed, ..Default::default() };
        let ran = self.run_steps(env, &phase, vars, out_dir, cancel, &mut log, clock, start);
        let ended = env.end_phase();
        let ran = ran?;
        ended?;

        log.line("== checks");
        let root = env.files();
        let checks: Vec<CheckResult> = self
            .spec
            .checks
            .iter()
            .map(|check| {
                let result = match &check.file {
                    CheckFile::Access(query) => access::evaluate(check, query, ran.evidence.get(query)),
                    CheckFile::Path(rel) => {
                        let path = format!("{}/{}", ran.out_dir, rel.trim_start_matches('/'));
                        let read = root.read_regular(&path, READ_LIMIT);
                        checks::evaluate(check, read.as_deref().map_err(|e| e.to_string()))
                    }
                    CheckFile::StepStdout(step) => checks::evaluate(
                        check,
                        ran.stdouts
                            .get(step.as_str())
                            .map(Vec::as_slice)
                            .ok_or_else(|| "missing".to_string()),
                    ),
                };
                log.line(format_args!(
                    "{} {}: expected {}, observed {}",
                    if result.passed { "PASS" } else { "FAIL" },
                    result.name,
                    result.expected,
                    result.observed,
                ));
                result
            })
            .collect();
        if let Some(outputs) = outputs {
            *outputs = crate::outputs::collect(root, &ran.out_dir, cancel);
            log.line(format_args!("== outputs: {} file(s) kept", outputs.files.len()));
            for left in outputs.left_out.iter().take(LOGGED_REMOVALS) {
                log.line(format_args!("left out: {left}"));
            }
            if outputs.left_out.len() > LOGGED_REMOVALS {
                log.line(format_args!("left out: ... and {} more", outputs.left_out.len() - LOGGED_REMOVALS));
            }
        }
        let verdict = Verdict::new(ran.steps, checks);
        log.line(format_args!(
            "== verdict: {}, stage {}",
            if verdict.passed { "passed" } else { "failed" },
            verdict.stage,
        ));
        Ok(verdict)
    }

    /// Step 4 of the design note, inside the phase.
    #[allow(clippy::too_many_arguments)]
    fn run_steps(
        &self,
        env: &mut dyn Environment,
        phase: &PhaseOptions,
        vars: Vec<(String, String)>,
        out_dir: String,
        cancel: &CancelToken,
        log: &mut Log<'_>,
        clock: &dyn Clock,
        start: Duration,
    ) -> Result<Ran<'a>, EnvError> {
        let network = if self.network { Network::Outbound } else { Network::LoopbackOnly };
        env.begin_phase_with(network, phase)?;
        let mut mutated = false;
        // What the mutations replaced, put back once the steps are done, so
        // that a second verification of the environment starts as the first.
        let mut originals = Vec::new();

        let mut steps = Vec::new();
        let mut stdouts = HashMap::new();
        let mut evidence = access::Evidences::new();
        let mut stopped = false;
        let total = self.spec.steps.len();
        for (i, step) in self.spec.steps.iter().enumerate() {
            log.line(format_args!("== step {}/{total}: {} ({})", i + 1, step.name, step.stage.as_str()));
            log.line(format_args!("$ {}", step.run));
            let mut result = StepResult {
                name: step.name.clone(),
                stage: step.stage,
                exit_code: None,
                seconds: 0.0,
                status: StepStatus::NotRun,
            };
            if stopped {
                log.line("-- not run: an earlier step failed");
                steps.push(result);
                continue;
            }
            if step.mutated && !mutated {
                // Every process of the unmutated steps dies with their
                // phase; the source changes from outside; a new phase.
                mutated = true;
                env.end_phase()?;
                let applied = self.mutate(env.files(), log, &mut originals);
                env.begin_phase_with(network, phase)?;
                if let Err(why) = applied {
                    log.line(format_args!("-- failed: mutation: {why}"));
                    result.status = StepStatus::Failed;
                    steps.push(result);
                    stopped = true;
                    continue;
                }
            }
            let root = env.files();
            if let Err(why) = self.clean(root, &step.clean, cancel, log) {
                if cancel.is_cancelled() {
                    log.line("-- cancelled");
                    return Err(EnvError::Phase("verification cancelled".into()));
                }
                log.line(format_args!("-- failed: clean: {why}"));
                result.status = StepStatus::Failed;
                steps.push(result);
                stopped = true;
                continue;
            }
            let left = self.timeout.saturating_sub(clock.now().saturating_sub(start));
            if left.is_zero() {
                log.line("-- timed out: verify.timeout_sec ran out before this step");
                result.status = StepStatus::TimedOut;
                steps.push(result);
                stopped = true;
                continue;
            }
            let timeout = step.timeout_sec.map_or(left, |t| Duration::from_secs(t).min(left));
            // The login shell's variables, without running its hooks again.
            let mut req = ExecRequest::plain_shell(&step.run, self.artifact_dest, vars.clone());
            req.timeout = Some(timeout);
            let queries = access::queries_of(self.spec, &step.name);
            let watch = if queries.is_empty() { None } else { env.watch_access(self.artifact_dest)? };
            let outcome = env.exec(&req, cancel)?;
            if !queries.is_empty() {
                let seen = watch.map(|w| w.finish());
                for (query, found) in
                    access::evidence(env.files(), self.artifact_dest, seen.as_ref(), &queries, cancel)
                {
                    evidence.insert(query, found);
                }
            }
            result.seconds = (outcome.duration.as_secs_f64() * 1000.0).round() / 1000.0;
            result.exit_code = outcome.status.code();
            result.status = match outcome.status {
                ExitStatus::Exited(0) => StepStatus::Passed,
                ExitStatus::Exited(_) | ExitStatus::Signaled(_) => StepStatus::Failed,
                ExitStatus::TimedOut => StepStatus::TimedOut,
                ExitStatus::Cancelled => {
                    log.line("-- cancelled");
                    return Err(EnvError::Phase("verification cancelled".into()));
                }
            };
            log_outcome(log, &outcome, timeout, &result);
            stdouts.insert(step.name.as_str(), outcome.stdout.to_bytes());
            stopped = result.status != StepStatus::Passed;
            steps.push(result);
        }
        for (path, bytes) in &originals {
            env.files()
                .write_file(path, bytes, 0o644)
                .map_err(|e| EnvError::io(format!("restoring {path}"), e))?;
        }
        Ok(Ran { steps, stdouts, evidence, out_dir })
    }

    /// Applies every `[[mutation]]` to the artifact, from the host: each
    /// target must hold its text exactly once (a deployment that rewrote
    /// the file fails here). The new contents keep no mode bits but 0644.
    fn mutate(
        &self,
        files: &dyn Files,
        log: &mut Log<'_>,
        originals: &mut Vec<(String, Vec<u8>)>,
    ) -> Result<(), String> {
        log.line(format_args!("== mutations: {}", self.spec.mutations.len()));
        for (i, m) in self.spec.mutations.iter().enumerate() {
            let path = format!("{}/{}", self.artifact_dest.trim_end_matches('/'), m.file);
            let bytes = files.read_regular(&path, READ_LIMIT).map_err(|e| format!("{}: {e}", m.file))?;
            let text = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", m.file))?;
            let changed = m.apply(&text).map_err(|found| {
                format!("{}: mutation {} found its text {found} times, not once", m.file, i + 1)
            })?;
            files.write_file(&path, changed.as_bytes(), 0o644).map_err(|e| format!("{}: {e}", m.file))?;
            // A file that several mutations change is restored to what it
            // held before the first.
            if !originals.iter().any(|(saved, _)| *saved == path) {
                originals.push((path, text.into_bytes()));
            }
            log.line(format_args!("mutation {}: {} changed", i + 1, m.file));
        }
        Ok(())
    }

    /// Removes a step's `clean` globs under `artifact.dest`, from the host.
    /// A tree too large or too deep to clean within the bounds of host-side
    /// work fails the step (the agent made it so).
    fn clean(
        &self,
        root: &dyn Files,
        clean: &[String],
        cancel: &CancelToken,
        log: &mut Log<'_>,
    ) -> Result<(), String> {
        if clean.is_empty() {
            return Ok(());
        }
        let globs = Globs::new(clean)?;
        let removed = root.remove_matching(self.artifact_dest, &globs, cancel).map_err(|e| e.to_string())?;
        for path in removed.iter().take(LOGGED_REMOVALS) {
            log.line(format_args!("clean: removed {path}"));
        }
        if removed.len() > LOGGED_REMOVALS {
            log.line(format_args!("clean: ... and {} more", removed.len() - LOGGED_REMOVALS));
        }
        if removed.is_empty() {
            log.line("clean: nothing to remove");
        }
        Ok(())
    }

    /// The complete environment of a step: the login environment's variables
    /// (or the defaults), the harness's own on top. With `verify.network`,
    /// the host's proxy variables too, as the agent phase has them (a host
    /// that reaches the registries through a proxy needs them).
    fn step_env(
        &self,
        login: Option<Vec<(String, String)>>,
        verify_env: &str,
        out_dir: &str,
    ) -> Vec<(String, String)> {
        let ours = [
            ("TERM", "dumb"),
            ("CLEANROOM_OUT", out_dir),
            ("CLEANROOM_VERIFY", verify_env),
            ("CLEANROOM_ARTIFACT", self.artifact_dest),
        ];
        let mut vars: Vec<(String, String)> = login
            .unwrap_or_else(base_env)
            .into_iter()
            .filter(|(k, _)| !ours.iter().any(|(o, _)| o == k) && !k.starts_with("CLEANROOM_"))
            .collect();
        vars.extend(ours.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        if self.network {
            for name in PROXY_VARS {
                if let Ok(value) = std::env::var(name) {
                    vars.push((name.to_string(), value));
                }
            }
        }
        vars
    }
}

/// The environment of a shell before any profile: what a fresh login gets.
pub(crate) fn base_env() -> Vec<(String, String)> {
    [("PATH", STEP_PATH), ("HOME", "/root"), ("LANG", "C.UTF-8"), ("TERM", "dumb")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const PROXY_VARS: [&str; 8] = [
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
];

/// What the steps left for the checks.
struct Ran<'a> {
    steps: Vec<StepResult>,
    /// By step name; only steps that ran.
    stdouts: HashMap<&'a str, Vec<u8>>,
    /// What each access check's step showed.
    evidence: access::Evidences,
    out_dir: String,
}

/// A new directory `/.cleanroom-<32 hex digits>` in the environment.
fn fresh_dir(root: &dyn Files) -> Result<String, EnvError> {
    let path = format!("/.cleanroom-{}", random_hex().map_err(|e| EnvError::io("reading /dev/urandom", e))?);
    root.create_dir_all(&path, 0o755)
        .map_err(|e| EnvError::io("creating a directory in the environment", e))?;
    Ok(path)
}

/// 128 random bits from the kernel, as hex.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// How a command ended, for verify.log.
pub(crate) fn how_it_ended(status: &ExitStatus, timeout: Duration) -> String {
    match status {
        ExitStatus::Exited(code) => format!("exit {code}"),
        ExitStatus::Signaled(sig) => format!("killed by signal {sig}"),
        ExitStatus::TimedOut => format!("no exit within {}s", timeout.as_secs()),
        ExitStatus::Cancelled => "cancelled".to_string(),
    }
}

fn log_outcome(log: &mut Log<'_>, outcome: &ExecOutcome, timeout: Duration, result: &StepResult) {
    let how = how_it_ended(&outcome.status, timeout);
    let status = match result.status {
        StepStatus::Passed => "passed",
        StepStatus::Failed => "failed",
        StepStatus::TimedOut => "timed out",
        StepStatus::NotRun => "not run",
    };
    log.line(format_args!("-- {status}: {how} after {:.3}s", outcome.duration.as_secs_f64()));
    let output = outcome.combined.to_bytes();
    if !output.is_empty() {
        log.bytes(&output);
        if !output.ends_with(b"\n") {
            log.bytes(b"\n");
        }
    }
}

/// verify.log: best effort, as the log never decides anything.
struct Log<'a>(&'a mut dyn Write);

impl Log<'_> {
    fn line(&mut self, text: impl Display) {
        let _ = writeln!(self.0, "{text}");
    }

    fn bytes(&mut self, bytes: &[u8]) {
        let _ = self.0.write_all(bytes);
    }
}

/// Monotonic time since an arbitrary origin; tests drive their own.
trait Clock {
    fn now(&self) -> Duration;
}

struct SystemClock(Instant);

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
}

#[cfg(test)]
mod tests;
