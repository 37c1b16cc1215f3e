//! A client of the Docker Engine API (as Docker and Podman's API service
//! serve it) for the calls the container backend makes: images imported
//! from a root file system's tar, containers made, started and killed,
//! and commands run in them.

use std::io::{BufReader, Read};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::container::http::{self, Body, Response};
use crate::error::EnvError;

/// The API version every path names: Docker 20.10's, which Docker since
/// then and Podman's compatible API both serve.
const API: &str = "/v1.41";
/// How long one read or write of an ordinary call may wait.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// The most bytes of an ordinary call's answer.
const ANSWER_LIMIT: usize = 8 << 20;
/// How much of a build's output an error keeps: its end.
const BUILD_OUTPUT_KEPT: usize = 4096;

/// Where the engine listens when nothing says otherwise: Docker's socket,
/// Podman's (root's, then the user's), Docker Desktop's.
fn default_sockets() -> Vec<PathBuf> {
    let mut sockets = vec![PathBuf::from("/var/run/docker.sock"), PathBuf::from("/run/podman/podman.sock")];
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR") {
        sockets.push(Path::new(&runtime).join("podman/podman.sock"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        sockets.push(Path::new(&home).join(".docker/run/docker.sock"));
    }
    sockets
}

/// Which engine answers, for the record and for what differs between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineVersion {
    /// `docker` or `podman`.
    pub kind: String,
    pub version: String,
}

pub struct Engine {
    socket: PathBuf,
}

/// A build that made no image: why, and whether the engine's own error was
/// that the runtime could not start one of its steps' containers (not that
/// a step's command failed).
pub struct BuildFailed {
    pub error: EnvError,
    pub step_did_not_start: bool,
}

impl From<EnvError> for BuildFailed {
    fn from(error: EnvError) -> Self {
        BuildFailed { error, step_did_not_start: false }
    }
}

/// An exec's standard streams, hijacked from its start call: write its
/// input to `stream` (its write half), read its output frames from it.
pub struct ExecStreams {
    pub id: String,
    pub stream: BufReader<UnixStream>,
}

impl Engine {
    pub fn at(socket: &Path) -> Engine {
        Engine { socket: socket.to_path_buf() }
    }

    /// The engine `DOCKER_HOST` (or Podman's `CONTAINER_HOST`) names, as
    /// `unix://PATH`, else the first default socket that exists.
    pub fn locate() -> Result<Engine, EnvError> {
        for var in ["DOCKER_HOST", "CONTAINER_HOST"] {
            if let Ok(value) = std::env::var(var) {
                let path = value.strip_prefix("unix://").ok_or_else(|| {
                    EnvError::Config(format!(
                        "{var}={value}: the container backend reaches an engine through its Unix socket \
                         (unix:///path); over TCP, forward the socket (ssh -L) first"
                    ))
                })?;
                return Ok(Engine::at(Path::new(path)));
            }
        }
        let found = default_sockets().into_iter().find(|s| s.exists());
        found.map(|s| Engine::at(&s)).ok_or_else(|| {
            EnvError::Config(format!(
                "no container engine: none of {} exists and DOCKER_HOST is not set; start Docker, or \
                 Podman's API service (`podman system service --time=0`)",
                default_sockets().iter().map(|s| s.display().to_string()).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    fn send(&self, method: &str, path: &str, body: Body, upgrade: bool) -> Result<Response, EnvError> {
        self.send_within(method, path, body, upgrade, CALL_TIMEOUT)
    }

    /// `send`, with `timeout` bounding each read and write.
    fn send_within(
        &self,
        method: &str,
        path: &str,
        body: Body,
        upgrade: bool,
        timeout: Duration,
    ) -> Result<Response, EnvError> {
        let what = || format!("the container engine at {} ({method} {path})", self.socket.display());
        let response =
            http::request(&self.socket, method, &format!("{API}{path}"), body, upgrade, Some(timeout))
                .map_err(|e| EnvError::io(what(), e))?;
        if response.status >= 300 && response.status != 304 {
            let status = response.status;
            let answer = response.bytes(ANSWER_LIMIT).unwrap_or_default();
            let message = serde_json::from_slice::<Value>(&answer)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| String::from_utf8_lossy(&answer).trim().to_string());
            return Err(EnvError::Command { program: what(), detail: format!("{status}: {message}") });
        }
        Ok(response)
    }

    fn call(&self, method: &str, path: &str, body: Body) -> Result<Value, EnvError> {
        let answer = self
            .send(method, path, body, false)?
            .bytes(ANSWER_LIMIT)
            .map_err(|e| EnvError::io(format!("the container engine's answer to {method} {path}"), e))?;
        if answer.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&answer).map_err(|e| EnvError::Command {
            program: format!("the container engine ({method} {path})"),
            detail: format!("an answer that is not JSON: {e}"),
        })
    }

    /// A call whose answer says nothing beyond its status (Podman's is
    /// sometimes plain text).
    fn act(&self, method: &str, path: &str, body: Body) -> Result<(), EnvError> {
        self.send(method, path, body, false)?
            .bytes(ANSWER_LIMIT)
            .map(drop)
            .map_err(|e| EnvError::io(format!("the container engine's answer to {method} {path}"), e))
    }

    pub fn version(&self) -> Result<EngineVersion, EnvError> {
        let answer = self.call("GET", "/version", Body::Empty)?;
        let podman = answer["Components"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["Name"].as_str().is_some_and(|n| n.contains("Podman"))));
        Ok(EngineVersion {
            kind: if podman { "podman" } else { "docker" }.into(),
            version: answer["Version"].as_str().unwrap_or("unknown").to_string(),
        })
    }

    /// Imports a root file system's tar stream as an image tagged
    /// `reference` (`name:tag`); returns the image's id.
    pub fn import_image(&self, tar: &mut dyn Read, reference: &str) -> Result<String, EnvError> {
        let (repo, tag) = reference.rsplit_once(':').unwrap_or((reference, "latest"));
        let path = format!("/images/create?fromSrc=-&repo={}&tag={}", query(repo), query(tag));
        let answer = self
            .send("POST", &path, Body::Tar(tar), false)?
            .bytes(ANSWER_LIMIT)
            .map_err(|e| EnvError::io("the container engine's answer to an import", e))?;
        // A stream of JSON progress objects; the last names the image, or
        // says why there is none.
        let mut id = None;
        for value in serde_json::Deserializer::from_slice(&answer).into_iter::<Value>() {
            let value = value.map_err(|e| EnvError::Image(format!("importing {reference}: {e}")))?;
            if let Some(error) = value["error"].as_str() {
                return Err(EnvError::Image(format!("importing {reference}: {error}")));
            }
            if let Some(found) = value["status"].as_str().filter(|s| s.starts_with("sha256:")) {
                id = Some(found.to_string());
            }
        }
        let id =
            id.ok_or_else(|| EnvError::Image(format!("importing {reference}: the engine named no image")))?;
        // Podman's import ignores the tag it is given.
        self.tag_image(&id, reference)?;
        Ok(id)
    }

    /// Tags the image `id` as `reference` (`name:tag`) too.
    pub fn tag_image(&self, id: &str, reference: &str) -> Result<(), EnvError> {
        let (repo, tag) = reference.rsplit_once(':').unwrap_or((reference, "latest"));
        self.act("POST", &format!("/images/{id}/tag?repo={}&tag={}", query(repo), query(tag)), Body::Empty)
    }

    /// Builds the image `reference` from a build context's tar stream
    /// (its Dockerfile at the top), without pulling anything: what the
    /// Dockerfile names must be in the engine already. `quiet_for` bounds
    /// how long a step may go without a word. On failure, the error says
    /// why, with the end of the build's output.
    pub fn build_image(
        &self,
        context: &mut dyn Read,
        reference: &str,
        quiet_for: Duration,
    ) -> Result<(), BuildFailed> {
        let path = format!("/build?t={}&rm=1&forcerm=1&pull=0", query(reference));
        let response = self.send_within("POST", &path, Body::Tar(context), false, quiet_for)?;
        // A stream of JSON objects: the build's output, then an error or not.
        let mut output = Tail::new(BUILD_OUTPUT_KEPT);
        for value in serde_json::Deserializer::from_reader(response).into_iter::<Value>() {
            let value = value.map_err(|e| EnvError::Image(format!("building {reference}: {e}")))?;
            if let Some(text) = value["stream"].as_str() {
                output.push(text);
            }
            if let Some(error) = value["error"].as_str() {
                return Err(BuildFailed {
                    error: EnvError::Image(format!(
                        "building {reference}: {}; the build's output ended:\n{}",
                        error.trim(),
                        output.text()
                    )),
                    step_did_not_start: a_step_did_not_start(error),
                });
            }
        }
        if self.image_id(reference)?.is_none() {
            return Err(EnvError::Image(format!(
                "building {reference}: the engine made no image; the build's output ended:\n{}",
                output.text()
            ))
            .into());
        }
        Ok(())
    }

    /// The id of the image `reference` names, if the engine has it.
    pub fn image_id(&self, reference: &str) -> Result<Option<String>, EnvError> {
        match self.call("GET", &format!("/images/{reference}/json"), Body::Empty) {
            Ok(answer) => Ok(answer["Id"].as_str().map(str::to_string)),
            Err(EnvError::Command { detail, .. }) if detail.starts_with("404") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The variables the image `reference` sets (its Dockerfile's `ENV`).
    pub fn image_env(&self, reference: &str) -> Result<Vec<(String, String)>, EnvError> {
        let answer = self.call("GET", &format!("/images/{reference}/json"), Body::Empty)?;
        let listed = answer["Config"]["Env"].as_array().cloned().unwrap_or_default();
        Ok(listed
            .iter()
            .filter_map(|v| v.as_str()?.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect())
    }

    pub fn remove_image(&self, reference: &str) -> Result<(), EnvError> {
        self.act("DELETE", &format!("/images/{reference}?force=true"), Body::Empty)
    }

    /// Makes a container from `config` (the API's create body), named
    /// `name` or as the engine likes; returns its id.
    pub fn create_container(&self, name: Option<&str>, config: Value) -> Result<String, EnvError> {
        let named = name.map(|n| format!("?name={}", query(n))).unwrap_or_default();
        let answer = self.call("POST", &format!("/containers/create{named}"), Body::Json(config))?;
        answer["Id"].as_str().map(str::to_string).ok_or_else(|| EnvError::Command {
            program: "the container engine (create a container)".into(),
            detail: format!("no id in {answer}"),
        })
    }

    pub fn start(&self, container: &str) -> Result<(), EnvError> {
        self.act("POST", &format!("/containers/{container}/start"), Body::Empty)
    }

    /// Kills every process of the container (its init, and with it the
    /// whole PID namespace) and waits until it has stopped.
    pub fn kill(&self, container: &str) -> Result<(), EnvError> {
        match self.act("POST", &format!("/containers/{container}/kill?signal=KILL"), Body::Empty) {
            Ok(_) => {}
            // Stopped already (409 from Docker, 500 "not running" from Podman).
            Err(EnvError::Command { detail, .. })
                if detail.contains("not running") || detail.starts_with("409") => {}
            Err(e) => return Err(e),
        }
        self.call("POST", &format!("/containers/{container}/wait?condition=not-running"), Body::Empty)
            .map(drop)
    }

    /// The container's state as `inspect` gives it.
    pub fn inspect(&self, container: &str) -> Result<Value, EnvError> {
        self.call("GET", &format!("/containers/{container}/json"), Body::Empty)
    }

    /// Removes the container, killing it first, with its anonymous volumes.
    pub fn remove(&self, container: &str) -> Result<(), EnvError> {
        match self.act("DELETE", &format!("/containers/{container}?force=true&v=true"), Body::Empty) {
            Err(EnvError::Command { detail, .. }) if detail.starts_with("404") => Ok(()),
            other => other,
        }
    }

    /// The ids and labels of every container with the label `key`.
    pub fn containers_labelled(&self, key: &str) -> Result<Vec<(String, Value)>, EnvError> {
        let filters = query(&json!({ "label": [key] }).to_string());
        let answer =
            self.call("GET", &format!("/containers/json?all=true&filters={filters}"), Body::Empty)?;
        Ok(answer
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|c| Some((c["Id"].as_str()?.to_string(), c["Labels"].clone())))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Starts `argv` in the running container with its standard streams
    /// attached (no terminal).
    pub fn exec(
        &self,
        container: &str,
        argv: &[String],
        env: &[(String, String)],
        cwd: &str,
    ) -> Result<ExecStreams, EnvError> {
        let created = self.call(
            "POST",
            &format!("/containers/{container}/exec"),
            Body::Json(json!({
                "Cmd": argv,
                "Env": env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
                "WorkingDir": cwd,
                "AttachStdin": true,
                "AttachStdout": true,
                "AttachStderr": true,
                "Tty": false,
            })),
        )?;
        let id = created["Id"].as_str().map(str::to_string).ok_or_else(|| EnvError::Command {
            program: "the container engine (create an exec)".into(),
            detail: format!("no id in {created}"),
        })?;
        let response = self.send(
            "POST",
            &format!("/exec/{id}/start"),
            Body::Json(json!({"Detach": false, "Tty": false})),
            true,
        )?;
        let stream = response.into_stream().ok_or_else(|| EnvError::Command {
            program: "the container engine (start an exec)".into(),
            detail: "the connection was not handed over to the exec's streams".into(),
        })?;
        // The exec's output comes as long as it runs: no read timeout.
        stream.get_ref().set_read_timeout(None).map_err(|e| EnvError::io("an exec's stream", e))?;
        Ok(ExecStreams { id, stream })
    }

    /// An exec's exit code, once it has ended.
    pub fn exec_exit_code(&self, exec: &str) -> Result<Option<i64>, EnvError> {
        let answer = self.call("GET", &format!("/exec/{exec}/json"), Body::Empty)?;
        Ok(if answer["Running"].as_bool() == Some(false) { answer["ExitCode"].as_i64() } else { None })
    }
}

/// Whether `engine_error`, a failed build's error from the engine, is the
/// runtime's failure to start one of its steps' containers, or to copy
/// into one whose root was not there (Docker 20.10 under load, on a COPY
/// step), rather than a step's command failing.
fn a_step_did_not_start(engine_error: &str) -> bool {
    engine_error.contains("OCI runtime create failed")
        || engine_error.contains("Error after fallback to chroot: no such file or directory")
}

/// `value` escaped for a query string.
fn query(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The last `keep` bytes of a text written in pieces.
struct Tail {
    text: String,
    keep: usize,
}

impl Tail {
    fn new(keep: usize) -> Tail {
        Tail { text: String::new(), keep }
    }

    fn push(&mut self, piece: &str) {
        self.text.push_str(piece);
        if self.text.len() > 2 * self.keep {
            let mut cut = self.text.len() - self.keep;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
        }
    }

    fn text(&self) -> &str {
        let mut cut = self.text.len().saturating_sub(self.keep);
        while !self.text.is_char_boundary(cut) {
            cut += 1;
        }
        self.text[cut..].trim_end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runtimes_failure_says_a_build_step_did_not_start() {
        let not_started = "failed to create shim task: OCI runtime create failed: runc create failed: \
                           unable to start container process: exec: \"/bin/sh\": stat /bin/sh: no such file \
                           or directory: unknown";
        assert!(a_step_did_not_start(not_started));
        let copied_into_nothing =
            "failed to copy files: failed to copy file: Error processing tar file(exit \
                                   status 1): Error after fallback to chroot: no such file or directory";
        assert!(a_step_did_not_start(copied_into_nothing));
        assert!(!a_step_did_not_start("The command '/bin/sh -c false' returned a non-zero code: 1"));
    }
}
