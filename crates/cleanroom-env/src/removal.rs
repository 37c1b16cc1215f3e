//! Removing a directory tree that may be gone already: a second teardown,
//! or a sweep of another trial that found the same dead environment first.

use std::io;
use std::path::Path;

use crate::error::EnvError;

/// Removes the tree at `path`; a tree that is not there is removed.
pub(crate) fn remove_dir_all_if_present(path: &Path) -> Result<(), EnvError> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(EnvError::io(format!("removing {}", path.display()), e))
        }
        _ => Ok(()),
    }
}
