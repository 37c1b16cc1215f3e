//! On a host with cgroup v2 and systemd, the rootless sandbox's limits are
//! enforced in a cgroup subtree that the user's systemd delegates
//! (cleanroom_env's delegation.rs). An ordinary user's command that is not
//! in one yet runs itself again in a new scope of the user's systemd, as
//! `systemd-run --user --scope -p Delegate=yes` makes it (the same
//! process: systemd-run moves itself there and then runs the command).
//!
//! Not inside a Slurm job: its processes stay in the job's cgroup, where
//! the cluster accounts for them.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use cleanroom_env::sandbox::{host_has_cgroup_v2, in_delegated_cgroup};

use crate::error::CliError;

/// Set in the command that runs in the new scope, so it asks no further.
const IN_SCOPE: &str = "CLEANROOM_IN_USER_SCOPE";

/// Runs this command again in a delegated scope where one is to be had;
/// returns where none is, or this command is in one already.
pub fn run_in_delegated_scope_if_possible() -> Result<(), CliError> {
    let asked = std::env::var_os(IN_SCOPE).is_some();
    let in_job = std::env::var_os("SLURM_JOB_ID").is_some();
    if asked || in_job || !host_has_cgroup_v2() || in_delegated_cgroup() {
        return Ok(());
    }
    let Some(systemd_run) = ["/usr/bin/systemd-run", "/bin/systemd-run"]
        .into_iter()
        .map(std::path::Path::new)
        .find(|p| p.exists())
    else {
        return Ok(());
    };
    let scope = |cmd: &mut Command| {
        cmd.args(["--user", "--scope", "--quiet", "--collect", "--property=Delegate=yes", "--"]);
    };
    // Whether the user's systemd answers at all (no user session: none).
    let mut probe = Command::new(systemd_run);
    scope(&mut probe);
    let answered = probe
        .arg("true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !answered {
        return Ok(());
    }
    let exe =
        std::env::current_exe().map_err(|e| CliError::Internal(format!("finding this program: {e}")))?;
    let mut cmd = Command::new(systemd_run);
    scope(&mut cmd);
    let err = cmd.arg(exe).args(std::env::args_os().skip(1)).env(IN_SCOPE, "1").exec();
    Err(CliError::Internal(format!("running {}: {err}", systemd_run.display())))
}
