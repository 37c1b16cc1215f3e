//! `cleanroom tasks import harbor`: a Harbor task directory (task.toml,
//! instruction.md, environment/Dockerfile, tests/test.sh,
//! solution/solve.sh) as a cleanroom task, and what of it could not be
//! carried over, said.
//!
//! - The Dockerfile's build context that it copies in (`COPY`/`ADD` of the
//!   context) becomes the artifact, placed where it was copied. A
//!   Dockerfile that does more (`RUN`, `ENV`, ...) builds the environment:
//!   environment/ is kept and named by `environment.build`, which the
//!   container backend builds (other backends skip the task, saying so).
//! - tests/ becomes verify/, and one step runs tests/test.sh as Harbor
//!   does (at /tests, from the image's working directory), with
//!   /logs/verifier emptied first: a reward file the agent planted counts
//!   for nothing. The check reads the reward the test wrote, from the
//!   step's output directory, once every process of the agent is gone.
//! - solution/solve.sh becomes the oracle's solution/setup.sh.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item};

use crate::fetch::tree::{copy_tree, hex, TreeWriter};
use crate::placed::made_once;

/// What the import writes, relative to the new task's directory, and what
/// it could not carry over.
#[derive(Debug, Default)]
pub struct Imported {
    /// Files to write: path, bytes, mode.
    pub files: Vec<(PathBuf, Vec<u8>, u32)>,
    /// Trees to copy as they are: from (in the Harbor task), to.
    pub trees: Vec<(PathBuf, PathBuf)>,
    /// What was left out or guessed, one sentence each.
    pub notes: Vec<String>,
}

/// The parts of a Dockerfile the import reads.
#[derive(Debug, Default, PartialEq)]
struct Dockerfile {
    from: Option<String>,
    workdir: Option<String>,
    /// `COPY`/`ADD` of the build context: source, destination.
    copies: Vec<(String, String)>,
    runs: Vec<String>,
    /// Instructions read but not carried over (`ENV`, `EXPOSE`, ...).
    other: Vec<String>,
}

/// Reads a Dockerfile's instructions, continuation lines joined.
fn parse_dockerfile(text: &str) -> Dockerfile {
    let mut file = Dockerfile::default();
    let mut joined = String::new();
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') && joined.is_empty() {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                joined.push_str(part.trim_end());
                joined.push(' ');
            }
            None => {
                joined.push_str(trimmed);
                lines.push(std::mem::take(&mut joined));
            }
        }
    }
    for line in lines.into_iter().filter(|l| !l.is_empty()) {
        let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let rest = rest.trim().to_string();
        match word.to_ascii_uppercase().as_str() {
            "FROM" => file.from = Some(rest),
            "WORKDIR" => file.workdir = Some(rest),
            "RUN" => file.runs.push(rest),
            "COPY" | "ADD" => {
                let words: Vec<&str> = rest.split_whitespace().filter(|w| !w.starts_with("--")).collect();
                match words.split_last() {
                    Some((dest, sources)) if sources.len() == 1 => {
                        file.copies.push((sources[0].to_string(), dest.to_string()))
                    }
                    _ => file.other.push(line.clone()),
                }
            }
            _ => file.other.push(line.clone()),
        }
    }
    file
}

fn get<'a>(doc: &'a DocumentMut, table: &str, key: &str) -> Option<&'a Item> {
    doc.get(table).and_then(|t| t.get(key))
}

/// A number of seconds, rounded up to a whole one (Harbor's are floats).
fn seconds(item: Option<&Item>) -> Option<u64> {
    let item = item?;
    item.as_integer().map(|i| i.max(1) as u64).or_else(|| item.as_float().map(|f| f.ceil().max(1.0) as u64))
}

pub(crate) fn toml_string(text: &str) -> String {
    toml_edit::Value::from(text).to_string().trim().to_string()
}

/// The Harbor task at `src`, as a cleanroom task whose id is `id`.
pub fn import_harbor(src: &Path, id: &str) -> Result<Imported, String> {
    let read = |rel: &str| {
        std::fs::read_to_string(src.join(rel)).map_err(|e| format!("{}: {e}", src.join(rel).display()))
    };
    let doc: DocumentMut =
        read("task.toml")?.parse().map_err(|e| format!("{}: {e}", src.join("task.toml").display()))?;
    let instruction = read("instruction.md")?;
    let test_sh = read("tests/test.sh")?;
    let mut out = Imported::default();
    let compose = src.join("environment/docker-compose.yaml").exists();
    if compose {
        out.notes.push(
            "environment/docker-compose.yaml: services beside the task's container are not carried over"
                .into(),
        );
    }
    let dockerfile = match read("environment/Dockerfile") {
        Ok(text) => parse_dockerfile(&text),
        Err(_) if compose => Dockerfile::default(),
        Err(e) => return Err(e),
    };
    let workdir = dockerfile.workdir.clone().unwrap_or_else(|| "/app".into());
    if !workdir.starts_with('/') || workdir.split('/').any(|c| c == ".." || c == ".") || workdir == "/" {
        return Err(format!(
            "environment/Dockerfile: WORKDIR {workdir} is not a plain absolute path below /"
        ));
    }
    // FROM cleanroom/<name> is a base image cleanroom imports into the
    // container engine; anything else must be there already.
    let base = dockerfile
        .from
        .as_deref()
        .and_then(|f| f.strip_prefix("cleanroom/"))
        .map(|b| b.split(':').next().unwrap_or(b));
    let builds = !dockerfile.runs.is_empty() || !dockerfile.other.is_empty();
    match (&dockerfile.from, base, builds) {
        (Some(from), None, false) => out.notes.push(format!(
            "environment/Dockerfile: FROM {from}: the task starts from cleanroom's base image (debian-12-minimal)"
        )),
        (Some(from), None, true) => out.notes.push(format!(
            "environment/Dockerfile: FROM {from} must be in the container engine already (nothing is pulled; \
             cleanroom's own base images are there as cleanroom/<name>)"
        )),
        _ => {}
    }

    // The artifact: what the Dockerfile copies from its context.
    let context = src.join("environment");
    let mut dest = None;
    for (from, to) in &dockerfile.copies {
        let to = if to.starts_with('/') { to.clone() } else { format!("{workdir}/{to}") };
        let to = to.trim_end_matches('/').to_string();
        let from_path = context.join(from.trim_start_matches("./"));
        let inside = from_path
            .canonicalize()
            .ok()
            .filter(|p| p.starts_with(context.canonicalize().unwrap_or_default()));
        match (inside, &dest) {
            (Some(path), None) if path.is_dir() && (to == workdir || dockerfile.copies.len() == 1) => {
                out.trees.push((path, PathBuf::from("artifact")));
                dest = Some(to);
            }
            (Some(path), _) if path.is_file() && to.starts_with(&format!("{workdir}/")) => {
                let rel = &to[workdir.len() + 1..];
                out.trees.push((path, Path::new("artifact").join(rel)));
                dest.get_or_insert(workdir.clone());
            }
            _ => out.notes.push(format!(
                "environment/Dockerfile: COPY {from} {to} is not carried over (only the build context's files \
                 copied into the working directory {workdir} become the artifact)"
            )),
        }
    }
    let dest = dest.unwrap_or_else(|| workdir.clone());
    if !out.trees.iter().any(|(_, to)| to.starts_with("artifact")) {
        out.files.push((PathBuf::from("artifact/.keep"), Vec::new(), 0o644));
    }
    if builds {
        out.trees.push((context.clone(), PathBuf::from("environment")));
        out.notes.push(format!(
            "environment/Dockerfile builds the environment (its {} RUN line(s){}): only the container \
             backend builds it (--backend container); the other backends skip the task",
            dockerfile.runs.len(),
            if dockerfile.other.is_empty() {
                String::new()
            } else {
                format!(", {}", dockerfile.other.join(", "))
            }
        ));
    }

    // The oracle: solve.sh, from the working directory.
    let mut setup = String::from("#!/bin/bash\n# Imported from a Harbor task.\nset -e\n");
    match read("solution/solve.sh") {
        Ok(solve) => {
            setup.push_str(&format!("cd {}\n", shell_quote(&dest)));
            setup.push_str("bash \"$(dirname \"$0\")/solve.sh\"\n");
            out.files.push((PathBuf::from("solution/solve.sh"), solve.into_bytes(), 0o755));
        }
        Err(_) => out.notes.push("solution/solve.sh is missing: the oracle does nothing".into()),
    }
    out.files.push((PathBuf::from("solution/setup.sh"), setup.into_bytes(), 0o755));

    // The verifier.
    out.trees.push((src.join("tests"), PathBuf::from("verify")));
    let (reward_file, selector) = if test_sh.contains("reward.json") && !test_sh.contains("reward.txt") {
        ("reward.json", "json = \"/reward\"\n")
    } else {
        ("reward.txt", "")
    };
    let run = format!(
        "rm -rf /logs/verifier /tests && mkdir -p /logs/verifier && ln -s \"$CLEANROOM_VERIFY\" /tests && \
         cd {dest} && bash /tests/test.sh; cp /logs/verifier/reward.txt /logs/verifier/reward.json \
         \"$CLEANROOM_OUT\"/ 2>/dev/null; true",
        dest = shell_quote(&dest)
    );
    let checks = format!(
        "# Imported from a Harbor task: tests/test.sh runs as Harbor runs it, and its\n\
         # reward decides.\n\n[[step]]\nname = \"tests\"\nstage = \"run\"\nrun = {}\n\n\
         [[check]]\nname = \"reward\"\nfile = \"{reward_file}\"\n{selector}expect = 1\n",
        toml_string(&run)
    );
    out.files.push((PathBuf::from("verify/checks.toml"), checks.into_bytes(), 0o644));

    // task.toml.
    let title = instruction.lines().map(|l| l.trim_start_matches('#').trim()).find(|l| !l.is_empty());
    let title: String = title.unwrap_or(id).chars().take(80).collect();
    let difficulty = get(&doc, "metadata", "difficulty")
        .and_then(Item::as_str)
        .filter(|d| matches!(*d, "easy" | "medium" | "hard"))
        .unwrap_or("medium");
    let mut tags: Vec<String> = Vec::new();
    if let Some(category) = get(&doc, "metadata", "category").and_then(Item::as_str) {
        tags.push(category.to_string());
    }
    if let Some(list) = get(&doc, "metadata", "tags").and_then(Item::as_array) {
        tags.extend(list.iter().filter_map(|t| t.as_str().map(str::to_string)));
    }
    let agent_timeout = seconds(get(&doc, "agent", "timeout_sec")).unwrap_or(1800);
    let verify_timeout = seconds(get(&doc, "verifier", "timeout_sec")).unwrap_or(600);
    let number = |key: &str| get(&doc, "environment", key).and_then(Item::as_integer).filter(|n| *n >= 0);
    let mut environment = String::new();
    for (harbor, ours) in
        [("cpus", "cpus"), ("memory_mb", "memory_mb"), ("storage_mb", "disk_mb"), ("gpus", "gpus")]
    {
        if let Some(n) = number(harbor).filter(|n| *n > 0 || harbor == "gpus") {
            environment.push_str(&format!("{ours} = {n}\n"));
        }
    }
    let network = get(&doc, "environment", "allow_internet").and_then(Item::as_bool).unwrap_or(true);
    environment.push_str(&format!("network = {network}\n"));
    if let Some(base) = base {
        environment.push_str(&format!("image = {}\n", toml_string(base)));
    }
    if builds {
        environment.push_str("build = \"environment\"\n");
    }
    for key in ["docker_image", "build_timeout_sec"] {
        if get(&doc, "environment", key).is_some() {
            out.notes.push(format!("task.toml: environment.{key} is not carried over"));
        }
    }
    out.notes
        .push("task.toml: task.domain is set to \"systems\" (Harbor has no domain): say which it is".into());
    let tags = tags.iter().map(|t| toml_string(t)).collect::<Vec<_>>().join(", ");
    let task_toml = format!(
        "schema_version = 1\n\n# Imported from a Harbor task.\n[task]\nid = {id}\ntitle = {title}\n\
         domain = \"systems\"\ndifficulty = \"{difficulty}\"\ntags = [{tags}]\n\n\
         [artifact]\nsource = \"dir\"\ndest = {dest}\n\n[environment]\n{environment}\n\
         [agent]\ntimeout_sec = {agent_timeout}\n\n[verify]\ntimeout_sec = {verify_timeout}\n\
         # Harbor's verifier has the network.\nnetwork = true\n",
        id = toml_string(id),
        title = toml_string(&title),
        dest = toml_string(&dest),
    );
    out.files.push((PathBuf::from("task.toml"), task_toml.into_bytes(), 0o644));
    out.files.push((PathBuf::from("instruction.md"), instruction.into_bytes(), 0o644));
    Ok(out)
}

/// Whether `dir` is a Harbor task: tests/test.sh, no verify/checks.toml,
/// and a task.toml without cleanroom's `schema_version` (a cleanroom task
/// that lacks its checks is told what it lacks instead).
pub fn is_harbor_task(dir: &Path) -> bool {
    let harbor_toml = std::fs::read_to_string(dir.join("task.toml"))
        .ok()
        .and_then(|text| text.parse::<DocumentMut>().ok())
        .is_some_and(|doc| !doc.contains_key("schema_version"));
    harbor_toml && dir.join("tests/test.sh").is_file() && !dir.join("verify/checks.toml").exists()
}

/// The Harbor task at `src` imported as task `id` into a directory of its
/// own, named by a digest of what it was made from (placed.rs).
pub(crate) fn imported_copy(src: &Path, id: &str) -> Result<PathBuf, String> {
    let digest = tree_digest(src).map_err(|e| format!("{}: {e}", src.display()))?;
    made_once(&format!("{id}-{}", &digest[..16]), |fresh| {
        let imported = import_harbor(src, id)?;
        write(fresh, &imported).map_err(|e| format!("writing {}: {e}", fresh.display()))
    })
}

/// What an imported copy is made by: a change of the import's output
/// changes it, so copies an older import made are not taken for new ones.
const IMPORT_VERSION: &str = "cleanroom-harbor-import-2";

/// A digest of the tree at `dir`: each entry's path, kind, mode and bytes
/// (or link target), in path order, after the import's version.
fn tree_digest(dir: &Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::PermissionsExt;
    let mut hash = Sha256::new();
    hash.update(IMPORT_VERSION.as_bytes());
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let mut names: Vec<_> =
            std::fs::read_dir(dir.join(&rel))?.map(|e| e.map(|e| e.file_name())).collect::<Result<_, _>>()?;
        names.sort();
        for name in names.into_iter().rev() {
            let rel = rel.join(name);
            let path = dir.join(&rel);
            let meta = std::fs::symlink_metadata(&path)?;
            hash.update(rel.as_os_str().as_encoded_bytes());
            hash.update(format!("\0{:o}\0", meta.permissions().mode()).as_bytes());
            if meta.is_dir() {
                stack.push(rel);
            } else if meta.file_type().is_symlink() {
                hash.update(std::fs::read_link(&path)?.as_os_str().as_encoded_bytes());
            } else if meta.is_file() {
                hash.update(std::fs::read(&path)?);
            }
        }
    }
    Ok(hex(&hash.finalize()))
}

/// Writes what an import made into `dest`: its trees copied as they are
/// (modes and links kept), then its files.
pub fn write(dest: &Path, imported: &Imported) -> std::io::Result<()> {
    write_parts(dest, &imported.files, &imported.trees)
}

/// Writes `trees` (from, to) copied as they are (modes and links kept),
/// then `files` (path, bytes, mode), into `dest`.
pub(crate) fn write_parts(
    dest: &Path,
    files: &[(PathBuf, Vec<u8>, u32)],
    trees: &[(PathBuf, PathBuf)],
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for (from, to) in trees {
        let to = dest.join(to);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if from.is_dir() {
            // Modes and links as they are, as a task's own artifact/ is copied.
            std::fs::create_dir_all(&to)?;
            let mut writer = TreeWriter::trusted(&to, &from.display().to_string());
            copy_tree(from, &mut writer, None)
                .and_then(|()| writer.finish())
                .map_err(|e| std::io::Error::other(e.to_string()))?;
        } else {
            std::fs::copy(from, &to)?;
        }
    }
    for (rel, bytes, mode) in files {
        let path = dest.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, bytes)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
    }
    Ok(())
}

/// `path` quoted for the shell (single quotes).
fn shell_quote(path: &str) -> String {
    format!("'{}'", path.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dockerfile_is_read_instruction_by_instruction() {
        let file = parse_dockerfile(
            "# base\nFROM python:3.12-slim\nWORKDIR /app\nRUN apt-get update && \\\n    apt-get install -y gcc\n\
             COPY --chown=root src/ /app/\nCOPY a b c /x/\nENV X=1\n",
        );
        assert_eq!(file.from.as_deref(), Some("python:3.12-slim"));
        assert_eq!(file.workdir.as_deref(), Some("/app"));
        assert_eq!(file.runs, ["apt-get update && apt-get install -y gcc"]);
        assert_eq!(file.copies, [("src/".to_string(), "/app/".to_string())]);
        assert_eq!(file.other, ["COPY a b c /x/", "ENV X=1"]);
    }

    #[test]
    fn seconds_are_whole_and_at_least_one() {
        let doc: DocumentMut = "[a]\nf = 120.5\ni = 30\nz = 0.2\n".parse().unwrap();
        assert_eq!(seconds(get(&doc, "a", "f")), Some(121));
        assert_eq!(seconds(get(&doc, "a", "i")), Some(30));
        assert_eq!(seconds(get(&doc, "a", "z")), Some(1));
        assert_eq!(seconds(get(&doc, "a", "missing")), None);
    }
}
