//! Commands of a phase. Each runs in a session and a cgroup of its own
//! under `/sys/fs/cgroup/cleanroom`, which holds the task's memory and
//! process limits; a timeout or a kill ends the whole cgroup at once, so
//! nothing the command started (detached or not) survives it. Processes a
//! command leaves behind when it exits on its own live on, as in the
//! sandbox, until the phase's machine is powered off.

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cleanroom_env::vm::protocol::{Frame, Message, Status};

use crate::serve::{Limits, Out};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const PARENT: &str = "cleanroom";
/// What a command of a sealed phase cannot do: mount or unmount, use raw
/// devices or create them, reboot, trace, lift immutability. Loading a
/// module stays allowed: a verifier of a module task rebuilds and loads it
/// (and a module the agent installed loads at boot anyway, docs/backends.md).
const RESTRICTED: &[i32] = &[
    21, // CAP_SYS_ADMIN
    17, // CAP_SYS_RAWIO
    22, // CAP_SYS_BOOT
    27, // CAP_MKNOD
    19, // CAP_SYS_PTRACE
    9,  // CAP_LINUX_IMMUTABLE
];
/// How long output that is still in the pipes may take to arrive after the
/// command exited (a process it left behind may hold them open forever).
const DRAIN: Duration = Duration::from_millis(250);

pub struct Request {
    pub id: u64,
    /// Without the capabilities that could undo a seal ([`RESTRICTED`]).
    pub restricted: bool,
    pub argv: Vec<String>,
    pub cwd: String,
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    pub grace: Duration,
}

pub enum Event {
    Exited(std::process::ExitStatus),
    Kill,
}

/// The commands of this agent, and the cgroup that holds their limits.
pub struct Commands {
    parent: Option<PathBuf>,
}

impl Commands {
    pub fn new(limits: Limits) -> Commands {
        Commands { parent: make_parent(limits).ok() }
    }

    /// Starts the command; a kill for it that arrives from now on is heard.
    pub fn start(&self, req: Request, out: Out, kills: Arc<Mutex<HashMap<u64, Sender<Event>>>>) {
        let parent = self.parent.clone();
        let (tx, rx) = mpsc::channel();
        kills.lock().unwrap_or_else(|p| p.into_inner()).insert(req.id, tx.clone());
        std::thread::spawn(move || {
            let id = req.id;
            let status = run(&req, parent, &out, tx, rx);
            kills.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            out.send(Frame::new(Message::Exited { id, status }));
        });
    }
}

/// The cgroup every command's own is made in, where cgroup v2 is.
pub fn parent_cgroup() -> Option<PathBuf> {
    let root = PathBuf::from(CGROUP_ROOT);
    root.join("cgroup.controllers").exists().then(|| root.join(PARENT))
}

/// `/sys/fs/cgroup/cleanroom` with the phase's limits, where cgroup v2 is.
fn make_parent(limits: Limits) -> io::Result<PathBuf> {
    let parent = parent_cgroup().ok_or_else(|| io::Error::other("no cgroup v2"))?;
    let _ = std::fs::write(Path::new(CGROUP_ROOT).join("cgroup.subtree_control"), "+memory +pids");
    std::fs::create_dir_all(&parent)?;
    if let Some(mb) = limits.memory_mb {
        std::fs::write(parent.join("memory.max"), (mb << 20).to_string())?;
        let _ = std::fs::write(parent.join("memory.swap.max"), "0");
    }
    if let Some(pids) = limits.pids {
        std::fs::write(parent.join("pids.max"), pids.to_string())?;
    }
    Ok(parent)
}

fn run(
    req: &Request,
    parent: Option<PathBuf>,
    out: &Out,
    tx: Sender<Event>,
    rx: mpsc::Receiver<Event>,
) -> Status {
    let cgroup =
        parent.map(|p| p.join(format!("cmd-{}", req.id))).filter(|cg| std::fs::create_dir(cg).is_ok());
    let procs = cgroup
        .as_ref()
        .and_then(|cg| std::fs::File::options().write(true).open(cg.join("cgroup.procs")).ok());
    let procs_fd = procs.as_ref().map(|f| f.as_raw_fd());
    let restricted = req.restricted;
    let Some(program) = req.argv.first() else {
        return fail(out, req.id, "an empty command");
    };
    let mut cmd = Command::new(program);
    cmd.args(&req.argv[1..])
        .env_clear()
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&req.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: raw system calls only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            if let Some(fd) = procs_fd {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            if restricted {
                for cap in RESTRICTED {
                    if libc::prctl(libc::PR_CAPBSET_DROP, *cap as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return fail(out, req.id, &format!("cannot run {program}: {e}")),
    };
    drop(procs);
    let pid = child.id() as i32;
    let (drained_tx, drained_rx) = mpsc::channel();
    let streams = [
        (1u8, child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>)),
        (2u8, child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>)),
    ];
    for (stream, pipe) in streams {
        let (out, drained, id) = (out.clone(), drained_tx.clone(), req.id);
        if let Some(mut pipe) = pipe {
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 << 10];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    out.send(Frame::with_data(Message::Output { id, stream }, buf[..n].to_vec()));
                }
                let _ = drained.send(());
            });
        }
    }
    drop(drained_tx);
    std::thread::spawn(move || {
        if let Ok(status) = child.wait() {
            let _ = tx.send(Event::Exited(status));
        }
    });
    let ended = |status: std::process::ExitStatus| match (status.code(), status.signal()) {
        (Some(code), _) => Status::Exited(code),
        (None, Some(sig)) => Status::Signaled(sig),
        (None, None) => Status::Exited(-1),
    };
    let first = match req.timeout {
        Some(t) => rx.recv_timeout(t).ok(),
        None => rx.recv().ok(),
    };
    let kill_all = |sig: i32| signal_tree(pid, cgroup.as_ref(), sig);
    let status = match first {
        Some(Event::Exited(status)) => {
            // Output still in the pipes arrives first; a process left behind
            // that holds them open does not hold the answer up.
            let deadline = std::time::Instant::now() + DRAIN;
            for _ in 0..2 {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if drained_rx.recv_timeout(left).is_err() {
                    break;
                }
            }
            return ended(status);
        }
        Some(Event::Kill) => {
            kill_all(libc::SIGKILL);
            (Status::Killed, false)
        }
        None => {
            // TERM first; after the grace, whatever is left of the tree
            // (the command itself, or what it started) is killed.
            kill_all(libc::SIGTERM);
            let exited = matches!(rx.recv_timeout(req.grace), Ok(Event::Exited(_)));
            kill_all(libc::SIGKILL);
            (Status::TimedOut, exited)
        }
    };
    let (status, mut exited) = status;
    // Wait for the command itself; the cgroup's kill has ended the rest.
    while !exited {
        match rx.recv() {
            Ok(Event::Exited(_)) | Err(_) => exited = true,
            Ok(Event::Kill) => {}
        }
    }
    status
}

/// Signals the command's session and everything in its cgroup; SIGKILL
/// uses the cgroup's own kill, which no fork can outrun.
fn signal_tree(pid: i32, cgroup: Option<&PathBuf>, sig: i32) {
    // SAFETY: signalling a process group; errors (gone already) are fine.
    unsafe { libc::kill(-pid, sig) };
    match cgroup {
        Some(cg) if sig == libc::SIGKILL => kill_cgroup(cg),
        Some(cg) => signal_cgroup(cg, sig),
        None => {}
    }
}

/// Kills everything in the cgroup `cg` and those below it: by the
/// cgroup's own kill where the kernel has it (no fork can outrun it),
/// else a process at a time.
pub fn kill_cgroup(cg: &Path) {
    if std::fs::write(cg.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    signal_cgroup(cg, libc::SIGKILL);
}

fn signal_cgroup(cg: &Path, sig: i32) {
    for line in std::fs::read_to_string(cg.join("cgroup.procs")).unwrap_or_default().lines() {
        if let Ok(p) = line.parse::<i32>() {
            // SAFETY: signalling a process; errors (gone already) are fine.
            unsafe { libc::kill(p, sig) };
        }
    }
    for child in std::fs::read_dir(cg).into_iter().flatten().flatten() {
        if child.path().is_dir() {
            signal_cgroup(&child.path(), sig);
        }
    }
}

fn fail(out: &Out, id: u64, why: &str) -> Status {
    out.send(Frame::with_data(
        Message::Output { id, stream: 2 },
        format!("cleanroom-guest: {why}\n").into_bytes(),
    ));
    Status::Exited(127)
}
