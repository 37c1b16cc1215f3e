//! What the runner's unit tests share: a backend that makes no
//! environments, and a task written on the fly. A trial on them never gets
//! an environment: it ends in infra_error (or is skipped) before one is
//! made, which is all that tests of scheduling and events need.

use std::path::PathBuf;

use cleanroom_agent::AgentSpec;
use cleanroom_env::{
    Backend, CancelToken, EnvError, EnvSpec, Environment, Needs, PreparedImage, SweepReport, Unmet,
};
use cleanroom_task::{load_task, Task};

use crate::{AgentEntry, AgentSetup, RunInput, Staged};

pub struct NoMachines;

impl Backend for NoMachines {
    fn name(&self) -> &'static str {
        "no-machines"
    }

    fn unmet(&self, _: &Needs) -> Vec<Unmet> {
        Vec::new()
    }

    fn prepare_images(&self, _: &[&str], _: &mut dyn FnMut(&str)) -> Result<Vec<PreparedImage>, EnvError> {
        Ok(Vec::new())
    }

    fn sweep(&self) -> Result<SweepReport, EnvError> {
        Ok(SweepReport::default())
    }

    fn create(&self, _: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        Err(EnvError::Phase("this backend makes no environments".into()))
    }
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
    AgentEntry { spec: AgentSpec::Nop, spec_text: "nop".into(), id: "nop".into() }
}

/// One trial of each task × agent, two at a time, one retry, on
/// [`NoMachines`].
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
        backend: &NoMachines,
        artifacts,
        cancel: CancelToken::new().unwrap(),
    }
}
