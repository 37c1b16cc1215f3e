//! The mount keeper: one small process per environment that owns, in a
//! private mount namespace, the loop-mounted ext4 disk (the disk limit) and
//! the overlayfs root on top of it. The rootless sandbox cannot loop-mount:
//! its upper layer is a plain directory of the host's. Its stdin is a pipe from the harness;
//! when the harness closes it (or dies), the keeper exits and the kernel
//! unmounts everything with its namespace: no mount can outlive a run.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::error::EnvError;
use crate::sandbox::tool;

/// The shell script the keeper runs; `$1` disk image (empty: none), `$2`
/// its mount point (or the directory that holds the upper layer), `$3` the
/// image's root (lower layer), `$4` the merged root, `$5` more overlay
/// options.
const SCRIPT: &str = r#"set -e
if [ -n "$1" ]; then mount -o loop,nosuid,nodev "$1" "$2"; fi
mkdir -p "$2/upper" "$2/work"
mount -t overlay overlay -o "lowerdir=$3,upperdir=$2/upper,workdir=$2/work$5" "$4"
echo ready
exec cat >/dev/null"#;

pub(crate) struct Keeper {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The merged root as the keeper's mount namespace sees it.
    pub root_path: PathBuf,
}

impl Keeper {
    /// Mounts `disk_image` at `disk_mount` and the overlay root at
    /// `merged`. Without a disk image (the rootless sandbox) `disk_mount`
    /// is a plain directory and the overlay keeps its attributes as a user
    /// namespace may.
    pub fn start(
        disk_image: Option<&Path>,
        disk_mount: &Path,
        lower: &Path,
        merged: &Path,
    ) -> Result<Keeper, EnvError> {
        for p in disk_image.into_iter().chain([disk_mount, lower, merged]) {
            let s = p.to_string_lossy();
            if s.contains(',') || s.contains(':') {
                return Err(EnvError::Phase(format!(
                    "path {s} contains ',' or ':', which overlayfs options cannot hold"
                )));
            }
        }
        let mut cmd = Command::new(tool("unshare"));
        cmd.args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c", SCRIPT, "keeper"])
            .arg(disk_image.unwrap_or(Path::new("")))
            .arg(disk_mount)
            .arg(lower)
            .arg(merged)
            // In a user namespace overlayfs keeps its own attributes as
            // user.overlay.* (trusted.* needs the host's CAP_SYS_ADMIN).
            .arg(if disk_image.is_none() { ",userxattr" } else { "" })
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // The keeper stays outside the environment's cgroup: killing what is
        // left in an environment must not take its file system away.
        // SAFETY: the closure only makes a raw system call.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| EnvError::io("start the mount keeper (unshare)", e))?;
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        if line.trim() != "ready" {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(EnvError::Command {
                program: "mount (environment disk and overlay)".into(),
                detail: err.trim().to_string(),
            });
        }
        let root_path = PathBuf::from(format!("/proc/{}/root", child.id()))
            .join(merged.strip_prefix("/").unwrap_or(merged));
        Ok(Keeper { stdin: child.stdin.take(), child, root_path })
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Ends the keeper; its mount namespace, and with it every mount, goes.
    pub fn stop(&mut self) -> Result<(), EnvError> {
        self.stdin.take();
        let _ = self.child.kill();
        self.child.wait().map_err(|e| EnvError::io("wait for the mount keeper", e))?;
        Ok(())
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
