//! The env-diff of a machine: its disk, mounted with nothing of it running
//! (service mode), compared with the image's listing. An entry differs when
//! its kind, mode, size or link target does, or when its inode changed
//! after the image was built (any write does that). The walk never follows
//! a link and stops at its bounds, saying so.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use cleanroom_env::vm::protocol::{Changes, Listed, Listing};
use cleanroom_env::EntryKind;

pub fn against(
    root: &Path,
    image: &Listing,
    max_entries: usize,
    max_depth: usize,
    time: Duration,
) -> Changes {
    let mut original: HashMap<&str, &Listed> = image.entries.iter().map(|e| (e.path.as_str(), e)).collect();
    let mut changes = Changes::default();
    let start = Instant::now();
    let mut seen = 0usize;
    let mut stack = vec![(String::new(), 0usize)];
    'walk: while let Some((dir, depth)) = stack.pop() {
        let host = root.join(dir.trim_start_matches('/'));
        let mut names: Vec<_> = match std::fs::read_dir(&host) {
            Ok(read) => read.flatten().map(|e| e.file_name()).collect(),
            Err(e) => {
                changes.incomplete.get_or_insert(format!("{dir}/: {e}"));
                continue;
            }
        };
        names.sort();
        for name in names {
            seen += 1;
            if seen > max_entries {
                changes.incomplete = Some(format!("more than {max_entries} entries"));
                break 'walk;
            }
            if start.elapsed() > time {
                changes.incomplete = Some(format!("longer than {}s", time.as_secs()));
                break 'walk;
            }
            let path = format!("{dir}/{}", name.to_string_lossy());
            let Ok(meta) = std::fs::symlink_metadata(root.join(path.trim_start_matches('/'))) else {
                continue;
            };
            let kind = EntryKind::of(meta.file_type());
            let now = Listed {
                path: path.clone(),
                kind,
                mode: meta.permissions().mode() & 0o7777,
                size: if matches!(kind, EntryKind::File | EntryKind::Symlink) { meta.len() } else { 0 },
                link_target: None,
            };
            match original.remove(path.as_str()) {
                None => changes.changes.push((path.clone(), 'A')),
                Some(was) => {
                    let target = (kind == EntryKind::Symlink)
                        .then(|| std::fs::read_link(root.join(path.trim_start_matches('/'))).ok())
                        .flatten()
                        .map(|t| t.to_string_lossy().into_owned());
                    // Another kind in its place is a new entry, as an
                    // overlay's upper layer shows it.
                    if was.kind != now.kind {
                        changes.changes.push((path.clone(), 'A'));
                    }
                    let differs = was.kind == now.kind
                        && (was.mode != now.mode
                            || (kind != EntryKind::Dir && was.size != now.size)
                            || (kind == EntryKind::Symlink && was.link_target != target)
                            || (kind != EntryKind::Dir && meta.ctime() > image.built_at));
                    if differs {
                        changes.changes.push((path.clone(), 'M'));
                    }
                }
            }
            if kind == EntryKind::Dir {
                if depth + 1 > max_depth {
                    changes.incomplete.get_or_insert(format!("more than {max_depth} directory levels"));
                } else {
                    stack.push((path, depth + 1));
                }
            }
        }
    }
    if changes.incomplete.is_none() {
        changes.changes.extend(original.keys().map(|p| (p.to_string(), 'D')));
    }
    changes.changes.sort();
    changes
}
