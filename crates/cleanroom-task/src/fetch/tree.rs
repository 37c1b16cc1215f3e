//! Writing a file tree under a root without ever leaving it.
//!
//! Every fetched entry goes through `TreeWriter`, which creates parent
//! directories one component at a time and refuses to go through a symbolic
//! link: an archive that first plants `lib -> /etc` and then writes
//! `lib/passwd` cannot touch the host, whatever the lexical checks of link
//! targets missed. Links themselves are created as links, never followed.

use std::ffi::{OsStr, OsString};
use std::fs::{self, OpenOptions, Permissions};
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use filetime::FileTime;
use sha2::{Digest, Sha256};

use super::error::FetchError;

/// A path relative to the tree's root: normal components only.
pub(crate) type Rel = [OsString];

pub(crate) fn display(rel: &Rel) -> String {
    let parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    parts.join("/")
}

/// Splits an entry name into normal components. `Ok(None)` is the root
/// itself (`./`); absolute names and `..` are refused.
pub(crate) fn normalize(name: &[u8]) -> Result<Option<Vec<OsString>>, &'static str> {
    if name.first() == Some(&b'/') {
        return Err("absolute path");
    }
    if name.contains(&0) {
        return Err("nul byte in name");
    }
    let mut comps = Vec::new();
    for c in name.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => return Err("path contains `..`"),
            c => comps.push(OsString::from_vec(c.to_vec())),
        }
    }
    Ok((!comps.is_empty()).then_some(comps))
}

/// Whether a relative link target, placed at `rel`, resolves (lexically)
/// inside the root.
pub(crate) fn link_stays_inside(rel: &Rel, target: &[u8]) -> bool {
    if target.is_empty() || target.first() == Some(&b'/') {
        return false;
    }
    let mut depth = rel.len() as i64 - 1;
    for c in target.split(|b| *b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => depth += 1,
        }
    }
    true
}

pub(crate) struct TreeWriter {
    root: PathBuf,
    /// Names errors: the archive, url or directory being written.
    origin: String,
    /// Fetched trees refuse links that point outside; a task's own
    /// artifact/ and overlay/ are copied as they are.
    check_links: bool,
    mode_mask: u32,
    /// Directory modes and times, applied last so that a read-only
    /// directory does not block its own entries.
    dirs: Vec<(PathBuf, usize, u32, Option<FileTime>)>,
}

impl TreeWriter {
    /// A writer for a fetched tree: links must stay inside, no setuid bits.
    pub fn fetched(root: &Path, origin: &str) -> Self {
        TreeWriter {
            root: root.to_path_buf(),
            origin: origin.to_owned(),
            check_links: true,
            mode_mask: 0o777,
            dirs: Vec::new(),
        }
    }

    /// A writer for a copy of the task's own files.
    pub fn trusted(root: &Path, origin: &str) -> Self {
        TreeWriter { check_links: false, mode_mask: 0o7777, ..TreeWriter::fetched(root, origin) }
    }

    fn unsafe_entry(&self, rel: &Rel, reason: impl Into<String>) -> FetchError {
        FetchError::Unsafe { origin: self.origin.clone(), entry: display(rel), reason: reason.into() }
    }

    /// Creates the parents of `rel` as real directories and returns the
    /// path of `rel`, after removing a non-directory already there when
    /// `replace` is set.
    fn prepare(&mut self, rel: &Rel, replace: bool) -> Result<PathBuf, FetchError> {
        let mut path = self.root.clone();
        for (i, c) in rel.iter().enumerate() {
            path.push(c);
            let last = i + 1 == rel.len();
            match fs::symlink_metadata(&path) {
                Ok(m) if last => {
                    if m.is_dir() {
                        return Ok(path);
                    }
                    if replace {
                        fs::remove_file(&path).map_err(FetchError::io(&path, "cannot replace"))?;
                    }
                }
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(self.unsafe_entry(
                        rel,
                        format!("would be written through the symbolic link {}", display(&rel[..=i])),
                    ));
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(
                        self.unsafe_entry(rel, format!("{} is a file, not a directory", display(&rel[..=i])))
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if !last {
                        fs::create_dir(&path).map_err(FetchError::io(&path, "cannot create directory"))?;
                    }
                }
                Err(e) => return Err(FetchError::io(&path, "cannot inspect")(e)),
            }
        }
        Ok(path)
    }

    fn is_dir_at(path: &Path) -> bool {
        fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
    }

    pub fn dir(&mut self, rel: &Rel, mode: u32, mtime: Option<FileTime>) -> Result<(), FetchError> {
        let path = self.prepare(rel, false)?;
        if !Self::is_dir_at(&path) {
            if fs::symlink_metadata(&path).is_ok() {
                return Err(self.unsafe_entry(rel, "a file is already there, not a directory"));
            }
            fs::create_dir(&path).map_err(FetchError::io(&path, "cannot create directory"))?;
        }
        let mode = (mode & self.mode_mask) | 0o700;
        self.dirs.push((path, rel.len(), mode, mtime));
        Ok(())
    }

    /// Writes a regular file; returns the sha256 of its bytes.
    pub fn file(
        &mut self,
        rel: &Rel,
        mode: u32,
        mtime: Option<FileTime>,
        content: &mut dyn Read,
    ) -> Result<[u8; 32], FetchError> {
        let path = self.prepare(rel, true)?;
        if Self::is_dir_at(&path) {
            return Err(self.unsafe_entry(rel, "a directory is already there, not a file"));
        }
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(FetchError::io(&path, "cannot create file"))?;
        let mut hashing = HashingWriter { inner: &mut f, hasher: Sha256::new() };
        io::copy(content, &mut hashing).map_err(FetchError::io(&path, "cannot write"))?;
        let digest = hashing.hasher.finalize().into();
        f.set_permissions(Permissions::from_mode(mode & self.mode_mask))
            .map_err(FetchError::io(&path, "cannot set mode"))?;
        if let Some(t) = mtime {
            filetime::set_file_handle_times(&f, Some(t), Some(t))
                .map_err(FetchError::io(&path, "cannot set time"))?;
        }
        Ok(digest)
    }

    pub fn symlink(&mut self, rel: &Rel, target: &[u8], mtime: Option<FileTime>) -> Result<(), FetchError> {
        if self.check_links && !link_stays_inside(rel, target) {
            return Err(self.unsafe_entry(
                rel,
                format!("symbolic link to {:?} points outside the artifact", String::from_utf8_lossy(target)),
            ));
        }
        let path = self.prepare(rel, true)?;
        if Self::is_dir_at(&path) {
            return Err(self.unsafe_entry(rel, "a directory is already there, not a link"));
        }
        std::os::unix::fs::symlink(OsStr::from_bytes(target), &path)
            .map_err(FetchError::io(&path, "cannot create symbolic link"))?;
        if let Some(t) = mtime {
            let _ = filetime::set_symlink_file_times(&path, t, t);
        }
        Ok(())
    }

    /// A hard link to a regular file written earlier in the same tree.
    pub fn hardlink(&mut self, rel: &Rel, target: &Rel) -> Result<(), FetchError> {
        // The target must be reachable without links and be a regular file.
        let mut tpath = self.root.clone();
        for (i, c) in target.iter().enumerate() {
            tpath.push(c);
            let m = fs::symlink_metadata(&tpath);
            let ok = match &m {
                Ok(m) if i + 1 == target.len() => m.is_file(),
                Ok(m) => m.is_dir(),
                Err(_) => false,
            };
            if !ok {
                return Err(self.unsafe_entry(
                    rel,
                    format!("hard link to {} which is not a regular file of the artifact", display(target)),
                ));
            }
        }
        let path = self.prepare(rel, true)?;
        if path == tpath {
            return Ok(());
        }
        fs::hard_link(&tpath, &path)
            .or_else(|_| fs::copy(&tpath, &path).map(|_| ()))
            .map_err(FetchError::io(&path, "cannot create hard link"))
    }

    /// Applies directory modes and times, deepest first.
    pub fn finish(mut self) -> Result<(), FetchError> {
        self.dirs.sort_by_key(|d| std::cmp::Reverse(d.1));
        for (path, _, mode, mtime) in &self.dirs {
            fs::set_permissions(path, Permissions::from_mode(*mode))
                .map_err(FetchError::io(path, "cannot set mode"))?;
            if let Some(t) = mtime {
                let _ = filetime::set_file_times(path, *t, *t);
            }
        }
        Ok(())
    }
}

struct HashingWriter<'a, W> {
    inner: &'a mut W,
    hasher: Sha256,
}

impl<W: io::Write> io::Write for HashingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Copies the tree at `src` into the writer's root (merging with what is
/// there), without following links inside `src`. When `digest` is given,
/// it absorbs a canonical listing of the tree: for each entry in path order
/// its kind, mode, path and content digest (or link target).
pub(crate) fn copy_tree(
    src: &Path,
    w: &mut TreeWriter,
    mut digest: Option<&mut Sha256>,
) -> Result<(), FetchError> {
    let mut rel = Vec::new();
    copy_dir(src, w, &mut rel, &mut digest)
}

fn copy_dir(
    src: &Path,
    w: &mut TreeWriter,
    rel: &mut Vec<OsString>,
    digest: &mut Option<&mut Sha256>,
) -> Result<(), FetchError> {
    let mut names: Vec<OsString> = fs::read_dir(src)
        .map_err(FetchError::io(src, "cannot read directory"))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .map_err(FetchError::io(src, "cannot read directory"))?;
    names.sort();
    for name in names {
        let path = src.join(&name);
        rel.push(name);
        let m = fs::symlink_metadata(&path).map_err(FetchError::io(&path, "cannot inspect"))?;
        let mtime = Some(FileTime::from_last_modification_time(&m));
        let ft = m.file_type();
        let rel_bytes = display(rel);
        if ft.is_symlink() {
            let target = fs::read_link(&path).map_err(FetchError::io(&path, "cannot read link"))?;
            let target = target.as_os_str().as_bytes();
            w.symlink(rel, target, mtime)?;
            if let Some(h) = digest.as_deref_mut() {
                h.update(b"L ");
                h.update(rel_bytes.as_bytes());
                h.update(b"\0");
                h.update(target);
                h.update(b"\n");
            }
        } else if ft.is_dir() {
            w.dir(rel, m.mode(), mtime)?;
            if let Some(h) = digest.as_deref_mut() {
                h.update(format!("D {:o} {rel_bytes}\n", m.mode() & 0o7777).as_bytes());
            }
            copy_dir(&path, w, rel, digest)?;
        } else if ft.is_file() {
            let mut f = fs::File::open(&path).map_err(FetchError::io(&path, "cannot open"))?;
            let sum = w.file(rel, m.mode(), mtime, &mut f)?;
            if let Some(h) = digest.as_deref_mut() {
                h.update(format!("F {:o} {rel_bytes}\0{}\n", m.mode() & 0o7777, hex(&sum)).as_bytes());
            }
        } else {
            return Err(FetchError::Unsafe {
                origin: w.origin.clone(),
                entry: rel_bytes,
                reason: "not a regular file, directory or symbolic link (a fifo, socket or device)"
                    .to_owned(),
            });
        }
        rel.pop();
    }
    Ok(())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of a file, in lowercase hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String, FetchError> {
    let mut f = fs::File::open(path).map_err(FetchError::io(path, "cannot open"))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(FetchError::io(path, "cannot read"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &str) -> Vec<OsString> {
        normalize(s.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn names() {
        assert_eq!(rel("./a/b/"), vec![OsString::from("a"), OsString::from("b")]);
        assert_eq!(normalize(b"./").unwrap(), None);
        assert!(normalize(b"/etc/passwd").is_err());
        assert!(normalize(b"a/../../b").is_err());
    }

    #[test]
    fn link_targets() {
        assert!(link_stays_inside(&rel("a/l"), b"b"));
        assert!(link_stays_inside(&rel("a/l"), b"../b"));
        assert!(!link_stays_inside(&rel("a/l"), b"../../b"));
        assert!(!link_stays_inside(&rel("l"), b"/etc"));
        assert!(!link_stays_inside(&rel("l"), b""));
        assert!(link_stays_inside(&rel("a/b/l"), b"../../x/./y"));
    }

    #[test]
    fn never_writes_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        // A link planted by a trusted copy, then a fetched entry below it.
        std::os::unix::fs::symlink(&outside, root.join("lib")).unwrap();
        let mut w = TreeWriter::fetched(&root, "test.tar");
        let err = w.file(&rel("lib/passwd"), 0o644, None, &mut &b"x"[..]).unwrap_err();
        assert!(err.to_string().contains("symbolic link lib"), "{err}");
        assert!(!outside.join("passwd").exists());
        let err = w.symlink(&rel("esc"), b"../outside", None).unwrap_err();
        assert!(err.to_string().contains("points outside"), "{err}");
    }
}
