//! Small validation rules shared by task.toml, checks.toml and fetching.

use std::sync::OnceLock;

use regex::Regex;

/// `[a-z0-9][a-z0-9_.-]{0,63}`.
pub fn is_valid_task_id(id: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[a-z0-9][a-z0-9_.-]{0,63}$").expect("static regex")).is_match(id)
}

/// What is wrong with a path that must be relative and stay inside its
/// root, if anything.
pub(crate) fn relative_path_problem(p: &str) -> Option<&'static str> {
    if p.is_empty() {
        Some("is empty; expected a relative path")
    } else if p.starts_with('/') {
        Some("must be a relative path, not an absolute one")
    } else if p.split('/').any(|c| c == "..") {
        Some("must not contain `..`")
    } else if p.contains('\0') {
        Some("must not contain a nul character")
    } else {
        None
    }
}

/// What is wrong with an absolute path inside the environment, if anything.
pub(crate) fn absolute_path_problem(p: &str) -> Option<&'static str> {
    if !p.starts_with('/') {
        Some("must be an absolute path such as \"/workspace/artifact\"")
    } else if p.split('/').any(|c| c == ".." || c == ".") {
        Some("must not contain `.` or `..` components")
    } else if p.trim_end_matches('/').is_empty() {
        Some("must not be the root directory")
    } else if p.contains('\0') {
        Some("must not contain a nul character")
    } else {
        None
    }
}

/// Compiles one glob of `protected` or `clean`: `*` matches within a path
/// segment, `**` across segments, relative to `artifact.dest`.
pub fn compile_glob(pattern: &str) -> Result<globset::Glob, String> {
    if let Some(problem) = relative_path_problem(pattern) {
        return Err(problem.to_owned());
    }
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| format!("invalid glob: {}", e.kind()))
}

/// One matcher for a list of globs with the task format's semantics.
pub fn build_globset(patterns: &[String]) -> Result<globset::GlobSet, String> {
    let mut b = globset::GlobSetBuilder::new();
    for p in patterns {
        b.add(compile_glob(p).map_err(|e| format!("{p:?}: {e}"))?);
    }
    b.build().map_err(|e| e.to_string())
}

pub(crate) fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Splits `name==version` into its parts; the name follows PEP 508
/// (letters, digits, `.`, `_`, `-`; starts and ends alphanumeric), the
/// version is a single exact version with no wildcard or spaces.
pub fn parse_requirement(req: &str) -> Option<(String, String)> {
    static NAME: OnceLock<Regex> = OnceLock::new();
    static VERSION: OnceLock<Regex> = OnceLock::new();
    let name_re = NAME
        .get_or_init(|| Regex::new(r"^(?i:[a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$").expect("static regex"));
    let version_re =
        VERSION.get_or_init(|| Regex::new(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$").expect("static regex"));
    let (name, version) = req.split_once("==")?;
    let (name, version) = (name.trim(), version.trim());
    if version.starts_with('=') {
        return None;
    }
    (name_re.is_match(name) && version_re.is_match(version)).then(|| (name.to_owned(), version.to_owned()))
}

/// A crates.io crate name: an ASCII letter, then letters, digits, `-` or
/// `_`, at most 64 characters.
pub(crate) fn is_crate_name(name: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$").expect("static regex")).is_match(name)
}

/// An exact semantic version as crates.io publishes them: `x.y.z`, with an
/// optional `-pre-release` and `+build` part.
pub(crate) fn is_crate_version(version: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$",
        )
        .expect("static regex")
    })
    .is_match(version)
}

/// A Debian source package name (Debian policy 5.6.1): lowercase letters,
/// digits, `+`, `-`, `.`; at least two characters, starting alphanumeric.
pub(crate) fn is_debian_package(name: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[a-z0-9][a-z0-9+.-]+$").expect("static regex")).is_match(name)
}

/// A Debian version (Debian policy 5.6.12): `[epoch:]upstream[-revision]`,
/// the upstream part starting with a digit.
pub(crate) fn is_debian_version(version: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^([0-9]+:)?[0-9][A-Za-z0-9.+~:-]*(-[A-Za-z0-9.+~]+)?$").expect("static regex")
    })
    .is_match(version)
        && !version.ends_with('-')
        && version.matches(':').count() <= 1
        && version.split_once(':').is_none_or(|(e, _)| e.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids() {
        for ok in ["a", "sobol-seq", "x_1.2-b", "0", &"a".repeat(64)] {
            assert!(is_valid_task_id(ok), "{ok}");
        }
        for bad in ["", "-a", "_a", ".a", "A", "a b", "a/b", &"a".repeat(65), "é"] {
            assert!(!is_valid_task_id(bad), "{bad}");
        }
    }

    #[test]
    fn paths() {
        assert!(relative_path_problem("results/t.csv").is_none());
        assert!(relative_path_problem("/etc/passwd").is_some());
        assert!(relative_path_problem("a/../b").is_some());
        assert!(relative_path_problem("").is_some());
        assert!(absolute_path_problem("/workspace/artifact").is_none());
        assert!(absolute_path_problem("workspace").is_some());
        assert!(absolute_path_problem("/").is_some());
        assert!(absolute_path_problem("/a/../b").is_some());
    }

    #[test]
    fn globs() {
        let set = build_globset(&["eval/**".into(), "data/*.csv".into()]).unwrap();
        assert!(set.is_match("eval/a/b.py"));
        assert!(set.is_match("data/x.csv"));
        assert!(!set.is_match("data/sub/x.csv"));
        assert!(compile_glob("a/[b").is_err());
        assert!(compile_glob("/abs/**").is_err());
    }

    #[test]
    fn crate_names_and_versions() {
        for ok in ["itoa", "a", "serde_json", "foo-bar", "Inflector"] {
            assert!(is_crate_name(ok), "{ok}");
        }
        for bad in ["", "1abc", "-a", "a b", "a/b", "a.b", &"a".repeat(65)] {
            assert!(!is_crate_name(bad), "{bad}");
        }
        for ok in ["0.4.8", "1.0.0-alpha.1", "1.0.0+build.5", "10.20.30-rc1+meta"] {
            assert!(is_crate_version(ok), "{ok}");
        }
        for bad in ["", "1", "1.0", "^1.0.0", "=1.0.0", "1.0.*", "01.0.0", "1.0.0 ", "v1.0.0"] {
            assert!(!is_crate_version(bad), "{bad}");
        }
    }

    #[test]
    fn debian_names_and_versions() {
        for ok in ["bzip2", "sl", "libc6", "g++-12", "lib.x"] {
            assert!(is_debian_package(ok), "{ok}");
        }
        for bad in ["", "a", "Bzip2", "-a", "a_b", "a/b"] {
            assert!(!is_debian_package(bad), "{bad}");
        }
        for ok in ["1.0.8-5", "5.02-1", "2.6-1", "1:2.3.4-1+deb12u1", "3.03+dfsg2-8", "1.0~rc1", "2.10"] {
            assert!(is_debian_version(ok), "{ok}");
        }
        for bad in ["", "a1.0", "1.0-", "1.0/2", "x:1.0", "1:2:3", "1.0 1", ":1.0"] {
            assert!(!is_debian_version(bad), "{bad}");
        }
    }

    #[test]
    fn requirements() {
        assert_eq!(parse_requirement("sobol_seq==0.2.0"), Some(("sobol_seq".into(), "0.2.0".into())));
        assert_eq!(parse_requirement("six == 1.10.0"), Some(("six".into(), "1.10.0".into())));
        for bad in ["six", "six>=1.0", "six==", "==1.0", "six===1.0", "six==1.*", "-six==1", "six==1 2"] {
            assert_eq!(parse_requirement(bad), None, "{bad}");
        }
    }
}
