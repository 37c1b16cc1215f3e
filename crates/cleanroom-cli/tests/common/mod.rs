//! What every CLI test file needs: the repository, the binary, a fresh
//! temporary directory, and a command's whole output.
// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Where `scripts/test-hosts.sh up` writes the configuration of its hosts
/// (CI's .ci/run starts two).
pub const TEST_HOSTS: &str = "/var/lib/cleanroom-test-hosts/cleanroom.toml";

/// The container engines `scripts/container-engines.sh start` serves, for
/// `--backend container` (DOCKER_HOST): Podman's API service and dockerd.
pub const PODMAN_ENGINE: &str = "unix:///run/cleanroom-test/podman.sock";
pub const DOCKER_ENGINE: &str = "unix:///run/cleanroom-test/docker.sock";

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

/// Runs `cleanroom run ARGS --out OUT` and returns its output and the one
/// run directory it made.
pub fn run(out: &Path, args: &[&str]) -> (Output, PathBuf) {
    run_with(cleanroom(), out, args)
}

/// `cleanroom run ARGS --out OUT` by `cmd`, and its run directory.
pub fn run_with(mut cmd: std::process::Command, out: &Path, args: &[&str]) -> (Output, PathBuf) {
    let output = cmd.arg("run").args(args).arg("--out").arg(out).output().unwrap();
    (output, only_run_dir(out))
}

pub fn only_run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(out).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    assert_eq!(dirs.len(), 1, "one run directory expected in {}", out.display());
    dirs[0].clone()
}

/// Every result.json of a run, read as an outside script would.
pub fn results(run_dir: &Path) -> Vec<Value> {
    let mut found = Vec::new();
    let trials = run_dir.join("trials");
    for task in std::fs::read_dir(&trials).into_iter().flatten().flatten() {
        for agent in std::fs::read_dir(task.path()).unwrap().flatten() {
            for n in std::fs::read_dir(agent.path()).unwrap().flatten() {
                let path = n.path().join("result.json");
                if path.exists() {
                    found.push(serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap());
                }
            }
        }
    }
    found
}

pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}
pub mod scripted_model;
pub mod webdriver;

/// The ordinary user the rootless tests run cleanroom as (made, with
/// subordinate ids, by scripts/rootless-user.sh).
pub struct TestUser {
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    /// A directory the user may read and run from: copies of the binary
    /// and fixtures (the checkout may be in a directory only root enters).
    shelf: PathBuf,
}

pub fn test_user() -> &'static TestUser {
    static USER: std::sync::OnceLock<TestUser> = std::sync::OnceLock::new();
    USER.get_or_init(|| {
        let out = Command::new("bash").arg(repo().join("scripts/rootless-user.sh")).output().unwrap();
        assert!(out.status.success(), "{}", text(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        let f: Vec<&str> = text.split_whitespace().collect();
        // The shelves of test processes no longer running go.
        for entry in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let dead = name
                .strip_prefix("cleanroom-cli-shelf-")
                .is_some_and(|pid| !Path::new("/proc").join(pid).exists());
            if dead {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let shelf = std::env::temp_dir().join(format!("cleanroom-cli-shelf-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&shelf);
        std::fs::create_dir_all(&shelf).unwrap();
        let user =
            TestUser { uid: f[0].parse().unwrap(), gid: f[1].parse().unwrap(), home: f[2].into(), shelf };
        user.copy_in(Path::new(env!("CARGO_BIN_EXE_cleanroom")));
        user
    })
}

impl TestUser {
    /// `path` (a file or a tree) copied where the user can read it.
    pub fn copy_in(&self, path: &Path) -> PathBuf {
        let dest = self.shelf.join(path.file_name().unwrap());
        let ok = Command::new("cp").arg("-r").arg(path).arg(&dest).status().unwrap().success()
            && Command::new("chmod").args(["-R", "a+rX"]).arg(&self.shelf).status().unwrap().success();
        assert!(ok, "copying {} for the test user", path.display());
        dest
    }

    /// The cleanroom binary, run as this user with a clean environment.
    pub fn cleanroom(&self) -> Command {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new(self.shelf.join("cleanroom"));
        cmd.env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("HOME", &self.home)
            .current_dir(&self.home)
            .uid(self.uid)
            .gid(self.gid);
        cmd
    }

    /// A fresh directory that the user owns.
    pub fn out_dir(&self, name: &str) -> PathBuf {
        let dir = temp_out(&format!("rootless-{name}"));
        std::os::unix::fs::chown(&dir, Some(self.uid), Some(self.gid)).unwrap();
        dir
    }

    /// The user's cleanroom home.
    pub fn cleanroom_home(&self) -> PathBuf {
        self.home.join(".local/share/cleanroom")
    }
}

/// Every trajectory.json of the run at `run_dir` passes Harbor's own
/// validator (scripts/harbor-validator.sh), as peer tools read them.
pub fn assert_valid_trajectories(run_dir: &Path) {
    let files: Vec<PathBuf> =
        files_under(&run_dir.join("trials")).into_iter().filter(|p| p.ends_with("trajectory.json")).collect();
    assert!(!files.is_empty(), "no trajectory in {}", run_dir.display());
    let out =
        Command::new("bash").arg(repo().join("scripts/harbor-validator.sh")).args(&files).output().unwrap();
    assert!(out.status.success(), "Harbor rejects a trajectory:\n{}", text(&out));
}
