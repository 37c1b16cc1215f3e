//! The agent's side of the protocol: one reader of frames, each request
//! handled on a thread of its own (a command can run for hours while files
//! are read), answers written whole, one frame at a time.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cleanroom_env::fanotify::FanotifyWatch;
use cleanroom_env::vm::protocol::{Failure, Frame, Message, Mode, Seen};
use cleanroom_env::{AccessWatch, CancelToken, Globs, Manifest, ReadError, RootFs, WalkLimits};

use crate::{changes, exec, relay, show};

/// How long the processes of a host's commands may take to die.
const END_ALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Limits on the commands of a phase, from the harness's start.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_mb: Option<u64>,
    pub pids: Option<u64>,
}

impl Limits {
    pub fn none() -> Limits {
        Limits { memory_mb: None, pids: None }
    }
}

/// Where answers go: every thread writes whole frames through it.
#[derive(Clone)]
pub struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl Out {
    pub fn send(&self, frame: Frame) {
        let mut out = self.0.lock().unwrap_or_else(|p| p.into_inner());
        // A broken port means the harness is gone: the machine is about to
        // be powered off from outside, nothing to report to.
        let _ = frame.write_to(&mut **out);
    }

    fn done(&self, id: u64, data: Vec<u8>) {
        self.send(Frame::with_data(Message::Done { id }, data));
    }

    fn failed(&self, id: u64, failure: Failure) {
        self.send(Frame::new(Message::Failed { id, failure }));
    }

    fn answer(&self, id: u64, result: io::Result<Vec<u8>>) {
        match result {
            Ok(data) => self.done(id, data),
            Err(e) => self.failed(id, Failure::of(&e)),
        }
    }
}

/// Where the agent serves: what ending its service means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A virtual machine's init: the machine is powered off after.
    VirtualMachine,
    /// A host reached over SSH (host.rs): every process of its commands is
    /// killed first, as a power-off would.
    Host,
}

pub fn serve(
    mut input: Box<dyn Read + Send>,
    output: Box<dyn Write + Send>,
    root: &str,
    mode: Mode,
    limits: Limits,
    place: Place,
) -> io::Result<()> {
    let out = Out(Arc::new(Mutex::new(output)));
    let root = Arc::new(RootFs::open(std::path::Path::new(root))?);
    let commands = exec::Commands::new(limits);
    let relays = relay::Relays::default();
    let kills: Arc<Mutex<HashMap<u64, Sender<exec::Event>>>> = Arc::default();
    let restricted = AtomicBool::new(false);
    let mut watches: HashMap<u64, FanotifyWatch> = HashMap::new();
    out.send(Frame::new(Message::Hello { mode }));
    while let Some(frame) = Frame::read_from(&mut input)? {
        let Frame { message, data } = frame;
        match message {
            Message::Exec { id, argv, cwd, env, timeout_ms, grace_ms } => {
                if mode == Mode::Service {
                    out.failed(id, refused("commands run only in a phase"));
                    continue;
                }
                let request = exec::Request {
                    id,
                    restricted: restricted.load(Ordering::SeqCst),
                    argv,
                    cwd,
                    env,
                    timeout: timeout_ms.map(Duration::from_millis),
                    grace: Duration::from_millis(grace_ms),
                };
                commands.start(request, out.clone(), kills.clone());
            }
            Message::Kill { id } => {
                if let Some(tx) = kills.lock().unwrap_or_else(|p| p.into_inner()).get(&id) {
                    let _ = tx.send(exec::Event::Kill);
                }
            }
            Message::Listen { id, port } => {
                if mode == Mode::Service {
                    out.failed(id, refused("ports are served only in a phase"));
                    continue;
                }
                out.answer(id, relays.listen(port, out.clone()).map(|()| Vec::new()));
            }
            Message::Seal { id, paths } => {
                let sealed = seal(&paths);
                // From now on no command may undo a seal (unmount, raw
                // devices, modules): the sandbox's verification phases
                // lack the same powers.
                restricted.store(sealed.is_ok(), Ordering::SeqCst);
                out.answer(id, sealed.map(|()| Vec::new()))
            }
            Message::Show { id, what, path } => {
                if mode == Mode::Service {
                    out.failed(id, refused("host directories are shown only in a phase"));
                    continue;
                }
                let shown = show::show(&root, &what, &path);
                out.answer(id, shown.and_then(|made| serde_json::to_vec(&made).map_err(io::Error::other)))
            }
            Message::WatchAccess { id, watch } => {
                if mode == Mode::Service {
                    out.failed(id, refused("access is watched only in a phase"));
                    continue;
                }
                match FanotifyWatch::start(std::path::Path::new("/")) {
                    Ok(w) => {
                        watches.insert(watch, w);
                        out.done(id, Vec::new());
                    }
                    Err(e) => {
                        out.failed(id, Failure { errno: None, message: e.to_string(), too_large: None })
                    }
                }
            }
            Message::FinishWatch { id, watch } => match watches.remove(&watch) {
                Some(w) => {
                    let seen = Seen::of(&Box::new(w).finish());
                    out.answer(id, serde_json::to_vec(&seen).map_err(io::Error::other));
                }
                None => out.failed(id, refused("no such watch")),
            },
            Message::Data { conn } => relays.deliver(conn, &data),
            Message::Close { conn } => relays.close(conn),
            Message::PowerOff { id } => {
                let ended = match place {
                    Place::Host => crate::host::end_all(END_ALL_TIMEOUT),
                    Place::VirtualMachine => Ok(()),
                };
                // SAFETY: sync has no preconditions.
                unsafe { libc::sync() };
                out.answer(id, ended.map(|()| Vec::new()));
                // The caller powers the machine off, or the host's agent ends.
                return Ok(());
            }
            other => {
                let (root, out) = (root.clone(), out.clone());
                std::thread::spawn(move || files(&root, &out, other, data));
            }
        }
    }
    Ok(())
}

/// Seals the paths as the sandbox does (cleanroom_env::seal): every
/// directory above each pinned by a bind onto itself, each path bound
/// read-only; a path with a link in it is left alone.
fn seal(paths: &[String]) -> io::Result<()> {
    let (pinned, sealed) = cleanroom_env::seal::plan(paths).map_err(io::Error::other)?;
    for (list, flags) in [(&pinned, 0), (&sealed, libc::MS_RDONLY)] {
        for path in list {
            // SAFETY: raw system calls on a NUL-terminated path of this root.
            let made =
                unsafe { !cleanroom_env::seal::link_free(path) || cleanroom_env::seal::bind(path, flags) };
            if !made {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("sealing {}: {e}", path.to_string_lossy())));
            }
        }
    }
    Ok(())
}

fn refused(why: &str) -> Failure {
    Failure { errno: Some(libc::EPERM), message: why.to_string(), too_large: None }
}

/// A request on the machine's files, answered.
fn files(root: &RootFs, out: &Out, message: Message, data: Vec<u8>) {
    let cancel = || CancelToken::new().map_err(io::Error::other);
    match message {
        Message::CreateDirAll { id, path, mode } => {
            out.answer(id, root.create_dir_all(&path, mode).map(|()| Vec::new()))
        }
        Message::WriteFile { id, path, mode } => {
            out.answer(id, root.write_file(&path, &data, mode).map(|()| Vec::new()))
        }
        Message::AppendFile { id, path } => {
            out.answer(id, root.append_file(&path, &data).map(|()| Vec::new()))
        }
        Message::Symlink { id, path, target } => {
            out.answer(id, root.symlink(&path, &target).map(|()| Vec::new()))
        }
        Message::ReadRegular { id, path, limit } => match root.read_regular(&path, limit) {
            Ok(bytes) => out.done(id, bytes),
            Err(e) => out.failed(id, read_failure(&e)),
        },
        Message::ManifestAgainst { id, dir, entries, depth, name_bytes, time_ms } => {
            let result = (|| {
                let original: Manifest = serde_json::from_slice(&data).map_err(io::Error::other)?;
                let limits = WalkLimits { entries, depth, name_bytes, time: Duration::from_millis(time_ms) };
                let manifest = root
                    .manifest_against(&dir, &original, limits, &cancel()?)
                    .map_err(|_| io::Error::other("cancelled"))?;
                serde_json::to_vec(&manifest).map_err(io::Error::other)
            })();
            out.answer(id, result)
        }
        Message::RemoveMatching { id, dir, patterns } => {
            let result = (|| {
                let globs = Globs::new(&patterns).map_err(io::Error::other)?;
                let removed = root.remove_matching(&dir, &globs, &cancel()?)?;
                serde_json::to_vec(&removed).map_err(io::Error::other)
            })();
            out.answer(id, result)
        }
        Message::RemoveMountPoints { id, paths } => {
            root.remove_mount_points(&paths);
            out.done(id, Vec::new())
        }
        Message::FileId { id, path } => match root.file_id(&path) {
            Ok(fid) => out.send(Frame::new(Message::FileIdIs { id, dev: fid.dev, ino: fid.ino })),
            Err(e) => out.failed(id, Failure::of(&e)),
        },
        Message::List { id, entries, depth, time_ms } => {
            let listing = changes::listing(root.host_path(), entries, depth, Duration::from_millis(time_ms));
            out.answer(id, listing.and_then(|l| serde_json::to_vec(&l).map_err(io::Error::other)))
        }
        Message::Changes { id, entries, depth, time_ms } => {
            let result = (|| {
                let listing = serde_json::from_slice(&data).map_err(io::Error::other)?;
                let found = changes::against(
                    root.host_path(),
                    &listing,
                    entries,
                    depth,
                    Duration::from_millis(time_ms),
                );
                serde_json::to_vec(&found).map_err(io::Error::other)
            })();
            out.answer(id, result)
        }
        other => {
            let id = request_id(&other);
            out.failed(
                id,
                Failure { errno: None, message: format!("not a request: {other:?}"), too_large: None },
            )
        }
    }
}

fn request_id(message: &Message) -> u64 {
    match message {
        Message::Exec { id, .. }
        | Message::Kill { id }
        | Message::CreateDirAll { id, .. }
        | Message::WriteFile { id, .. }
        | Message::AppendFile { id, .. }
        | Message::Symlink { id, .. }
        | Message::ReadRegular { id, .. }
        | Message::ManifestAgainst { id, .. }
        | Message::RemoveMatching { id, .. }
        | Message::FileId { id, .. }
        | Message::Changes { id, .. }
        | Message::List { id, .. }
        | Message::Listen { id, .. }
        | Message::Seal { id, .. }
        | Message::Show { id, .. }
        | Message::RemoveMountPoints { id, .. }
        | Message::WatchAccess { id, .. }
        | Message::FinishWatch { id, .. }
        | Message::PowerOff { id }
        | Message::Output { id, .. }
        | Message::Exited { id, .. }
        | Message::Done { id }
        | Message::FileIdIs { id, .. }
        | Message::Failed { id, .. } => *id,
        Message::Waiting
        | Message::Start { .. }
        | Message::Hello { .. }
        | Message::Accepted { .. }
        | Message::Data { .. }
        | Message::Close { .. } => 0,
    }
}

fn read_failure(e: &ReadError) -> Failure {
    let (errno, too_large) = match e {
        ReadError::Missing => (Some(libc::ENOENT), None),
        ReadError::SymlinkInPath => (Some(libc::ELOOP), None),
        ReadError::NotRegular => (Some(libc::EINVAL), None),
        ReadError::TooLarge { size } => (Some(libc::EFBIG), Some(*size)),
        ReadError::Io(e) => (e.raw_os_error(), None),
    };
    Failure { errno, message: e.to_string(), too_large }
}
