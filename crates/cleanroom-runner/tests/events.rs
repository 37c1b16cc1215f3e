//! The event stream of a real run: the sandbox backend, nop on a bash-only
//! task made on the fly, two trials at once. Needs root and the base image
//! (built on first use).

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use cleanroom_env::{image, open_backend, Backend, CancelToken};
use cleanroom_runner::{
    prepare, run, AgentEntry, AgentSetup, Event, EventKind, NothingKept, Phase, Plan, Preparation, RunInput,
    Staged,
};
use cleanroom_store::{FailureClass, Outcome};
use cleanroom_task::{load_task, Task};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cleanroom-runner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Deployed means /opt/deployed exists: nop fails it.
fn write_task(dir: &Path) {
    for sub in ["artifact", "solution", "verify"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(
        dir.join("task.toml"),
        "schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"systems\"\n[environment]\ndisk_mb = 64\n[agent]\ntimeout_sec = 15\n",
    )
    .unwrap();
    std::fs::write(dir.join("instruction.md"), "Deploy it.\n").unwrap();
    std::fs::write(dir.join("artifact/run.sh"), "echo ran\n").unwrap();
    std::fs::write(dir.join("solution/setup.sh"), "touch /opt/deployed\n").unwrap();
    std::fs::write(
        dir.join("verify/checks.toml"),
        "[[step]]\nname = \"s\"\nrun = \"test -f /opt/deployed\"\n",
    )
    .unwrap();
}

/// One trial of each task × agent, one at a time, no retry, no progress.
fn one_trial<'a>(
    tasks: &'a [Task],
    agents: &'a [AgentEntry],
    setup: &'a AgentSetup,
    backend: &'a dyn Backend,
    artifacts: &'a Staged,
) -> RunInput<'a> {
    RunInput {
        tasks,
        agents,
        trials: 1,
        jobs: 1,
        retries: 0,
        timeout_multiplier: 1.0,
        allow_unlimited: false,
        agent_setup: setup,
        backend,
        artifacts,
        cancel: CancelToken::new().unwrap(),
        progress_every: None,
        cache: None,
    }
}

/// What trial `n` went through, in order.
fn story(events: &[Event], n: u32) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TrialStarted { key, attempt } if key.trial == n => Some(format!("started {attempt}")),
            EventKind::PhaseChanged { key, phase, .. } if key.trial == n => Some(format!("{phase:?}")),
            EventKind::AttemptFailed { record, .. } if record.trial == n => Some("failed".into()),
            EventKind::TrialFinished { record, .. } if record.trial == n => Some("finished".into()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_real_run_reports_each_trial_phase_by_phase() {
    let root = temp_dir("events");
    write_task(&root.join("deploy"));
    let tasks = [load_task(&root.join("deploy")).unwrap()];
    let backend = open_backend("sandbox", &image::cleanroom_home(), &Default::default()).unwrap();
    let mut events = Vec::new();
    let prepared = prepare(backend.as_ref(), &tasks, &root.join("cache"), root.join("staging"), &mut |e| {
        events.push(e.clone())
    })
    .unwrap();
    assert!(root.join("staging/deploy").is_dir());
    let agents = [AgentEntry {
        spec: cleanroom_agent::AgentSpec::Nop,
        spec_text: "nop".into(),
        id: "nop".into(),
        gate: cleanroom_agent::GateMode::Off,
    }];
    let setup = AgentSetup::default();
    let input = RunInput {
        trials: 2,
        jobs: 2,
        ..one_trial(&tasks, &agents, &setup, backend.as_ref(), &prepared.artifacts)
    };
    let ran = run(&input, Plan::resume(&input, &NothingKept), &mut |e| -> Result<(), Infallible> {
        events.push(e.clone());
        Ok(())
    });
    let Ok(()) = ran;
    drop(prepared);
    assert!(!root.join("staging").exists(), "the staged artifacts go with what was prepared");

    let planned =
        events.iter().position(|e| matches!(e.kind, EventKind::Planned { trials: 2, of: 2 })).unwrap();
    assert!(events[..planned].iter().all(|e| matches!(e.kind, EventKind::Preparing(_))), "{events:#?}");
    let artifact = Preparation::Artifact { task: "deploy".into(), source: "dir" };
    assert!(events[..planned].iter().any(|e| matches!(&e.kind, EventKind::Preparing(p) if *p == artifact)));
    assert!(matches!(events.last().unwrap().kind, EventKind::RunFinished { interrupted: false }));
    assert!(events.windows(2).all(|w| w[0].timestamp <= w[1].timestamp), "{events:#?}");
    for n in 1..=2 {
        assert_eq!(
            story(&events, n),
            ["started 1", &format!("{:?}", Phase::Agent), &format!("{:?}", Phase::Verify), "finished"]
        );
    }
    for e in &events {
        if let EventKind::TrialFinished { record, files, second_verdict } = &e.kind {
            assert_eq!(
                (record.outcome, record.class),
                (Outcome::Failed, Some(FailureClass::SelfStop)),
                "{record:?}"
            );
            assert!(files.iter().any(|f| f.name == "verify.log"));
            assert!(second_verdict.is_none());
            assert!(record.limits.is_some(), "a real environment ran it");
        }
    }
}

#[test]
fn a_long_trial_reports_its_phase_time_and_the_agents_last_line_while_it_runs() {
    let root = temp_dir("progress");
    write_task(&root.join("deploy"));
    let tasks = [load_task(&root.join("deploy")).unwrap()];
    let backend = open_backend("sandbox", &image::cleanroom_home(), &Default::default()).unwrap();
    let prepared =
        prepare(backend.as_ref(), &tasks, &root.join("cache"), root.join("staging"), &mut |_| {}).unwrap();
    let script = root.join("slow.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\necho 'Collecting numpy'\necho 'Building wheel for numpy'\nsleep 600\n",
    )
    .unwrap();
    let agents = [AgentEntry {
        spec: cleanroom_agent::AgentSpec::Script(script.clone()),
        spec_text: format!("script:{}", script.display()),
        id: "slow".into(),
        gate: cleanroom_agent::GateMode::Off,
    }];
    let setup = AgentSetup::default();
    let input = RunInput {
        progress_every: Some(std::time::Duration::from_millis(100)),
        ..one_trial(&tasks, &agents, &setup, backend.as_ref(), &prepared.artifacts)
    };
    let mut seen = Vec::new();
    let ran = run(&input, Plan::resume(&input, &NothingKept), &mut |e| -> Result<(), Infallible> {
        if let EventKind::Progress { phase, elapsed, last_line, .. } = &e.kind {
            seen.push((*phase, *elapsed, last_line.clone()));
            // What the test waits for: then the run is stopped.
            if last_line.as_deref() == Some("Building wheel for numpy") {
                input.cancel.cancel();
            }
        }
        Ok(())
    });
    let Ok(()) = ran;
    let (phase, elapsed, _) = seen.last().expect("progress while the agent ran").clone();
    assert_eq!(seen.last().unwrap().2.as_deref(), Some("Building wheel for numpy"), "{seen:?}");
    assert_eq!(phase, Some(Phase::Agent));
    assert!(elapsed >= std::time::Duration::from_millis(100), "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1), "elapsed only grows: {seen:?}");
}
