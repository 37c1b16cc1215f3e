//! Manifests: the entries of a tree, walked without following links.
//!
//! Design note. The original (the harness's own copy of an artifact) is
//! walked in full, every file hashed. The same tree in an environment is the
//! agent's and may hold anything (see `bounds.rs`), so the tamper check
//! surveys it against the original, in two passes that share one budget:
//!
//! 1. every original path is looked up by name, one component at a time
//!    from directory fds (no link followed, at any depth, whatever else the
//!    directories hold); a file is hashed only when it can still be
//!    identical (regular, and of the original's size), so the bytes hashed
//!    are bounded by the original's own;
//! 2. the rest of the tree is listed (kind, mode and size of each added
//!    entry; no file read) until a bound is met.
//!
//! A bound met in pass 2 only cuts the listing short. One met in pass 1
//! (time, say) leaves the originals not yet looked up out of the manifest,
//! and they then count as removed: tampering is never missed, and the
//! recorded reason says why the check is incomplete.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{
    fstat, fstatat_nofollow, incomplete, is_absent, list_dir, open_host_dir, openat, readlinkat, rel_cstring,
    Frame, RootFs, DIR_FLAGS, READ_FLAGS,
};
use crate::bounds::{Budget, Cancelled, Stop, WalkLimits};
use crate::cancel::CancelToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// FIFO, socket or device node.
    Other,
}

impl EntryKind {
    /// The kind of an entry as `std::fs` reports it (links not followed).
    pub fn of(ft: std::fs::FileType) -> EntryKind {
        if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_file() {
            EntryKind::File
        } else if ft.is_symlink() {
            EntryKind::Symlink
        } else {
            EntryKind::Other
        }
    }

    /// The kind of an entry by its `st_mode`.
    pub fn of_mode(mode: libc::mode_t) -> EntryKind {
        match mode & libc::S_IFMT {
            libc::S_IFREG => EntryKind::File,
            libc::S_IFDIR => EntryKind::Dir,
            libc::S_IFLNK => EntryKind::Symlink,
            _ => EntryKind::Other,
        }
    }
}

/// One entry of a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub kind: EntryKind,
    /// Permission bits (`mode & 0o7777`).
    pub mode: u32,
    /// Bytes of a file, of a link's target; 0 for anything else.
    pub size: u64,
    /// Lowercase hex SHA-256 of a file's bytes, when they were read.
    pub sha256: Option<String>,
    /// A symbolic link's target, as stored (not resolved), when it was read.
    pub link_target: Option<String>,
}

/// Entries of a tree, by path relative to the tree's top ('/'-separated, no
/// leading slash), walked without following links.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    pub entries: BTreeMap<String, Entry>,
    /// Why the walk stopped before its end, if it did ("more than 200000
    /// entries"): entries may be missing.
    #[serde(default)]
    pub incomplete: Option<String>,
}

/// What a walk reads of an entry besides its kind, mode and size.
#[derive(Clone, Copy)]
enum Detail<'a> {
    /// A file's bytes (hashed) and a link's target.
    Full,
    /// Nothing more.
    Listed,
    /// What comparing with this original needs: the bytes of a file of the
    /// original's size, the target of a link that was a link.
    Against(&'a Entry),
}

impl Manifest {
    /// The manifest of a host directory (the harness's own copy of an
    /// artifact), in full: every file hashed. A tree too large for the
    /// walk's bounds is an error, as its tampering could not be judged.
    pub fn of_host_dir(path: &Path) -> io::Result<Manifest> {
        let at = |why: String| io::Error::other(format!("{}: {why}", path.display()));
        let top = open_host_dir(path)?;
        let mut budget = Budget::new(WalkLimits::default(), None);
        let mut manifest = Manifest::default();
        list_rest(top, None, Detail::Full, &mut budget, &mut manifest)
            .map_err(|stop| at(stop.to_string()))?;
        match manifest.incomplete {
            Some(why) => Err(at(why)),
            None => Ok(manifest),
        }
    }
}

impl RootFs {
    /// The tree under `dir` as the tamper check needs it, against
    /// `original`, what was put there (see the design note): every original
    /// still there described as in `original` (a file hashed only when of
    /// its original size), the rest listed, all within `limits`. A `dir`
    /// that is missing or reached through a link holds nothing. Nothing the
    /// tree holds makes this fail: a bound met or an error marks the
    /// manifest incomplete. Err only when `cancel` fires.
    pub fn manifest_against(
        &self,
        dir: &str,
        original: &Manifest,
        limits: WalkLimits,
        cancel: &CancelToken,
    ) -> Result<Manifest, Cancelled> {
        let mut now = Manifest::default();
        let top = match rel_cstring(dir).and_then(|rel| self.open_beneath(&rel, DIR_FLAGS)) {
            Ok(fd) => fd,
            Err(e) if is_absent(&e) => return Ok(now),
            Err(e) => {
                now.incomplete = Some(e.to_string());
                return Ok(now);
            }
        };
        let mut budget = Budget::new(limits, Some(cancel));
        let walked = look_up_originals(top.as_fd(), original, &mut budget, &mut now)
            .and_then(|()| list_rest(top, Some(original), Detail::Listed, &mut budget, &mut now));
        match walked {
            Ok(()) => Ok(now),
            Err(Stop::Cancelled) => Err(Cancelled),
            Err(Stop::Incomplete(why)) => {
                now.incomplete.get_or_insert(why);
                Ok(now)
            }
        }
    }
}

/// Pass 1: each path of `original`, looked up under `top` by name. The
/// directories of the previous path's parent stay open, as paths come in
/// order and neighbours share them.
fn look_up_originals(
    top: BorrowedFd<'_>,
    original: &Manifest,
    budget: &mut Budget<'_>,
    now: &mut Manifest,
) -> Result<(), Stop> {
    let mut chain: Vec<(&str, OwnedFd)> = Vec::new();
    for (rel, before) in &original.entries {
        budget.check()?;
        let (parent, name) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        let comps: Vec<&str> = parent.split('/').filter(|c| !c.is_empty()).collect();
        let kept = chain.iter().zip(&comps).take_while(|((have, _), want)| have == *want).count();
        chain.truncate(kept);
        while let Some(&comp) = comps.get(chain.len()) {
            let dfd = chain.last().map_or(top, |(_, fd)| fd.as_fd());
            let Some(cname) = raw_name(dfd, comp, budget)? else { break };
            match openat(dfd, &cname, DIR_FLAGS, 0) {
                Ok(fd) => chain.push((comp, fd)),
                Err(e) if is_absent(&e) => break,
                Err(e) => return Err(incomplete(e, rel)),
            }
        }
        if chain.len() < comps.len() {
            // A directory on the way is gone or is no directory now.
            continue;
        }
        let dfd = chain.last().map_or(top, |(_, fd)| fd.as_fd());
        let Some(cname) = raw_name(dfd, name, budget)? else { continue };
        let st = match fstatat_nofollow(dfd, &cname) {
            Ok(st) => st,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(incomplete(e, rel)),
        };
        if let Some(entry) = describe(dfd, &cname, &st, Detail::Against(before), budget, rel)? {
            now.entries.insert(rel.clone(), entry);
        }
    }
    Ok(())
}

/// The name in `dfd` whose lossy UTF-8 form is `name`: `name` itself,
/// unless it holds a replacement character (the name on disk may not be
/// UTF-8); then the directory is searched.
fn raw_name(dfd: BorrowedFd<'_>, name: &str, budget: &Budget<'_>) -> Result<Option<CString>, Stop> {
    if !name.contains(char::REPLACEMENT_CHARACTER) {
        return Ok(CString::new(name).ok());
    }
    let (max_names, max_bytes) = budget.listing_room();
    let names = list_dir(dfd, max_names, max_bytes)
        .map_err(|e| incomplete(e, name))?
        .ok_or_else(|| budget.listing_too_large())?;
    Ok(names.into_iter().find(|n| String::from_utf8_lossy(n.to_bytes()) == name))
}

/// Walks the tree under `top` and adds each entry that is neither in
/// `manifest` yet (pass 1 found it) nor in `original` (pass 1 could not
/// read it), read as `detail` says. A directory below the depth bound is
/// recorded but not entered, and the manifest marked incomplete; any other
/// bound ends the walk.
fn list_rest(
    top: OwnedFd,
    original: Option<&Manifest>,
    detail: Detail<'_>,
    budget: &mut Budget<'_>,
    manifest: &mut Manifest,
) -> Result<(), Stop> {
    let mut stack = vec![Frame::new(top, String::new(), budget)?];
    loop {
        let depth = stack.len();
        let Some(frame) = stack.last_mut() else { break };
        let Some(name) = frame.next_name() else {
            stack.pop();
            continue;
        };
        budget.visit()?;
        let rel = frame.child_rel(&name);
        let is_dir = match manifest.entries.get(&rel) {
            Some(seen) => seen.kind == EntryKind::Dir,
            None if original.is_some_and(|o| o.entries.contains_key(&rel)) => continue,
            None => {
                let st = match fstatat_nofollow(frame.fd.as_fd(), &name) {
                    Ok(st) => st,
                    Err(e) if is_absent(&e) => continue,
                    Err(e) => return Err(incomplete(e, &rel)),
                };
                let Some(entry) = describe(frame.fd.as_fd(), &name, &st, detail, budget, &rel)? else {
                    continue;
                };
                budget.keep(rel.len() + entry.link_target.as_ref().map_or(0, String::len))?;
                let is_dir = entry.kind == EntryKind::Dir;
                manifest.entries.insert(rel.clone(), entry);
                is_dir
            }
        };
        if !is_dir {
            continue;
        }
        if depth > budget.max_depth() {
            manifest.incomplete.get_or_insert_with(|| budget.too_deep().to_string());
            continue;
        }
        match openat(frame.fd.as_fd(), &name, DIR_FLAGS, 0) {
            Ok(fd) => stack.push(Frame::new(fd, rel, budget)?),
            Err(e) if is_absent(&e) => {}
            Err(e) => return Err(incomplete(e, &rel)),
        }
    }
    Ok(())
}

/// The entry `name` in `dfd`, which `st` describes, read as `detail` says;
/// None when it is gone.
fn describe(
    dfd: BorrowedFd<'_>,
    name: &CStr,
    st: &libc::stat,
    detail: Detail<'_>,
    budget: &Budget<'_>,
    rel: &str,
) -> Result<Option<Entry>, Stop> {
    let mode = st.st_mode & 0o7777;
    let size = st.st_size as u64;
    let entry = |kind, size, sha256, link_target| Some(Entry { kind, mode, size, sha256, link_target });
    Ok(match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {
            let hash = match detail {
                Detail::Full => true,
                Detail::Listed => false,
                Detail::Against(before) => before.kind == EntryKind::File && before.size == size,
            };
            if !hash {
                return Ok(entry(EntryKind::File, size, None, None));
            }
            let Some(sha) = hash_file(dfd, name, st, budget, rel)? else { return Ok(None) };
            entry(EntryKind::File, size, Some(sha), None)
        }
        libc::S_IFLNK => {
            let read = match detail {
                Detail::Full => true,
                Detail::Listed => false,
                Detail::Against(before) => before.kind == EntryKind::Symlink,
            };
            if !read {
                return Ok(entry(EntryKind::Symlink, size, None, None));
            }
            let target = match readlinkat(dfd, name) {
                Ok(t) => t,
                Err(e) if is_absent(&e) => return Ok(None),
                Err(e) => return Err(incomplete(e, rel)),
            };
            let text = String::from_utf8_lossy(&target).into_owned();
            entry(EntryKind::Symlink, target.len() as u64, None, Some(text))
        }
        libc::S_IFDIR => entry(EntryKind::Dir, 0, None, None),
        _ => entry(EntryKind::Other, 0, None, None),
    })
}

/// SHA-256 of the regular file `name` in `dfd`, streamed, at most one byte
/// past the size that `expected` gives (a file that grew hashes
/// differently), with the budget's clock and cancel token checked as it
/// goes. The file must still be the one that `expected` describes. None
/// when it is gone.
fn hash_file(
    dfd: BorrowedFd<'_>,
    name: &CStr,
    expected: &libc::stat,
    budget: &Budget<'_>,
    rel: &str,
) -> Result<Option<String>, Stop> {
    let fd = match openat(dfd, name, READ_FLAGS, 0) {
        Ok(fd) => fd,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(incomplete(e, rel)),
    };
    let st = fstat(fd.as_fd()).map_err(|e| incomplete(e, rel))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG
        || (st.st_dev, st.st_ino) != (expected.st_dev, expected.st_ino)
    {
        return Err(incomplete(io::Error::other("changed while being read"), rel));
    }
    let mut file = File::from(fd).take(expected.st_size as u64 + 1);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        budget.check()?;
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(incomplete(e, rel)),
        };
        hasher.update(&buf[..n]);
    }
    let digest = hasher.finalize();
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    Ok(Some(hex))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::time::{Duration, Instant};

    use super::super::tests::{mkfifo, write, Temp};
    use super::*;

    /// A tree in an "environment" and the original it was copied from.
    fn copied(t: &Temp) -> (RootFs, Manifest) {
        write(&t.join("orig/data/input.txt"), b"a\nb\nc\n");
        write(&t.join("orig/run.sh"), b"echo hi\n");
        write(&t.join("orig/eval/score.py"), b"print(1)\n");
        symlink("data/input.txt", t.join("orig/latest")).unwrap();
        let original = Manifest::of_host_dir(&t.join("orig")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        root.copy_tree_in(&t.join("orig"), "/art").unwrap();
        (root, original)
    }

    fn against(root: &RootFs, original: &Manifest, limits: WalkLimits) -> Manifest {
        root.manifest_against("/art", original, limits, &CancelToken::new().unwrap()).unwrap()
    }

    #[test]
    fn the_original_is_described_in_full_without_following_links() {
        let t = Temp::new();
        write(&t.join("a/f"), b"abc");
        symlink("/etc", t.join("a/etc")).unwrap();
        mkfifo(&t.join("a/fifo"));
        let m = Manifest::of_host_dir(&t.join("a")).unwrap();
        let keys: Vec<_> = m.entries.keys().cloned().collect();
        assert_eq!(keys, ["etc", "f", "fifo"]);
        let f = &m.entries["f"];
        assert_eq!((f.kind, f.size), (EntryKind::File, 3));
        assert_eq!(
            f.sha256.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(m.entries["etc"].kind, EntryKind::Symlink);
        assert_eq!(m.entries["etc"].link_target.as_deref(), Some("/etc"));
        assert_eq!(m.entries["fifo"].kind, EntryKind::Other);
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<Manifest>(&json).unwrap(), m);
    }

    #[test]
    fn an_original_too_deep_to_judge_is_an_error() {
        let t = Temp::new();
        let mut p = t.join("top");
        for _ in 0..crate::bounds::MAX_DEPTH + 5 {
            p = p.join("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        let err = Manifest::of_host_dir(&t.join("top")).unwrap_err();
        assert!(err.to_string().ends_with("more than 128 directory levels"), "{err}");
    }

    #[test]
    fn the_survey_reads_originals_and_only_lists_the_rest() {
        let t = Temp::new();
        let (root, original) = copied(&t);
        let art = t.join("art");
        std::fs::write(art.join("run.sh"), b"echo ho\n").unwrap();
        write(&art.join("results/t.csv"), b"x");
        symlink("/etc/shadow", art.join("results/link")).unwrap();
        std::fs::remove_file(art.join("latest")).unwrap();
        symlink("/etc/passwd", art.join("latest")).unwrap();
        let now = against(&root, &original, WalkLimits::default());
        assert_eq!(now.incomplete, None);
        assert_ne!(now.entries["run.sh"].sha256, original.entries["run.sh"].sha256, "same size: hashed");
        assert_eq!(now.entries["latest"].link_target.as_deref(), Some("/etc/passwd"));
        assert_eq!(now.entries["data/input.txt"], original.entries["data/input.txt"]);
        let added = &now.entries["results/t.csv"];
        assert_eq!((added.kind, added.size, added.sha256.as_ref()), (EntryKind::File, 1, None));
        assert_eq!(now.entries["results/link"].link_target, None, "an added link's target is not kept");
        // The top replaced by a link, or gone: nothing under it.
        std::fs::rename(&art, t.join("moved")).unwrap();
        assert!(against(&root, &original, WalkLimits::default()).entries.is_empty());
        symlink(t.join("moved"), &art).unwrap();
        assert!(against(&root, &original, WalkLimits::default()).entries.is_empty());
    }

    #[test]
    fn sparse_files_of_terabytes_are_never_read() {
        let t = Temp::new();
        let (root, original) = copied(&t);
        let huge = 15 << 40;
        for path in ["art/data/input.txt", "art/huge.bin"] {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(false)
                .open(t.join(path))
                .unwrap();
            f.set_len(huge).unwrap();
        }
        let started = Instant::now();
        let now = against(&root, &original, WalkLimits::default());
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(now.incomplete, None);
        for path in ["data/input.txt", "huge.bin"] {
            assert_eq!((now.entries[path].size, now.entries[path].sha256.as_ref()), (huge, None), "{path}");
        }
    }

    #[test]
    fn originals_are_reached_whatever_else_the_tree_holds() {
        let t = Temp::new();
        let (root, original) = copied(&t);
        // A flood next to the originals, before them in order, and a chain
        // of directories deeper than PATH_MAX.
        for i in 0..300 {
            std::fs::write(t.join(&format!("art/data/aaa-{i:03}")), b"").unwrap();
        }
        let mut dir = open_host_dir(&t.join("art")).unwrap();
        for _ in 0..2100 {
            // SAFETY: a valid directory fd and a NUL-terminated name.
            assert_eq!(
                unsafe { libc::mkdirat(std::os::fd::AsRawFd::as_raw_fd(&dir), c"dd".as_ptr(), 0o755) },
                0
            );
            dir = openat(dir.as_fd(), c"dd", DIR_FLAGS, 0).unwrap();
        }
        let limits = WalkLimits { entries: 100, ..WalkLimits::default() };
        let now = against(&root, &original, limits);
        assert_eq!(now.incomplete.as_deref(), Some("more than 100 entries or 33554432 bytes of names"));
        for (path, entry) in &original.entries {
            assert_eq!(now.entries.get(path), Some(entry), "{path}");
        }
        let now = against(&root, &original, WalkLimits::default());
        assert_eq!(now.incomplete.as_deref(), Some("more than 128 directory levels"));
        assert_eq!(now.entries.keys().filter(|p| p.starts_with("dd")).count(), 129);
        assert_eq!(now.entries.len(), original.entries.len() + 300 + 129);
    }

    #[test]
    fn names_that_are_not_utf8_are_found() {
        let t = Temp::new();
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
        std::fs::create_dir_all(t.join("orig/d\u{fffd}r")).unwrap();
        std::fs::write(t.join("orig").join(name), b"latin-1").unwrap();
        let original = Manifest::of_host_dir(&t.join("orig")).unwrap();
        assert!(original.entries.contains_key("caf\u{fffd}.txt"));
        std::fs::create_dir_all(t.join("art")).unwrap();
        std::fs::write(t.join("art").join(name), b"latin-1").unwrap();
        std::fs::create_dir_all(t.join("art/d\u{fffd}r")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        assert_eq!(against(&root, &original, WalkLimits::default()), original);
    }

    #[test]
    fn out_of_time_leaves_originals_out_and_a_cancel_stops_it() {
        let t = Temp::new();
        let (root, original) = copied(&t);
        let now = against(&root, &original, WalkLimits { time: Duration::ZERO, ..WalkLimits::default() });
        assert_eq!(now.incomplete.as_deref(), Some("took longer than 0 s"));
        assert!(now.entries.is_empty(), "originals not looked up then count as removed");
        let cancel = CancelToken::new().unwrap();
        cancel.cancel();
        assert_eq!(root.manifest_against("/art", &original, WalkLimits::default(), &cancel), Err(Cancelled));
    }
}
