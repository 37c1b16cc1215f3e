//! Host directories shown inside a machine for a phase (an external
//! agent's installation, as the sandbox shows it by a read-only bind): each
//! becomes a read-only ext4 disk of its files, attached with `readonly=on`
//! and mounted by the guest agent (the guest's show.rs). Nothing on the
//! host serves the untrusted machine but QEMU's block device, and neither
//! the guest's kernel nor the agent can write the disk.
//!
//! A disk is made once per state of its directory (a digest of every
//! entry's path, type, mode, owner, size and modification time) under
//! `<home>/vm/`, and the [`KEEP`] used last are kept (recent.rs).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::error::EnvError;
use crate::vm::{image, recent};

const PREFIX: &str = "shown-";
const SUFFIX: &str = ".ext4";
/// How many disks a home keeps: those of the agents' installations used
/// last (an installation of an agent is one directory, hundreds of MB).
const KEEP: usize = 8;
/// Room for the file system's own structures beyond the files' blocks.
const SLACK_MB: u64 = 64;

/// The read-only disk of `dir`, made if its files changed since.
pub fn disk_of(home: &Path, dir: &Path) -> Result<PathBuf, EnvError> {
    let tree = image::walk(dir)?;
    let disks = home.join("vm");
    std::fs::create_dir_all(&disks).map_err(|e| EnvError::io(disks.display().to_string(), e))?;
    let path = disks.join(format!("{PREFIX}{}{SUFFIX}", digest(dir, &tree)));
    if recent::open(&path).is_some() {
        return Ok(path);
    }
    // One maker at a time in a home: trials that start together with one
    // agent make its disk once.
    let _lock = crate::image::lock(&disks.join("shown.lock"), "a host directory's disk", &mut |_| {})?;
    if recent::open(&path).is_some() {
        return Ok(path);
    }
    recent::remove_dead_makers(&disks);
    let work = recent::work_path(&disks);
    let made = make(dir, &tree, &work).and_then(|()| {
        std::fs::rename(&work, &path).map_err(|e| EnvError::io(format!("renaming {}", work.display()), e))
    });
    if made.is_err() {
        let _ = std::fs::remove_file(&work);
    }
    made?;
    recent::prune(&disks, is_shown_disk, KEEP, &path);
    Ok(path)
}

fn is_shown_disk(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
}

/// What the disk of `dir` depends on: the directory's path (it is mounted
/// at the same one) and every entry's metadata.
fn digest(dir: &Path, tree: &[(PathBuf, std::fs::Metadata)]) -> String {
    let mut entries: Vec<String> = tree
        .iter()
        .map(|(path, m)| {
            let rel = path.strip_prefix(dir).unwrap_or(path).display();
            let (mtime, mtime_ns) = (m.mtime(), m.mtime_nsec());
            format!("{rel}\0{}\0{}\0{}\0{}\0{mtime}.{mtime_ns}\n", m.mode(), m.uid(), m.gid(), m.size())
        })
        .collect();
    entries.sort();
    let mut hash = Sha256::new();
    hash.update(dir.as_os_str().as_encoded_bytes());
    for entry in &entries {
        hash.update(entry.as_bytes());
    }
    hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn make(dir: &Path, tree: &[(PathBuf, std::fs::Metadata)], disk: &Path) -> Result<(), EnvError> {
    let inodes = tree.len() as u64 + 1024;
    let size_mb = ((image::tree_bytes(tree) + inodes * 256) >> 20) * 6 / 5 + SLACK_MB;
    let mut mkfs = Command::new(crate::sandbox::tool("mkfs.ext4"));
    // No journal: the disk is never written once made.
    mkfs.args(["-q", "-F", "-m", "0", "-O", "^has_journal", "-L", "cleanroom-shown", "-N"])
        .arg(inodes.to_string())
        .args(["-E", "root_owner=0:0", "-d"])
        .arg(dir)
        .arg(disk)
        .arg(format!("{size_mb}M"));
    image::run(mkfs, &[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_changes_with_any_entry_and_not_with_the_walks_order() {
        let dir = std::env::temp_dir().join(format!("cleanroom-shown-digest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/tool"), "one").unwrap();
        let of = |dir: &Path| {
            let mut tree = image::walk(dir).unwrap();
            let forward = digest(dir, &tree);
            tree.reverse();
            assert_eq!(digest(dir, &tree), forward, "the order of the walk counts for nothing");
            forward
        };
        let first = of(&dir);
        assert_eq!(of(&dir), first);
        std::fs::write(dir.join("bin/tool"), "two!").unwrap();
        let resized = of(&dir);
        assert_ne!(resized, first);
        std::fs::set_permissions(dir.join("bin/tool"), std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        assert_ne!(of(&dir), resized);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
