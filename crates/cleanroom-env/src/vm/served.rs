//! What an environment asks of its guest agent beyond commands and files,
//! the same in a virtual machine (the vm backend) and on a host (the ssh
//! backend): a port served on its loopback, an access watch, the changes
//! since a listing, host directories shown read-only.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use crate::access::AccessWatch;
use crate::backend::{EnvDiff, PathChange, PathChangeKind};
use crate::bounds::WalkLimits;
use crate::error::EnvError;
use crate::vm::channel::Channel;
use crate::vm::files::MachineFiles;
use crate::vm::protocol::{self, Message, Shown};
use crate::vm::watch;

/// How long the agent may take to answer a request of this file.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `request` with `data` and returns its answer's bytes; a refusal
/// is an error that says `what` was asked.
fn call(
    channel: &Channel,
    what: &str,
    request: impl FnOnce(u64) -> Message,
    data: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, EnvError> {
    let answer = channel.call(request, data, timeout).map_err(|e| EnvError::io(what.to_string(), e))?;
    match answer.message {
        Message::Failed { failure, .. } => Err(EnvError::Phase(format!("{what}: {}", failure.message))),
        _ => Ok(answer.data),
    }
}

/// A socket of the harness's own, on this machine's loopback, to which the
/// agent relays each connection to 127.0.0.1:`port` inside; `place` names
/// the inside ("machine", "host") in errors.
pub fn listen(channel: &Channel, port: u16, place: &str) -> Result<TcpListener, EnvError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| EnvError::io("listen on the host", e))?;
    let addr = listener.local_addr().map_err(|e| EnvError::io("listen on the host", e))?;
    channel.route_port(port, addr);
    call(
        channel,
        &format!("listening on the {place}'s port {port}"),
        |id| Message::Listen { id, port },
        Vec::new(),
        ANSWER_TIMEOUT,
    )?;
    Ok(listener)
}

/// Starts the agent's watch of which files are opened and executed.
pub fn watch_access(channel: Arc<Channel>, place: &str) -> Result<Box<dyn AccessWatch>, EnvError> {
    let watch = watch::next_id();
    call(
        &channel,
        &format!("watching the {place}'s files"),
        |id| Message::WatchAccess { id, watch },
        Vec::new(),
        ANSWER_TIMEOUT,
    )?;
    Ok(Box::new(watch::MachineWatch { channel, watch }))
}

/// The changes since `listing` (a [`protocol::Listing`]'s JSON), less
/// what the harness made through `files`; `broken` makes an error of a
/// request the agent did not answer.
pub fn changes(
    channel: &Channel,
    listing: Vec<u8>,
    limits: WalkLimits,
    files: &MachineFiles,
    broken: impl Fn(&str, std::io::Error) -> EnvError,
) -> Result<EnvDiff, EnvError> {
    let answer = channel
        .call(
            |id| Message::Changes {
                id,
                entries: limits.entries,
                depth: limits.depth,
                time_ms: limits.time.as_millis() as u64,
            },
            listing,
            limits.time + ANSWER_TIMEOUT,
        )
        .map_err(|e| broken("listing the changes", e))?;
    let found: protocol::Changes = match answer.message {
        Message::Failed { failure, .. } => return Err(EnvError::Phase(failure.message)),
        _ => {
            serde_json::from_slice(&answer.data).map_err(|e| EnvError::Phase(format!("the changes: {e}")))?
        }
    };
    let made = files.made.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let changes = found
        .changes
        .into_iter()
        .filter(|(path, _)| !made.contains_key(path))
        .map(|(path, letter)| PathChange {
            path,
            kind: match letter {
                'A' => PathChangeKind::Added,
                'D' => PathChangeKind::Deleted,
                _ => PathChangeKind::Modified,
            },
        })
        .collect();
    Ok(EnvDiff { changes, incomplete: found.incomplete })
}

/// A listing of every entry of the agent's root file system, as
/// [`changes`] compares with later (the ssh backend's, when a trial takes
/// a host).
pub fn listing(channel: &Channel, limits: WalkLimits) -> Result<Vec<u8>, EnvError> {
    call(
        channel,
        "listing the files",
        |id| Message::List {
            id,
            entries: limits.entries,
            depth: limits.depth,
            time_ms: limits.time.as_millis() as u64,
        },
        Vec::new(),
        limits.time + ANSWER_TIMEOUT,
    )
}

/// Shows `what` read-only at `path` for the rest of the phase; returns
/// the directories made for it, outermost first, for
/// [`remove_mount_points`] once the phase is over.
pub fn show(channel: &Channel, what: Shown, path: &str, timeout: Duration) -> Result<Vec<String>, EnvError> {
    let made = call(
        channel,
        &format!("showing {path}"),
        |id| Message::Show { id, what, path: path.to_string() },
        Vec::new(),
        timeout,
    )?;
    serde_json::from_slice(&made).map_err(|e| EnvError::Phase(format!("the mount points of {path}: {e}")))
}

/// Removes the directories [`show`] made, those left empty; best effort,
/// from a session of the agent's own that runs nothing of the phase.
pub fn remove_mount_points(channel: &Channel, paths: Vec<String>, timeout: Duration) {
    if !paths.is_empty() {
        let _ = channel.call(|id| Message::RemoveMountPoints { id, paths }, Vec::new(), timeout);
    }
}
