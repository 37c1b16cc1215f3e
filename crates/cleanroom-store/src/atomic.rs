//! Whole-file writes that readers never see half done: a temporary file in
//! the same directory, fsync, rename over the target, fsync the directory.
//! A crash leaves the old file or the new one, and at worst a stray
//! `.NAME.tmp-PID` that the next write of that name replaces.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::StoreError;

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = temp_path(path);
    let result = write_synced(&tmp, bytes)
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| StoreError::io("rename into place", path, e)));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
        return result;
    }
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

fn write_synced(tmp: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut file = File::create(tmp).map_err(|e| StoreError::io("create", tmp, e))?;
    file.write_all(bytes).map_err(|e| StoreError::io("write", tmp, e))?;
    file.sync_all().map_err(|e| StoreError::io("sync", tmp, e))
}

/// Makes the rename durable. Best effort: some file systems refuse fsync on
/// a directory, and the rename itself is already atomic for readers.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["summary.json"]);
    }

    #[test]
    fn a_failed_write_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-dir").join("result.json");
        let err = write_atomic(&path, b"x").unwrap_err().to_string();
        assert!(err.contains("missing-dir"), "{err}");
    }
}
