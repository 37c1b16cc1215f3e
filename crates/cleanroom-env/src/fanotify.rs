//! Access watches by fanotify, read by a thread; events are recorded by
//! each file's identity (device, inode), which the pipeline matches
//! against the artifact's files, since a path read back from a descriptor
//! is relative to whichever mount the process used.
//!
//! - [`FanotifyWatch`]: a mark on a whole file system (every mount of it,
//!   the sealed self-binds too): the sandbox's on the environment's
//!   overlay, read by the harness; a machine's on its disk, read by its
//!   guest agent. Events carry an open descriptor of the file.
//! - [`MarksWatch`]: the rootless sandbox's, where only root of the host
//!   may mark a file system or ask for descriptors: a mark on each
//!   directory under the watched one (its files' events included). Events
//!   carry the file's handle, matched when the watch ends against the
//!   handles of the files then there. A directory made while it watched
//!   had no mark: the record says it may be incomplete.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::thread::JoinHandle;

use crate::access::{AccessWatch, Accessed, FileId, Use};
use crate::bounds::WalkLimits;
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::rootfs::{EntryKind, Manifest, RootFs};

/// Most distinct files recorded; beyond, the record says it is incomplete.
const MAX_FILES: usize = 1 << 20;

pub struct FanotifyWatch {
    /// Written to stop the reader, which then drains what is queued.
    stop: OwnedFd,
    reader: JoinHandle<Accessed>,
}

impl FanotifyWatch {
    /// Watches the file system that `root` is on.
    pub fn start(root: &Path) -> Result<FanotifyWatch, EnvError> {
        let err = |what: &str, e: io::Error| EnvError::io(format!("fanotify: {what} {}", root.display()), e);
        // SAFETY: plain system calls; each result is checked before use.
        let fan = unsafe {
            libc::fanotify_init(
                libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK,
                (libc::O_RDONLY | libc::O_LARGEFILE | libc::O_CLOEXEC) as libc::c_uint,
            )
        };
        if fan < 0 {
            return Err(err("init for", io::Error::last_os_error()));
        }
        // SAFETY: `fan` is a fresh descriptor that nothing else owns.
        let fan = unsafe { OwnedFd::from_raw_fd(fan) };
        let path = std::ffi::CString::new(root.as_os_str().as_encoded_bytes())
            .map_err(|_| EnvError::Phase(format!("fanotify: {} holds a NUL byte", root.display())))?;
        // SAFETY: valid descriptor and NUL-terminated path.
        let marked = unsafe {
            libc::fanotify_mark(
                fan.as_raw_fd(),
                libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
                libc::FAN_OPEN | libc::FAN_OPEN_EXEC,
                libc::AT_FDCWD,
                path.as_ptr(),
            )
        };
        if marked < 0 {
            return Err(err("mark", io::Error::last_os_error()));
        }
        let (stop, reader) = spawn_reader(fan, Accessed::default()).map_err(|e| err("reader for", e))?;
        Ok(FanotifyWatch { stop, reader })
    }
}

impl AccessWatch for FanotifyWatch {
    fn finish(self: Box<Self>) -> Accessed {
        stop_reader(self.stop, self.reader)
            .unwrap_or_else(|why| Accessed { incomplete: Some(why), ..Default::default() })
    }
}

/// What a reader records events into.
trait Record: Send + 'static {
    /// Records the events of `bytes` (closing any descriptor they carry).
    fn events(&mut self, bytes: &[u8]);
    /// Notes why events may be missing.
    fn incomplete(&mut self, why: String);
}

/// Starts the thread that reads `fan` into `record`, and the eventfd
/// that stops it.
fn spawn_reader<R: Record>(fan: OwnedFd, record: R) -> io::Result<(OwnedFd, JoinHandle<R>)> {
    // SAFETY: plain system call, checked.
    let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if stop < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptor.
    let stop = unsafe { OwnedFd::from_raw_fd(stop) };
    let stop_seen = stop.try_clone()?;
    let reader = std::thread::Builder::new()
        .name("access-watch".into())
        .spawn(move || read_events(fan, stop_seen, record))?;
    Ok((stop, reader))
}

/// Stops the reader and returns what it recorded.
fn stop_reader<R>(stop: OwnedFd, reader: JoinHandle<R>) -> Result<R, String> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64 to an eventfd.
    unsafe { libc::write(stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
    reader.join().map_err(|_| "the access watch's reader failed".to_string())
}

/// Reads events until `stop` is written, then what is still queued.
fn read_events<R: Record>(fan: OwnedFd, stop: OwnedFd, mut seen: R) -> R {
    let mut buf = vec![0u8; 64 * 1024];
    let mut stopping = false;
    loop {
        if !stopping {
            let mut fds = [
                libc::pollfd { fd: fan.as_raw_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: stop.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: two valid pollfd structs.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                seen.incomplete(format!("poll: {}", io::Error::last_os_error()));
                return seen;
            }
            stopping = fds[1].revents != 0;
        }
        // SAFETY: reads into a buffer of its length.
        let n = unsafe { libc::read(fan.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            let e = io::Error::last_os_error();
            if n < 0 && e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            if n < 0 && e.kind() != io::ErrorKind::WouldBlock {
                seen.incomplete(format!("read: {e}"));
            }
            if stopping {
                return seen;
            }
            continue;
        }
        seen.events(&buf[..n as usize]);
    }
}

/// Each event of `bytes`: its metadata and the info records after it.
fn each_event(bytes: &[u8], mut f: impl FnMut(&libc::fanotify_event_metadata, &[u8])) {
    let header = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut at = 0;
    while at + header <= bytes.len() {
        // SAFETY: `header` bytes are in the buffer; read unaligned.
        let event: libc::fanotify_event_metadata =
            unsafe { std::ptr::read_unaligned(bytes[at..].as_ptr().cast()) };
        let len = event.event_len as usize;
        let meta = event.metadata_len as usize;
        if len < header || meta < header || meta > len || at + len > bytes.len() {
            break;
        }
        f(&event, &bytes[at + meta..at + len]);
        at += len;
    }
}

/// Notes in `uses` that `file` was used as `mask` says; false, noting
/// nothing, when `uses` already holds its bound of files.
fn note_use<K: Eq + std::hash::Hash>(uses: &mut HashMap<K, Use>, file: K, mask: u64) -> bool {
    if uses.len() >= MAX_FILES && !uses.contains_key(&file) {
        return false;
    }
    let entry = uses.entry(file).or_default();
    entry.opened |= mask & libc::FAN_OPEN != 0;
    entry.executed |= mask & libc::FAN_OPEN_EXEC != 0;
    true
}

fn too_many_files() -> String {
    format!("more than {MAX_FILES} files were opened")
}

const OVERFLOWED: &str = "the kernel's event queue overflowed";

impl Record for Accessed {
    fn incomplete(&mut self, why: String) {
        self.incomplete.get_or_insert(why);
    }

    /// Records each event by its descriptor's identity, and closes it.
    fn events(&mut self, bytes: &[u8]) {
        each_event(bytes, |event, _| self.event(event));
    }
}

impl Accessed {
    fn event(&mut self, event: &libc::fanotify_event_metadata) {
        if event.mask & libc::FAN_Q_OVERFLOW != 0 {
            self.incomplete(OVERFLOWED.into());
        }
        if event.fd < 0 {
            return;
        }
        // SAFETY: the kernel opened this descriptor for us; we own it.
        let fd = unsafe { OwnedFd::from_raw_fd(event.fd) };
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and a stat buffer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return;
        }
        let id = FileId { dev: st.st_dev, ino: st.st_ino };
        if !note_use(&mut self.files, id, event.mask) {
            self.incomplete(too_many_files());
        }
    }
}

/// A file's handle as fanotify reports it: its type, then its bytes.
type Handle = Vec<u8>;

/// What a marks watch's reader records: uses by handle.
#[derive(Default)]
struct ByHandle {
    uses: HashMap<Handle, Use>,
    incomplete: Option<String>,
}

/// `FAN_REPORT_FID`, and its info record's type (linux/fanotify.h).
const FAN_REPORT_FID: libc::c_uint = 0x0000_0200;
const FAN_EVENT_INFO_TYPE_FID: u8 = 1;

impl Record for ByHandle {
    fn incomplete(&mut self, why: String) {
        self.incomplete.get_or_insert(why);
    }

    fn events(&mut self, bytes: &[u8]) {
        each_event(bytes, |event, info| {
            if event.mask & libc::FAN_Q_OVERFLOW != 0 {
                self.incomplete(OVERFLOWED.into());
            }
            if let Some(handle) = reported_handle(info) {
                if !note_use(&mut self.uses, handle, event.mask) {
                    self.incomplete(too_many_files());
                }
            }
        });
    }
}

/// The handle in an event's FID record: a header (type, pad, length), the
/// file system's id (8 bytes), then `struct file_handle` (bytes, type,
/// the bytes).
fn reported_handle(info: &[u8]) -> Option<Handle> {
    let (&kind, len) = (info.first()?, u16::from_ne_bytes(info.get(2..4)?.try_into().ok()?) as usize);
    if kind != FAN_EVENT_INFO_TYPE_FID || len > info.len() {
        return None;
    }
    let handle = info.get(12..len)?;
    let bytes = u32::from_ne_bytes(handle.get(0..4)?.try_into().ok()?) as usize;
    let mut key = handle.get(4..8)?.to_vec();
    key.extend_from_slice(handle.get(8..8 + bytes)?);
    Some(key)
}

pub struct MarksWatch {
    stop: OwnedFd,
    reader: JoinHandle<ByHandle>,
    root: RootFs,
    under: String,
    /// The directories marked, relative to `under` ("" for itself).
    marked: HashSet<String>,
    /// Why some directory had no mark.
    unmarked: Option<String>,
}

impl MarksWatch {
    /// Watches the files under `under` (absolute inside the root at
    /// `root_path`).
    pub fn start(root_path: &Path, under: &str) -> Result<MarksWatch, EnvError> {
        let err = |what: &str, e: io::Error| EnvError::io(format!("fanotify: {what} {under}"), e);
        let root = RootFs::open(root_path).map_err(|e| err("opening the root for", e))?;
        // SAFETY: plain system call, checked.
        let fan = unsafe {
            libc::fanotify_init(
                libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK | FAN_REPORT_FID,
                (libc::O_RDONLY | libc::O_CLOEXEC) as libc::c_uint,
            )
        };
        if fan < 0 {
            return Err(err("init for", io::Error::last_os_error()));
        }
        // SAFETY: `fan` is a fresh descriptor that nothing else owns.
        let fan = unsafe { OwnedFd::from_raw_fd(fan) };
        let (marked, unmarked) = mark_directories(&fan, &root, under)?;
        let (stop, reader) = spawn_reader(fan, ByHandle::default()).map_err(|e| err("reader for", e))?;
        Ok(MarksWatch { stop, reader, root, under: under.to_string(), marked, unmarked })
    }
}

/// Marks `under` and every directory below it, within the walk's bounds.
fn mark_directories(
    fan: &OwnedFd,
    root: &RootFs,
    under: &str,
) -> Result<(HashSet<String>, Option<String>), EnvError> {
    let mut dirs = vec![String::new()];
    let listing = tree(root, under)?;
    dirs.extend(listing.entries.iter().filter(|(_, e)| e.kind == EntryKind::Dir).map(|(rel, _)| rel.clone()));
    let mut unmarked = listing.incomplete.map(|why| format!("the listing of {under} was cut short: {why}"));
    let mut marked = HashSet::new();
    for rel in dirs {
        let path = join(under, &rel);
        let Ok(dir) = root.open_dir(&path) else { continue };
        // SAFETY: valid descriptors; a null path marks the directory itself.
        let rc = unsafe {
            libc::fanotify_mark(
                fan.as_raw_fd(),
                libc::FAN_MARK_ADD | libc::FAN_MARK_ONLYDIR,
                libc::FAN_OPEN | libc::FAN_OPEN_EXEC | libc::FAN_EVENT_ON_CHILD,
                dir.as_raw_fd(),
                std::ptr::null(),
            )
        };
        if rc == 0 {
            marked.insert(rel);
        } else {
            unmarked.get_or_insert_with(|| {
                format!("{path} could not be watched: {}", io::Error::last_os_error())
            });
        }
    }
    Ok((marked, unmarked))
}

fn tree(root: &RootFs, under: &str) -> Result<Manifest, EnvError> {
    let cancel = CancelToken::new().map_err(|e| EnvError::io("a cancel token", e))?;
    root.manifest_against(under, &Manifest::default(), WalkLimits::default(), &cancel)
        .map_err(|_| EnvError::Phase("listing the watched directory was cancelled".into()))
}

fn join(under: &str, rel: &str) -> String {
    if rel.is_empty() {
        under.to_string()
    } else {
        format!("{}/{rel}", under.trim_end_matches('/'))
    }
}

impl AccessWatch for MarksWatch {
    /// What the reader saw, matched by handle against the files under the
    /// watched directory now.
    fn finish(self: Box<Self>) -> Accessed {
        let by_handle = match stop_reader(self.stop, self.reader) {
            Ok(seen) => seen,
            Err(why) => return Accessed { incomplete: Some(why), ..Default::default() },
        };
        let mut seen = Accessed { incomplete: by_handle.incomplete.or(self.unmarked), ..Default::default() };
        let listing = match tree(&self.root, &self.under) {
            Ok(listing) => listing,
            Err(e) => {
                seen.incomplete(e.to_string());
                return seen;
            }
        };
        if let Some(why) = listing.incomplete {
            seen.incomplete(format!("the listing of {} was cut short: {why}", self.under));
        }
        for (rel, entry) in &listing.entries {
            match entry.kind {
                EntryKind::Dir if !self.marked.contains(rel) => {
                    seen.incomplete(format!(
                        "{} was made while the watch ran, without a mark",
                        join(&self.under, rel)
                    ));
                }
                EntryKind::File => {
                    let path = join(&self.under, rel);
                    let (Ok(handle), Ok(id)) = (self.root.file_handle(&path), self.root.file_id(&path))
                    else {
                        continue;
                    };
                    if let Some(used) = by_handle.uses.get(&handle) {
                        seen.files.insert(id, *used);
                    }
                }
                _ => {}
            }
        }
        seen
    }
}
