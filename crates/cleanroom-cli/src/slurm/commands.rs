//! Slurm's own commands, as a user types them: sbatch to submit a job
//! array, squeue for the state of its elements, scancel to end them.

use std::path::Path;
use std::process::Command;

/// A job array element's state, as squeue reports it; None when Slurm no
/// longer knows the element (it ended a while ago).
pub struct ElementState {
    pub state: String,
    pub node: String,
}

impl ElementState {
    /// Ended, one way or another (squeue's long state names).
    pub fn ended(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING" | "SUSPENDED" | "REQUEUED" | "RESIZING"
        )
    }
}

/// Submits `script` as a job with `options` (an `--array` among them),
/// its elements' output in `log_dir`; returns the job id.
pub fn sbatch(options: &[String], script: &str, log_dir: &Path) -> Result<String, String> {
    let mut cmd = Command::new("sbatch");
    cmd.args(["--parsable", "--no-requeue"])
        .arg(format!("--output={}/%A_%a.out", log_dir.display()))
        .args(options)
        .args(["--wrap", script]);
    let out = cmd.output().map_err(|e| format!("sbatch: {e} (is Slurm's client installed?)"))?;
    if !out.status.success() {
        return Err(format!("sbatch: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    // `JOBID` or `JOBID;CLUSTER`.
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("sbatch printed no job id: `{}`", text.trim()));
    }
    Ok(id)
}

/// The state of element `index` of job `job`.
pub fn element_state(job: &str, index: usize) -> Result<Option<ElementState>, String> {
    let out = Command::new("squeue")
        .args(["-h", "--states=all", "-o", "%T|%N", "-j"])
        .arg(format!("{job}_{index}"))
        .output()
        .map_err(|e| format!("squeue: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // An element Slurm has forgotten is "Invalid job id" (exit 1).
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        return if said.contains("Invalid job id") {
            Ok(None)
        } else {
            Err(format!("squeue: {}", said.trim()))
        };
    }
    Ok(text.lines().next().and_then(|line| {
        let (state, node) = line.split_once('|')?;
        Some(ElementState { state: state.trim().to_string(), node: node.trim().to_string() })
    }))
}

/// Ends element `index` of job `job` (best effort: it may have ended).
pub fn scancel(job: &str, index: usize) {
    let _ = Command::new("scancel").arg(format!("{job}_{index}")).output();
}
