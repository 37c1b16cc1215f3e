//! What the agent gets (TASK_FORMAT.md): the instruction, the artifact, the
//! paper, a clean environment, working directory /workspace.

use std::path::Path;

use cleanroom_env::{EnvError, Environment};
use cleanroom_task::Task;

pub const WORKSPACE: &str = "/workspace";

/// The agent's process environment: nothing of the host but the proxy
/// variables, which the environment's network may need.
pub fn agent_environment() -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_string(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string()),
        ("HOME".to_string(), "/root".to_string()),
        ("LANG".to_string(), "C.UTF-8".to_string()),
        ("TERM".to_string(), "xterm".to_string()),
    ];
    for key in ["http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"] {
        if let Ok(value) = std::env::var(key) {
            env.push((key.to_string(), value));
        }
    }
    env
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> EnvError {
    move |e| EnvError::io(what, e)
}

/// Lays the workspace out: /workspace/INSTRUCTION.md, the artifact (staged
/// on the host, overlay already applied) at `artifact.dest`, the paper at
/// /workspace/paper/.
pub fn populate_workspace(env: &dyn Environment, task: &Task, artifact: &Path) -> Result<(), EnvError> {
    let root = env.files();
    root.create_dir_all(WORKSPACE, 0o755).map_err(io(WORKSPACE.into()))?;
    let instruction = format!("{WORKSPACE}/INSTRUCTION.md");
    root.write_file(&instruction, task.agent_instruction().as_bytes(), 0o644).map_err(io(instruction))?;
    let dest = &task.spec.artifact.dest;
    root.create_dir_all(dest, 0o755).map_err(io(dest.clone()))?;
    root.copy_tree_in(artifact, dest, &|_| false).map_err(io(format!("copy the artifact to {dest}")))?;
    if let Some(paper) = task.paper_dir() {
        let to = format!("{WORKSPACE}/paper");
        root.create_dir_all(&to, 0o755).map_err(io(to.clone()))?;
        root.copy_tree_in(&paper, &to, &|_| false).map_err(io(format!("copy the paper to {to}")))?;
    }
    Ok(())
}

/// 128 random bits as hex, for paths the agent cannot predict.
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    // SAFETY: the buffer is valid for its length.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    assert_eq!(n, bytes.len() as isize, "getrandom failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Copies a host directory to a fresh random path in the environment
/// (outside the workspace) and returns that path.
pub(crate) fn copy_in_private(env: &dyn Environment, from: &Path, kind: &str) -> Result<String, EnvError> {
    let dir = format!("/tmp/.cleanroom-{kind}-{}", random_hex());
    env.files().create_dir_all(&dir, 0o700).map_err(io(dir.clone()))?;
    env.files().copy_tree_in(from, &dir, &|_| false).map_err(io(format!("copy {} in", from.display())))?;
    Ok(dir)
}

/// Copies one host file into a fresh random directory, executable.
pub(crate) fn copy_in_private_file(
    env: &dyn Environment,
    file: &Path,
    kind: &str,
) -> Result<String, EnvError> {
    let dir = format!("/tmp/.cleanroom-{kind}-{}", random_hex());
    env.files().create_dir_all(&dir, 0o700).map_err(io(dir.clone()))?;
    let bytes = std::fs::read(file).map_err(io(file.display().to_string()))?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "agent".into());
    let to = format!("{dir}/{name}");
    env.files().write_file(&to, &bytes, 0o755).map_err(io(to.clone()))?;
    Ok(dir)
}
