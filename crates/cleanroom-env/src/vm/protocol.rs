//! What the harness and the guest agent (the `cleanroom-guest` crate) say
//! to each other over the VM's virtio-serial port.
//!
//! A frame is two big-endian u32 lengths, a JSON [`Message`], then raw
//! bytes (command output, a file's contents, a manifest's JSON). Requests
//! carry an id chosen by the harness; every answer names it. Several
//! requests can be in flight at once (a command runs while files are read),
//! so answers arrive in any order.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// The port's name, as QEMU's `virtserialport,name=` gives it to the guest.
pub const PORT_NAME: &str = "org.cleanroom.agent";

/// The serial number of the trial's disk, by which the guest finds it
/// among the machine's disks.
pub const DISK_SERIAL: &str = "cleanroom-disk";

/// The serial number of the `n`th host directory's disk of a phase
/// (vm/shown.rs).
pub fn shown_serial(n: usize) -> String {
    format!("cleanroom-shown-{n}")
}

/// A host directory as a phase gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Shown {
    /// In a machine: the read-only disk of this serial number (vm/shown.rs).
    Disk { serial: String },
    /// On a host of the ssh backend: the copy the harness made there
    /// (ssh/shown.rs), bound onto the path.
    Copy { source: String },
}

/// The largest part of a frame either side accepts: a bound on what the
/// other side can make this one allocate.
pub const MAX_PART: u32 = 64 << 20;

/// What a boot is for: the harness's [`Message::Start`] names it, the
/// agent's hello confirms it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The disk's own system booted (systemd): a phase.
    Machine,
    /// Only the agent runs, from the host's initramfs, with the disk
    /// mounted: for the harness's file work between phases. Nothing of the
    /// disk is executed.
    Service,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Exited(i32),
    Signaled(i32),
    TimedOut,
    Killed,
}

/// A failed request: an errno where there was one, and what happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub errno: Option<i32>,
    pub message: String,
    /// A read refused because the file was larger than asked.
    #[serde(default)]
    pub too_large: Option<u64>,
}

impl Failure {
    pub fn of(e: &io::Error) -> Failure {
        Failure { errno: e.raw_os_error(), message: e.to_string(), too_large: None }
    }

    pub fn to_io(&self) -> io::Error {
        match self.errno {
            Some(errno) => io::Error::new(io::Error::from_raw_os_error(errno).kind(), self.message.clone()),
            None => io::Error::other(self.message.clone()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Message {
    // The guest, once its port is open and before it touches the disk:
    // it waits for Start there. A booted snapshot is taken at this point
    // (snapshot.rs), so every machine restored from one starts from it.
    Waiting,
    // The harness, first on every boot, cold or restored: what the boot is
    // for, the commands' limits, the host's clock, and 32 random bytes (the
    // data) that reseed the guest's generator, which a restored machine
    // would otherwise share with every other one restored from its snapshot.
    Start {
        mode: Mode,
        memory_mb: Option<u64>,
        pids: Option<u64>,
        unix_time_ns: u64,
    },
    // The guest, once, when it is ready.
    Hello {
        mode: Mode,
    },

    // Requests of the harness.
    Exec {
        id: u64,
        argv: Vec<String>,
        cwd: String,
        env: Vec<(String, String)>,
        timeout_ms: Option<u64>,
        grace_ms: u64,
    },
    /// Kills the command `id` started, with everything it started.
    Kill {
        id: u64,
    },
    CreateDirAll {
        id: u64,
        path: String,
        mode: u32,
    },
    /// The frame's bytes are the contents.
    WriteFile {
        id: u64,
        path: String,
        mode: u32,
    },
    /// The frame's bytes go at the end of an existing file: a file larger
    /// than a frame is written in parts.
    AppendFile {
        id: u64,
        path: String,
    },
    Symlink {
        id: u64,
        path: String,
        target: String,
    },
    ReadRegular {
        id: u64,
        path: String,
        limit: u64,
    },
    /// The frame's bytes are the original manifest's JSON; the answer's
    /// are the manifest's.
    ManifestAgainst {
        id: u64,
        dir: String,
        entries: usize,
        depth: usize,
        name_bytes: usize,
        time_ms: u64,
    },
    RemoveMatching {
        id: u64,
        dir: String,
        patterns: Vec<String>,
    },
    FileId {
        id: u64,
        path: String,
    },
    /// The frame's bytes are the image's [`Listing`] JSON; the answer's are
    /// the changes' JSON ([`Changes`]).
    Changes {
        id: u64,
        entries: usize,
        depth: usize,
        time_ms: u64,
    },
    /// Lists every entry of the root's file system; the answer's bytes are
    /// the [`Listing`] JSON that a later [`Message::Changes`] compares with
    /// (a host's own, where a machine image has one made at its build).
    List {
        id: u64,
        entries: usize,
        depth: usize,
        time_ms: u64,
    },
    /// Listens on the guest's 127.0.0.1:`port`; each connection is relayed
    /// to the harness as a [`Message::Accepted`] stream.
    Listen {
        id: u64,
        port: u16,
    },
    /// Makes each path read-only for the rest of the phase (a read-only
    /// bind mount of it on itself); a path missing or reached through a
    /// link is left as it is.
    Seal {
        id: u64,
        paths: Vec<String>,
    },
    /// Mounts `what` (a host directory, as its disk or its copy) at
    /// `path`, read-only, making the directories it lacks; the answer's
    /// bytes are those made, as a JSON list, outermost first.
    Show {
        id: u64,
        what: Shown,
        path: String,
    },
    /// Removes the directories a [`Message::Show`] made, those left empty.
    RemoveMountPoints {
        id: u64,
        paths: Vec<String>,
    },
    /// Starts recording which files of the disk are opened and executed,
    /// as `watch` (an id of the harness's).
    WatchAccess {
        id: u64,
        watch: u64,
    },
    /// Stops the recording `watch`; the answer's bytes are what it saw
    /// ([`Seen`] JSON).
    FinishWatch {
        id: u64,
        watch: u64,
    },
    /// Flushes every disk and powers the machine off.
    PowerOff {
        id: u64,
    },

    // Answers of the guest.
    /// Output of command `id`; `stream` 1 or 2. The bytes are the output.
    Output {
        id: u64,
        stream: u8,
    },
    Exited {
        id: u64,
        status: Status,
    },
    /// A request done; the bytes are its result, if it has one.
    Done {
        id: u64,
    },
    FileIdIs {
        id: u64,
        dev: u64,
        ino: u64,
    },
    Failed {
        id: u64,
        failure: Failure,
    },

    // Relayed connections, both ways; the bytes are the data.
    Accepted {
        conn: u64,
        port: u16,
    },
    Data {
        conn: u64,
    },
    /// The sender's side is done (no more data).
    Close {
        conn: u64,
    },
}

/// One entry of an image as the guest compares it (the env-diff): a file's
/// kind, mode, size and link target, and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub path: String,
    pub kind: crate::EntryKind,
    pub mode: u32,
    pub size: u64,
    pub link_target: Option<String>,
}

/// The whole image, made when it was built.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    pub entries: Vec<Listed>,
    /// Entries whose inode changed after this second (epoch) were changed
    /// in the machine, even with the same size.
    pub built_at: i64,
}

/// What the guest found different from the image: (path, 'A'|'M'|'D').
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    pub changes: Vec<(String, char)>,
    pub incomplete: Option<String>,
}

/// What an access watch saw: (dev, ino, opened, executed) per file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub files: Vec<(u64, u64, bool, bool)>,
    pub incomplete: Option<String>,
}

impl Seen {
    pub fn of(accessed: &crate::Accessed) -> Seen {
        let mut files: Vec<_> =
            accessed.files.iter().map(|(id, used)| (id.dev, id.ino, used.opened, used.executed)).collect();
        files.sort();
        Seen { files, incomplete: accessed.incomplete.clone() }
    }

    pub fn accessed(&self) -> crate::Accessed {
        crate::Accessed {
            files: self
                .files
                .iter()
                .map(|&(dev, ino, opened, executed)| {
                    (crate::FileId { dev, ino }, crate::Use { opened, executed })
                })
                .collect(),
            incomplete: self.incomplete.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub message: Message,
    pub data: Vec<u8>,
}

impl Frame {
    pub fn new(message: Message) -> Frame {
        Frame { message, data: Vec::new() }
    }

    pub fn with_data(message: Message, data: Vec<u8>) -> Frame {
        Frame { message, data }
    }

    pub fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let head = serde_json::to_vec(&self.message).map_err(io::Error::other)?;
        let mut buf = Vec::with_capacity(8 + head.len() + self.data.len());
        buf.extend_from_slice(&(head.len() as u32).to_be_bytes());
        buf.extend_from_slice(&(self.data.len() as u32).to_be_bytes());
        buf.extend_from_slice(&head);
        buf.extend_from_slice(&self.data);
        out.write_all(&buf)?;
        out.flush()
    }

    /// The next frame; None at a clean end of the stream.
    pub fn read_from(input: &mut dyn Read) -> io::Result<Option<Frame>> {
        let mut lens = [0u8; 8];
        match input.read_exact(&mut lens[..1]) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            other => other?,
        }
        input.read_exact(&mut lens[1..])?;
        let head_len = u32::from_be_bytes(lens[..4].try_into().expect("4 bytes"));
        let data_len = u32::from_be_bytes(lens[4..].try_into().expect("4 bytes"));
        if head_len > MAX_PART || data_len > MAX_PART {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "frame larger than the protocol allows"));
        }
        let mut head = vec![0u8; head_len as usize];
        input.read_exact(&mut head)?;
        let mut data = vec![0u8; data_len as usize];
        input.read_exact(&mut data)?;
        let message = serde_json::from_slice(&head)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad message: {e}")))?;
        Ok(Some(Frame { message, data }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_oversized_ones_are_refused() {
        let frame = Frame::with_data(Message::Output { id: 7, stream: 2 }, b"bytes\0\xff".to_vec());
        let mut buf = Vec::new();
        frame.write_to(&mut buf).unwrap();
        Frame::new(Message::Hello { mode: Mode::Service }).write_to(&mut buf).unwrap();
        let mut input = buf.as_slice();
        assert_eq!(Frame::read_from(&mut input).unwrap(), Some(frame));
        assert_eq!(
            Frame::read_from(&mut input).unwrap().unwrap().message,
            Message::Hello { mode: Mode::Service }
        );
        assert_eq!(Frame::read_from(&mut input).unwrap(), None);
        let mut huge = Vec::new();
        huge.extend_from_slice(&(MAX_PART + 1).to_be_bytes());
        huge.extend_from_slice(&0u32.to_be_bytes());
        assert!(Frame::read_from(&mut huge.as_slice()).is_err());
    }
}
