//! The env-diff of a machine: its disk, mounted with nothing of it running
//! (service mode), compared with the image's listing. An entry differs when
//! its kind, mode, size or link target does, or when its inode changed
//! after the image was built (any write does that). The walk never follows
//! a link, never leaves the root's file system, and stops at its bounds,
//! saying so. A host of the ssh backend is listed the same way when a
//! trial takes it, and compared with that listing.

use std::collections::HashMap;
use std::io;
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
    changes.incomplete = walk(root, max_entries, max_depth, time, &mut |path, now, meta| {
        match original.remove(path) {
            None => changes.changes.push((path.to_string(), 'A')),
            Some(was) => {
                // Another kind in its place is a new entry, as an overlay's
                // upper layer shows it.
                if was.kind != now.kind {
                    changes.changes.push((path.to_string(), 'A'));
                }
                let differs = was.kind == now.kind
                    && (was.mode != now.mode
                        || (now.kind != EntryKind::Dir && was.size != now.size)
                        || (now.kind == EntryKind::Symlink && was.link_target != now.link_target)
                        || (now.kind != EntryKind::Dir && meta.ctime() > image.built_at));
                if differs {
                    changes.changes.push((path.to_string(), 'M'));
                }
            }
        }
    });
    if changes.incomplete.is_none() {
        changes.changes.extend(original.keys().map(|p| (p.to_string(), 'D')));
    }
    changes.changes.sort();
    changes
}

/// Every entry under `root` as [`against`] compares them: a host's
/// listing when it is handed to a trial (the ssh backend's), where a
/// machine image has one made when it was built. Refused when the walk
/// stopped at its bounds: a partial listing would make the rest look new.
pub fn listing(root: &Path, max_entries: usize, max_depth: usize, time: Duration) -> io::Result<Listing> {
    let built_at =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let mut entries = Vec::new();
    let incomplete = walk(root, max_entries, max_depth, time, &mut |_, now, _| entries.push(now));
    match incomplete {
        Some(why) => Err(io::Error::other(format!("listing the host's files: {why}"))),
        None => Ok(Listing { entries, built_at }),
    }
}

/// Calls `each` for every entry under `root`, in order, never following a
/// link nor leaving `root`'s file system (a host's /proc, /sys, /run are
/// others); returns why it stopped early, if it did.
fn walk(
    root: &Path,
    max_entries: usize,
    max_depth: usize,
    time: Duration,
    each: &mut dyn FnMut(&str, Listed, &std::fs::Metadata),
) -> Option<String> {
    let device = match std::fs::symlink_metadata(root) {
        Ok(meta) => meta.dev(),
        Err(e) => return Some(format!("{}: {e}", root.display())),
    };
    let mut incomplete = None;
    let start = Instant::now();
    let mut seen = 0usize;
    let mut stack = vec![(String::new(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let host = root.join(dir.trim_start_matches('/'));
        let mut names: Vec<_> = match std::fs::read_dir(&host) {
            Ok(read) => read.flatten().map(|e| e.file_name()).collect(),
            Err(e) => {
                incomplete.get_or_insert(format!("{dir}/: {e}"));
                continue;
            }
        };
        names.sort();
        for name in names {
            seen += 1;
            if seen > max_entries {
                return Some(format!("more than {max_entries} entries"));
            }
            if start.elapsed() > time {
                return Some(format!("longer than {}s", time.as_secs()));
            }
            let path = format!("{dir}/{}", name.to_string_lossy());
            let on_disk = root.join(path.trim_start_matches('/'));
            let Ok(meta) = std::fs::symlink_metadata(&on_disk) else {
                continue;
            };
            let kind = EntryKind::of(meta.file_type());
            if kind == EntryKind::Dir && meta.dev() != device {
                continue;
            }
            let link_target = (kind == EntryKind::Symlink)
                .then(|| std::fs::read_link(&on_disk).ok())
                .flatten()
                .map(|t| t.to_string_lossy().into_owned());
            let now = Listed {
                path: path.clone(),
                kind,
                mode: meta.permissions().mode() & 0o7777,
                size: if matches!(kind, EntryKind::File | EntryKind::Symlink) { meta.len() } else { 0 },
                link_target,
            };
            each(&path, now, &meta);
            if kind == EntryKind::Dir {
                if depth + 1 > max_depth {
                    incomplete.get_or_insert(format!("more than {max_depth} directory levels"));
                } else {
                    stack.push((path, depth + 1));
                }
            }
        }
    }
    incomplete
}
