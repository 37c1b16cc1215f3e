//! The user's own OpenSSH client: one master connection per trial (its
//! socket in the environment's directory), every command a session
//! multiplexed over it. The user's configuration, known_hosts and agent
//! apply, as for any `ssh` they type; cleanroom adds only `BatchMode`
//! (never a prompt), keep-alives, and what the host's entry names.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::error::EnvError;
use crate::ssh::config::{HostConfig, SshConfig};

/// How long one connection attempt may take (an sshd on a busy host can
/// take seconds to say hello).
const CONNECT_TIMEOUT_S: u32 = 30;

/// How long one attempt to connect may wait for the TCP connection while
/// a host reboots: the host is silent until its network is up, and the
/// kernel's SYN retries back off (1, 3, 7, 15, 31 s); a fresh attempt every
/// few seconds finds the new boot within seconds of its sshd.
const REBOOT_CONNECT_TIMEOUT_S: u32 = 5;

/// Between two attempts to connect.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// What OpenSSH says of a failure that may pass by itself; anything else
/// (a key refused, a host key that does not match, a name that does not
/// resolve) is final.
const TRANSIENT: &[&str] = &[
    "timed out",
    "Connection refused",
    "Connection reset",
    "Connection closed",
    "No route to host",
    "Network is unreachable",
    "kex_exchange_identification",
];

/// Why an attempt to connect failed.
enum Failed {
    Transient(String),
    Final(String),
}

/// How to reach one host.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    pub address: String,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub key: Option<String>,
    /// `ssh -F` and `-o` options of the configuration.
    pub ssh_config: Option<String>,
    pub options: Vec<String>,
}

impl Target {
    pub fn of(host: &HostConfig, ssh: &SshConfig) -> Target {
        Target {
            name: host.name.clone(),
            address: host.address.clone(),
            port: host.port,
            user: host.user.clone(),
            key: host.key.clone(),
            ssh_config: ssh.ssh_config.clone(),
            options: ssh.options.clone(),
        }
    }

    /// `ssh` with this host's options, through `control` (a master's
    /// socket), before the destination.
    fn ssh(&self, control: &Path, connect_timeout_s: u32) -> Command {
        let mut cmd = Command::new(crate::sandbox::tool("ssh"));
        if let Some(file) = &self.ssh_config {
            cmd.arg("-F").arg(file);
        }
        cmd.args(["-o", "BatchMode=yes", "-o", &format!("ConnectTimeout={connect_timeout_s}")]);
        cmd.args(["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"]);
        cmd.arg("-o").arg(format!("ControlPath={}", control.display()));
        for option in &self.options {
            cmd.arg("-o").arg(option);
        }
        if let Some(port) = self.port {
            cmd.arg("-p").arg(port.to_string());
        }
        if let Some(user) = &self.user {
            cmd.arg("-l").arg(user);
        }
        if let Some(key) = &self.key {
            cmd.args(["-o", "IdentitiesOnly=yes", "-i", key]);
        }
        cmd
    }
}

/// A master connection to a host, and sessions over it.
pub struct Connection {
    target: Target,
    control: PathBuf,
    master: Child,
    stderr: PathBuf,
}

impl Connection {
    /// Connects, at most `timeout`, trying again while the failure is one
    /// that passes (a host still booting, an sshd too busy to answer in
    /// time); the master's own error when it fails for good.
    pub fn open(target: &Target, dir: &Path, timeout: Duration) -> Result<Connection, EnvError> {
        let began = Instant::now();
        loop {
            let left = timeout.saturating_sub(began.elapsed());
            match Connection::attempt(target, dir, left, CONNECT_TIMEOUT_S) {
                Ok(connection) => return Ok(connection),
                Err(Failed::Transient(_)) if left > RETRY_PAUSE => std::thread::sleep(RETRY_PAUSE),
                Err(Failed::Transient(why) | Failed::Final(why)) => {
                    return Err(EnvError::Command { program: format!("ssh {}", target.address), detail: why })
                }
            }
        }
    }

    /// One attempt to reach a host that is rebooting, at most `timeout`,
    /// however it fails: an attempt that reached the old boot just before
    /// it went down waits on a peer that is gone without a word, which ssh
    /// notices only by its keep-alives, a minute later.
    pub fn open_once(target: &Target, dir: &Path, timeout: Duration) -> Option<Connection> {
        Connection::attempt(target, dir, timeout, REBOOT_CONNECT_TIMEOUT_S).ok()
    }

    fn attempt(
        target: &Target,
        dir: &Path,
        timeout: Duration,
        connect_timeout_s: u32,
    ) -> Result<Connection, Failed> {
        let control = dir.join("control");
        let stderr = dir.join("ssh-master.log");
        let _ = std::fs::remove_file(&control);
        let log = std::fs::File::create(&stderr)
            .map_err(|e| Failed::Final(format!("{}: {e}", stderr.display())))?;
        let mut cmd = target.ssh(&control, connect_timeout_s);
        cmd.args(["-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-N", "--"])
            .arg(&target.address)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SAFETY: one raw system call between fork and exec: the master dies
        // with the harness, leaving nothing connected.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let master = cmd.spawn().map_err(|e| Failed::Final(format!("run ssh: {e}")))?;
        let mut connection = Connection { target: target.clone(), control, master, stderr };
        let began = Instant::now();
        loop {
            if connection.master.try_wait().ok().flatten().is_some() {
                let why = std::fs::read_to_string(&connection.stderr).unwrap_or_default().trim().to_string();
                let passes = TRANSIENT.iter().any(|t| why.contains(t));
                return Err(if passes { Failed::Transient(why) } else { Failed::Final(why) });
            }
            // The socket appears once the master is authenticated.
            if connection.control.exists() {
                return Ok(connection);
            }
            if began.elapsed() > timeout {
                return Err(Failed::Final(format!("no connection within {}s", timeout.as_secs())));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    /// A session running `script` with the remote user's shell, over the
    /// master.
    pub fn session(&self, script: &str) -> Command {
        let mut cmd = self.target.ssh(&self.control, CONNECT_TIMEOUT_S);
        cmd.args(["-o", "ControlMaster=no", "-T", "--"]).arg(&self.target.address).arg(script);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd
    }

    /// Runs `script` with `input` on its standard input, at most `timeout`.
    pub fn run(&self, script: &str, input: &[u8], timeout: Duration) -> Result<Output, EnvError> {
        let mut child =
            self.session(script).stdin(Stdio::piped()).spawn().map_err(|e| EnvError::io("run ssh", e))?;
        let mut stdin = child.stdin.take().expect("piped");
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        self.wait(child, script, timeout)
    }

    /// Runs `script` with what `source` (a local program) writes on its
    /// standard input, streamed, at most `timeout`; fails if either fails.
    pub fn run_fed(&self, script: &str, mut source: Command, timeout: Duration) -> Result<Output, EnvError> {
        let program = source.get_program().to_string_lossy().into_owned();
        let mut feeder = source
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| EnvError::io(format!("run {program}"), e))?;
        let feed = feeder.stdout.take().expect("piped");
        let child = self.session(script).stdin(feed).spawn().map_err(|e| EnvError::io("run ssh", e));
        // A session killed or failed closes the pipe: the feeder ends too.
        let out = child.and_then(|child| self.wait(child, script, timeout));
        if out.is_err() {
            let _ = feeder.kill();
        }
        let fed = feeder.wait_with_output().map_err(|e| EnvError::io(format!("run {program}"), e))?;
        let out = out?;
        if !fed.status.success() && out.status.success() {
            return Err(EnvError::Command {
                program,
                detail: String::from_utf8_lossy(&fed.stderr).trim().to_string(),
            });
        }
        Ok(out)
    }

    /// Waits for `child`, a session running `script`, at most `timeout`.
    fn wait(&self, child: Child, script: &str, timeout: Duration) -> Result<Output, EnvError> {
        let pid = child.id() as i32;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(timeout) {
            Ok(output) => output.map_err(|e| EnvError::io("run ssh", e)),
            Err(_) => {
                // SAFETY: signalling our own child, not yet reaped (its
                // waiter still waits).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                Err(EnvError::Command {
                    program: format!("ssh {}", self.target.address),
                    detail: format!("`{}` did not end within {}s", first_line(script), timeout.as_secs()),
                })
            }
        }
    }

    /// [`Connection::run`], its standard output as text when it succeeded.
    pub fn text(&self, script: &str, timeout: Duration) -> Result<String, EnvError> {
        let out = self.run(script, &[], timeout)?;
        if !out.status.success() {
            return Err(EnvError::Command {
                program: format!("ssh {} `{}`", self.target.address, first_line(script)),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let _ = self.master.kill();
        let _ = self.master.wait();
        let _ = std::fs::remove_file(&self.control);
    }
}

fn first_line(script: &str) -> &str {
    script.lines().next().unwrap_or("")
}

/// `text` quoted for a POSIX shell.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_a_shell() {
        let hostile = "it's $(reboot) `x` \"y\" \\ ;|&";
        let out =
            Command::new("/bin/sh").arg("-c").arg(format!("printf %s {}", quote(hostile))).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), hostile);
    }
}
