//! Directories made once under the system's temporary directory
//! (`cleanroom-harbor/`), named by what they were made from: a later load
//! finds one made, and two processes that make it at once agree (each
//! writes a directory of its own and renames it into place).

use std::path::{Path, PathBuf};

/// `cleanroom-harbor/<name>`, made by `make` into an empty directory
/// unless it is there already.
pub(crate) fn made_once(
    name: &str,
    make: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let base = std::env::temp_dir().join("cleanroom-harbor");
    let dest = base.join(name);
    if dest.is_dir() {
        return Ok(dest);
    }
    let fresh = base.join(format!(".{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fresh);
    let made = std::fs::create_dir_all(&fresh)
        .map_err(|e| format!("{}: {e}", fresh.display()))
        .and_then(|()| make(&fresh));
    let placed = made.and_then(|()| match std::fs::rename(&fresh, &dest) {
        Ok(()) => Ok(()),
        // Another process placed it first.
        Err(_) if dest.is_dir() => Ok(()),
        Err(e) => Err(format!("{}: {e}", dest.display())),
    });
    let _ = std::fs::remove_dir_all(&fresh);
    placed.map(|()| dest)
}
