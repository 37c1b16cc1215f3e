//! `cleanroom tasks new ID`: a task skeleton that passes validation, with
//! a comment at each place the author has to fill in. Its artifact is its
//! own `artifact/`, or a registry's package (`--source`), with the
//! experiment's script laid over it from `overlay/` (`--overlay`).

use std::path::Path;

use cleanroom_task::{is_valid_task_id, load_task};

use crate::args::TasksNewArgs;
use crate::error::{input, internal, CliError};
use crate::new_source::NewSource;

/// `ARTIFACT` stands for the `[artifact]` table of the task's source.
const TASK_TOML: &str = r#"schema_version = 1

[task]
title = "TITLE: the paper's designated experiment, e.g. Table 2"
domain = "scientific"          # "ai" | "systems" | "scientific"
difficulty = "medium"          # how hard the deployment is: "easy" | "medium" | "hard"
languages = ["python"]         # main language first
legacy = false                 # true when the artifact predates today's toolchains
tags = []

[paper]
title = "PAPER TITLE"
year = 2019

ARTIFACT

[agent]
timeout_sec = 3600             # from how long deploying it by hand took, with room

[experiment]
command = "bash run.sh"        # as the artifact's README documents it
outputs = ["results/result.txt"]

[verify]
# Inputs, evaluation code and the experiment's entry point: what a shortcut
# would rewrite (tasks check replays the experiment through a stand-in
# run.sh, and that must fail).
protected = ["data/**", "run.sh"]

# [substitutes]                # shortcuts that tasks check runs and must see fail
# debian = ["same-named-package"]
# pypi = ["same-name==other.version"]
"#;

const INSTRUCTION: &str = "\
The artifact of the paper in /workspace/paper/ is in /workspace/artifact.
Deploy it on this machine and run its designated experiment: DESCRIBE IT IN WORDS
(for example, reproduce Table 2). Never write an expected value here.
";

const README: &str = "\
# ARTIFACT NAME

The code of our paper. To reproduce the results, run `bash run.sh`.
";

const RUN_SH: &str = "\
#!/bin/bash
# The designated experiment: replace with the artifact's own.
set -e
mkdir -p results
echo \"result: $(wc -l < data/input.txt)\" > results/result.txt
";

const SETUP_SH: &str = "\
#!/bin/bash
# The reference deployment: the oracle runs this in a fresh environment.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# apt-get install -y --no-install-recommends ...
touch /opt/deployed
";

const CHECKS_TOML: &str = r#"# Steps run after the agent, offline, in a login shell in the artifact's
# directory, with $CLEANROOM_OUT (empty, for outputs) and $CLEANROOM_VERIFY
# (the other files of verify/). Checks judge the outputs from outside.

[[step]]
name = "deployed"
stage = "setup"
run = "test -f /opt/deployed"

[[step]]
name = "experiment"
stage = "run"
run = "bash run.sh && cp results/result.txt \"$CLEANROOM_OUT/\""
clean = ["results/**"]

[[check]]
name = "line count"
file = "result.txt"
regex = 'result: (\d+)'
expect = 3
"#;

pub fn new(args: TasksNewArgs) -> Result<(), CliError> {
    if !is_valid_task_id(&args.id) {
        return Err(input(format!("task id `{}`: expected [a-z0-9][a-z0-9_.-]{{0,63}}", args.id)));
    }
    let source = NewSource::parse(&args.source)?;
    if args.overlay && source.is_dir() {
        return Err(input(
            "--overlay: the `dir` source's files are the task's own already; give a registry --source"
                .to_string(),
        ));
    }
    let dir = args.dir.join(&args.id);
    if dir.exists() {
        return Err(input(format!("{}: already exists", dir.display())));
    }
    let task_toml = TASK_TOML.replace("ARTIFACT\n", &source.artifact_table());
    let mut files: Vec<(&str, &str, u32)> = vec![
        ("task.toml", &task_toml, 0o644),
        ("instruction.md", INSTRUCTION, 0o644),
        ("paper/paper.md", "# PAPER TITLE\n\nThe paper, or a summary of its experiment.\n", 0o644),
        ("solution/setup.sh", SETUP_SH, 0o755),
        ("verify/checks.toml", CHECKS_TOML, 0o644),
    ];
    if source.is_dir() {
        files.extend([
            ("artifact/README.md", README, 0o644),
            ("artifact/run.sh", RUN_SH, 0o755),
            ("artifact/data/input.txt", "a\nb\nc\n", 0o644),
        ]);
    } else if args.overlay {
        files.extend([("overlay/run.sh", RUN_SH, 0o755), ("overlay/data/input.txt", "a\nb\nc\n", 0o644)]);
    }
    for (rel, text, mode) in files {
        write(&dir.join(rel), text, mode)?;
    }
    if let Err(e) = load_task(&dir) {
        let _ = std::fs::remove_dir_all(&dir);
        // A name or version the task format refuses is the user's to fix;
        // the rest of the skeleton is ours and must load.
        return Err(if source.is_dir() {
            internal(format!("the new skeleton does not validate: {e}"))
        } else {
            input(format!(
                "--source {:?}: the new task does not validate (it was not kept): {e}",
                args.source
            ))
        });
    }
    println!("{}", dir.display());
    Ok(())
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), CliError> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |e: std::io::Error| internal(format!("{}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    std::fs::write(path, text).map_err(fail)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(fail)
}
