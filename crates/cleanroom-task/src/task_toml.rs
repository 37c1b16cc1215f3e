//! Reading and validating task.toml.

use std::path::Path;

use toml_edit::{ImDocument, Table};

use crate::controls;
use crate::harbor;
use crate::rules::{
    absolute_path_problem, compile_glob, is_crate_name, is_crate_version, is_debian_package,
    is_debian_version, is_hex, is_valid_task_id, parse_requirement, relative_path_problem,
};
use crate::spec::{
    AgentSpec, Artifact, ArtifactSource, Difficulty, Domain, Environment, Experiment, GpuDriver, Oracle,
    Paper, TaskMeta, TaskSpec, VerifyConfig, DEFAULT_ARTIFACT_DEST, DEFAULT_VERIFY_TIMEOUT_SEC,
};
use crate::toml_read::{Reader, Tab};

const ROOT_KEYS: &[&str] = &[
    "schema_version",
    "task",
    "paper",
    "artifact",
    "environment",
    "agent",
    "experiment",
    "oracle",
    "verify",
    // Cleanroom additions.
    "negative_control",
    "substitutes",
];
const TASK_KEYS: &[&str] =
    &["id", "title", "domain", "difficulty", "languages", "legacy", "gpu", "qemu", "tags"];
const PAPER_KEYS: &[&str] = &["title", "venue", "year", "url"];
const ARTIFACT_KEYS: &[&str] = &[
    "source",
    "dest",
    "path",
    "url",
    "sha256",
    "rev",
    "requirement",
    // Cleanroom additions: source = "crate" and source = "debian-source".
    "crate",
    "version",
    "package",
    "mirror",
];

/// The keys of [artifact] that belong to one source kind, by kind.
const SOURCE_KEYS: &[(&str, &[&str])] = &[
    ("dir", &[]),
    ("archive", &["path", "url", "sha256"]),
    ("git", &["url", "rev"]),
    ("pypi-sdist", &["requirement"]),
    ("crate", &["crate", "version", "sha256"]),
    ("debian-source", &["package", "version", "mirror", "sha256"]),
];
const ENVIRONMENT_KEYS: &[&str] =
    &["image", "cpus", "memory_mb", "disk_mb", "network", "gpus", "gpu_driver", "machine", "build"];
const AGENT_KEYS: &[&str] = &["timeout_sec"];
const EXPERIMENT_KEYS: &[&str] = &["command", "outputs"];
const ORACLE_KEYS: &[&str] = &["timeout_sec"];
const VERIFY_KEYS: &[&str] = &["timeout_sec", "network", "protected"];

/// Reads task.toml of the task in `dir`. Errors go to `r`; the spec is
/// returned when every required piece was readable (it is only meaningful
/// when `r.errors` is empty).
pub(crate) fn read_task_toml(r: &mut Reader, doc: &ImDocument<String>, dir: &Path) -> Option<TaskSpec> {
    let empty = Table::new();
    let root = r.root(doc);
    let hint = |key: &str| harbor::task_toml_hint(key);
    r.unknown_keys(&root, ROOT_KEYS, &hint);

    let schema_version = schema_version(r, &root);

    let task_tab = section(r, &root, "task", &empty);
    let task = if r.get(&root, "task").is_none() {
        r.missing(&root, "task", "every task needs a [task] table with title and domain");
        None
    } else {
        task_meta(r, &task_tab, dir)
    };
    let tab = section(r, &root, "paper", &empty);
    let paper = paper(r, &tab);
    let tab = section(r, &root, "artifact", &empty);
    let artifact = artifact(r, &tab, dir);
    let tab = section(r, &root, "environment", &empty);
    let environment = environment(r, &tab, dir);
    let tab = section(r, &root, "agent", &empty);
    let agent = agent(r, &tab);
    let experiment = match r.get(&root, "experiment") {
        None => Some(None),
        Some(_) => {
            let tab = section(r, &root, "experiment", &empty);
            experiment(r, &tab).map(Some)
        }
    };
    let oracle_tab = section(r, &root, "oracle", &empty);
    r.unknown_keys(&oracle_tab, ORACLE_KEYS, &|k| harbor::task_toml_hint(&Reader::full_key(&oracle_tab, k)));
    let oracle_timeout = r.integer(&oracle_tab, "timeout_sec", 1);
    let tab = section(r, &root, "verify", &empty);
    let verify = verify(r, &tab);
    let negative_control = match r.get(&root, "negative_control") {
        None => Some(None),
        Some(_) => {
            let tab = section(r, &root, "negative_control", &empty);
            controls::negative_control(r, &tab).map(Some)
        }
    };
    let tab = section(r, &root, "substitutes", &empty);
    let substitutes = controls::substitutes(r, &tab, dir);

    let agent = agent?;
    Some(TaskSpec {
        schema_version: schema_version?,
        task: task?,
        paper: paper?,
        artifact: artifact?,
        environment: environment?,
        oracle: Oracle { timeout_sec: oracle_timeout.map_or(agent.timeout_sec, |n| n as u64) },
        agent,
        experiment: experiment?,
        verify: verify?,
        negative_control: negative_control?,
        substitutes: substitutes?,
    })
}

/// A top-level table, or an empty one (defaults) when it is absent or not
/// a table (the latter is recorded as an error).
fn section<'a>(r: &mut Reader, root: &Tab<'a>, key: &str, empty: &'a Table) -> Tab<'a> {
    r.table(root, key).unwrap_or_else(|| Tab { name: key.to_owned(), line: r.key_line(root, key), t: empty })
}

fn schema_version(r: &mut Reader, root: &Tab<'_>) -> Option<u32> {
    let Some(item) = r.get(root, "schema_version") else {
        if r.get(root, "version").is_some() {
            // Harbor's `version`: its own message says what to write.
            return None;
        }
        r.missing(root, "schema_version", "expected `schema_version = 1` at the top of task.toml");
        return None;
    };
    if item.as_str().is_some() {
        r.key_err(root, "schema_version", harbor::string_schema_version_hint());
        return None;
    }
    match r.integer(root, "schema_version", 0)? {
        1 => Some(1),
        n => {
            r.key_err(
                root,
                "schema_version",
                format!("unsupported version {n}; this cleanroom reads schema_version = 1"),
            );
            None
        }
    }
}

pub(crate) fn check_keys(r: &mut Reader, tab: &Tab<'_>, allowed: &[&str]) {
    r.unknown_keys(tab, allowed, &|k| harbor::task_toml_hint(&Reader::full_key(tab, k)));
}

fn task_meta(r: &mut Reader, tab: &Tab<'_>, dir: &Path) -> Option<TaskMeta> {
    check_keys(r, tab, TASK_KEYS);
    let id = match r.get(tab, "id") {
        Some(_) => {
            let id = r.string(tab, "id");
            if let Some(id) = &id {
                if !is_valid_task_id(id) {
                    r.key_err(
                        tab,
                        "id",
                        format!("{id:?} is not a valid task id; expected [a-z0-9][a-z0-9_.-]{{0,63}}"),
                    );
                    return None;
                }
            }
            id
        }
        None => {
            let name = crate::load::dir_name(dir);
            if !is_valid_task_id(&name) {
                let line = tab.line;
                r.err(
                    line,
                    "task.id",
                    format!(
                        "the directory name {name:?} is not a valid task id (expected [a-z0-9][a-z0-9_.-]{{0,63}}); rename the directory or set task.id"
                    ),
                );
                None
            } else {
                Some(name)
            }
        }
    };
    let title = r.required_string(
        tab,
        "title",
        "expected a short title such as \"2-D heat equation solver, Table 2\"",
    );
    let domain = match r.get(tab, "domain") {
        None => {
            r.missing(tab, "domain", "expected \"ai\", \"systems\" or \"scientific\"");
            None
        }
        Some(_) => enum_value(r, tab, "domain", Domain::parse, &Domain::ALL.map(Domain::as_str)),
    };
    let difficulty = match r.get(tab, "difficulty") {
        None => Some(Difficulty::Medium),
        Some(_) => {
            enum_value(r, tab, "difficulty", Difficulty::parse, &Difficulty::ALL.map(Difficulty::as_str))
        }
    };
    let languages = strings_or_default(r, tab, "languages");
    let tags = strings_or_default(r, tab, "tags");
    let legacy = bool_or(r, tab, "legacy", false);
    let gpu = bool_or(r, tab, "gpu", false);
    let qemu = bool_or(r, tab, "qemu", false);
    Some(TaskMeta {
        id: id?,
        title: title?,
        domain: domain?,
        difficulty: difficulty?,
        languages: without_lines(languages?),
        legacy: legacy?,
        gpu: gpu?,
        qemu: qemu?,
        tags: without_lines(tags?),
    })
}

fn paper(r: &mut Reader, tab: &Tab<'_>) -> Option<Paper> {
    check_keys(r, tab, PAPER_KEYS);
    let mut ok = true;
    let mut opt_str = |r: &mut Reader, key: &str| -> Option<String> {
        let present = r.get(tab, key).is_some();
        let v = r.string(tab, key);
        ok &= !present || v.is_some();
        v
    };
    let title = opt_str(r, "title");
    let venue = opt_str(r, "venue");
    let url = opt_str(r, "url");
    let year = r.integer(tab, "year", 0);
    let ok = ok && (r.get(tab, "year").is_none() || year.is_some());
    ok.then_some(Paper { title, venue, year, url })
}

fn artifact(r: &mut Reader, tab: &Tab<'_>, dir: &Path) -> Option<Artifact> {
    check_keys(r, tab, ARTIFACT_KEYS);
    let dest = match r.get(tab, "dest") {
        None => Some(DEFAULT_ARTIFACT_DEST.to_owned()),
        Some(_) => r.string(tab, "dest").and_then(|d| match absolute_path_problem(&d) {
            Some(p) => {
                r.key_err(tab, "dest", p);
                None
            }
            None => Some(d),
        }),
    };
    let kind = match r.get(tab, "source") {
        None => Some("dir".to_owned()),
        Some(_) => r.string(tab, "source").and_then(|s| {
            if ArtifactSource::KINDS.contains(&s.as_str()) {
                Some(s)
            } else {
                let expected: Vec<String> = ArtifactSource::KINDS.iter().map(|k| format!("{k:?}")).collect();
                r.key_err(
                    tab,
                    "source",
                    format!("unknown source {s:?}; expected one of {}", expected.join(", ")),
                );
                None
            }
        }),
    };
    let kind = kind?;
    let own_keys = SOURCE_KEYS.iter().find(|(k, _)| *k == kind).map_or(&[][..], |(_, keys)| keys);
    for key in &ARTIFACT_KEYS[2..] {
        if r.get(tab, key).is_some() && !own_keys.contains(key) {
            let owners: Vec<String> = SOURCE_KEYS
                .iter()
                .filter(|(_, keys)| keys.contains(key))
                .map(|(k, _)| format!("{k:?}"))
                .collect();
            let owners = match owners.as_slice() {
                [one] => one.clone(),
                [init @ .., last] => format!("{} or {last}", init.join(", ")),
                [] => "no source".to_owned(),
            };
            r.key_err(
                tab,
                key,
                format!("applies to source = {owners}, but this artifact's source is {kind:?}"),
            );
        }
    }
    let source = match kind.as_str() {
        "dir" => {
            if !dir.join("artifact").is_dir() {
                let line = r.key_line(tab, "source");
                r.err(
                    line,
                    "artifact.source",
                    "source = \"dir\" (the default) needs the directory artifact/ in the task; add it or set another source",
                );
                None
            } else {
                Some(ArtifactSource::Dir)
            }
        }
        "archive" => archive_source(r, tab, dir),
        "git" => {
            let url = r.required_string(tab, "url", "source = \"git\" needs the repository's url");
            let rev = r.required_string(tab, "rev", "source = \"git\" needs `rev`, a full commit id");
            let rev = rev.and_then(|rev| {
                if is_hex(&rev, 40) || is_hex(&rev, 64) {
                    Some(rev.to_ascii_lowercase())
                } else {
                    r.key_err(
                        tab,
                        "rev",
                        format!("{rev:?} is not a full commit id; expected 40 hexadecimal digits (a branch or tag name can move)"),
                    );
                    None
                }
            });
            Some(ArtifactSource::Git { url: url?, rev: rev? })
        }
        "crate" => crate_source(r, tab),
        "debian-source" => debian_source(r, tab),
        _ => {
            let req = r.required_string(
                tab,
                "requirement",
                "source = \"pypi-sdist\" needs `requirement = \"name==version\"`",
            )?;
            if parse_requirement(&req).is_none() {
                r.key_err(
                    tab,
                    "requirement",
                    format!("{req:?} is not an exact pin; expected \"name==version\""),
                );
                return None;
            }
            Some(ArtifactSource::PypiSdist { requirement: req })
        }
    };
    Some(Artifact { source: source?, dest: dest? })
}

/// The optional `sha256` of [artifact]: `Some(None)` when absent, `None`
/// when it is there but wrong (recorded).
fn optional_sha256(r: &mut Reader, tab: &Tab<'_>) -> Option<Option<String>> {
    match r.string(tab, "sha256") {
        Some(s) if is_hex(&s, 64) => Some(Some(s.to_ascii_lowercase())),
        Some(s) => {
            r.key_err(tab, "sha256", format!("{s:?} is not a sha256 digest; expected 64 hexadecimal digits"));
            None
        }
        None if r.get(tab, "sha256").is_some() => None,
        None => Some(None),
    }
}

/// A required string that must satisfy `valid`; `expected` says what a
/// valid one looks like.
fn required_matching(
    r: &mut Reader,
    tab: &Tab<'_>,
    key: &str,
    missing: &str,
    valid: fn(&str) -> bool,
    expected: &str,
) -> Option<String> {
    let v = r.required_string(tab, key, missing)?;
    if valid(&v) {
        Some(v)
    } else {
        r.key_err(tab, key, format!("{v:?} is not {expected}"));
        None
    }
}

/// `source = "crate"` (a cleanroom addition).
fn crate_source(r: &mut Reader, tab: &Tab<'_>) -> Option<ArtifactSource> {
    let name = required_matching(
        r,
        tab,
        "crate",
        "source = \"crate\" needs `crate = \"name\"`, the crate's name on crates.io",
        is_crate_name,
        "a crate name; expected an ascii letter, then letters, digits, `-` or `_` (at most 64)",
    );
    let version = required_matching(
        r,
        tab,
        "version",
        "source = \"crate\" needs `version = \"x.y.z\"`, one exact published version",
        is_crate_version,
        "an exact version; expected \"x.y.z\" (optionally with -pre-release or +build), no requirement operators",
    );
    let sha256 = optional_sha256(r, tab);
    Some(ArtifactSource::Crate { name: name?, version: version?, sha256: sha256? })
}

/// `source = "debian-source"` (a cleanroom addition).
fn debian_source(r: &mut Reader, tab: &Tab<'_>) -> Option<ArtifactSource> {
    let package = required_matching(
        r,
        tab,
        "package",
        "source = \"debian-source\" needs `package = \"name\"`, a Debian source package name",
        is_debian_package,
        "a Debian source package name; expected lowercase letters, digits, `+`, `-` and `.`, at least two characters",
    );
    let version = required_matching(
        r,
        tab,
        "version",
        "source = \"debian-source\" needs `version`, the exact Debian version such as \"1.0.8-5\"",
        is_debian_version,
        "a Debian version; expected [epoch:]upstream[-revision] such as \"1.0.8-5\"",
    );
    let mirror = match r.get(tab, "mirror") {
        None => Some(None),
        Some(_) => r.string(tab, "mirror").and_then(|m| {
            let ok = ["https://", "http://", "file://"]
                .iter()
                .any(|p| m.strip_prefix(p).is_some_and(|rest| !rest.trim_matches('/').is_empty()))
                && !m.contains(char::is_whitespace);
            if ok {
                Some(Some(m.trim_end_matches('/').to_owned()))
            } else {
                r.key_err(
                    tab,
                    "mirror",
                    format!("{m:?} is not an http, https or file url of a Debian archive such as \"http://deb.debian.org/debian\""),
                );
                None
            }
        }),
    };
    let sha256 = optional_sha256(r, tab);
    Some(ArtifactSource::DebianSource {
        package: package?,
        version: version?,
        mirror: mirror?,
        sha256: sha256?,
    })
}

fn archive_source(r: &mut Reader, tab: &Tab<'_>, dir: &Path) -> Option<ArtifactSource> {
    let path = r.string(tab, "path");
    let url = r.string(tab, "url");
    let sha256 = optional_sha256(r, tab)?;
    match (&path, &url) {
        (Some(_), Some(_)) => {
            r.key_err(tab, "url", "give either `path` (inside the task) or `url`, not both");
            None
        }
        (None, None) => {
            if r.get(tab, "path").is_none() && r.get(tab, "url").is_none() {
                r.missing(
                    tab,
                    "path",
                    "source = \"archive\" needs `path` (a file inside the task) or `url` with `sha256`",
                );
            }
            None
        }
        (Some(p), None) => {
            if let Some(problem) = relative_path_problem(p) {
                r.key_err(tab, "path", problem);
                return None;
            }
            if !dir.join(p).is_file() {
                r.key_err(tab, "path", format!("{p:?} is not a file in the task directory"));
                return None;
            }
            Some(ArtifactSource::Archive { path: path.clone(), url: None, sha256 })
        }
        (None, Some(u)) => {
            if !(u.starts_with("https://") || u.starts_with("http://") || u.starts_with("file://")) {
                r.key_err(tab, "url", format!("{u:?} is not an http, https or file url"));
                return None;
            }
            if sha256.is_none() {
                r.missing(tab, "sha256", "an archive `url` needs the archive's sha256 digest");
                return None;
            }
            Some(ArtifactSource::Archive { path: None, url: url.clone(), sha256 })
        }
    }
}

fn environment(r: &mut Reader, tab: &Tab<'_>, dir: &Path) -> Option<Environment> {
    check_keys(r, tab, ENVIRONMENT_KEYS);
    let d = Environment::default();
    let image = match r.get(tab, "image") {
        None => Some(d.image),
        Some(_) => {
            r.required_string(tab, "image", "expected the name of a base image such as \"debian-12-minimal\"")
        }
    };
    let cpus = int_or(r, tab, "cpus", 1, d.cpus as u64);
    let memory_mb = int_or(r, tab, "memory_mb", 1, d.memory_mb);
    let disk_mb = int_or(r, tab, "disk_mb", 1, d.disk_mb);
    let network = bool_or(r, tab, "network", d.network);
    let gpus = int_or(r, tab, "gpus", 0, d.gpus as u64);
    let gpu_driver = match r.get(tab, "gpu_driver") {
        None => Some(d.gpu_driver),
        Some(_) => enum_value(r, tab, "gpu_driver", GpuDriver::parse, &GpuDriver::ALL.map(GpuDriver::as_str)),
    };
    let machine = bool_or(r, tab, "machine", d.machine);
    let build = match r.string(tab, "build") {
        None => Some(None),
        Some(p) => match relative_path_problem(&p) {
            Some(problem) => {
                r.key_err(tab, "build", problem);
                None
            }
            None if !dir.join(&p).join("Dockerfile").is_file() => {
                r.key_err(tab, "build", format!("{p:?} is not a directory of the task holding a Dockerfile"));
                None
            }
            None => Some(Some(p)),
        },
    };
    Some(Environment {
        image: image?,
        cpus: cpus?.min(u32::MAX as u64) as u32,
        memory_mb: memory_mb?,
        disk_mb: disk_mb?,
        network: network?,
        gpus: gpus?.min(u32::MAX as u64) as u32,
        gpu_driver: gpu_driver?,
        machine: machine?,
        build: build?,
    })
}

fn agent(r: &mut Reader, tab: &Tab<'_>) -> Option<AgentSpec> {
    check_keys(r, tab, AGENT_KEYS);
    if r.get(tab, "timeout_sec").is_none() {
        r.missing(
            tab,
            "timeout_sec",
            "expected the agent's wall-clock budget in seconds, such as `[agent] timeout_sec = 1800`",
        );
        return None;
    }
    let timeout_sec = seconds(r, tab, "timeout_sec")?;
    Some(AgentSpec { timeout_sec })
}

fn experiment(r: &mut Reader, tab: &Tab<'_>) -> Option<Experiment> {
    check_keys(r, tab, EXPERIMENT_KEYS);
    let command = r.string(tab, "command");
    let command_ok = r.get(tab, "command").is_none() || command.is_some();
    let outputs = strings_or_default(r, tab, "outputs")?;
    let mut ok = command_ok;
    for (o, line) in &outputs {
        if let Some(problem) = relative_path_problem(o) {
            r.err(
                *line,
                "experiment.outputs",
                format!("{o:?} {problem} (outputs are relative to artifact.dest)"),
            );
            ok = false;
        }
    }
    ok.then(|| Experiment { command, outputs: without_lines(outputs) })
}

fn verify(r: &mut Reader, tab: &Tab<'_>) -> Option<VerifyConfig> {
    check_keys(r, tab, VERIFY_KEYS);
    let timeout_sec = match r.get(tab, "timeout_sec") {
        None => Some(DEFAULT_VERIFY_TIMEOUT_SEC),
        Some(_) => seconds(r, tab, "timeout_sec"),
    };
    let network = bool_or(r, tab, "network", false);
    let protected = globs(r, tab, "protected");
    Some(VerifyConfig { timeout_sec: timeout_sec?, network: network?, protected: protected? })
}

/// A list of valid globs, each error at its own line.
pub(crate) fn globs(r: &mut Reader, tab: &Tab<'_>, key: &str) -> Option<Vec<String>> {
    let list = strings_or_default(r, tab, key)?;
    let mut ok = true;
    for (g, line) in &list {
        if let Err(e) = compile_glob(g) {
            r.err(*line, &Reader::full_key(tab, key), format!("{g:?}: {e}"));
            ok = false;
        }
    }
    ok.then(|| without_lines(list))
}

/// A time budget: an integer number of seconds, at least 1.
pub(crate) fn seconds(r: &mut Reader, tab: &Tab<'_>, key: &str) -> Option<u64> {
    if let Some(f) = r.get(tab, key).and_then(|i| i.as_float()) {
        r.key_err(tab, key, format!("expected an integer number of seconds, found the float {f:?}"));
        return None;
    }
    r.integer(tab, key, 1).map(|n| n as u64)
}

fn enum_value<T>(
    r: &mut Reader,
    tab: &Tab<'_>,
    key: &str,
    parse: fn(&str) -> Option<T>,
    names: &[&str],
) -> Option<T> {
    let s = r.string(tab, key)?;
    let v = parse(&s);
    if v.is_none() {
        let expected: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        r.key_err(tab, key, format!("unknown value {s:?}; expected one of {}", expected.join(", ")));
    }
    v
}

fn strings_or_default(r: &mut Reader, tab: &Tab<'_>, key: &str) -> Option<Vec<(String, usize)>> {
    match r.get(tab, key) {
        None => Some(Vec::new()),
        Some(_) => r.string_list(tab, key),
    }
}

fn bool_or(r: &mut Reader, tab: &Tab<'_>, key: &str, default: bool) -> Option<bool> {
    match r.get(tab, key) {
        None => Some(default),
        Some(_) => r.boolean(tab, key),
    }
}

fn int_or(r: &mut Reader, tab: &Tab<'_>, key: &str, min: i64, default: u64) -> Option<u64> {
    match r.get(tab, key) {
        None => Some(default),
        Some(_) => r.integer(tab, key, min).map(|n| n as u64),
    }
}

fn without_lines(v: Vec<(String, usize)>) -> Vec<String> {
    v.into_iter().map(|(s, _)| s).collect()
}
