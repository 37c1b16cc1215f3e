//! The guest agent (the `cleanroom-guest` crate) on a host: uploaded with
//! the C libraries it was linked with into a fresh directory of root's
//! (in memory where the host lets programs run there: gone at the next
//! boot) and started through its own loader, so
//! that the agent of any harness runs on any x86-64 Linux host. Each
//! session serves the protocol of vm/protocol.rs on the session's standard
//! input and output: the same requests, the same link-safe file rules, the
//! same port relay as in a virtual machine.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::backend::Network;
use crate::error::EnvError;
use crate::ssh::transport::{quote, Connection};
use crate::vm::channel::Channel;
use crate::vm::protocol::{Frame, Message};

/// Makes the agent's directory in the first of the host's memory file
/// systems (gone at its next boot) where programs may run (Debian's /run
/// is noexec), else on its disk; prints the user's id and the directory.
const MAKE_DIR: &str = r#"set -e
if [ "$(id -u)" = 0 ]; then s=; else s='sudo -n'; fi
for base in /run /dev/shm /var/tmp /tmp; do
  d=$($s mktemp -d "$base/cleanroom-agent.XXXXXX") || continue
  if $s cp /bin/true "$d/probe" && $s "$d/probe"; then
    $s rm "$d/probe"
    echo "$(id -u) $d"
    exit 0
  fi
  $s rm -rf "$d"
done
echo "no directory where programs may run" >&2
exit 1"#;
/// How long an upload of the agent may take (a few MB).
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(300);
/// The most bytes of a session's error output kept for a message.
const STDERR_KEPT: usize = 16 << 10;

/// The agent, uploaded for this boot of the host.
#[derive(Debug, Clone)]
pub struct Uploaded {
    dir: String,
    loader: String,
    /// `sudo -n ` where the user is not root, else nothing.
    sudo: &'static str,
}

pub fn upload(conn: &Connection) -> Result<Uploaded, EnvError> {
    let agent = crate::vm::initramfs::guest_agent()?;
    let libraries = crate::vm::initramfs::libraries(&agent)?;
    let made = conn.text(MAKE_DIR, UPLOAD_TIMEOUT)?;
    let (uid, dir) = made.trim().split_once(' ').ok_or_else(|| {
        EnvError::Phase(format!(
            "{}: making the agent's directory said `{}`",
            conn.target().name,
            made.trim()
        ))
    })?;
    let sudo = if uid == "0" { "" } else { "sudo -n " };
    let mut loader = None;
    for file in std::iter::once(&agent).chain(&libraries) {
        let name = file_name(file);
        if name.starts_with("ld-linux") {
            loader = Some(format!("{dir}/{name}"));
        }
        let bytes = std::fs::read(file).map_err(|e| EnvError::io(file.display().to_string(), e))?;
        let path = quote(&format!("{dir}/{name}"));
        let script = format!("{sudo}sh -c 'cat > \"$1\" && chmod 0755 \"$1\"' sh {path}");
        let out = conn.run(&script, &bytes, UPLOAD_TIMEOUT)?;
        if !out.status.success() {
            return Err(EnvError::Command {
                program: format!("uploading the agent to {}", conn.target().name),
                detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
    }
    let loader =
        loader.ok_or_else(|| EnvError::Phase(format!("no loader among {}'s libraries", agent.display())))?;
    Ok(Uploaded { dir: dir.to_string(), loader, sudo })
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

impl Uploaded {
    /// `sudo -n ` where the user is not root, else nothing: what a command
    /// of the harness's own on the host begins with.
    pub fn sudo(&self) -> &'static str {
        self.sudo
    }

    /// The shell command that runs the agent with `args`.
    pub fn command(&self, args: &str) -> String {
        let dir = quote(&self.dir);
        format!("exec {}{} --library-path {dir} {dir}/cleanroom-guest {args}", self.sudo, quote(&self.loader))
    }
}

/// One running agent: a phase's (machine mode) or the file work's
/// between phases (service mode).
pub struct Session {
    pub channel: Arc<Channel>,
    child: Child,
}

impl Session {
    /// Starts the agent, sends `start` and waits for its hello, at most
    /// `timeout`.
    pub fn start(
        conn: &Connection,
        agent: &Uploaded,
        start: &Frame,
        network: Network,
        timeout: Duration,
    ) -> Result<Session, EnvError> {
        let network = match network {
            Network::Outbound => "outbound",
            Network::LoopbackOnly => "loopback",
        };
        let mut child = conn
            .session(&agent.command(&format!("--serve-host {network}")))
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| EnvError::io("run ssh", e))?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut pipe) = child.stderr.take() {
            let kept = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                    let room = STDERR_KEPT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            });
        }
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = child.stdout.take().expect("piped");
        let failed = |child: &mut Child, what: &str| {
            let _ = child.kill();
            let _ = child.wait();
            let said =
                String::from_utf8_lossy(&stderr.lock().unwrap_or_else(|p| p.into_inner())).trim().to_string();
            EnvError::Phase(format!("{what}: {said}"))
        };
        if let Err(e) = start.write_to(&mut stdin) {
            return Err(failed(&mut child, &format!("starting the agent: {e}")));
        }
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let hello = Frame::read_from(&mut stdout);
            let _ = tx.send((hello, stdout));
        });
        let Ok((hello, stdout)) = rx.recv_timeout(timeout) else {
            return Err(failed(&mut child, "no hello from the agent in time"));
        };
        let mode = match hello {
            Ok(Some(Frame { message: Message::Hello { mode }, .. })) => mode,
            Ok(Some(other)) => {
                return Err(failed(&mut child, &format!("the agent began with {:?}", other.message)))
            }
            Ok(None) => return Err(failed(&mut child, "the agent's session ended before its hello")),
            Err(e) => return Err(failed(&mut child, &format!("reading the agent's hello: {e}"))),
        };
        let channel = Arc::new(Channel::serving(Box::new(stdout), Box::new(stdin), mode));
        Ok(Session { channel, child })
    }

    /// Ends the session: the agent kills every process its commands left
    /// and waits until none is left (host.rs), then exits.
    pub fn end(mut self, timeout: Duration) -> Result<(), EnvError> {
        let answer = self.channel.call(|id| Message::PowerOff { id }, Vec::new(), timeout);
        let result = match answer {
            Ok(Frame { message: Message::Failed { failure, .. }, .. }) => {
                Err(EnvError::Phase(failure.message))
            }
            Ok(_) => Ok(()),
            Err(e) => Err(EnvError::Phase(format!("ending the agent's session: {e}"))),
        };
        let _ = self.child.kill();
        let _ = self.child.wait();
        result
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
