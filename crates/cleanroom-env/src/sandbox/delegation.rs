//! The rootless sandbox's limits: a cgroup v2 subtree that the host
//! delegates to the user (a systemd scope or service with `Delegate=yes`;
//! the `cleanroom` command asks the user's systemd for one,
//! docs/rootless.md), where its environments' cgroups go.
//!
//! cgroup v2 enables a controller only for a cgroup's children, and only
//! while the cgroup itself holds no process. So the harness moves every
//! process of the delegated cgroup into a leaf of its own, enables the
//! controllers, and makes environments' cgroups under a sibling:
//!
//! ```text
//! <delegated>/               memory, pids and cpu enabled for its children
//!   cleanroom-harness/       the harness, and what it runs outside environments
//!   cleanroom/               all environments together (pids.max)
//!     <environment id>/      one environment's limits
//! ```

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::cgroup::{self, Layout, PARENT, ROOT};

/// The leaf the harness's own processes move to.
const HARNESS: &str = "cleanroom-harness";

/// Why environments get no cgroup on a host with cgroup v1.
const ON_V1: &str = "the rootless sandbox makes no cgroups on a cgroup v1 host (docs/rootless.md)";

/// Why environments get no cgroup where none is delegated.
const NOT_DELEGATED: &str = "no cgroup v2 subtree is delegated to this user (docs/rootless.md: \
     on a host with systemd, `cleanroom` asks the user's systemd for one)";

/// The parent of this process's environments' cgroups, its subtree made
/// ready once per process; or why there is none.
pub(crate) fn environments_parent() -> Result<PathBuf, String> {
    static PARENT_DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PARENT_DIR
        .get_or_init(|| {
            if cgroup::layout() != Layout::V2 {
                return Err(ON_V1.to_string());
            }
            let delegated = delegated_cgroup().ok_or_else(|| NOT_DELEGATED.to_string())?;
            prepare(&delegated)
                .map_err(|e| format!("preparing the delegated cgroup {}: {e}", delegated.display()))
        })
        .clone()
}

/// Whether this process is in a cgroup v2 subtree it may manage: where it
/// is not, the `cleanroom` command asks systemd for one.
pub fn in_delegated_cgroup() -> bool {
    delegated_cgroup().is_some()
}

/// Whether the host has one unified cgroup v2 hierarchy.
pub fn host_has_cgroup_v2() -> bool {
    cgroup::layout() == Layout::V2
}

/// This process's cgroup (the cgroup its harness leaf is in, once moved
/// there), if this user may manage it and it offers memory and pids.
fn delegated_cgroup() -> Option<PathBuf> {
    if cgroup::layout() != Layout::V2 {
        return None;
    }
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let mut dir = Path::new(ROOT).join(path.trim_start_matches('/'));
    if dir.file_name().is_some_and(|n| n == HARNESS) {
        dir.pop();
    }
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    let offered: Vec<&str> = controllers.split_whitespace().collect();
    let manageable = ["", "cgroup.procs", "cgroup.subtree_control"].iter().all(|f| writable(&dir.join(f)));
    (manageable && offered.contains(&"memory") && offered.contains(&"pids")).then_some(dir)
}

/// access(2) for writing: what the kernel will allow this process, in its
/// user namespace (the cgroup files of the host's root are not the
/// namespace's, whatever its capabilities).
fn writable(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Moves the delegated cgroup's processes into the harness's leaf, enables
/// the controllers, and makes the environments' parent.
fn prepare(delegated: &Path) -> std::io::Result<PathBuf> {
    let harness = delegated.join(HARNESS);
    std::fs::create_dir_all(&harness)?;
    let offered = std::fs::read_to_string(delegated.join("cgroup.controllers"))?;
    let enable: Vec<&str> = cgroup::CONTROLLERS
        .split_whitespace()
        .filter(|c| offered.split_whitespace().any(|o| o == &c[1..]))
        .collect();
    let enable = enable.join(" ");
    // A process that a moved one forks meanwhile may land in the delegated
    // cgroup itself: enabling fails (EBUSY) until it is moved too.
    let mut last = None;
    for _ in 0..100 {
        let procs = std::fs::read_to_string(delegated.join("cgroup.procs"))?;
        for pid in procs.lines().filter(|l| !l.is_empty()) {
            match std::fs::write(harness.join("cgroup.procs"), pid) {
                // It ended meanwhile.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                other => other?,
            }
        }
        match std::fs::write(delegated.join("cgroup.subtree_control"), &enable) {
            Ok(()) => {
                last = None;
                break;
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    if let Some(e) = last {
        return Err(e);
    }
    let parent = delegated.join(PARENT);
    std::fs::create_dir_all(&parent)?;
    std::fs::write(parent.join("cgroup.subtree_control"), &enable)?;
    std::fs::write(parent.join("pids.max"), cgroup::all_environments_pids_max().to_string())?;
    Ok(parent)
}
