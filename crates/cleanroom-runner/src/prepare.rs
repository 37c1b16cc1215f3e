//! Before the trials: the backend sweeps what runs that died left, makes
//! every image the tasks name ready, and every task's artifact is staged on
//! the host. Each step is reported as a `Preparing` event.

use std::path::{Path, PathBuf};

use cleanroom_env::{Backend, EnvError, PreparedImage};
use cleanroom_task::Task;

use crate::artifacts::{stage_artifacts, Staged};
use crate::event::{Event, EventKind, Preparation};

/// What the trials run from. Dropping it removes the staged artifacts.
#[derive(Debug)]
pub struct Prepared {
    /// Every image the tasks name, with its digest, for the record.
    pub images: Vec<PreparedImage>,
    pub artifacts: Staged,
    staging: PathBuf,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// Prepares `tasks` on `backend`. Artifacts are fetched through `cache`
/// (kept between runs) into `staging`, which is this run's own. An artifact
/// that cannot be had is no error here: its task's trials end in
/// infra_error, saying why.
pub fn prepare(
    backend: &dyn Backend,
    tasks: &[Task],
    cache: &Path,
    staging: PathBuf,
    report: &mut dyn FnMut(&Event),
) -> Result<Prepared, EnvError> {
    let mut preparing = |step| report(&Event::now(EventKind::Preparing(step)));
    let swept = backend.sweep()?;
    if !swept.environments.is_empty() {
        preparing(Preparation::Swept { environments: swept.environments.len() });
    }
    let mut names: Vec<&str> = tasks.iter().map(|t| t.spec.environment.image.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let images =
        backend.prepare_images(&names, &mut |line| preparing(Preparation::Image(line.to_string())))?;
    let refs: Vec<&Task> = tasks.iter().collect();
    let artifacts = stage_artifacts(&refs, cache, &staging, &mut |task| {
        preparing(Preparation::Artifact { task: task.id.clone(), source: task.spec.artifact.source.kind() })
    });
    Ok(Prepared { images, artifacts, staging })
}
