//! What changed in an environment since it was made, read from the
//! overlay's upper layer, which holds exactly that: every new or changed
//! file, and a whiteout (a 0/0 character device) for every deleted one.
//! Names come from the environment, but a directory listing cannot hold a
//! '/', and only real directories are descended into: no link is followed.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::backend::{PathChange, PathChangeKind};

/// Most entries listed; a machine-wide `pip install` stays well under.
const MAX_ENTRIES: usize = 200_000;

pub(crate) fn upper_changes(upper: &Path, lower: &Path) -> std::io::Result<(Vec<PathChange>, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![String::new()];
    let mut truncated = false;
    while let Some(rel) = stack.pop() {
        // `rel` starts with '/': joined as is it would replace `upper`.
        let dir = upper.join(rel.trim_start_matches('/'));
        let mut entries: Vec<_> = std::fs::read_dir(&dir)?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries.into_iter().rev() {
            if out.len() >= MAX_ENTRIES {
                truncated = true;
                break;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{rel}/{name}");
            let meta = entry.metadata()?;
            let ft = meta.file_type();
            let in_lower = lower.join(path.trim_start_matches('/')).symlink_metadata();
            if ft.is_char_device() && meta.rdev() == 0 {
                out.push(PathChange { path, kind: PathChangeKind::Deleted });
            } else if ft.is_dir() {
                // A directory that only holds changes below it is no change.
                if in_lower.as_ref().map_or(true, |m| !m.is_dir()) {
                    out.push(PathChange { path: path.clone(), kind: PathChangeKind::Added });
                }
                stack.push(path);
            } else {
                let kind = if in_lower.is_ok() { PathChangeKind::Modified } else { PathChangeKind::Added };
                out.push(PathChange { path, kind });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((out, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn lists_the_upper_layer_only_and_never_follows_links() {
        let base = std::env::temp_dir().join(format!("cleanroom-diff-{}", std::process::id()));
        let (upper, lower) = (base.join("upper"), base.join("lower"));
        std::fs::create_dir_all(upper.join("etc/profile.d")).unwrap();
        std::fs::create_dir_all(upper.join("opt/new")).unwrap();
        std::fs::create_dir_all(lower.join("etc/profile.d")).unwrap();
        std::fs::write(lower.join("etc/hosts"), "").unwrap();
        std::fs::write(upper.join("etc/hosts"), "changed").unwrap();
        std::fs::write(upper.join("etc/profile.d/venv.sh"), "").unwrap();
        std::fs::write(upper.join("opt/new/tool"), "").unwrap();
        symlink("/etc", upper.join("hostetc")).unwrap();
        let (changes, truncated) = upper_changes(&upper, &lower).unwrap();
        std::fs::remove_dir_all(&base).unwrap();
        let listed: Vec<String> = changes.iter().map(|c| format!("{} {}", c.kind.letter(), c.path)).collect();
        assert_eq!(
            listed,
            [
                "M /etc/hosts",
                "A /etc/profile.d/venv.sh",
                "A /hostetc",
                "A /opt",
                "A /opt/new",
                "A /opt/new/tool"
            ]
        );
        assert!(!truncated);
    }
}
