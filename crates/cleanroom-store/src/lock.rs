//! The run's lock: an exclusive `flock` on `<run>/.lock`, held while a
//! `RunDir` lives, so two cleanroom processes never write one run. The
//! kernel drops it when the holder dies, so a crashed run never stays
//! locked. The holder writes its pid into the file: for the error message,
//! and to tell a live holder from the dying children of a killed one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::StoreError;

pub(crate) const LOCK_FILE: &str = ".lock";

#[derive(Debug)]
pub(crate) struct RunLock {
    // Held open for the lock's life; closing it releases the lock.
    _file: File,
}

impl RunLock {
    /// Takes the lock of the run at `run`, without waiting.
    pub(crate) fn acquire(run: &Path) -> Result<RunLock, StoreError> {
        let path = run.join(LOCK_FILE);
        // Not truncated on open: the pid in it belongs to the holder, if any.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io("open lock file", &path, e))?;
        // A holder of record that is dead (killed with SIGKILL) can leave the
        // lock shared for a few milliseconds with children it was forking:
        // they close it as they exec or die. Wait for those, never for a
        // live cleanroom.
        let deadline = Instant::now() + DEAD_HOLDER_GRACE;
        loop {
            // SAFETY: flock on a descriptor that `file` owns and keeps open.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                break;
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::WouldBlock {
                return Err(StoreError::io("lock", path, err));
            }
            let pid = holder_pid(&path);
            if pid.is_none_or(is_alive) || Instant::now() >= deadline {
                return Err(StoreError::InUse { path: run.to_path_buf(), pid });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        write_pid(&mut file, &path)?;
        Ok(RunLock { _file: file })
    }
}

/// How long a lock whose holder of record is dead may stay taken.
const DEAD_HOLDER_GRACE: Duration = Duration::from_secs(10);

fn is_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as i32, 0) == 0 || *libc::__errno_location() != libc::ESRCH }
}

fn write_pid(file: &mut File, path: &Path) -> Result<(), StoreError> {
    file.set_len(0)
        .and_then(|()| file.write_all(format!("{}\n", std::process::id()).as_bytes()))
        .map_err(|e| StoreError::io("write lock file", path, e))
}

/// The pid the holder wrote; none if it has not written it yet.
fn holder_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether a cleanroom process holds the lock of the run at `run` now, for
/// readers that must not take it (the viewer). The probe is a shared lock
/// dropped at once: a writer that asks in that instant sees a dead holder
/// of record and waits out its grace, never failing for it.
pub fn held(run: &Path) -> bool {
    let Ok(file) = File::open(run.join(LOCK_FILE)) else { return false };
    // SAFETY: flock on a descriptor that `file` owns and keeps open.
    let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    // Closing `file` drops the shared lock.
    !free
}
