//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const BASE: &str =
    "schema_version = 1\n[task]\ntitle = \"t\"\ndomain = \"ai\"\n[agent]\ntimeout_sec = 60\n";
pub const CHECK: &str = "[[check]]\nname = \"c\"\nfile = \"o\"\nexists = true\n";

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tasks")
}

/// Writes a task named `name` under `parent` with an artifact/ and an
/// instruction.
pub fn write_task(parent: &Path, name: &str, task_toml: &str, checks_toml: &str) -> PathBuf {
    let dir = parent.join(name);
    fs::create_dir_all(dir.join("verify")).unwrap();
    fs::create_dir_all(dir.join("artifact")).unwrap();
    fs::write(dir.join("artifact/main.py"), "print(1)\n").unwrap();
    fs::write(dir.join("task.toml"), task_toml).unwrap();
    fs::write(dir.join("instruction.md"), "Do it.\n").unwrap();
    fs::write(dir.join("verify/checks.toml"), checks_toml).unwrap();
    dir
}

/// The error lines of loading a task with these files.
pub fn errors(task_toml: &str, checks_toml: &str) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "t1", task_toml, checks_toml);
    match cleanroom_task::load_task(&dir) {
        Ok(_) => Vec::new(),
        Err(e) => {
            let text = e.to_string();
            assert_eq!(text.lines().count(), e.len(), "one line per error: {text}");
            text.lines().map(|l| l.replace(&format!("{}/", tmp.path().display()), "")).collect()
        }
    }
}

/// Asserts that an error names `file:line: key: ` and contains `fragment`.
#[track_caller]
pub fn assert_error(errors: &[String], file: &str, line: usize, key: &str, fragment: &str) {
    let head = format!("t1/{file}:{line}: {key}: ");
    assert!(
        errors.iter().any(|e| e.starts_with(&head) && e.contains(fragment)),
        "no error starting with {head:?} containing {fragment:?} in:\n{}",
        errors.join("\n")
    );
}

// Compressors the fetch tests build archives with.

pub fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub fn bz2(bytes: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

pub fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    lzma_rs::xz_compress(&mut &bytes[..], &mut out).unwrap();
    out
}

/// `git -C repo ARGS` as a test user; its output, trimmed.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}
