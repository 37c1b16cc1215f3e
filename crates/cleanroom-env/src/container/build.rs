//! Images that a task's Dockerfile builds (`environment.build`): built in
//! the engine from the build context, FROM the base images cleanroom
//! imported (`cleanroom/<name>`; nothing is pulled), once per state of the
//! context's files (its digest names the image) and at most once at a
//! time. A build that failed is not tried again within the run: every
//! trial of its task ends saying why.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::container::engine::Engine;
use crate::error::EnvError;
use crate::image::tree_digest;

/// How long a build may go without a word of output.
const QUIET_FOR: Duration = Duration::from_secs(30 * 60);

/// How many times a build is tried whose step the engine could not start,
/// and how long it waits before the next try, times the tries so far: on
/// a loaded host three tries in a row have all failed alike (CI, Docker
/// 20.10), where a pause lets the engine settle.
const BUILD_ATTEMPTS: usize = 5;
const BUILD_PAUSE: Duration = Duration::from_secs(2);

/// An image a build made: its reference, and the variables it sets.
#[derive(Clone)]
pub(crate) struct Built {
    pub reference: String,
    pub env: Vec<(String, String)>,
}

/// A build's outcome, once made: the image, or why there is none.
type Outcome = Arc<OnceLock<Result<Built, String>>>;

#[derive(Default)]
pub(crate) struct Builds {
    /// By build context: each is read, digested and built (or found
    /// built) once in the backend's life, not at each environment made.
    built: Mutex<HashMap<PathBuf, Outcome>>,
}

impl Builds {
    /// The image the Dockerfile in `context` builds, built now unless the
    /// engine has it.
    pub(crate) fn image(&self, engine: &Engine, context: &Path) -> Result<Built, EnvError> {
        let once = {
            let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
            built.entry(context.to_path_buf()).or_default().clone()
        };
        let outcome = once.get_or_init(|| build(engine, context).map_err(|e| e.to_string()));
        outcome.clone().map_err(EnvError::Image)
    }
}

fn build(engine: &Engine, context: &Path) -> Result<Built, EnvError> {
    if !context.join("Dockerfile").is_file() {
        return Err(EnvError::Image(format!("{} holds no Dockerfile to build", context.display())));
    }
    let digest = tree_digest(context)?;
    let digest = digest.trim_start_matches("sha256:");
    let reference = format!("cleanroom-build/{}:{}", name_of(context), &digest[..16]);
    if engine.image_id(&reference)?.is_none() {
        build_image(engine, context, &reference)?;
    }
    let env = engine.image_env(&reference)?;
    Ok(Built { reference, env })
}

/// Builds `reference` from `context`. Under load Docker 20.10 now and then
/// starts a step's container on the bare directory its root is mounted on
/// ("stat /bin/sh: no such file or directory"), as it does a restarted
/// container (environment.rs): such a build is tried again after a pause,
/// a few times at most. A step whose command fails is the Dockerfile's,
/// and ends it.
fn build_image(engine: &Engine, context: &Path, reference: &str) -> Result<(), EnvError> {
    let mut attempt = 1;
    loop {
        let mut step_did_not_start = false;
        let built = with_tar_of(context, |tar| {
            engine.build_image(tar, reference, QUIET_FOR).map_err(|failed| {
                step_did_not_start = failed.step_did_not_start;
                failed.error
            })
        });
        match built {
            Err(_) if step_did_not_start && attempt < BUILD_ATTEMPTS => {
                std::thread::sleep(BUILD_PAUSE * attempt as u32);
                attempt += 1;
            }
            Err(EnvError::Image(why)) if attempt > 1 => {
                return Err(EnvError::Image(format!("{why}\n(the build was tried {attempt} times)")))
            }
            done => return done,
        }
    }
}

/// The repository name of a build: the task directory's name (the
/// context's parent), as the engine's names allow.
fn name_of(context: &Path) -> String {
    let dir = context.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().to_lowercase());
    let name: String = dir
        .unwrap_or_default()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '-' })
        .collect();
    let name = name.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if name.is_empty() {
        "task".to_string()
    } else {
        name.chars().take(64).collect()
    }
}

/// `consume` given the tar stream of the host directory `root`.
pub(crate) fn with_tar_of<T>(
    root: &Path,
    consume: impl FnOnce(&mut dyn Read) -> Result<T, EnvError>,
) -> Result<T, EnvError> {
    let mut tar = Command::new(crate::sandbox::tool("tar"))
        .arg("-C")
        .arg(root)
        .args(["--numeric-owner", "-c", "."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| EnvError::io("run tar", e))?;
    let consumed = consume(tar.stdout.as_mut().expect("piped"));
    // The engine may stop reading early (a failed build): tar must not wait
    // on a pipe no one reads.
    drop(tar.stdout.take());
    let out = tar.wait_with_output().map_err(|e| EnvError::io("run tar", e))?;
    let consumed = consumed?;
    if !out.status.success() {
        return Err(EnvError::Command {
            program: format!("tar of {}", root.display()),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(consumed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builds_name_is_its_tasks_as_the_engine_allows() {
        assert_eq!(name_of(Path::new("/t/wordcount-0a1b/environment")), "wordcount-0a1b");
        assert_eq!(name_of(Path::new("/t/My Task!/environment")), "my-task");
        assert_eq!(name_of(Path::new("environment")), "task");
    }
}
