//! What every CLI test file needs: the repository, the binary, a fresh
//! temporary directory, and a command's whole output.
// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where `scripts/test-hosts.sh up` writes the configuration of its hosts
/// (CI's .ci/run starts two).
pub const TEST_HOSTS: &str = "/var/lib/cleanroom-test-hosts/cleanroom.toml";

/// Held by a test whose trials run on emulated machines (the vm backend's,
/// the ssh backend's test hosts): two such fleets at once on a small
/// machine slow every trial past its task's time limits.
pub fn alone_if_emulated(backend: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    static EMULATED: std::sync::Mutex<()> = std::sync::Mutex::new(());
    (backend != "sandbox").then(|| EMULATED.lock().unwrap_or_else(|p| p.into_inner()))
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn cleanroom() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cleanroom"))
}

/// An empty directory of this test process, named after the test.
pub fn temp_out(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cleanroom-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path of the repository, as a string for the command line.
pub fn fixtures(rel: &str) -> String {
    repo().join(rel).display().to_string()
}

/// Every file below `dir`, at any depth.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}
pub mod scripted_model;
