//! The run's lock: an exclusive `flock` on `<run>/.lock`, held while a
//! `RunDir` lives, so two cleanroom processes never write one run. The
//! kernel drops it when the holder dies, so a crashed run never stays
//! locked. The holder writes its pid into the file for the error message.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

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
        // SAFETY: flock on a descriptor that `file` owns and keeps open.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::WouldBlock {
                return Err(StoreError::InUse { path: run.to_path_buf(), pid: holder_pid(&path) });
            }
            return Err(StoreError::io("lock", path, err));
        }
        write_pid(&mut file, &path)?;
        Ok(RunLock { _file: file })
    }
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
