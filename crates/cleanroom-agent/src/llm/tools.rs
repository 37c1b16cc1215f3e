//! The built-in agent's tools: `bash` (a session whose working directory
//! and variables carry over), `read_file`, `write_file`, `edit_file`, and
//! `finish`. Every one acts inside the environment through its own shell,
//! so paths, links and permissions mean what they mean there.

use std::time::{Duration, Instant};

use cleanroom_env::{CancelToken, EntryKind, EnvError, Environment, ExecRequest, ExitStatus, LastLine};
use serde_json::{json, Value};

use crate::workspace::{agent_environment, random_hex};

const SHELL_SCRIPT: &str = include_str!("shell.sh");

/// Most bytes of one observation the model sees (head and tail kept).
pub const OBSERVATION_LIMIT: usize = 16 * 1024;

/// A command's own limit unless the model asks for another.
const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

pub fn definitions() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "bash",
            "description": "Run a bash command on the machine (as root). The working directory, variables, functions and aliases carry over between calls; each call runs with no input. Long output is cut in the middle.",
            "parameters": {"type": "object", "properties": {
                "command": {"type": "string", "description": "The command to run."},
                "timeout": {"type": "integer", "description": "Seconds before the command is killed (default 600)."}},
                "required": ["command"]}}},
        {"type": "function", "function": {
            "name": "read_file",
            "description": "Read a text file, optionally a range of its lines (numbered from 1).",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string"},
                "start_line": {"type": "integer"},
                "end_line": {"type": "integer"}},
                "required": ["path"]}}},
        {"type": "function", "function": {
            "name": "write_file",
            "description": "Create or overwrite a file with the given content (parent directories are created).",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"]}}},
        {"type": "function", "function": {
            "name": "edit_file",
            "description": "Replace the one occurrence of old_text in a file with new_text.",
            "parameters": {"type": "object", "properties": {
                "path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
                "required": ["path", "old_text", "new_text"]}}},
        {"type": "function", "function": {
            "name": "finish",
            "description": "End your work. Give a summary of what you did and what you believe works.",
            "parameters": {"type": "object", "properties": {
                "summary": {"type": "string"}},
                "required": ["summary"]}}}
    ])
}

/// The shell session of one agent: its state directory in the environment.
pub struct Session {
    state: String,
    /// Fed with what the commands print, for progress reports.
    last_line: Option<LastLine>,
}

impl Session {
    pub fn start(env: &dyn Environment, last_line: Option<LastLine>) -> Result<Session, EnvError> {
        let session = Session { state: format!("/tmp/.cleanroom-shell-{}", random_hex()), last_line };
        session.make_state(env).map_err(|e| EnvError::io(session.state.clone(), e))?;
        // What shell.sh writes there is the harness's too.
        for file in ["out", "cwd", "vars"] {
            env.files().claim(&format!("{}/{file}", session.state), EntryKind::File);
        }
        Ok(session)
    }

    fn make_state(&self, env: &dyn Environment) -> std::io::Result<()> {
        let root = env.files();
        root.create_dir_all(&self.state, 0o700)?;
        root.write_file(&format!("{}/shell.sh", self.state), SHELL_SCRIPT.as_bytes(), 0o600)
    }

    /// Writes `bytes` to the state file `name`, making the state directory
    /// again if the agent removed it. A failure (the agent filled the disk,
    /// say) is the agent's doing: it comes back as the reason, for the model.
    fn pass_in(&self, env: &dyn Environment, name: &str, bytes: &[u8]) -> Result<(), String> {
        let file = format!("{}/{name}", self.state);
        let write = || env.files().write_file(&file, bytes, 0o600);
        write()
            .or_else(|_| self.make_state(env).and_then(|()| write()))
            .map_err(|e| format!("error: the harness cannot pass this call into the environment: {e}"))
    }

    /// Runs one tool call other than `finish`. Bad arguments come back as
    /// an observation for the model, not as an error.
    pub fn call(
        &self,
        env: &dyn Environment,
        name: &str,
        args: &Value,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<String, EnvError> {
        let text = |key: &str| args[key].as_str().map(str::to_string);
        let missing = |key: &str| Ok(format!("error: `{key}` (a string) is required"));
        match name {
            "bash" => {
                let Some(command) = text("command") else { return missing("command") };
                let asked = args["timeout"].as_u64().map(Duration::from_secs).unwrap_or(DEFAULT_COMMAND_TIMEOUT);
                self.bash(env, &command, asked, deadline, cancel)
            }
            "read_file" => {
                let Some(path) = text("path") else { return missing("path") };
                let (start, end) = (args["start_line"].as_u64(), args["end_line"].as_u64());
                let range = match (start, end) {
                    (None, None) => String::new(),
                    (s, e) => format!(" | sed -n '{},{}p'", s.unwrap_or(1).max(1), e.map_or("$".into(), |e| e.to_string())),
                };
                self.bash(env, &format!("cat -- {}{range}", quote(&path)), DEFAULT_COMMAND_TIMEOUT, deadline, cancel)
            }
            "write_file" => {
                let (Some(path), Some(content)) = (text("path"), text("content")) else {
                    return missing("path` and `content");
                };
                if let Err(why) = self.put(env, &content) {
                    return Ok(why);
                }
                let script = format!(
                    "mkdir -p -- \"$(dirname -- {p})\" && cat \"{s}/put\" > {p} && echo \"wrote $(wc -c < {p}) bytes to \"{p}",
                    p = quote(&path),
                    s = self.state
                );
                self.bash(env, &script, DEFAULT_COMMAND_TIMEOUT, deadline, cancel)
            }
            "edit_file" => {
                let (Some(path), Some(old), Some(new)) = (text("path"), text("old_text"), text("new_text")) else {
                    return missing("path`, `old_text` and `new_text");
                };
                self.edit(env, &path, &old, &new, deadline, cancel)
            }
            other => Ok(format!(
                "error: there is no tool `{other}`; the tools are bash, read_file, write_file, edit_file and finish"
            )),
        }
    }

    fn bash(
        &self,
        env: &dyn Environment,
        command: &str,
        asked: Duration,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<String, EnvError> {
        if let Err(why) = self.pass_in(env, "cmd", command.as_bytes()) {
            return Ok(why);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = asked.min(left).max(Duration::from_secs(1));
        let out = env.exec(&self.request("run", timeout), cancel)?;
        let exit_code = match out.status {
            ExitStatus::Exited(c) => Some(c),
            ExitStatus::Signaled(s) => Some(128 + s),
            ExitStatus::TimedOut | ExitStatus::Cancelled => None,
        };
        let mut text = if exit_code.is_none() {
            // The wrapper died before printing: show what the command wrote.
            env.exec(&self.request("show", Duration::from_secs(30)), cancel)?.combined.to_string_lossy()
        } else {
            out.combined.to_string_lossy()
        };
        match exit_code {
            Some(0) => {}
            Some(c) => text.push_str(&format!("\n[exit code {c}]")),
            None => text
                .push_str(&format!("\n[killed: the command ran past its {} s timeout]", timeout.as_secs())),
        }
        Ok(text)
    }

    fn request(&self, mode: &str, timeout: Duration) -> ExecRequest {
        ExecRequest {
            argv: vec![
                "/bin/bash".into(),
                "-l".into(),
                format!("{}/shell.sh", self.state),
                self.state.clone(),
                mode.into(),
            ],
            cwd: "/".into(),
            env: agent_environment(),
            timeout: Some(timeout),
            grace: Duration::from_secs(5),
            output_limit: OBSERVATION_LIMIT,
            last_line: self.last_line.clone(),
        }
    }

    fn put(&self, env: &dyn Environment, content: &str) -> Result<(), String> {
        self.pass_in(env, "put", content.as_bytes())
    }

    fn edit(
        &self,
        env: &dyn Environment,
        path: &str,
        old: &str,
        new: &str,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<String, EnvError> {
        // Read the file whole (not through the observation limit).
        let mut req = self.request("run", Duration::from_secs(60));
        req.output_limit = 16 << 20;
        if let Err(why) = self.pass_in(env, "cmd", format!("cat -- {}", quote(path)).as_bytes()) {
            return Ok(why);
        }
        let out = env.exec(&req, cancel)?;
        let body = out.combined.to_string_lossy();
        if !out.status.success() {
            return Ok(format!("error: cannot read {path}: {}", body.trim()));
        }
        let count = if old.is_empty() { 0 } else { body.matches(old).count() };
        if count != 1 {
            return Ok(format!("error: old_text occurs {count} times in {path}; it must occur exactly once"));
        }
        if let Err(why) = self.put(env, &body.replacen(old, new, 1)) {
            return Ok(why);
        }
        let script = format!("cat \"{}/put\" > {p} && echo edited {p}", self.state, p = quote(path));
        self.bash(env, &script, DEFAULT_COMMAND_TIMEOUT, deadline, cancel)
    }
}

/// A shell word that is exactly `s`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
