//! The agents of `tasks check`'s substitution battery: each takes a short
//! path that skips deploying the artifact (a package of the same name, or a
//! replay of the experiment's output) and then runs the experiment as the
//! task describes it. A task that one of them passes does not measure
//! deployment.

use cleanroom_env::{EnvError, Environment};
use cleanroom_task::{Substitute, Task};

use crate::workspace::{self, copy_in_private, copy_in_private_file};

/// The command that runs `substitute` in `env`, with what it needs copied in.
pub(crate) fn argv(
    substitute: &Substitute,
    task: &Task,
    env: &dyn Environment,
) -> Result<Vec<String>, EnvError> {
    let body = match substitute {
        Substitute::Agent(path) => {
            let path = task.dir.join(path);
            let dir = copy_in_private_file(env, &path, "agent")?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            return Ok(vec!["/bin/bash".into(), format!("{dir}/{name}")]);
        }
        Substitute::Debian(packages) => format!("apt_install {packages} || exit 1\n{}", experiment(task)),
        Substitute::Pypi(requirements) => format!(
            "command -v pip3 >/dev/null || apt_install python3-pip || exit 1\n\
             pip3 install --break-system-packages {requirements} || exit 1\n{}",
            experiment(task)
        ),
        Substitute::Npm(packages) => format!(
            "command -v npm >/dev/null || apt_install npm || exit 1\n\
             npm install --no-save {packages} || exit 1\n{}",
            experiment(task)
        ),
        Substitute::Crate(krate) => {
            let (name, version) = krate.split_once('@').unwrap_or((krate, ""));
            let version = if version.is_empty() { String::new() } else { format!(" --version {version}") };
            format!(
                "command -v cargo >/dev/null || apt_install cargo || exit 1\n\
                 cargo install --root /usr/local {name}{version} || exit 1\n{}",
                experiment(task)
            )
        }
        Substitute::Replay => {
            let solution = copy_in_private(env, &task.solution_dir(), "solution")?;
            replay(task, &solution)
        }
    };
    let script = format!(
        "set -u\nexport DEBIAN_FRONTEND=noninteractive\n\
         apt_install() {{ apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq --no-install-recommends \"$@\"; }}\n\
         cd {} || exit 1\n{body}\n",
        quote(&task.spec.artifact.dest)
    );
    let dir = format!("/tmp/.cleanroom-substitute-{}", workspace::random_hex());
    let path = format!("{dir}/substitute.sh");
    let io = |e: std::io::Error| EnvError::Phase(format!("{path}: {e}"));
    env.files().create_dir_all(&dir, 0o700).map_err(io)?;
    env.files().write_file(&path, script.as_bytes(), 0o755).map_err(io)?;
    Ok(vec!["/bin/bash".into(), path])
}

/// Runs the task's experiment as its command says, from the artifact.
fn experiment(task: &Task) -> String {
    match task.spec.experiment.as_ref().and_then(|e| e.command.as_deref()) {
        Some(command) => format!("bash -c {}", quote(command)),
        None => "true".into(),
    }
}

/// Deploys as the oracle does, runs the experiment once and keeps what it
/// wrote and printed, then replaces the experiment's entry point (the first
/// word of its command that names a file of the artifact) with a stand-in
/// in the entry point's own language that puts those back.
fn replay(task: &Task, solution: &str) -> String {
    let experiment_spec = task.spec.experiment.clone().unwrap_or_default();
    let outputs: Vec<String> = experiment_spec.outputs.iter().map(|o| quote(o)).collect();
    let words: Vec<String> = experiment_spec.entry_candidates().into_iter().map(quote).collect();
    format!(
        r#"bash {solution}/setup.sh || exit 1
cd {dest} || exit 1
store=/var/tmp/.replay
mkdir -p "$store/files"
{run} >"$store/stdout" 2>"$store/stderr"
for output in {outputs}; do
    [ -e "$output" ] || continue
    mkdir -p "$store/files/$(dirname "$output")"
    cp -a "$output" "$store/files/$output"
done
entry=
for word in {words}; do
    if [ -f "$word" ]; then entry=$word; break; fi
done
[ -n "$entry" ] || {{ echo "replay: no file of the artifact in the experiment's command" >&2; exit 1; }}
printf '#!/bin/sh\ncd %s && cp -a "%s/files/." . 2>/dev/null\ncat "%s/stdout"; cat "%s/stderr" >&2\n' \
    {dest} "$store" "$store" "$store" > "$store/fake.sh"
chmod 755 "$store/fake.sh"
case "$entry" in
    *.py) printf 'import os\nos.execv("/bin/sh", ["/bin/sh", "%s"])\n' "$store/fake.sh" > "$entry" ;;
    *.js|*.mjs|*.cjs) printf 'require("child_process").execFileSync("/bin/sh", ["%s"], {{stdio: "inherit"}});\n' "$store/fake.sh" > "$entry" ;;
    *.pl|*.rb) printf 'exec "/bin/sh", "%s";\n' "$store/fake.sh" > "$entry" ;;
    *.R|*.r) printf 'quit(status = system2("/bin/sh", "%s"))\n' "$store/fake.sh" > "$entry" ;;
    *) cp "$store/fake.sh" "$entry" && chmod 755 "$entry" ;;
esac
echo "replay: $entry now replays the experiment's output""#,
        dest = quote(&task.spec.artifact.dest),
        run = experiment(task),
        outputs = if outputs.is_empty() { "''".into() } else { outputs.join(" ") },
        words = if words.is_empty() { "''".into() } else { words.join(" ") },
    )
}

/// One shell word, single-quoted.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
