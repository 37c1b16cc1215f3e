//! Host directories shown in a phase on a host (an external agent's
//! installation): the harness copies each onto the host's disk before the
//! phase (streamed through the connection, never through anything the
//! phase runs), the host's agent binds the copy read-only where the phase
//! expects it, and the copy goes when the phase is over, so that the
//! env-diff sees none of it. The phase's root can remount the bind and
//! write the copy (it is root of the host): what it changes is this
//! host's copy, for this phase, never the harness's directory.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::error::EnvError;
use crate::ssh::transport::{quote, Connection};

/// How long copying one directory may take (an agent's installation is up
/// to a couple of GB).
pub const COPY_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long removing the copies may take.
const REMOVE_TIMEOUT: Duration = Duration::from_secs(600);

/// Copies `dir` into a fresh directory of the host's (owners, modes and
/// times kept); returns that directory's path there.
pub fn copy(conn: &Connection, sudo: &str, dir: &Path) -> Result<String, EnvError> {
    let script = format!(
        "set -e\nd=$({sudo}mktemp -d /var/tmp/cleanroom-shown.XXXXXX)\n\
         {sudo}tar -x -p --numeric-owner -f - -C \"$d\" || {{ {sudo}rm -rf \"$d\"; exit 1; }}\necho \"$d\""
    );
    let mut tar = Command::new(crate::sandbox::tool("tar"));
    tar.arg("-C").arg(dir).args(["--numeric-owner", "-c", "-f", "-", "."]);
    let out = conn.run_fed(&script, tar, COPY_TIMEOUT)?;
    let copied = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !copied.starts_with("/var/tmp/cleanroom-shown.") {
        return Err(EnvError::Command {
            program: format!("copying {} to {}", dir.display(), conn.target().name),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(copied)
}

/// Removes the copies [`copy`] made.
pub fn remove(conn: &Connection, sudo: &str, copies: &[String]) -> Result<(), EnvError> {
    if copies.is_empty() {
        return Ok(());
    }
    let paths: Vec<String> = copies.iter().map(|c| quote(c)).collect();
    conn.text(&format!("{sudo}rm -rf --one-file-system -- {}", paths.join(" ")), REMOVE_TIMEOUT).map(|_| ())
}
