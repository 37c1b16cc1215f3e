//! Each task's artifact is fetched once per run into a host staging
//! directory (overlay applied), with a manifest of every file: the original
//! against which the agent's changes and tampering are judged.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cleanroom_env::Manifest;
use cleanroom_task::{materialize_artifact, ArtifactRecord, Task};

#[derive(Debug)]
pub struct StagedArtifact {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub record: ArtifactRecord,
}

/// Task id → its staged artifact, or why it could not be had (the task's
/// trials then end as infra_error with that reason).
pub type Staged = HashMap<String, Result<StagedArtifact, String>>;

pub fn stage_artifacts(
    tasks: &[&Task],
    cache: &Path,
    staging: &Path,
    staging_task: &mut dyn FnMut(&Task),
) -> Staged {
    tasks
        .iter()
        .map(|task| {
            staging_task(task);
            (task.id.clone(), stage_one(task, cache, &staging.join(&task.id)))
        })
        .collect()
}

fn stage_one(task: &Task, cache: &Path, dir: &Path) -> Result<StagedArtifact, String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let record =
        materialize_artifact(task, cache, dir).map_err(|e| format!("artifact of {}: {e}", task.id))?;
    let manifest = Manifest::of_host_dir(dir).map_err(|e| format!("manifest of {}: {e}", dir.display()))?;
    Ok(StagedArtifact { dir: dir.to_path_buf(), manifest, record })
}
