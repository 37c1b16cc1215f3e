//! The install recipes' host side, run for real with bash: how a recipe
//! finds the CPython an agent's runtime is built from, and how a recipe's
//! failure reaches the user.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cleanroom_agent::{external, Config};
use cleanroom_model::ExternalAgent;

/// A stand-in interpreter that answers the fit check as `answer` says
/// (empty: it fits) and runs nothing else.
fn fake_python(dir: &Path, name: &str, answer: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nprintf '%s' '{answer}'\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs the built-in recipes' `find_python MINOR...` with a HOME that has
/// no pyenv and `CLEANROOM_PYTHON_SRC` as given: (exit status success,
/// stdout, stderr).
fn find_python(home: &Path, src: &str, minors: &[&str]) -> (bool, String, String) {
    let common = Config::built_in().agent("openhands").unwrap().install_files["../_lib/common.sh"].clone();
    let lib = home.join("common.sh");
    std::fs::write(&lib, common).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg("AGENT_NAME=openhands; source \"$1\"; shift; find_python \"$@\"")
        .arg("find_python")
        .arg(&lib)
        .args(minors)
        .env("HOME", home)
        .env_remove("PYENV_ROOT")
        .env("CLEANROOM_PYTHON_SRC", src)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn a_python_of_the_users_comes_first_and_one_that_does_not_fit_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let old = fake_python(dir.path(), "python-old", "is 3.10");
    let fits = fake_python(dir.path(), "python-fits", "");
    let src = format!("{}:{}", old.display(), fits.display());
    // No machine has 3.98: the user's interpreter is the only one that fits.
    let (ok, chosen, _) = find_python(dir.path(), &src, &["3.98"]);
    assert!(ok);
    assert_eq!(chosen, fits.display().to_string());

    let (ok, _, err) = find_python(dir.path(), &old.display().to_string(), &["3.98", "3.99"]);
    assert!(!ok);
    for needed in [
        "openhands needs CPython 3.98 or 3.99: none found",
        "CLEANROOM_PYTHON_SRC, /usr/bin,",
        &format!("{}/.pyenv/versions", dir.path().display()),
        &format!("passed over: {} is 3.10", old.display()),
        "set CLEANROOM_PYTHON_SRC",
    ] {
        assert!(err.contains(needed), "no `{needed}` in: {err}");
    }
}

#[test]
fn a_pyenv_build_of_any_patch_level_is_found_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["3.98.2", "3.98.10", "3.97.1"] {
        let bin = dir.path().join(".pyenv/versions").join(version).join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        fake_python(&bin, "python3.98", "");
    }
    let (ok, chosen, err) = find_python(dir.path(), "", &["3.98"]);
    assert!(ok, "{err}");
    assert_eq!(chosen, dir.path().join(".pyenv/versions/3.98.10/bin/python3.98").display().to_string());
}

#[test]
fn a_user_path_that_is_no_python_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = find_python(dir.path(), "/nonexistent/python3.12", &["3.12"]);
    assert!(!ok);
    assert!(err.contains("CLEANROOM_PYTHON_SRC: /nonexistent/python3.12 is neither"), "{err}");
}

#[test]
fn a_failed_install_says_what_the_recipe_missed() {
    let home = tempfile::tempdir().unwrap();
    let agent = ExternalAgent {
        version: "broken 1".into(),
        dialect: "openai-chat".into(),
        model: None,
        install_script: "echo 'downloading...'\necho 'error: broken needs frobnicate 2' >&2\nexit 3\n".into(),
        install_files: BTreeMap::new(),
        run_script: String::new(),
        stop_hook: false,
        resume: false,
        logs: Vec::new(),
    };
    let err = external::install(home.path(), "broken", &agent, &mut |_| {}).unwrap_err();
    assert!(err.contains("installing agent broken failed"), "{err}");
    assert!(err.contains(": error: broken needs frobnicate 2; see "), "{err}");
    assert!(!external::prefix_for(home.path(), "broken", &agent).join(".cleanroom-ready").exists());
}
