//! A machine's files, through its agent: while a phase runs, the agent
//! beside the disk's system; between phases, the agent alone on the
//! mounted disk (booted on first use, service mode). On both sides the
//! sandbox's rules hold: every path is resolved by [`crate::RootFs`] inside
//! the guest, never following a link out of the machine, reads bounded.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::access::FileId;
use crate::bounds::{Cancelled, WalkLimits};
use crate::cancel::CancelToken;
use crate::files::Files;
use crate::rootfs::{EntryKind, Globs, Manifest, ReadError};
use crate::vm::channel::Channel;
use crate::vm::protocol::{Frame, Message, MAX_PART};

/// How long one file request may take (a manifest of a large tree).
const FILE_TIMEOUT: Duration = Duration::from_secs(600);
/// The most bytes of a file written in one request.
const PART: usize = (MAX_PART / 4) as usize;

/// Gives the channel to use now, booting the machine's service mode if
/// nothing runs.
pub trait Port: Send + Sync {
    fn port(&self) -> io::Result<Arc<Channel>>;
}

pub struct MachineFiles {
    pub port: Arc<dyn Port>,
    /// What the harness made, for the env-diff to leave out.
    pub made: Mutex<BTreeMap<String, EntryKind>>,
}

impl MachineFiles {
    fn call(&self, request: impl FnOnce(u64) -> Message, data: Vec<u8>) -> io::Result<Frame> {
        let frame = self.port.port()?.call(request, data, FILE_TIMEOUT)?;
        match frame.message {
            Message::Failed { failure, .. } => Err(failure.to_io()),
            _ => Ok(frame),
        }
    }

    fn made(&self, path: &str, kind: EntryKind) {
        let path = format!(
            "/{}",
            path.split('/').filter(|c| !c.is_empty() && *c != ".").collect::<Vec<_>>().join("/")
        );
        self.made.lock().unwrap_or_else(|p| p.into_inner()).insert(path, kind);
    }

    /// Writes what `from` reads into the file at `path`, in parts no larger
    /// than a frame: the first creates the file, the others append to it.
    fn write_from(&self, path: &str, from: &mut dyn Read, mode: u32) -> io::Result<()> {
        let mut first = true;
        loop {
            let mut part = Vec::new();
            from.take(PART as u64).read_to_end(&mut part)?;
            if part.is_empty() && !first {
                break;
            }
            let last = part.len() < PART;
            if first {
                self.call(|id| Message::WriteFile { id, path: path.to_string(), mode }, part)?;
                self.made(path, EntryKind::File);
                first = false;
            } else {
                self.call(|id| Message::AppendFile { id, path: path.to_string() }, part)?;
            }
            if last {
                break;
            }
        }
        Ok(())
    }

    fn copy_dir(
        &self,
        src: &Path,
        rel: &Path,
        dest: &str,
        exclude: &dyn Fn(&Path) -> bool,
    ) -> io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(src)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let rel = rel.join(entry.file_name());
            if exclude(&rel) {
                continue;
            }
            let host = entry.path();
            let path = format!("{}/{}", dest.trim_end_matches('/'), rel.display());
            let meta = std::fs::symlink_metadata(&host)?;
            let mode = meta.permissions().mode() & 0o7777;
            if meta.is_dir() {
                self.create_dir_all(&path, mode)?;
                self.copy_dir(&host, &rel, dest, exclude)?;
            } else if meta.is_file() {
                self.write_from(&path, &mut std::fs::File::open(&host)?, mode)?;
            } else if meta.is_symlink() {
                let target = std::fs::read_link(&host)?;
                let target = target
                    .to_str()
                    .ok_or_else(|| io::Error::other(format!("{}: not UTF-8", host.display())))?;
                self.call(
                    |id| Message::Symlink { id, path: path.clone(), target: target.to_string() },
                    Vec::new(),
                )?;
                self.made(&path, EntryKind::Symlink);
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: not a file, directory or symlink", host.display()),
                ));
            }
        }
        Ok(())
    }
}

impl Files for MachineFiles {
    fn create_dir_all(&self, path: &str, mode: u32) -> io::Result<()> {
        self.call(|id| Message::CreateDirAll { id, path: path.to_string(), mode }, Vec::new())?;
        self.made(path, EntryKind::Dir);
        Ok(())
    }

    fn write_file(&self, path: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write_from(path, &mut &*bytes, mode)
    }

    fn copy_tree_in(&self, host_src: &Path, dest: &str, exclude: &dyn Fn(&Path) -> bool) -> io::Result<()> {
        let meta = std::fs::symlink_metadata(host_src)?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a directory", host_src.display()),
            ));
        }
        self.create_dir_all(dest, meta.permissions().mode() & 0o7777)?;
        self.copy_dir(host_src, Path::new(""), dest, exclude)
    }

    fn read_regular(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        let limit = limit.min(MAX_PART as u64);
        match self.port.port().and_then(|p| {
            p.call(|id| Message::ReadRegular { id, path: path.to_string(), limit }, Vec::new(), FILE_TIMEOUT)
        }) {
            Ok(Frame { message: Message::Failed { failure, .. }, .. }) => Err(match failure.errno {
                Some(libc::ENOENT) => ReadError::Missing,
                Some(libc::ELOOP) => ReadError::SymlinkInPath,
                Some(libc::EINVAL) => ReadError::NotRegular,
                Some(libc::EFBIG) => ReadError::TooLarge { size: failure.too_large.unwrap_or(limit + 1) },
                _ => ReadError::Io(failure.to_io()),
            }),
            Ok(frame) => Ok(frame.data),
            Err(e) => Err(ReadError::Io(e)),
        }
    }

    fn manifest_against(
        &self,
        dir: &str,
        original: &Manifest,
        limits: WalkLimits,
        cancel: &CancelToken,
    ) -> Result<Manifest, Cancelled> {
        if cancel.is_cancelled() {
            return Err(Cancelled);
        }
        let request = |id| Message::ManifestAgainst {
            id,
            dir: dir.to_string(),
            entries: limits.entries,
            depth: limits.depth,
            name_bytes: limits.name_bytes,
            time_ms: limits.time.as_millis() as u64,
        };
        let original = serde_json::to_vec(original).expect("a manifest serializes");
        let answer = self
            .call(request, original)
            .and_then(|frame| serde_json::from_slice::<Manifest>(&frame.data).map_err(io::Error::other));
        match answer {
            Ok(manifest) => Ok(manifest),
            Err(e) => Ok(Manifest {
                entries: BTreeMap::new(),
                incomplete: Some(format!("the machine's agent: {e}")),
            }),
        }
    }

    fn remove_matching(&self, dir: &str, globs: &Globs, _cancel: &CancelToken) -> io::Result<Vec<String>> {
        let frame = self.call(
            |id| Message::RemoveMatching { id, dir: dir.to_string(), patterns: globs.patterns().to_vec() },
            Vec::new(),
        )?;
        serde_json::from_slice(&frame.data).map_err(io::Error::other)
    }

    fn file_id(&self, path: &str) -> io::Result<FileId> {
        match self.call(|id| Message::FileId { id, path: path.to_string() }, Vec::new())?.message {
            Message::FileIdIs { dev, ino, .. } => Ok(FileId { dev, ino }),
            other => Err(io::Error::other(format!("unexpected answer {other:?}"))),
        }
    }

    fn claim(&self, path: &str, kind: EntryKind) {
        self.made(path, kind);
    }
}
