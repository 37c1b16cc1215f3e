//! An access watch by fanotify: a mark on a whole file system (every mount
//! of it, the sealed self-binds too), read by a thread: the sandbox's on the
//! environment's overlay, read by the harness; a machine's on its disk,
//! read by its guest agent. Events name files by descriptor; each is
//! recorded by its identity (device, inode), which the pipeline matches
//! against the artifact's files, since a path read back from a descriptor
//! is relative to whichever mount the process used.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::thread::JoinHandle;

use crate::access::{AccessWatch, Accessed, FileId};
use crate::error::EnvError;

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
        // SAFETY: plain system call, checked.
        let stop = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if stop < 0 {
            return Err(err("eventfd for", io::Error::last_os_error()));
        }
        // SAFETY: fresh descriptor.
        let stop = unsafe { OwnedFd::from_raw_fd(stop) };
        let stop_seen = stop.try_clone().map_err(|e| err("dup for", e))?;
        let reader = std::thread::Builder::new()
            .name("access-watch".into())
            .spawn(move || read_events(fan, stop_seen))
            .map_err(|e| err("thread for", e))?;
        Ok(FanotifyWatch { stop, reader })
    }
}

impl AccessWatch for FanotifyWatch {
    fn finish(self: Box<Self>) -> Accessed {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        self.reader.join().unwrap_or_else(|_| Accessed {
            files: HashMap::new(),
            incomplete: Some("the access watch's reader failed".into()),
        })
    }
}

/// Reads events until `stop` is written, then what is still queued.
fn read_events(fan: OwnedFd, stop: OwnedFd) -> Accessed {
    let mut seen = Accessed::default();
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
                seen.incomplete.get_or_insert_with(|| format!("poll: {}", io::Error::last_os_error()));
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
                seen.incomplete.get_or_insert_with(|| format!("read: {e}"));
            }
            if stopping {
                return seen;
            }
            continue;
        }
        record(&buf[..n as usize], &mut seen);
    }
}

/// Records each event of `bytes` and closes the descriptor it carries.
fn record(bytes: &[u8], seen: &mut Accessed) {
    let header = std::mem::size_of::<libc::fanotify_event_metadata>();
    let mut at = 0;
    while at + header <= bytes.len() {
        // SAFETY: `header` bytes are in the buffer; read unaligned.
        let event: libc::fanotify_event_metadata =
            unsafe { std::ptr::read_unaligned(bytes[at..].as_ptr().cast()) };
        let len = event.event_len as usize;
        if len < header || at + len > bytes.len() {
            break;
        }
        at += len;
        if event.mask & libc::FAN_Q_OVERFLOW != 0 {
            seen.incomplete.get_or_insert_with(|| "the kernel's event queue overflowed".into());
        }
        if event.fd < 0 {
            continue;
        }
        // SAFETY: the kernel opened this descriptor for us; we own it.
        let fd = unsafe { OwnedFd::from_raw_fd(event.fd) };
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and a stat buffer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            continue;
        }
        let id = FileId { dev: st.st_dev, ino: st.st_ino };
        if seen.files.len() >= MAX_FILES && !seen.files.contains_key(&id) {
            seen.incomplete.get_or_insert_with(|| format!("more than {MAX_FILES} files were opened"));
            continue;
        }
        let entry = seen.files.entry(id).or_default();
        entry.opened |= event.mask & libc::FAN_OPEN != 0;
        entry.executed |= event.mask & libc::FAN_OPEN_EXEC != 0;
    }
}
