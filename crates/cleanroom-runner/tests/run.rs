//! The runner's logic against the fake backend: scheduling, retries,
//! resume, cancel, skipping and verdicts, with tiny tasks on disk and a
//! script that plays the shell. What a real environment does is the
//! sandbox tests' business.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use cleanroom_agent::{AgentSpec, GateMode};
use cleanroom_env::fake::{FakeBackend, Reply};
use cleanroom_env::{CancelToken, EnvError, ExecRequest};
use cleanroom_runner::{
    plan, stage_artifacts, AgentEntry, AgentSetup, Event, EventKind, Plan, RunInput, Staged, Todo, TrialKey,
};
use cleanroom_store::{AppliedGate, FailureClass, Outcome, TrialRecord};
use cleanroom_task::{load_task, Task};
use cleanroom_verify::StepStatus;

/// One task: its id, solution/setup.sh, the `run` of its one verify step.
struct TaskDef {
    id: &'static str,
    setup: &'static str,
    step: &'static str,
    gpu: bool,
}

/// The oracle makes `fixed`; the verifier's one step wants it.
const FIXES: TaskDef =
    TaskDef { id: "fixes", setup: "touch artifact/fixed", step: "test -f fixed", gpu: false };

/// Tasks on disk, their artifacts staged, and a fake backend's home.
struct Bench {
    dir: tempfile::TempDir,
    tasks: Vec<Task>,
    staged: Staged,
    setup: AgentSetup,
}

impl Bench {
    fn new(defs: &[TaskDef]) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let tasks: Vec<Task> =
            defs.iter().map(|def| load_task(&write_task(dir.path(), def)).unwrap()).collect();
        let refs: Vec<&Task> = tasks.iter().collect();
        let staged =
            stage_artifacts(&refs, &dir.path().join("cache"), &dir.path().join("staging"), &mut |_| {});
        Bench { tasks, staged, setup: AgentSetup::default(), dir }
    }

    fn envs(&self) -> PathBuf {
        self.dir.path().join("envs")
    }

    /// A backend whose script is [`shell`], meeting `jobs` trials at each
    /// `gather`.
    fn backend(&self, jobs: usize) -> FakeBackend {
        FakeBackend::new(&self.envs(), shell(Arc::new(Gather::new(jobs))))
    }

    /// Every trial of the tasks × `agents` × `trials`, not yet attempted.
    fn todo(&self, agents: &[AgentEntry], trials: u32) -> Vec<Todo> {
        plan(&self.tasks, agents, trials).into_iter().map(Todo::new).collect()
    }

    /// Runs `todo` to the end and returns every event.
    fn run(&self, run: Run<'_>, todo: Vec<Todo>) -> Vec<EventKind> {
        let input = RunInput {
            tasks: &self.tasks,
            agents: run.agents,
            trials: todo.iter().map(|t| t.key.trial).max().unwrap_or(1),
            jobs: run.jobs,
            retries: run.retries,
            timeout_multiplier: 1.0,
            allow_unlimited: false,
            agent_setup: &self.setup,
            backend: run.backend,
            artifacts: &self.staged,
            cancel: run.cancel,
            progress_every: None,
            cache: None,
        };
        let planned = todo.len();
        let mut events = Vec::new();
        cleanroom_runner::run(&input, Plan { todo, planned }, &mut |e: &Event| {
            events.push(e.kind.clone());
            Ok::<(), ()>(())
        })
        .unwrap();
        events
    }

    /// No environment is left, on the backend's count or on disk.
    fn assert_all_destroyed(&self, backend: &FakeBackend) {
        assert_eq!(backend.live(), 0, "environments left alive");
        let left = std::fs::read_dir(self.envs()).map_or(0, |d| d.count());
        assert_eq!(left, 0, "environment directories left behind");
    }
}

/// How to run: with which backend and agents, how many at once, how many
/// retries, and the token that cancels.
struct Run<'a> {
    backend: &'a FakeBackend,
    agents: &'a [AgentEntry],
    jobs: usize,
    retries: u32,
    cancel: CancelToken,
}

impl<'a> Run<'a> {
    /// One job, one retry, never cancelled.
    fn new(backend: &'a FakeBackend, agents: &'a [AgentEntry]) -> Run<'a> {
        Run { backend, agents, jobs: 1, retries: 1, cancel: CancelToken::new().unwrap() }
    }
}

fn write_task(under: &Path, def: &TaskDef) -> PathBuf {
    let dir = under.join("tasks").join(def.id);
    for sub in ["artifact", "solution", "verify"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let toml = format!(
        "schema_version = 1\n\n[task]\ntitle = \"{}\"\ndomain = \"ai\"\ngpu = {}\n\n\
         [agent]\ntimeout_sec = 3600\n",
        def.id, def.gpu
    );
    std::fs::write(dir.join("task.toml"), toml).unwrap();
    std::fs::write(dir.join("instruction.md"), "Make the experiment run.\n").unwrap();
    std::fs::write(dir.join("artifact/main.py"), "print('hi')\n").unwrap();
    std::fs::write(dir.join("solution/setup.sh"), format!("{}\n", def.setup)).unwrap();
    let checks =
        format!("[[step]]\nname = \"experiment\"\nstage = \"run\"\nrun = \"gather\\n{}\"\n", def.step);
    std::fs::write(dir.join("verify/checks.toml"), checks).unwrap();
    dir
}

fn agent(spec: AgentSpec, name: &str) -> AgentEntry {
    AgentEntry { spec, spec_text: name.into(), id: name.into(), gate: GateMode::Off }
}

fn oracle() -> AgentEntry {
    agent(AgentSpec::Oracle, "oracle")
}

/// Plays bash for the harness's commands, with the few words the tasks
/// here use, in the request's working directory: `touch FILE`, `test -f
/// FILE` (exit 1 without it), `block` (until cancelled), `gather` (waits
/// for the others, see [`Gather`]). The oracle's setup.sh is read from the
/// environment, where the agent crate copied it.
fn shell(gather: Arc<Gather>) -> impl Fn(&ExecRequest, &Path) -> Result<Reply, EnvError> + Send + Sync {
    move |req, root| {
        let inside = |path: &str| root.join(path.trim_start_matches('/'));
        let argv: Vec<&str> = req.argv.iter().map(String::as_str).collect();
        let script = match argv.as_slice() {
            // The verifier's login shell: printing nothing leaves the steps
            // the default environment.
            ["/bin/bash", "-lc", _] => return Ok(Reply::exit(0)),
            ["/bin/bash", setup] => std::fs::read_to_string(inside(setup)).unwrap(),
            ["/bin/bash", "--noprofile", "--norc", "-c", run] => run.to_string(),
            other => panic!("unexpected command {other:?}"),
        };
        let cwd = inside(&req.cwd);
        for line in script.lines() {
            match line.split_whitespace().collect::<Vec<_>>().as_slice() {
                [] => {}
                ["touch", file] => std::fs::write(cwd.join(file), "").unwrap(),
                ["test", "-f", file] if !cwd.join(file).is_file() => return Ok(Reply::exit(1)),
                ["test", "-f", _] => {}
                ["block"] => return Ok(Reply::until_cancelled()),
                ["gather"] => gather.arrive(),
                other => panic!("unexpected line {other:?}"),
            }
        }
        Ok(Reply::exit(0))
    }
}

/// Where `expected` trials must be at the same time before any goes on:
/// proof that that many run at once. Later arrivals pass straight through.
struct Gather {
    expected: usize,
    arrived: Mutex<usize>,
    all_here: Condvar,
}

impl Gather {
    fn new(expected: usize) -> Gather {
        Gather { expected, arrived: Mutex::new(0), all_here: Condvar::new() }
    }

    fn arrive(&self) {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.all_here.notify_all();
        let (arrived, waited) = self
            .all_here
            .wait_timeout_while(arrived, Duration::from_secs(60), |n| *n < self.expected)
            .unwrap();
        assert!(!waited.timed_out(), "only {} of {} trials ran at once", *arrived, self.expected);
    }
}

fn key_of(record: &TrialRecord) -> TrialKey {
    TrialKey { task: record.task.clone(), agent_id: record.agent_id.clone(), trial: record.trial }
}

/// The final records, by trial.
fn finished(events: &[EventKind]) -> HashMap<TrialKey, TrialRecord> {
    let records = events.iter().filter_map(|e| match e {
        EventKind::TrialFinished { record, .. } => Some((key_of(record), record.clone())),
        _ => None,
    });
    records.collect()
}

/// Every event in a short form: `planned 2`, `start fixes #1.1` (trial 1,
/// attempt 1), `failed fixes #1.1 infra_error`, `end fixes #1.2 passed`,
/// `finished` or `interrupted`; phase changes are left out (the runner's
/// event tests check them).
fn story(events: &[EventKind]) -> Vec<String> {
    let line = |word: &str, r: &TrialRecord| {
        format!("{word} {} #{}.{} {}", r.task, r.trial, r.attempt, r.outcome.as_str())
    };
    events
        .iter()
        .filter(|e| !matches!(e, EventKind::PhaseChanged { .. }))
        .map(|e| match e {
            EventKind::Preparing(what) => format!("preparing {what:?}"),
            EventKind::PhaseChanged { .. } => unreachable!("filtered out"),
            EventKind::Progress { .. } => unreachable!("these runs report no progress"),
            EventKind::Planned { trials, .. } => format!("planned {trials}"),
            EventKind::TrialStarted { key, attempt } => {
                format!("start {} #{}.{attempt}", key.task, key.trial)
            }
            EventKind::AttemptFailed { record, .. } => line("failed", record),
            EventKind::TrialFinished { record, .. } => line("end", record),
            EventKind::RunFinished { interrupted: false } => "finished".into(),
            EventKind::RunFinished { interrupted: true } => "interrupted".into(),
        })
        .collect()
}

#[test]
fn every_trial_runs_exactly_once_one_at_a_time_or_four() {
    let tasks =
        [TaskDef { id: "alpha", ..FIXES }, TaskDef { id: "beta", ..FIXES }, TaskDef { id: "gamma", ..FIXES }];
    let bench = Bench::new(&tasks);
    let agents = [oracle(), agent(AgentSpec::Nop, "nop")];
    for jobs in [1, 4] {
        let backend = bench.backend(jobs);
        let todo = bench.todo(&agents, 2);
        let events = bench.run(Run { jobs, ..Run::new(&backend, &agents) }, todo);

        // Planned first, finished last, and between them each trial
        // started once and then ended.
        assert!(
            matches!(events.first(), Some(EventKind::Planned { trials: 12, .. })),
            "{:?}",
            story(&events)
        );
        assert!(
            matches!(events.last(), Some(EventKind::RunFinished { interrupted: false })),
            "{:?}",
            story(&events)
        );
        let mut started = HashSet::new();
        let mut ended = HashSet::new();
        for event in &events[1..events.len() - 1] {
            match event {
                EventKind::TrialStarted { key, .. } => {
                    assert!(started.insert(key.clone()), "{key:?} started twice")
                }
                EventKind::TrialFinished { record, .. } => {
                    let key = key_of(record);
                    assert!(started.contains(&key), "{key:?} ended before it started");
                    assert!(ended.insert(key.clone()), "{key:?} ended twice");
                }
                EventKind::PhaseChanged { key, .. } => {
                    assert!(
                        started.contains(key) && !ended.contains(key),
                        "{key:?} changed phase outside its run"
                    )
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let planned = plan(&bench.tasks, &agents, 2);
        assert_eq!(ended, planned.iter().cloned().collect::<HashSet<_>>());
        for (key, record) in finished(&events) {
            assert_eq!(record.attempt, 1);
            // The oracle makes what the verifier wants; nop does not.
            let expected = if key.agent_id == "oracle" { Outcome::Passed } else { Outcome::Failed };
            assert_eq!(record.outcome, expected, "{key:?}: {:?}", record.error);
        }
        assert_eq!(backend.creates(), 12);
        assert_eq!(backend.most_live(), jobs, "environments alive at once");
        bench.assert_all_destroyed(&backend);
    }
}

/// One SPEC under two gates is two agents of the run, each trial under
/// its own agent's gate (nop has no finish to gate: `unsupported`).
#[test]
fn each_agent_runs_under_its_own_gate() {
    let bench = Bench::new(&[FIXES]);
    let backend = bench.backend(1);
    let agents = [
        AgentEntry { gate: GateMode::Off, ..agent(AgentSpec::Nop, "nop-gate-off") },
        AgentEntry { gate: GateMode::Enforced, ..agent(AgentSpec::Nop, "nop-gate-enforced") },
    ];
    let events = bench.run(Run::new(&backend, &agents), bench.todo(&agents, 1));
    let mut gates: Vec<(String, AppliedGate)> =
        finished(&events).into_values().map(|r| (r.agent_id, r.gate)).collect();
    gates.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        gates,
        [("nop-gate-enforced".into(), AppliedGate::Unsupported), ("nop-gate-off".into(), AppliedGate::Off)]
    );
}

#[test]
fn an_infra_error_is_retried_and_the_next_attempt_kept() {
    let bench = Bench::new(&[FIXES]);
    let backend = bench.backend(1).failing_creates(1);
    let agents = [oracle()];
    let events = bench.run(Run::new(&backend, &agents), bench.todo(&agents, 1));
    assert_eq!(
        story(&events),
        [
            "planned 1",
            "start fixes #1.1",
            "failed fixes #1.1 infra_error",
            "start fixes #1.2",
            "end fixes #1.2 passed",
            "finished"
        ]
    );
    let EventKind::AttemptFailed { record, .. } = &events[2] else { unreachable!() };
    assert!(record.error.as_deref().unwrap().contains("create failed as configured"), "{:?}", record.error);
    assert_eq!(backend.creates(), 2);
    bench.assert_all_destroyed(&backend);
}

#[test]
fn when_the_retries_run_out_the_trial_is_an_infra_error() {
    let bench = Bench::new(&[FIXES]);
    let backend = bench.backend(1).failing_creates(10);
    let agents = [oracle()];
    let events = bench.run(Run { retries: 2, ..Run::new(&backend, &agents) }, bench.todo(&agents, 1));
    assert_eq!(
        story(&events),
        [
            "planned 1",
            "start fixes #1.1",
            "failed fixes #1.1 infra_error",
            "start fixes #1.2",
            "failed fixes #1.2 infra_error",
            "start fixes #1.3",
            "end fixes #1.3 infra_error",
            "finished"
        ]
    );
    assert_eq!(backend.creates(), 3);
}

#[test]
fn a_resumed_trial_numbers_its_attempts_on_from_those_kept() {
    let bench = Bench::new(&[FIXES]);
    let agents = [oracle()];
    let resumed = |first_attempt| {
        let key = plan(&bench.tasks, &agents, 1).remove(0);
        vec![Todo { key, first_attempt, verify_twice: false }]
    };

    // Attempt 1 was kept: attempts 2 and 3 are what is left of 2 retries.
    let backend = bench.backend(1).failing_creates(1);
    let events = bench.run(Run { retries: 2, ..Run::new(&backend, &agents) }, resumed(2));
    assert_eq!(
        story(&events),
        [
            "planned 1",
            "start fixes #1.2",
            "failed fixes #1.2 infra_error",
            "start fixes #1.3",
            "end fixes #1.3 passed",
            "finished"
        ]
    );

    // Two attempts were kept and the retries are used up: one attempt
    // still runs, and its infra error is final.
    let backend = bench.backend(1).failing_creates(1);
    let events = bench.run(Run::new(&backend, &agents), resumed(3));
    assert_eq!(story(&events), ["planned 1", "start fixes #1.3", "end fixes #1.3 infra_error", "finished"]);
}

/// Cancels once two trials block (in the agent or in the verifier) and
/// checks that the run ends at once with no result and nothing left.
fn cancel_while_blocked(task: TaskDef) {
    let bench = Bench::new(&[task]);
    let backend = bench.backend(1);
    let cancel = CancelToken::new().unwrap();
    let agents = [oracle()];
    let events = std::thread::scope(|s| {
        let running = s.spawn(|| {
            let run = Run { jobs: 2, cancel: cancel.clone(), ..Run::new(&backend, &agents) };
            bench.run(run, bench.todo(&agents, 4))
        });
        backend.wait_until_blocked(2);
        cancel.cancel();
        running.join().unwrap()
    });
    // Interrupted, not ended: the commands would block for the task's
    // hour, and end as timed out, had the cancel not reached them.
    let mut story = story(&events);
    story[1..3].sort();
    assert_eq!(story, ["planned 4", "start blocks #1.1", "start blocks #2.1", "interrupted"]);
    assert_eq!(backend.creates(), 2, "no trial starts after the cancel");
    bench.assert_all_destroyed(&backend);
}

#[test]
fn a_cancel_during_the_agent_interrupts_the_trials_and_leaves_no_environment() {
    cancel_while_blocked(TaskDef { id: "blocks", setup: "block", ..FIXES });
}

#[test]
fn a_cancel_during_verification_interrupts_the_trials_and_leaves_no_environment() {
    cancel_while_blocked(TaskDef { id: "blocks", step: "block", ..FIXES });
}

#[test]
fn a_task_whose_needs_the_backend_lacks_is_skipped_without_an_environment() {
    let bench = Bench::new(&[TaskDef { id: "cpu", ..FIXES }, TaskDef { id: "gpu", gpu: true, ..FIXES }]);
    let backend = bench.backend(1).lacking("gpus");
    let agents = [oracle()];
    let events = bench.run(Run::new(&backend, &agents), bench.todo(&agents, 1));
    assert_eq!(
        story(&events),
        [
            "planned 2",
            "start cpu #1.1",
            "end cpu #1.1 passed",
            "start gpu #1.1",
            "end gpu #1.1 skipped",
            "finished"
        ]
    );
    let gpu = finished(&events).into_iter().find(|(k, _)| k.task == "gpu").unwrap().1;
    assert_eq!(gpu.skip_reason.as_deref(), Some("gpus: the fake backend has no gpus"));
    let files = events
        .iter()
        .find_map(|e| match e {
            EventKind::TrialFinished { record, files, .. } if record.task == "gpu" => Some(files),
            _ => None,
        })
        .unwrap();
    let record = &gpu;
    assert!(record.limits.is_none() && files.is_empty());
    assert_eq!(backend.creates(), 1, "only the cpu task made an environment");
}

#[test]
fn a_failing_verify_step_fails_the_trial_and_a_passing_one_passes_it() {
    let bench = Bench::new(&[FIXES, TaskDef { id: "misses", setup: "touch artifact/other", ..FIXES }]);
    let backend = bench.backend(1);
    let agents = [oracle()];
    let events = bench.run(Run::new(&backend, &agents), bench.todo(&agents, 1));
    let records = finished(&events);
    let record = |task: &str| &records[&TrialKey { task: task.into(), agent_id: "oracle".into(), trial: 1 }];

    let passed = record("fixes");
    assert_eq!((passed.outcome, passed.class), (Outcome::Passed, None));
    let verdict = passed.verdict.as_ref().unwrap();
    assert!(verdict.passed);
    assert_eq!(verdict.steps[0].status, StepStatus::Passed);
    assert_eq!(
        passed.changes.as_ref().map(|c| c.added),
        Some(1),
        "the oracle's file, as the manifest saw it"
    );

    let failed = record("misses");
    assert_eq!((failed.outcome, failed.class), (Outcome::Failed, Some(FailureClass::SelfStop)));
    let verdict = failed.verdict.as_ref().unwrap();
    assert!(!verdict.passed);
    assert_eq!((verdict.steps[0].status, verdict.steps[0].exit_code), (StepStatus::Failed, Some(1)));
    bench.assert_all_destroyed(&backend);
}
