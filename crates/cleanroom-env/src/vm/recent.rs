//! Files kept while they are used: the booted snapshots and the initramfs
//! archives, one for each build of what they hold. Each use marks its file
//! (its modification time); when a new one is made, all but the ones used
//! last are removed. A snapshot removed while a machine resumes it stays
//! readable through the descriptor QEMU inherits; an initramfs QEMU opens
//! by its path, so a home keeps more of them than builds in use at once.
//!
//! Each is made under a work name of its maker ([`work_path`]) and renamed
//! into place; what a maker that died left is removed by the next one.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::sandbox::sweep::{owner_in_id_alive, Owner};

/// The prefix of what is being made, followed by its maker's id.
const MAKING: &str = ".make-";

/// A new work name in `dir` for this process to make something under.
pub fn work_path(dir: &Path) -> PathBuf {
    dir.join(format!("{MAKING}{}", Owner::current().new_id()))
}

/// Removes the work files and directories of makers that died (killed in
/// the middle of a boot, a save, a mkfs): a live maker's are left alone.
pub fn remove_dead_makers(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_prefix(MAKING) else { continue };
        if !owner_in_id_alive(id) {
            let path = entry.path();
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
    }
}

/// Opens `path`, marking it used.
pub fn open(path: &Path) -> Option<File> {
    let file = File::open(path).ok()?;
    let _ = file.set_modified(std::time::SystemTime::now());
    Some(file)
}

/// Removes the files of `dir` that `kind` picks, except `made` and the
/// `keep - 1` others used last; returns those removed.
pub fn prune(dir: &Path, kind: impl Fn(&Path) -> bool, keep: usize, made: &Path) -> Vec<PathBuf> {
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| kind(p) && p != made)
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    found.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
    let old: Vec<PathBuf> = found.into_iter().skip(keep.saturating_sub(1)).map(|(_, p)| p).collect();
    for path in &old {
        let _ = std::fs::remove_file(path);
    }
    old
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn prune_keeps_what_was_made_and_the_ones_used_last() {
        let dir = std::env::temp_dir().join(format!("cleanroom-recent-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let long_ago = SystemTime::now() - Duration::from_secs(3600);
        let path = |n: u64| dir.join(format!("f{n}.state"));
        for n in 0..5 {
            let file = File::create(path(n)).unwrap();
            file.set_modified(long_ago + Duration::from_secs(n)).unwrap();
        }
        std::fs::write(dir.join("other"), b"not a kind").unwrap();
        // f0 was made long ago but is used now; f4 is what was just made.
        assert!(open(&path(0)).is_some());
        let removed = prune(&dir, |p| p.extension().is_some_and(|x| x == "state"), 3, &path(4));
        let mut removed: Vec<_> = removed.iter().map(|p| p.file_name().unwrap().to_owned()).collect();
        removed.sort();
        assert_eq!(removed, ["f1.state", "f2.state"]);
        for kept in [path(0), path(3), path(4), dir.join("other")] {
            assert!(kept.exists(), "{}", kept.display());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
