//! The seccomp profile of a container's processes: the sandbox's filter
//! (sandbox/seccomp.rs) written as the engine's JSON profile, in place of
//! the engine's own (Podman's lets the keyring and io_uring through).
//! Podman's API takes the profile as a file's path, written once under
//! cleanroom's home; Docker's takes the profile itself.

use std::path::Path;

use serde_json::{json, Value};

use crate::error::EnvError;
use crate::sandbox::seccomp::DENIED;

/// The profile: every call the sandbox denies fails with EPERM, new user
/// namespaces too (by their flag, in `unshare` and `clone`), `clone3`
/// with ENOSYS (its flags are out of a filter's reach; the C library falls
/// back to `clone`), and only x86-64's own calls pass at all.
fn profile() -> Value {
    let denied: Vec<&str> = DENIED.iter().map(|(name, _)| *name).collect();
    let new_user = libc::CLONE_NEWUSER as u64;
    let flag = json!([{ "index": 0, "value": new_user, "valueTwo": new_user, "op": "SCMP_CMP_MASKED_EQ" }]);
    json!({
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [
            { "names": denied, "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM },
            { "names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS },
            { "names": ["unshare", "clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM, "args": flag },
        ],
    })
}

/// The `SecurityOpt` that gives the engine the profile: for Podman its
/// file, written under `home` (replacing what an older build wrote); for
/// Docker the profile itself.
pub(crate) fn security_opt(home: &Path, podman: bool) -> Result<String, EnvError> {
    let profile = profile().to_string();
    if !podman {
        return Ok(format!("seccomp={profile}"));
    }
    let dir = home.join("container");
    let path = dir.join("seccomp.json");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, profile))
        .map_err(|e| EnvError::io(path.display().to_string(), e))?;
    Ok(format!("seccomp={}", path.display()))
}
