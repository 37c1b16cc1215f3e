//! Removing what a dead run left of its machines: QEMU dies with the
//! harness (a parent-death signal), so only the environment directories
//! (disk overlay, socket) can remain.

use std::path::Path;

use crate::backend::SweepReport;
use crate::error::EnvError;
use crate::sandbox::sweep::Owner;

pub fn sweep(envs: &Path) -> Result<SweepReport, EnvError> {
    let mut report = SweepReport::default();
    for entry in std::fs::read_dir(envs).into_iter().flatten().flatten() {
        let dir = entry.path();
        if Owner::read(&dir).is_some_and(|owner| owner.is_alive()) {
            continue;
        }
        // An owner file not written yet: the id names its maker.
        let id = entry.file_name().to_string_lossy().into_owned();
        if Owner::read(&dir).is_none() && crate::sandbox::sweep::owner_in_id_alive(&id) {
            continue;
        }
        std::fs::remove_dir_all(&dir).map_err(|e| EnvError::io(format!("removing {}", dir.display()), e))?;
        report.environments.push(id);
    }
    Ok(report)
}
