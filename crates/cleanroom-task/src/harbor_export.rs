//! `cleanroom tasks export harbor`: a cleanroom task as a Harbor task
//! directory (task.toml, instruction.md, environment/Dockerfile,
//! tests/test.sh, solution/solve.sh), the opposite of harbor_import.rs,
//! and what of it could not be carried over, said.
//!
//! - environment/Dockerfile starts from cleanroom's base image, as
//!   cleanroom's container backend names it in the engine
//!   (`cleanroom/<image>`), and copies in the artifact, materialized on the
//!   host by the caller whatever its source, at `artifact.dest`, and
//!   paper/ at /workspace/paper.
//! - tests/ holds the hidden pipeline as data (checks.json) and the program
//!   that runs and judges it inside the environment, in Perl (perl-base is
//!   Essential in Debian; cleanroom's base image has no python3):
//!   harbor_checks.pl. test.sh runs it; verify/'s files go to tests/verify
//!   (`$CLEANROOM_VERIFY`). Access checks, which only a harness outside
//!   the environment can see, are dropped and said.
//! - solution/solve.sh is the oracle's solution/setup.sh, run from
//!   /workspace as cleanroom runs it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::checks::{Check, CheckFile, Comparison, CsvRow, Selector};
use crate::fetch::tree::sha256_file;
use crate::harbor_import::{toml_string, write_parts};
use crate::load::Task;
use crate::perl_regex::perl_regex;
use crate::rules::{build_globset, compile_glob};
use crate::spec::ArtifactSource;

/// The program that runs the pipeline and judges it, as tests/checks.pl.
const CHECKER: &str = include_str!("harbor_checks.pl");

/// tests/test.sh: the reward is 0 until the checker writes it.
const TEST_SH: &str = r#"#!/bin/bash
# Exported from a cleanroom task: checks.pl runs its hidden pipeline
# (checks.json) and writes /logs/verifier/reward.txt and verify.log.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v perl > /dev/null; then
  echo "cleanroom's checker needs perl (Debian's perl-base), which this environment lacks: reward 0" \
    | tee /logs/verifier/verify.log
  exit 1
fi
perl "$here/checks.pl" "$here/checks.json"
"#;

/// What the export writes, relative to the Harbor task's directory, and
/// what it could not carry over.
#[derive(Debug, Default)]
pub struct Exported {
    /// Files to write: path, bytes, mode.
    pub files: Vec<(PathBuf, Vec<u8>, u32)>,
    /// Trees to copy as they are: from, to.
    pub trees: Vec<(PathBuf, PathBuf)>,
    /// What was left out or changed, one sentence each.
    pub notes: Vec<String>,
}

/// `task`, whose artifact the caller materialized at `artifact`
/// (`materialize_artifact`, overlay applied), as a Harbor task.
pub fn export_harbor(task: &Task, artifact: &Path) -> Result<Exported, String> {
    let mut out = Exported::default();
    environment(task, artifact, &mut out)?;
    out.files.push((PathBuf::from("instruction.md"), task.agent_instruction().into_bytes(), 0o644));
    oracle(task, &mut out)?;
    verifier(task, artifact, &mut out)?;
    out.files.push((PathBuf::from("task.toml"), task_toml(task, &mut out.notes).into_bytes(), 0o644));
    Ok(out)
}

/// environment/: the Dockerfile, the artifact and the paper.
fn environment(task: &Task, artifact: &Path, out: &mut Exported) -> Result<(), String> {
    let spec = &task.spec;
    let dest = artifact_dest(task);
    if dest.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '$' | '\\' | '"' | '\'')) {
        return Err(format!(
            "{}: artifact.dest: {dest:?} cannot be written in a Dockerfile (whitespace, quotes, `$` or `\\`)",
            task.dir.join("task.toml").display()
        ));
    }
    // A task whose Dockerfile builds its environment keeps it, its build
    // context becoming environment/, the artifact copied in after.
    let mut dockerfile = match &spec.environment.build {
        Some(build) => {
            let context = task.dir.join(build);
            let text = std::fs::read_to_string(context.join("Dockerfile"))
                .map_err(|e| format!("{}: {e}", context.join("Dockerfile").display()))?;
            if let Some(taken) = ["artifact", "paper"].iter().find(|n| context.join(n).exists()) {
                return Err(format!(
                    "{}: environment.build: its {taken:?} would be the export's own environment/{taken}",
                    task.dir.join("task.toml").display()
                ));
            }
            out.trees.push((context, PathBuf::from("environment")));
            format!("{}\n# Exported from the cleanroom task `{}`: its artifact.\n", text.trim_end(), task.id)
        }
        None => format!(
            "# Exported from the cleanroom task `{}`.\nFROM cleanroom/{}\n",
            task.id, spec.environment.image
        ),
    };
    dockerfile.push_str(&format!("WORKDIR {dest}\nCOPY artifact/ {dest}/\n"));
    out.trees.push((artifact.to_path_buf(), PathBuf::from("environment/artifact")));
    if let Some(paper) = task.paper_dir() {
        dockerfile.push_str("COPY paper/ /workspace/paper/\n");
        out.trees.push((paper, PathBuf::from("environment/paper")));
    }
    out.files.push((PathBuf::from("environment/Dockerfile"), dockerfile.into_bytes(), 0o644));
    if spec.artifact.source != ArtifactSource::Dir {
        out.notes.push(format!(
            "artifact: source = \"{}\" was fetched now and is copied in as environment/artifact; the Harbor task \
             does not fetch it",
            spec.artifact.source.kind()
        ));
    }
    Ok(())
}

/// `artifact.dest` without a trailing slash.
fn artifact_dest(task: &Task) -> &str {
    task.spec.artifact.dest.trim_end_matches('/')
}

/// solution/: the task's, with solve.sh running its setup.sh from
/// /workspace, as cleanroom's oracle does.
fn oracle(task: &Task, out: &mut Exported) -> Result<(), String> {
    let setup = task.solution_dir().join("setup.sh");
    let script = match std::fs::read(&setup) {
        Ok(script) => script,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out.notes.push("solution/setup.sh is missing: the Harbor task has no oracle".into());
            return Ok(());
        }
        Err(e) => return Err(format!("{}: {e}", setup.display())),
    };
    if task.solution_dir().join("solve.sh").exists() {
        out.notes.push("solution/solve.sh: the task's own is replaced by its setup.sh".into());
    }
    out.trees.push((task.solution_dir(), PathBuf::from("solution")));
    let mut solve =
        b"#!/bin/bash\n# Exported from cleanroom: the oracle's solution/setup.sh, run from /workspace.\n\
                      mkdir -p /workspace && cd /workspace\n"
            .to_vec();
    solve.extend(script);
    out.files.push((PathBuf::from("solution/solve.sh"), solve, 0o755));
    Ok(())
}

/// tests/: test.sh, the checker and the pipeline it runs, verify/'s files.
fn verifier(task: &Task, artifact: &Path, out: &mut Exported) -> Result<(), String> {
    let verify_dir = task.verify_dir();
    let listing = std::fs::read_dir(&verify_dir).map_err(|e| format!("{}: {e}", verify_dir.display()))?;
    for entry in listing {
        let entry = entry.map_err(|e| format!("{}: {e}", verify_dir.display()))?;
        if entry.file_name() != "checks.toml" {
            out.trees.push((entry.path(), Path::new("tests/verify").join(entry.file_name())));
        }
    }
    let protected = protected_entries(artifact, &task.spec.verify.protected)?;
    let pipeline = pipeline_json(task, protected, &mut out.notes)?;
    let pipeline = serde_json::to_string_pretty(&pipeline).expect("JSON values serialize");
    out.files.push((PathBuf::from("tests/checks.json"), format!("{pipeline}\n").into_bytes(), 0o644));
    out.files.push((PathBuf::from("tests/checks.pl"), CHECKER.as_bytes().to_vec(), 0o644));
    out.files.push((PathBuf::from("tests/test.sh"), TEST_SH.as_bytes().to_vec(), 0o755));
    out.notes.push(
        "verify: the pipeline runs and is judged inside the agent's environment (tests/checks.pl, with its \
         perl), not from outside it, and its files are not sealed read-only during the steps"
            .into(),
    );
    if !task.spec.verify.network {
        out.notes.push("verify.network = false: Harbor's verifier has the network".into());
    }
    if !task.verify.mutations.is_empty() {
        out.notes.push(
            "verify/checks.toml: processes the unmutated steps leave are not ended before the mutations"
                .into(),
        );
    }
    Ok(())
}

/// Harbor's task.toml: metadata, the budgets, the environment's limits.
fn task_toml(task: &Task, notes: &mut Vec<String>) -> String {
    let spec = &task.spec;
    let strings = |list: &[String]| list.iter().map(|s| toml_string(s)).collect::<Vec<_>>().join(", ");
    let mut metadata = format!(
        "title = {}\ncategory = \"{}\"\ndifficulty = \"{}\"\ntags = [{}]\nlanguages = [{}]\n",
        toml_string(&spec.task.title),
        spec.task.domain.as_str(),
        spec.task.difficulty.as_str(),
        strings(&spec.task.tags),
        strings(&spec.task.languages),
    );
    for (key, set) in [("legacy", spec.task.legacy), ("gpu", spec.task.gpu), ("qemu", spec.task.qemu)] {
        if set {
            metadata.push_str(&format!("{key} = true\n"));
        }
    }
    let paper = &spec.paper;
    let mut paper_table = String::new();
    for (key, value) in [("title", &paper.title), ("venue", &paper.venue), ("url", &paper.url)] {
        if let Some(value) = value {
            paper_table.push_str(&format!("{key} = {}\n", toml_string(value)));
        }
    }
    if let Some(year) = paper.year {
        paper_table.push_str(&format!("year = {year}\n"));
    }
    if !paper_table.is_empty() {
        metadata.push_str(&format!("\n[metadata.paper]\n{paper_table}"));
    }
    let env = &spec.environment;
    let mut environment = format!(
        "cpus = {}\nmemory_mb = {}\nstorage_mb = {}\nallow_internet = {}\n",
        env.cpus, env.memory_mb, env.disk_mb, env.network
    );
    if env.gpus > 0 {
        environment.push_str(&format!("gpus = {}\n", env.gpus));
    }
    if env.gpu_driver != crate::spec::GpuDriver::Host {
        notes.push("task.toml: environment.gpu_driver = \"agent\" is not carried over".into());
    }
    if env.machine {
        notes.push("task.toml: environment.machine (a machine of its own) is not carried over".into());
    }
    if spec.oracle.timeout_sec != spec.agent.timeout_sec {
        notes.push(format!(
            "task.toml: oracle.timeout_sec ({}) is not carried over: Harbor's oracle has the agent's budget",
            spec.oracle.timeout_sec
        ));
    }
    if let Some(control) = &spec.negative_control {
        notes.push(format!(
            "task.toml: [negative_control] is not carried over: Harbor counts its trials as any other's ({})",
            control.reason
        ));
    }
    let s = &spec.substitutes;
    if [&s.debian, &s.pypi, &s.npm, &s.crates, &s.agents].iter().any(|l| !l.is_empty()) {
        notes.push("task.toml: [substitutes] (the battery of `tasks check`) is not carried over".into());
    }
    format!(
        "version = \"1.0\"\n\n# Exported from the cleanroom task `{id}`.\n[metadata]\n{metadata}\n\
         [verifier]\ntimeout_sec = {verify}.0\n\n[agent]\ntimeout_sec = {agent}.0\n\n[environment]\n{environment}",
        id = task.id,
        verify = spec.verify.timeout_sec,
        agent = spec.agent.timeout_sec,
    )
}

/// tests/checks.json: the pipeline as harbor_checks.pl runs it.
fn pipeline_json(task: &Task, protected: Vec<Value>, notes: &mut Vec<String>) -> Result<Value, String> {
    let checks_toml = task.checks_path();
    let steps = task
        .verify
        .steps
        .iter()
        .map(|step| {
            let clean = step
                .clean
                .iter()
                .map(|glob| {
                    clean_glob(glob).map_err(|e| format!("{}: clean {glob:?}: {e}", checks_toml.display()))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let mut fields = Map::new();
            fields.insert("name".into(), json!(step.name));
            fields.insert("stage".into(), json!(step.stage.as_str()));
            fields.insert("run".into(), json!(step.run));
            if let Some(timeout) = step.timeout_sec {
                fields.insert("timeout_sec".into(), json!(timeout));
            }
            fields.insert("clean".into(), json!(clean));
            fields.insert("mutated".into(), json!(step.mutated));
            Ok(Value::Object(fields))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mutations: Vec<Value> = task
        .verify
        .mutations
        .iter()
        .map(|m| json!({"file": m.file, "replace": m.replace, "with": m.with}))
        .collect();
    let mut checks = Vec::new();
    for check in &task.verify.checks {
        match check_json(check) {
            Ok(value) => checks.push(value),
            Err(why) => notes.push(format!("verify/checks.toml: check `{}` is dropped: {why}", check.name)),
        }
    }
    Ok(json!({
        "artifact": artifact_dest(task),
        "timeout_sec": task.spec.verify.timeout_sec,
        "steps": steps,
        "mutations": mutations,
        "protected": protected,
        "checks": checks,
    }))
}

/// One `clean` glob: the regular expression of its match (globset's, which
/// Perl reads as it is once its leading `(?-u)` is gone: the checker
/// matches bytes) and its literal leading segments.
fn clean_glob(glob: &str) -> Result<Value, String> {
    let regex = compile_glob(glob)?.regex().to_string();
    let regex = regex.strip_prefix("(?-u)").ok_or("not a byte pattern")?;
    let literal: Vec<&str> = glob
        .split('/')
        .filter(|c| !c.is_empty())
        .take_while(|c| !c.contains(['*', '?', '[', '{', '\\']))
        .collect();
    Ok(json!({"regex": regex, "literal": literal}))
}

/// One check as the checker reads it, or why it cannot be carried over.
fn check_json(check: &Check) -> Result<Value, String> {
    let mut fields = Map::new();
    fields.insert("name".into(), json!(check.name));
    match &check.file {
        CheckFile::Path(path) => fields.insert("file".into(), json!(path)),
        CheckFile::StepStdout(step) => fields.insert("stdout".into(), json!(step)),
        CheckFile::Access(query) => {
            return Err(format!(
                "it asks whether `{}` was {} during `{}`, which only a harness outside the environment sees",
                query.glob,
                query.kind.as_str(),
                query.step
            ))
        }
    };
    match &check.select {
        None => None,
        Some(Selector::Json(pointer)) => fields.insert("json".into(), json!(pointer)),
        Some(Selector::Regex(re)) => {
            let perl = perl_regex(re.as_str()).map_err(|why| format!("its regex uses {why}"))?;
            fields.insert("regex".into(), json!(perl))
        }
        Some(Selector::Csv { row, column, delimiter }) => {
            let row = match row {
                CsvRow::Index(n) => json!(n),
                CsvRow::Match { column, text } => json!({"column": column, "text": text}),
            };
            let delimiter = char::from(*delimiter).to_string();
            fields.insert("csv".into(), json!({"row": row, "column": column, "delimiter": delimiter}))
        }
    };
    let compare = match &check.compare {
        Comparison::Number { expect, abs_tol, rel_tol } => {
            let mut number = Map::new();
            number.insert("expect".into(), json!(expect));
            if let Some(tol) = abs_tol {
                number.insert("abs_tol".into(), json!(tol));
            }
            if let Some(tol) = rel_tol {
                number.insert("rel_tol".into(), json!(tol));
            }
            Value::Object(number)
        }
        Comparison::Range { lo, hi } => json!({"range": [lo, hi]}),
        Comparison::Equals(text) => json!({"equals": text}),
        Comparison::Exists => json!({"exists": true}),
    };
    fields.insert("compare".into(), compare);
    fields.insert("expected".into(), json!(check.compare.expected_text()));
    Ok(Value::Object(fields))
}

/// The originals of the artifact that `protected` covers, as the checker
/// compares them: kind, mode, digest or link target (cleanroom's
/// tampering, changes.rs).
fn protected_entries(artifact: &Path, protected: &[String]) -> Result<Vec<Value>, String> {
    if protected.is_empty() {
        return Ok(Vec::new());
    }
    let globs = build_globset(protected)?;
    let mut entries = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = artifact.join(&rel);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .and_then(|list| list.map(|e| e.map(|e| e.file_name())).collect::<Result<_, _>>())
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        names.sort();
        for name in names {
            let rel = rel.join(name);
            let path = artifact.join(&rel);
            let meta = std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let text = rel.to_str().ok_or_else(|| format!("{}: a name that is not UTF-8", path.display()))?;
            let kind = if meta.is_dir() {
                stack.push(rel.clone());
                "dir"
            } else if meta.file_type().is_symlink() {
                "link"
            } else if meta.is_file() {
                "file"
            } else {
                "other"
            };
            let covered = globs.is_match(text) || kind == "dir" && globs.is_match(format!("{text}/"));
            if !covered {
                continue;
            }
            let mut entry = json!({"path": text, "kind": kind, "mode": meta.permissions().mode() & 0o7777});
            if kind == "file" {
                entry["sha256"] = json!(sha256_file(&path).map_err(|e| e.to_string())?);
            } else if kind == "link" {
                let target = std::fs::read_link(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let target = target
                    .to_str()
                    .ok_or_else(|| format!("{}: a link target that is not UTF-8", path.display()))?;
                entry["target"] = json!(target);
            }
            entries.push(entry);
        }
    }
    entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Ok(entries)
}

/// Writes what an export made into `dest`: its trees, then its files.
pub fn write(dest: &Path, exported: &Exported) -> std::io::Result<()> {
    write_parts(dest, &exported.files, &exported.trees)
}

#[cfg(test)]
mod tests;
