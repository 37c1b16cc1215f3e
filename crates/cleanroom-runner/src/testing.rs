//! What the runner's unit tests share: the fake backend, set to make no
//! environments, and a task written on the fly. A trial on them never gets
//! an environment: it ends in infra_error (or is skipped) before one is
//! made, which is all that tests of scheduling and events need.

use std::path::PathBuf;
use std::sync::OnceLock;

use cleanroom_agent::{AgentSpec, GateMode};
use cleanroom_env::fake::FakeBackend;
use cleanroom_env::CancelToken;
use cleanroom_task::{load_task, Task};

use crate::{AgentEntry, AgentSetup, RunInput, Staged};

/// The fake backend, every create of which fails: no trial gets an
/// environment.
fn no_machines() -> &'static FakeBackend {
    static BACKEND: OnceLock<FakeBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        FakeBackend::new(&temp_dir("no-machines"), |_, _| unreachable!("no environment is ever made"))
            .failing_creates(u32::MAX)
    })
}

/// A directory of this test process, empty.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cleanroom-runner-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A task `id` in `root`, with a plain directory as its artifact.
pub fn task(root: &std::path::Path, id: &str) -> Task {
    let dir = root.join(id);
    for sub in ["artifact", "solution", "verify"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let toml = "schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"systems\"\n[agent]\ntimeout_sec = 10\n";
    std::fs::write(dir.join("task.toml"), toml).unwrap();
    std::fs::write(dir.join("instruction.md"), "Deploy it.\n").unwrap();
    std::fs::write(dir.join("artifact/run.sh"), "echo ran\n").unwrap();
    std::fs::write(dir.join("solution/setup.sh"), "touch /opt/deployed\n").unwrap();
    std::fs::write(
        dir.join("verify/checks.toml"),
        "[[step]]\nname = \"s\"\nrun = \"test -f /opt/deployed\"\n",
    )
    .unwrap();
    load_task(&dir).unwrap()
}

pub fn nop() -> AgentEntry {
    AgentEntry { spec: AgentSpec::Nop, spec_text: "nop".into(), id: "nop".into(), gate: GateMode::Off }
}

/// One trial of each task × agent, two at a time, one retry, on a
/// backend that makes no environments.
pub fn input<'a>(
    tasks: &'a [Task],
    agents: &'a [AgentEntry],
    setup: &'a AgentSetup,
    artifacts: &'a Staged,
) -> RunInput<'a> {
    RunInput {
        tasks,
        agents,
        trials: 1,
        jobs: 2,
        retries: 1,
        timeout_multiplier: 1.0,
        allow_unlimited: false,
        agent_setup: setup,
        backend: no_machines(),
        artifacts,
        cancel: CancelToken::new().unwrap(),
        progress_every: None,
        cache: None,
    }
}
