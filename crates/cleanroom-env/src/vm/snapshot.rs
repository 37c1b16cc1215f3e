//! Booted snapshots: the warm start of a machine.
//!
//! A cold boot spends seconds in the kernel before the agent runs (under
//! TCG, ~2.4 s to an agent serving the disk, ~0.6 s resumed; measured by
//! scripts/bench.sh). A snapshot is a machine booted
//! once to the point where its agent waits for Message::Start, with nothing
//! of any disk read (the disk's driver loads only after the start), saved
//! by QEMU's migration to a file. Each boot then resumes that file instead
//! (`-incoming`), with the trial's own disk attached, and its start gives it
//! what is its own: the mode, the limits, the host's clock and fresh seed
//! for its random number generator.
//!
//! A snapshot fits one shape of machine (accelerator, CPUs, memory, NIC or
//! none) of one QEMU, kernel and initramfs; each is made on first need,
//! under a lock, and kept beside the machine image (`snapshots/`), so that
//! a rebuilt image takes its snapshots with it. The [`KEEP`] used last are
//! kept.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::backend::Network;
use crate::error::EnvError;
use crate::vm::protocol::Message;
use crate::vm::qemu::{self, Accel};
use crate::vm::qmp::Qmp;
use crate::vm::recent;
use crate::vm::{channel, Prepared, BOOT_TIMEOUT};

/// Bumped when what a snapshot holds changes meaning.
const FORMAT: &str = "cleanroom-snapshot-1";
/// How long saving a machine's memory may take.
const SAVE_TIMEOUT: Duration = Duration::from_secs(120);
/// How many snapshots an image keeps (130-190 MB each): its shapes in use, and
/// those of another build of the guest agent (a debug and a release one).
const KEEP: usize = 8;

/// The shape of machine a snapshot fits.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub accel: Accel,
    pub cpus: u32,
    pub memory_mb: u64,
    /// A network card (a phase with outbound network).
    pub nic: bool,
}

/// The snapshot of `image` for `shape`, open (a snapshot pruned meanwhile
/// stays readable), made now if there is none yet.
pub fn ensure(image: &Prepared, shape: Shape) -> Result<File, EnvError> {
    let dir = image.kernel.parent().unwrap_or(Path::new("/")).join("snapshots");
    std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(dir.display().to_string(), e))?;
    let key = key(image, shape)?;
    let path = dir.join(format!("{key}.state"));
    if let Some(file) = recent::open(&path) {
        return Ok(file);
    }
    let _lock = crate::image::lock(&dir.join(format!("{key}.lock")), "a booted snapshot", &mut |_| {})?;
    if let Some(file) = recent::open(&path) {
        return Ok(file);
    }
    recent::remove_dead_makers(&dir);
    // Short: Unix sockets are made in it.
    let work = recent::work_path(&dir);
    let made = std::fs::create_dir(&work)
        .map_err(|e| EnvError::io(work.display().to_string(), e))
        .and_then(|()| make(image, shape, &work, &path));
    let _ = std::fs::remove_dir_all(&work);
    let failed = |e: EnvError| {
        EnvError::Phase(format!(
            "making a booted snapshot in {}: {e} (CLEANROOM_VM_BOOT=cold boots every machine without one)",
            dir.display()
        ))
    };
    made.map_err(failed)?;
    prune(&dir, &path);
    recent::open(&path).ok_or_else(|| failed(EnvError::Phase(format!("{} vanished", path.display()))))
}

/// Removes all but the [`KEEP`] snapshots used last (`made` among them),
/// and their locks.
fn prune(dir: &Path, made: &Path) {
    let is_snapshot = |p: &Path| p.extension().is_some_and(|x| x == "state");
    for old in recent::prune(dir, is_snapshot, KEEP, made) {
        let _ = std::fs::remove_file(old.with_extension("lock"));
    }
}

/// Names what the snapshot depends on: QEMU's binary, the kernel, the
/// initramfs (its name carries its digest: the same agent makes the same
/// one, whatever the home) and the shape.
fn key(image: &Prepared, shape: Shape) -> Result<String, EnvError> {
    let mut hash = Sha256::new();
    hash.update(FORMAT);
    let qemu = crate::sandbox::tool(qemu::QEMU);
    for file in [&qemu, &image.kernel] {
        let meta = std::fs::metadata(file).map_err(|e| EnvError::io(file.display().to_string(), e))?;
        hash.update(format!("{}:{}:{}:{}\n", file.display(), meta.len(), meta.mtime(), meta.mtime_nsec()));
    }
    let initramfs = std::fs::metadata(&image.initramfs)
        .map_err(|e| EnvError::io(image.initramfs.display().to_string(), e))?;
    hash.update(image.initramfs.file_name().unwrap_or_default().as_encoded_bytes());
    hash.update(format!(":{}\n", initramfs.len()));
    let shape = format!(
        "{}-{}cpu-{}mb-{}",
        shape.accel.as_str(),
        shape.cpus,
        shape.memory_mb,
        if shape.nic { "nic" } else { "nonic" }
    );
    hash.update(&shape);
    let digest: String = hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    Ok(format!("{shape}-{digest}"))
}

/// Boots a machine of `shape` cold to its agent's wait, and saves it to
/// `path` (through a temporary file, renamed when whole).
fn make(image: &Prepared, shape: Shape, work: &Path, path: &Path) -> Result<(), EnvError> {
    let disk = work.join("disk.qcow2");
    super::overlay(&image.disk, &disk, 0)?;
    let resolv_conf = work.join("resolv.conf");
    std::fs::write(&resolv_conf, "").map_err(|e| EnvError::io(resolv_conf.display().to_string(), e))?;
    let (socket, qmp_socket) = (work.join("agent"), work.join("qmp"));
    let mut machine = qemu::Machine::start(&qemu::Boot {
        kernel: &image.kernel,
        initramfs: &image.initramfs,
        disk: &disk,
        shown: &[],
        gpus: &[],
        socket: &socket,
        accel: shape.accel,
        cpus: shape.cpus,
        memory_mb: shape.memory_mb,
        network: if shape.nic { Network::Outbound } else { Network::LoopbackOnly },
        resolv_conf: &resolv_conf,
        resume: None,
        qmp: Some(&qmp_socket),
    })?;
    let failed = |what: &str, e: &dyn std::fmt::Display, machine: &qemu::Machine| {
        EnvError::Phase(format!("{what}: {e}; the machine's console ended:\n{}", machine.console()))
    };
    let began = Instant::now();
    // The agent stays connected while the machine is saved: a restored
    // one finds its port closed and waits for the harness's connection.
    let _agent = wait_for_agent(&socket, &mut || machine.running())
        .map_err(|e| failed("waiting for the agent", &e, &machine))?;
    let left = BOOT_TIMEOUT.saturating_sub(began.elapsed());
    let qmp_stream = channel::connect(&qmp_socket, left, &mut || machine.running())
        .map_err(|e| failed("QEMU's QMP socket", &e, &machine))?;
    let mut qmp = Qmp::open(qmp_stream).map_err(|e| failed("QEMU's QMP socket", &e, &machine))?;
    save(&mut qmp, work, path).map_err(|e| failed("saving the machine", &e, &machine))
    // Dropping the machine kills what is left of it: migrated, it is paused.
}

/// Waits for the agent's [`Message::Waiting`] on a cold boot.
fn wait_for_agent(socket: &Path, alive: &mut dyn FnMut() -> bool) -> std::io::Result<UnixStream> {
    let began = Instant::now();
    let mut stream = channel::connect(socket, BOOT_TIMEOUT, alive)?;
    let waiting = |m: &Message| (*m == Message::Waiting).then_some(());
    channel::first_frame(&mut stream, began, BOOT_TIMEOUT, alive, "that it waits", waiting)?;
    Ok(stream)
}

/// Migrates the running machine into a file, through a Unix socket the
/// harness listens on (QEMU 7's migration has no file target of its own).
fn save(qmp: &mut Qmp, work: &Path, path: &Path) -> std::io::Result<()> {
    let target = work.join("migrate");
    let listener = UnixListener::bind(&target)?;
    let tmp = work.join("state");
    let copier = {
        let tmp = tmp.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            let (mut stream, _) = listener.accept()?;
            let mut file = std::fs::File::create(&tmp)?;
            std::io::copy(&mut stream, &mut file)?;
            file.sync_all()
        })
    };
    let asked = qmp.command("migrate", json!({ "uri": format!("unix:{}", target.display()) }));
    let migrated = asked.and_then(|_| wait_for_migration(qmp));
    if migrated.is_err() {
        // Unblocks the copier's accept when QEMU never connected.
        let _ = UnixStream::connect(&target);
    }
    let copied = copier.join().unwrap_or_else(|_| Err(std::io::Error::other("the copier panicked")));
    migrated?;
    copied?;
    std::fs::rename(&tmp, path)
}

fn wait_for_migration(qmp: &mut Qmp) -> std::io::Result<()> {
    let began = Instant::now();
    loop {
        let info = qmp.command("query-migrate", json!({}))?;
        match info["status"].as_str() {
            Some("completed") => return Ok(()),
            Some("failed") | Some("cancelled") => {
                return Err(std::io::Error::other(format!(
                    "QEMU's migration {}: {}",
                    info["status"],
                    info["error-desc"].as_str().unwrap_or("no reason given")
                )))
            }
            _ if began.elapsed() > SAVE_TIMEOUT => {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "QEMU's migration did not end"))
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}
