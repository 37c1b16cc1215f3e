//! Host-side access to an environment's root directory.
//!
//! Design note. The root directory (an overlayfs mount on the host) has been
//! written by untrusted code running as root inside the environment. Any
//! directory may have been replaced by a symbolic link to a host path (say
//! `/workspace -> /etc`), any file by a link, a FIFO or a huge sparse file.
//! The harness must never read or write a host file through such a link, never
//! block on a FIFO, and never load an unbounded file into memory. So:
//!
//! - Everything starts from a directory fd of the root, never from a host path
//!   string (after [`RootFs::open`]).
//! - Reading resolves paths with openat2(2) and `RESOLVE_BENEATH |
//!   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`: no link is followed anywhere
//!   in the path and the result is inside the root, or the open fails. Files
//!   are first opened `O_PATH` (opening has no side effect even on a device),
//!   checked to be regular, then reopened for reading, and read to at most
//!   `limit + 1` bytes.
//! - Writing and creating resolve with `RESOLVE_IN_ROOT`: links in the
//!   directories of the path are followed as if the process were chrooted into
//!   the root (the verifier's scripts see the same tree), and the final
//!   component is never followed (`O_NOFOLLOW`).
//! - Walking (manifests, removal, copying in) goes one component at a time
//!   with `fstatat(AT_SYMLINK_NOFOLLOW)`, `openat(O_NOFOLLOW)`, `mkdirat`,
//!   `unlinkat` and `symlinkat` relative to directory fds, so a rename or a
//!   link swapped in between two calls makes a call fail instead of leading
//!   out of the root.
//! - Walks are bounded (see `bounds.rs`): entries, directory levels (one
//!   open fd per level), bytes of names kept, time, and the cancel token.
//!   Manifests and the tamper check's survey are in `rootfs/manifest.rs`.
//!
//! Entries the harness creates take the owner of the environment's root
//! directory, so that root inside the environment owns them even when the
//! backend maps users. The harness also remembers each path it made (and
//! the paths its own scripts in the environment make, see
//! [`RootFs::claim`]), so that the environment's diff can leave out exactly
//! those and nothing else.

mod manifest;

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::bounds::{Budget, Stop, WalkLimits};
use crate::cancel::CancelToken;

pub use manifest::{Entry, EntryKind, Manifest};

/// An environment's root directory, opened once; every access goes through
/// its fd.
#[derive(Debug)]
pub struct RootFs {
    dir: OwnedFd,
    host_path: PathBuf,
    owner: (u32, u32),
    /// Every path the harness made (absolute inside the environment), with
    /// the kind it made there.
    made: Mutex<BTreeMap<String, EntryKind>>,
}

/// Why [`RootFs::read_regular`] returned no bytes.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("missing")]
    Missing,
    #[error("symlink in path")]
    SymlinkInPath,
    #[error("not a regular file")]
    NotRegular,
    #[error("too large: {size} bytes")]
    TooLarge { size: u64 },
    #[error("{0}")]
    Io(io::Error),
}

/// The task format's globs (`*` within one path segment, `**` across
/// segments), matched against paths relative to a directory.
#[derive(Debug, Clone)]
pub struct Globs {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

impl Globs {
    pub fn new(patterns: &[String]) -> Result<Globs, String> {
        let mut builder = globset::GlobSetBuilder::new();
        for p in patterns {
            let glob = globset::GlobBuilder::new(p)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("bad glob {p:?}: {e}"))?;
            builder.add(glob);
        }
        let set = builder.build().map_err(|e| format!("bad globs: {e}"))?;
        Ok(Globs { patterns: patterns.to_vec(), set })
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn is_match(&self, rel: &str) -> bool {
        self.set.is_match(rel)
    }

    /// Could a path below the directory `dir` match? False only when no
    /// pattern's literal leading segments lead into `dir` (so a walk need not
    /// enter it): `results/**` never matches below `src`.
    pub fn may_match_below(&self, dir: &str) -> bool {
        let dir: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
        self.patterns.iter().any(|p| {
            let literal: Vec<&str> = p
                .split('/')
                .filter(|c| !c.is_empty())
                .take_while(|c| !c.contains(['*', '?', '[', '{', '\\']))
                .collect();
            // One is a prefix of the other.
            literal.iter().zip(&dir).all(|(a, b)| a == b)
        })
    }

    /// For a directory: also true when `dir/**` names it (its path with a
    /// trailing slash matches), so `eval/**` covers the directory `eval`.
    pub fn is_match_dir(&self, rel: &str) -> bool {
        self.is_match(rel) || self.set.is_match(format!("{rel}/"))
    }
}

impl RootFs {
    /// Opens the root directory of an environment at a host path that the
    /// harness controls.
    pub fn open(host_path: &Path) -> io::Result<RootFs> {
        let dir = open_host_dir(host_path)?;
        let st = fstat(dir.as_fd())?;
        let owner = (st.st_uid, st.st_gid);
        let root = RootFs { dir, host_path: host_path.to_path_buf(), owner, made: Mutex::default() };
        match root.open_beneath(c".", libc::O_PATH) {
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel has no openat2(2) (Linux 5.6 or later is needed)",
            )),
            Err(e) => Err(context(e, &host_path.display().to_string())),
            Ok(_) => Ok(root),
        }
    }

    pub fn host_path(&self) -> &Path {
        &self.host_path
    }

    /// Records that a process of the harness's own in the environment (a
    /// session's shell wrapper, say) makes `path`, of `kind`: the
    /// environment's diff then leaves it out, as it does what the harness
    /// made from the host.
    pub fn claim(&self, path: &str, kind: EntryKind) {
        if let Ok(comps) = components(path) {
            let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
            made.insert(format!("/{}", comps.join("/")), kind);
        }
    }

    /// Every path the harness made or claimed, absolute inside the
    /// environment, with the kind it made there.
    pub fn made_by_harness(&self) -> BTreeMap<String, EntryKind> {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `mkdir -p` inside the environment; new directories get `mode`.
    pub fn create_dir_all(&self, path: &str, mode: u32) -> io::Result<()> {
        self.dir_all(path, mode).map(drop).map_err(|e| context(e, path))
    }

    /// Creates or truncates the file at `path` and writes `bytes`; the file's
    /// mode becomes `mode`. Refuses a final component that is a link or not a
    /// regular file. The directories must exist.
    pub fn write_file(&self, path: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write_file_inner(path, bytes, mode).map_err(|e| context(e, path))
    }

    fn write_file_inner(&self, path: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let rel = rel_cstring(path)?;
        let fd = self.open_in_root(&rel, WRITE_FLAGS, mode & 0o7777)?;
        let mut file = self.finish_created_file(fd, mode)?;
        self.claim(path, EntryKind::File);
        file.write_all(bytes)
    }

    /// Appends `bytes` to the regular file at `path`, which must exist (a
    /// file written in parts); the path is resolved as for `write_file`.
    pub fn append_file(&self, path: &str, bytes: &[u8]) -> io::Result<()> {
        (|| {
            let fd = self.open_in_root(&rel_cstring(path)?, APPEND_FLAGS, 0)?;
            if fstat(fd.as_fd())?.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
            }
            File::from(fd).write_all(bytes)
        })()
        .map_err(|e| context(e, path))
    }

    /// Makes `path` a symbolic link to `target` (stored as given, never
    /// resolved), replacing whatever non-directory is there. The parent
    /// directories must exist; they are resolved as if chrooted.
    pub fn symlink(&self, path: &str, target: &str) -> io::Result<()> {
        self.symlink_inner(path, target).map_err(|e| context(e, path))
    }

    fn symlink_inner(&self, path: &str, target: &str) -> io::Result<()> {
        let comps = components(path)?;
        let Some((name, parent)) = comps.split_last() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the root cannot be a link"));
        };
        let dir = self.dir_all(&parent.join("/"), 0o755)?;
        let name = CString::new(*name).map_err(|_| nul_error())?;
        let ctarget = CString::new(target).map_err(|_| nul_error())?;
        match symlinkat(&ctarget, dir.as_fd(), &name) {
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                let st = fstatat_nofollow(dir.as_fd(), &name)?;
                if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                    return Err(e);
                }
                unlinkat(dir.as_fd(), &name, 0)?;
                symlinkat(&ctarget, dir.as_fd(), &name)
            }
            other => other,
        }?;
        self.chown_at(dir.as_fd(), &name)?;
        self.claim(path, EntryKind::Symlink);
        Ok(())
    }

    /// Copies a host directory tree into the environment at `dest` (created
    /// as needed): directories, regular files with their modes, links as links.
    pub fn copy_tree_in(&self, host_src: &Path, dest: &str) -> io::Result<()> {
        self.copy_tree_in_filtered(host_src, dest, &|_| false)
    }

    /// [`RootFs::copy_tree_in`] that leaves out every entry for which `skip`
    /// (given the path relative to `host_src`) is true.
    pub fn copy_tree_in_filtered(
        &self,
        host_src: &Path,
        dest: &str,
        skip: &dyn Fn(&Path) -> bool,
    ) -> io::Result<()> {
        let meta =
            std::fs::symlink_metadata(host_src).map_err(|e| context(e, &host_src.display().to_string()))?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a directory", host_src.display()),
            ));
        }
        let top = self.dir_all(dest, meta.mode()).map_err(|e| context(e, dest))?;
        fchmod(top.as_fd(), meta.mode())?;
        self.copy_dir(host_src, Path::new(""), top.as_fd(), dest, skip)
    }

    fn copy_dir(
        &self,
        src: &Path,
        rel: &Path,
        dfd: BorrowedFd<'_>,
        dest: &str,
        skip: &dyn Fn(&Path) -> bool,
    ) -> io::Result<()> {
        let host_ctx = |e: io::Error, p: &Path| context(e, &p.display().to_string());
        let mut entries: Vec<_> =
            std::fs::read_dir(src).and_then(|rd| rd.collect()).map_err(|e| host_ctx(e, src))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name();
            let rel = rel.join(&name);
            if skip(&rel) {
                continue;
            }
            let host = entry.path();
            let env_path = format!("{}/{}", dest.trim_end_matches('/'), rel.display());
            let env_ctx = |e: io::Error| context(e, &env_path);
            let meta = std::fs::symlink_metadata(&host).map_err(|e| host_ctx(e, &host))?;
            let cname = CString::new(name.as_bytes()).map_err(|_| nul_error())?;
            let ft = meta.file_type();
            if ft.is_dir() {
                match mkdirat(dfd, &cname, 0o700) {
                    Ok(()) => self.claim(&env_path, EntryKind::Dir),
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
                    Err(e) => return Err(env_ctx(e)),
                }
                let child = openat(dfd, &cname, DIR_FLAGS, 0).map_err(env_ctx)?;
                self.chown_fd(child.as_fd()).map_err(env_ctx)?;
                fchmod(child.as_fd(), meta.mode()).map_err(env_ctx)?;
                self.copy_dir(&host, &rel, child.as_fd(), dest, skip)?;
            } else if ft.is_file() {
                let mut input = File::open(&host).map_err(|e| host_ctx(e, &host))?;
                let fd = match openat(dfd, &cname, WRITE_FLAGS, meta.mode() & 0o7777) {
                    Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                        // A link is in the way: replace it, never write through it.
                        unlinkat(dfd, &cname, 0).map_err(env_ctx)?;
                        openat(dfd, &cname, WRITE_FLAGS, meta.mode() & 0o7777)
                    }
                    other => other,
                }
                .map_err(env_ctx)?;
                let mut out = self.finish_created_file(fd, meta.mode()).map_err(env_ctx)?;
                self.claim(&env_path, EntryKind::File);
                io::copy(&mut input, &mut out).map_err(env_ctx)?;
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&host).map_err(|e| host_ctx(e, &host))?;
                let ctarget = CString::new(target.as_os_str().as_bytes()).map_err(|_| nul_error())?;
                match symlinkat(&ctarget, dfd, &cname) {
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                        let st = fstatat_nofollow(dfd, &cname).map_err(env_ctx)?;
                        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                            return Err(env_ctx(e));
                        }
                        unlinkat(dfd, &cname, 0).map_err(env_ctx)?;
                        symlinkat(&ctarget, dfd, &cname)
                    }
                    other => other,
                }
                .map_err(env_ctx)?;
                self.chown_at(dfd, &cname).map_err(env_ctx)?;
                self.claim(&env_path, EntryKind::Symlink);
            } else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: not a file, directory or symlink", host.display()),
                ));
            }
        }
        Ok(())
    }

    /// Reads the regular file at `path` (absolute inside the environment):
    /// no link followed anywhere in the path, at most `limit` bytes.
    pub fn read_regular(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        let rel = rel_cstring(path).map_err(ReadError::Io)?;
        let fd = self.open_beneath(&rel, libc::O_PATH).map_err(classify_read_error)?;
        let st = fstat(fd.as_fd()).map_err(ReadError::Io)?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(ReadError::NotRegular);
        }
        let size = st.st_size as u64;
        if size > limit {
            return Err(ReadError::TooLarge { size });
        }
        let file = reopen_for_reading(&fd, &rel, self).map_err(ReadError::Io)?;
        let mut bytes = Vec::with_capacity(size.min(limit) as usize);
        file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(ReadError::Io)?;
        if bytes.len() as u64 > limit {
            return Err(ReadError::TooLarge { size: bytes.len() as u64 });
        }
        Ok(bytes)
    }

    /// The identity of the entry at `path` (absolute inside the
    /// environment), no link followed anywhere in the path.
    pub fn file_id(&self, path: &str) -> io::Result<crate::access::FileId> {
        let fd = self.open_beneath(&rel_cstring(path)?, libc::O_PATH | libc::O_NOFOLLOW)?;
        let st = fstat(fd.as_fd())?;
        Ok(crate::access::FileId { dev: st.st_dev, ino: st.st_ino })
    }

    /// The kind of the entry at `path`, no link followed anywhere in the
    /// path; None where nothing is.
    pub fn kind_of(&self, path: &str) -> io::Result<Option<EntryKind>> {
        match self.open_beneath(&rel_cstring(path)?, libc::O_PATH | libc::O_NOFOLLOW) {
            Ok(fd) => Ok(Some(EntryKind::of_mode(fstat(fd.as_fd())?.st_mode))),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The handle by which fanotify names the entry at `path` (its type,
    /// then its bytes), no link followed anywhere in the path. Asked for as
    /// an identifier only (`AT_HANDLE_FID`), which every file system with
    /// fanotify's file ids gives, overlayfs too.
    pub fn file_handle(&self, path: &str) -> io::Result<Vec<u8>> {
        const MAX_HANDLE_SZ: usize = 128;
        const AT_HANDLE_FID: libc::c_int = 0x200;
        #[repr(C)]
        struct FileHandle {
            bytes: u32,
            kind: i32,
            f: [u8; MAX_HANDLE_SZ],
        }
        let fd = self.open_beneath(&rel_cstring(path)?, libc::O_PATH | libc::O_NOFOLLOW)?;
        let mut handle = FileHandle { bytes: MAX_HANDLE_SZ as u32, kind: 0, f: [0; MAX_HANDLE_SZ] };
        let mut mount_id: libc::c_int = 0;
        // SAFETY: a valid descriptor, an empty path and buffers of the sizes given.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_name_to_handle_at,
                fd.as_raw_fd(),
                c"".as_ptr(),
                &mut handle as *mut FileHandle,
                &mut mount_id as *mut libc::c_int,
                libc::AT_EMPTY_PATH | AT_HANDLE_FID,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut key = handle.kind.to_ne_bytes().to_vec();
        key.extend_from_slice(&handle.f[..(handle.bytes as usize).min(MAX_HANDLE_SZ)]);
        Ok(key)
    }

    /// Removes every path under `dir` whose relative path matches `globs`
    /// (a matching directory with all it holds), without following a link and
    /// never leaving the root. Returns the relative paths removed. A `dir`
    /// that is missing or reached through a link holds nothing to remove.
    pub fn remove_matching(&self, dir: &str, globs: &Globs, cancel: &CancelToken) -> io::Result<Vec<String>> {
        let mut removed = Vec::new();
        if globs.is_empty() {
            return Ok(removed);
        }
        let rel = rel_cstring(dir)?;
        let top = match self.open_beneath(&rel, DIR_FLAGS) {
            Ok(fd) => fd,
            Err(e) if is_absent(&e) => return Ok(removed),
            Err(e) => return Err(context(e, dir)),
        };
        let mut budget = Budget::new(WalkLimits::default(), Some(cancel));
        self.remove_below(top, globs, &mut budget, &mut removed).map_err(|stop| context(stop.into(), dir))?;
        Ok(removed)
    }

    fn remove_below(
        &self,
        top: OwnedFd,
        globs: &Globs,
        budget: &mut Budget<'_>,
        removed: &mut Vec<String>,
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
            let st = match fstatat_nofollow(frame.fd.as_fd(), &name) {
                Ok(st) => st,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(incomplete(e, &rel)),
            };
            let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            if globs.is_match(&rel) {
                remove_entry(frame.fd.as_fd(), &name, is_dir, 0, budget)?;
                budget.keep(rel.len())?;
                removed.push(rel);
            } else if is_dir && globs.may_match_below(&rel) {
                if depth > budget.max_depth() {
                    return Err(budget.too_deep());
                }
                let fd = match openat(frame.fd.as_fd(), &name, DIR_FLAGS, 0) {
                    Ok(fd) => fd,
                    Err(e) if is_absent(&e) => continue,
                    Err(e) => return Err(incomplete(e, &rel)),
                };
                let child = Frame::new(fd, rel, budget)?;
                stack.push(child);
            }
        }
        Ok(())
    }

    /// Whether `path` is a directory, resolved without following any link.
    pub fn is_dir(&self, path: &str) -> bool {
        rel_cstring(path).and_then(|rel| self.open_beneath(&rel, DIR_FLAGS)).is_ok()
    }

    /// Makes the directory `path` for a mount, with every parent it lacks;
    /// returns those made, outermost first, for [`RootFs::remove_mount_points`].
    pub fn make_mount_point(&self, path: &str) -> io::Result<Vec<String>> {
        let mut made = Vec::new();
        let mut prefix = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            prefix.push('/');
            prefix.push_str(part);
            if !self.is_dir(&prefix) {
                self.create_dir_all(&prefix, 0o755)
                    .map_err(|e| context(e, &format!("mount point {prefix}")))?;
                made.push(prefix.clone());
            }
        }
        Ok(made)
    }

    /// Removes the mount points [`RootFs::make_mount_point`] made, innermost
    /// first. Best effort: one that a phase filled (a file the agent made
    /// beside the mount) stays, and shows in the diff as the agent's doing.
    pub fn remove_mount_points(&self, made: &[String]) {
        for dir in made.iter().rev() {
            let _ = self.remove_dir_if_empty(dir);
        }
    }

    /// Readies `path` for a file mount: an empty file is made where nothing
    /// is (`Ok(true)`: remove it with [`RootFs::remove_file_mount_point`]),
    /// a regular file already there is mounted over (`Ok(false)`). Anything
    /// else (a link, a directory, a parent that is not a real directory) is
    /// refused, so the mount can never land elsewhere.
    pub fn make_file_mount_point(&self, path: &str) -> io::Result<bool> {
        let rel = rel_cstring(path)?;
        let create = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        match self.open_beneath_mode(&rel, create, 0o644) {
            Ok(fd) => {
                self.claim(path, EntryKind::File);
                self.chown_fd(fd.as_fd()).map_err(|e| context(e, path))?;
                return Ok(true);
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) => return Err(context(e, path)),
        }
        let fd = self.open_beneath(&rel, libc::O_PATH | libc::O_NOFOLLOW).map_err(|e| context(e, path))?;
        if fstat(fd.as_fd())?.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(context(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"), path));
        }
        Ok(false)
    }

    /// Removes a file [`RootFs::make_file_mount_point`] made, if it is still
    /// an empty regular file (best effort, as for directories).
    pub fn remove_file_mount_point(&self, path: &str) {
        let Ok(comps) = components(path) else { return };
        let Some((name, parent)) = comps.split_last() else { return };
        let parent = if parent.is_empty() { ".".to_string() } else { parent.join("/") };
        let (Ok(parent), Ok(name)) = (CString::new(parent), CString::new(*name)) else { return };
        let Ok(dir) = self.open_beneath(&parent, DIR_FLAGS) else { return };
        let empty_file = fstatat_nofollow(dir.as_fd(), &name)
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_size == 0);
        if empty_file {
            let _ = unlinkat(dir.as_fd(), &name, 0);
        }
    }

    /// The directory at `path`, opened without following any link: a mount
    /// goes onto it through `/proc/self/fd`, never through a path the
    /// environment could have turned into a link.
    pub fn open_dir(&self, path: &str) -> io::Result<OwnedFd> {
        rel_cstring(path).and_then(|rel| self.open_beneath(&rel, DIR_FLAGS)).map_err(|e| context(e, path))
    }

    /// Removes the directory at `path` if it is empty; a directory with
    /// anything in it is left alone (Ok).
    pub fn remove_dir_if_empty(&self, path: &str) -> io::Result<()> {
        let comps = components(path)?;
        let Some((name, parent)) = comps.split_last() else { return Ok(()) };
        let parent_rel = CString::new(if parent.is_empty() { ".".into() } else { parent.join("/") })
            .map_err(|_| nul_error())?;
        let dir = self.open_beneath(&parent_rel, DIR_FLAGS).map_err(|e| context(e, path))?;
        let name = CString::new(*name).map_err(|_| nul_error())?;
        match unlinkat(dir.as_fd(), &name, libc::AT_REMOVEDIR) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTEMPTY | libc::EEXIST | libc::ENOENT)) => {
                Ok(())
            }
            r => r.map_err(|e| context(e, path)),
        }
    }

    fn open_beneath(&self, rel: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
        self.open_beneath_mode(rel, flags, 0)
    }

    fn open_beneath_mode(&self, rel: &CStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
        openat2(self.dir.as_fd(), rel, flags, mode, resolve)
    }

    fn open_in_root(&self, rel: &CStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
        openat2(self.dir.as_fd(), rel, flags, mode, libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS)
    }

    /// The directory at `path`, created with its parents as needed, each path
    /// prefix resolved as if chrooted into the root.
    fn dir_all(&self, path: &str, mode: u32) -> io::Result<OwnedFd> {
        let comps = components(path)?;
        // Links are followed (in the root) here, as `mkdir -p` in a chroot would.
        let follow = libc::O_RDONLY | libc::O_DIRECTORY;
        let mut cur = self.open_in_root(c".", follow, 0)?;
        for i in 0..comps.len() {
            let prefix = CString::new(comps[..=i].join("/")).map_err(|_| nul_error())?;
            match self.open_in_root(&prefix, follow, 0) {
                Ok(fd) => {
                    cur = fd;
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(e),
            }
            let name = CString::new(comps[i]).map_err(|_| nul_error())?;
            match mkdirat(cur.as_fd(), &name, 0o700) {
                Ok(()) => {
                    let fd = openat(cur.as_fd(), &name, DIR_FLAGS, 0)?;
                    self.claim(&format!("/{}", comps[..=i].join("/")), EntryKind::Dir);
                    self.chown_fd(fd.as_fd())?;
                    fchmod(fd.as_fd(), mode)?;
                    cur = fd;
                }
                // Made meanwhile, or a dangling link: resolve it in the root.
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                    cur = self.open_in_root(&prefix, follow, 0)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(cur)
    }

    /// A file just opened for writing: must be regular; gets the owner and
    /// exact mode (after chown, which clears set-id bits).
    fn finish_created_file(&self, fd: OwnedFd, mode: u32) -> io::Result<File> {
        let st = fstat(fd.as_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        self.chown_fd(fd.as_fd())?;
        fchmod(fd.as_fd(), mode)?;
        Ok(File::from(fd))
    }

    fn chown_fd(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let st = fstat(fd)?;
        if (st.st_uid, st.st_gid) == self.owner {
            return Ok(());
        }
        // SAFETY: fd is an open descriptor borrowed for the call.
        cvt(unsafe { libc::fchown(fd.as_raw_fd(), self.owner.0, self.owner.1) }).map(drop)
    }

    fn chown_at(&self, dfd: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
        let st = fstatat_nofollow(dfd, name)?;
        if (st.st_uid, st.st_gid) == self.owner {
            return Ok(());
        }
        // SAFETY: valid fd and NUL-terminated name; the link is not followed.
        cvt(unsafe {
            libc::fchownat(
                dfd.as_raw_fd(),
                name.as_ptr(),
                self.owner.0,
                self.owner.1,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })
        .map(drop)
    }
}

pub(crate) const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
const WRITE_FLAGS: libc::c_int =
    libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
const APPEND_FLAGS: libc::c_int =
    libc::O_WRONLY | libc::O_APPEND | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;
const READ_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY;

/// One directory being walked: its fd and its entries' names, sorted.
pub(crate) struct Frame {
    pub fd: OwnedFd,
    rel: String,
    names: std::vec::IntoIter<CString>,
}

impl Frame {
    /// Lists the directory `fd` (at `rel`), within what `budget` has room for.
    pub fn new(fd: OwnedFd, rel: String, budget: &Budget<'_>) -> Result<Frame, Stop> {
        let (max_names, max_bytes) = budget.listing_room();
        match list_dir(fd.as_fd(), max_names, max_bytes) {
            Ok(Some(names)) => Ok(Frame { fd, rel, names: names.into_iter() }),
            Ok(None) => Err(budget.listing_too_large()),
            Err(e) => Err(incomplete(e, if rel.is_empty() { "." } else { &rel })),
        }
    }

    pub fn next_name(&mut self) -> Option<CString> {
        self.names.next()
    }

    pub fn child_rel(&self, name: &CStr) -> String {
        let name = String::from_utf8_lossy(name.to_bytes());
        if self.rel.is_empty() {
            name.into_owned()
        } else {
            format!("{}/{}", self.rel, name)
        }
    }
}

/// Removes `name` in `dfd`: a directory with everything in it, each entry
/// charged to `budget`.
fn remove_entry(
    dfd: BorrowedFd<'_>,
    name: &CStr,
    is_dir: bool,
    depth: usize,
    budget: &mut Budget<'_>,
) -> Result<(), Stop> {
    let at = |e: io::Error| incomplete(e, &String::from_utf8_lossy(name.to_bytes()));
    if !is_dir {
        return match unlinkat(dfd, name, 0) {
            Err(e) if e.raw_os_error() == Some(libc::EISDIR) => remove_entry(dfd, name, true, depth, budget),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            other => other.map_err(at),
        };
    }
    if depth > budget.max_depth() {
        return Err(budget.too_deep());
    }
    let fd = match openat(dfd, name, DIR_FLAGS, 0) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        // Swapped for a link or a file meanwhile: unlinking never follows it.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
            return remove_entry(dfd, name, false, depth, budget);
        }
        Err(e) => return Err(at(e)),
    };
    // Something running may keep adding entries: a few passes, then give up.
    for _ in 0..3 {
        let (max_names, max_bytes) = budget.listing_room();
        let Some(children) = list_dir(fd.as_fd(), max_names, max_bytes).map_err(at)? else {
            return Err(budget.listing_too_large());
        };
        for child in children {
            budget.visit()?;
            let st = match fstatat_nofollow(fd.as_fd(), &child) {
                Ok(st) => st,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) => return Err(at(e)),
            };
            let child_is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
            remove_entry(fd.as_fd(), &child, child_is_dir, depth + 1, budget)?;
        }
        match unlinkat(dfd, name, libc::AT_REMOVEDIR) {
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) => continue,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            other => return other.map_err(at),
        }
    }
    Err(Stop::Incomplete(format!("{}: directory keeps filling up", String::from_utf8_lossy(name.to_bytes()))))
}

/// Reopens an `O_PATH` fd of a regular file for reading, through the
/// harness's own /proc (the very same inode); without /proc, opens the path
/// again with no link followed and checks it is the same file.
fn reopen_for_reading(opath: &OwnedFd, rel: &CStr, root: &RootFs) -> io::Result<File> {
    let proc_path = format!("/proc/self/fd/{}", opath.as_raw_fd());
    match std::fs::OpenOptions::new().read(true).open(&proc_path) {
        Ok(f) => return Ok(f),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let before = fstat(opath.as_fd())?;
    let fd = root.open_beneath(rel, READ_FLAGS)?;
    let st = fstat(fd.as_fd())?;
    if (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino) {
        return Err(io::Error::other("changed while being opened"));
    }
    Ok(File::from(fd))
}

fn classify_read_error(e: io::Error) -> ReadError {
    match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => ReadError::Missing,
        Some(libc::ELOOP | libc::EXDEV) => ReadError::SymlinkInPath,
        _ => ReadError::Io(e),
    }
}

/// Not there, for a walk: gone, not a directory, or reached through a link.
pub(crate) fn is_absent(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP | libc::EXDEV))
}

/// The components of an absolute (or relative) path inside the environment;
/// `.` and empty components dropped, `..` refused.
fn components(path: &str) -> io::Result<Vec<&str>> {
    let mut out = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{path:?}: `..` is not allowed"),
                ))
            }
            c if c.contains('\0') => return Err(nul_error()),
            c => out.push(c),
        }
    }
    Ok(out)
}

fn rel_cstring(path: &str) -> io::Result<CString> {
    let comps = components(path)?;
    let rel = if comps.is_empty() { ".".to_string() } else { comps.join("/") };
    CString::new(rel).map_err(|_| nul_error())
}

pub(crate) fn open_host_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| nul_error())?;
    // SAFETY: NUL-terminated path; the result is checked.
    let fd = cvt(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) })
        .map_err(|e| context(e, &path.display().to_string()))?;
    // SAFETY: open succeeded, the fd is ours alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn nul_error() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte")
}

/// An error that ends a walk, as the reason it stopped.
pub(crate) fn incomplete(e: io::Error, at: &str) -> Stop {
    Stop::Incomplete(format!("{at}: {e}"))
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

// Thin wrappers over the *at system calls (std has no fd-relative file API;
// rustix would do, but libc is already here and these are a few lines each).

fn openat2(
    dfd: BorrowedFd<'_>,
    path: &CStr,
    flags: libc::c_int,
    mode: u32,
    resolve: u64,
) -> io::Result<OwnedFd> {
    // SAFETY: open_how is plain old data; zero is valid for every field.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 { u64::from(mode) } else { 0 };
    how.resolve = resolve;
    let mut tries = 0;
    loop {
        // SAFETY: valid fd, NUL-terminated path, and a pointer to an open_how
        // of the size passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dfd.as_raw_fd(),
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if r >= 0 {
            // SAFETY: the kernel returned a new fd that nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(r as libc::c_int) });
        }
        let e = io::Error::last_os_error();
        // EAGAIN: a rename raced the resolution of `..`; the kernel asks to retry.
        if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN)) && tries < 16 {
            tries += 1;
            continue;
        }
        return Err(e);
    }
}

pub(crate) fn openat(dfd: BorrowedFd<'_>, name: &CStr, flags: libc::c_int, mode: u32) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: valid fd and NUL-terminated name.
        let r = unsafe { libc::openat(dfd.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC, mode) };
        if r >= 0 {
            // SAFETY: the kernel returned a new fd that nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(r) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat> {
    // SAFETY: stat is plain old data, filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd and a pointer to a stat buffer.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

pub(crate) fn fstatat_nofollow(dfd: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: stat is plain old data, filled by the kernel.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, NUL-terminated name, pointer to a stat buffer.
    cvt(unsafe { libc::fstatat(dfd.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

fn fchmod(fd: BorrowedFd<'_>, mode: u32) -> io::Result<()> {
    // SAFETY: valid fd.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), (mode & 0o7777) as libc::mode_t) }).map(drop)
}

fn mkdirat(dfd: BorrowedFd<'_>, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: valid fd and NUL-terminated name.
    cvt(unsafe { libc::mkdirat(dfd.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

fn unlinkat(dfd: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: valid fd and NUL-terminated name.
    cvt(unsafe { libc::unlinkat(dfd.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

fn symlinkat(target: &CStr, dfd: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated strings and a valid fd.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dfd.as_raw_fd(), name.as_ptr()) }).map(drop)
}

fn readlinkat(dfd: BorrowedFd<'_>, name: &CStr) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: valid fd, NUL-terminated name, and a buffer of the length given.
    let n = unsafe { libc::readlinkat(dfd.as_raw_fd(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// The names in a directory (without `.` and `..`), sorted; None when it
/// holds more than `max_names` of them or more than `max_bytes` of names.
fn list_dir(fd: BorrowedFd<'_>, max_names: usize, max_bytes: usize) -> io::Result<Option<Vec<CString>>> {
    // fdopendir takes ownership of its fd, so give it a duplicate; rewind,
    // as the duplicate shares the file offset.
    let dup = fd.try_clone_to_owned()?;
    // SAFETY: dup is an open directory fd whose ownership passes to the DIR.
    let dir = unsafe { libc::fdopendir(dup.as_raw_fd()) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    std::mem::forget(dup);
    // SAFETY: dir is a valid DIR stream until closedir below.
    unsafe { libc::rewinddir(dir) };
    let mut names = Vec::new();
    let mut bytes = 0usize;
    let result = loop {
        if names.len() > max_names || bytes > max_bytes {
            break Ok(());
        }
        // SAFETY: errno is thread-local; clear it to tell end from error.
        unsafe { *libc::__errno_location() = 0 };
        // SAFETY: dir is valid; the entry stays valid until the next readdir.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            let e = io::Error::last_os_error();
            break if e.raw_os_error().unwrap_or(0) == 0 { Ok(()) } else { Err(e) };
        }
        // SAFETY: d_name is NUL-terminated within the entry.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            bytes += name.to_bytes().len();
            names.push(name.to_owned());
        }
    };
    // SAFETY: dir came from fdopendir and is closed once.
    unsafe { libc::closedir(dir) };
    result?;
    if names.len() > max_names || bytes > max_bytes {
        return Ok(None);
    }
    names.sort();
    Ok(Some(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A temporary directory removed on drop.
    pub(super) struct Temp(PathBuf);

    impl Temp {
        pub(super) fn new() -> Temp {
            static N: AtomicUsize = AtomicUsize::new(0);
            let p = std::env::temp_dir().join(format!(
                "cleanroom-rootfs-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Temp(p)
        }

        pub(super) fn path(&self) -> &Path {
            &self.0
        }

        pub(super) fn join(&self, rel: &str) -> PathBuf {
            self.0.join(rel)
        }
    }

    impl Drop for Temp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    pub(super) fn write(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    pub(super) fn mkfifo(path: &Path) {
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    fn mode_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    fn globs(p: &[&str]) -> Globs {
        Globs::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn cancel() -> CancelToken {
        CancelToken::new().unwrap()
    }

    #[test]
    fn reads_a_regular_file() {
        let t = Temp::new();
        write(&t.join("workspace/out/a.json"), b"{\"x\": 1}");
        let root = RootFs::open(t.path()).unwrap();
        assert_eq!(root.read_regular("/workspace/out/a.json", 100).unwrap(), b"{\"x\": 1}");
        assert_eq!(root.read_regular("workspace//./out/a.json", 8).unwrap().len(), 8);
        assert!(matches!(
            root.read_regular("/workspace/out/a.json", 7),
            Err(ReadError::TooLarge { size: 8 })
        ));
    }

    #[test]
    fn append_adds_to_an_existing_file_and_never_writes_through_a_link() {
        let t = Temp::new();
        std::fs::create_dir_all(t.join("out")).unwrap();
        let outside = Temp::new();
        write(&outside.join("victim"), b"host");
        symlink(outside.join("victim"), t.join("out/link")).unwrap();
        mkfifo(&t.join("out/fifo"));
        let root = RootFs::open(t.path()).unwrap();
        root.write_file("/out/a", b"one ", 0o644).unwrap();
        root.append_file("/out/a", b"two").unwrap();
        assert_eq!(std::fs::read(t.join("out/a")).unwrap(), b"one two");
        assert!(root.append_file("/out/missing", b"x").is_err(), "append made a file");
        assert!(root.append_file("/out/link", b"x").is_err());
        assert!(root.append_file("/out/fifo", b"x").is_err());
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"host");
    }

    #[test]
    fn read_reports_missing() {
        let t = Temp::new();
        write(&t.join("file"), b"x");
        let root = RootFs::open(t.path()).unwrap();
        assert!(matches!(root.read_regular("/nope", 10), Err(ReadError::Missing)));
        assert!(matches!(root.read_regular("/nope/deeper", 10), Err(ReadError::Missing)));
        // A path through a regular file.
        assert!(matches!(root.read_regular("/file/x", 10), Err(ReadError::Missing)));
        assert_eq!(ReadError::Missing.to_string(), "missing");
    }

    #[test]
    fn read_refuses_a_directory_replaced_by_a_link_to_etc() {
        let t = Temp::new();
        symlink("/etc", t.join("workspace")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        assert!(matches!(root.read_regular("/workspace/passwd", 1 << 20), Err(ReadError::SymlinkInPath)));
        // Even a link that stays inside the root is refused.
        std::fs::create_dir(t.join("real")).unwrap();
        write(&t.join("real/f"), b"x");
        symlink("real", t.join("alias")).unwrap();
        assert!(matches!(root.read_regular("/alias/f", 10), Err(ReadError::SymlinkInPath)));
    }

    #[test]
    fn read_refuses_a_file_that_links_to_etc_passwd() {
        let t = Temp::new();
        std::fs::create_dir_all(t.join("out")).unwrap();
        symlink("/etc/passwd", t.join("out/result.json")).unwrap();
        symlink("../../../../../../etc/passwd", t.join("out/rel.json")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        for p in ["/out/result.json", "/out/rel.json"] {
            assert!(matches!(root.read_regular(p, 1 << 20), Err(ReadError::SymlinkInPath)), "{p}");
        }
        assert!(root.read_regular("/out/../../etc/passwd", 1 << 20).is_err());
    }

    #[test]
    fn read_does_not_block_on_a_fifo() {
        let t = Temp::new();
        mkfifo(&t.join("fifo"));
        let root = RootFs::open(t.path()).unwrap();
        assert!(matches!(root.read_regular("/fifo", 10), Err(ReadError::NotRegular)));
        assert!(matches!(root.read_regular("/", 10), Err(ReadError::NotRegular)));
    }

    #[test]
    fn read_refuses_a_file_over_the_limit() {
        let t = Temp::new();
        let f = File::create(t.join("big")).unwrap();
        f.set_len(100 << 20).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        match root.read_regular("/big", 64 << 20) {
            Err(ReadError::TooLarge { size }) => assert_eq!(size, 100 << 20),
            other => panic!("{other:?}"),
        }
        assert_eq!(ReadError::TooLarge { size: 5 }.to_string(), "too large: 5 bytes");
    }

    #[test]
    fn writes_and_truncates_with_the_mode_given() {
        let t = Temp::new();
        std::fs::create_dir(t.join("d")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        root.write_file("/d/f", b"hello world", 0o640).unwrap();
        root.write_file("/d/f", b"bye", 0o755).unwrap();
        assert_eq!(std::fs::read(t.join("d/f")).unwrap(), b"bye");
        assert_eq!(mode_of(&t.join("d/f")), 0o755);
        assert!(root.write_file("/missing/f", b"x", 0o644).is_err());
        assert!(root.write_file("/d/../../x", b"x", 0o644).is_err());
    }

    #[test]
    fn write_through_a_linked_directory_stays_in_the_root() {
        let outside = Temp::new();
        let t = Temp::new();
        // /tmp in the environment is a link to a host directory outside it.
        symlink(outside.path(), t.join("tmp")).unwrap();
        // /etc in the environment is a link to the host's /etc.
        symlink("/etc", t.join("etc")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        assert!(root.write_file("/tmp/pwned", b"x", 0o644).is_err());
        assert!(root.create_dir_all("/tmp/sub/dir", 0o755).is_err());
        assert!(root.write_file("/etc/cleanroom-rootfs-test-pwned", b"x", 0o644).is_err());
        assert!(root.create_dir_all("/etc/cleanroom-rootfs-test-dir", 0o755).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(!Path::new("/etc/cleanroom-rootfs-test-pwned").exists());
        assert!(!Path::new("/etc/cleanroom-rootfs-test-dir").exists());
        // Where the link's target exists inside the root, that is where the
        // file goes.
        symlink(outside.path(), t.join("scratch")).unwrap();
        let mirrored = t.path().join(outside.path().strip_prefix("/").unwrap());
        std::fs::remove_file(t.join("tmp")).unwrap();
        std::fs::create_dir_all(&mirrored).unwrap();
        root.write_file("/scratch/inside", b"x", 0o644).unwrap();
        assert!(mirrored.join("inside").is_file());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn write_resolves_links_as_if_chrooted() {
        let t = Temp::new();
        std::fs::create_dir(t.join("real")).unwrap();
        symlink("/real", t.join("abs")).unwrap();
        symlink("real", t.join("rel")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        root.write_file("/abs/a", b"1", 0o644).unwrap();
        root.write_file("/rel/b", b"2", 0o644).unwrap();
        assert_eq!(std::fs::read(t.join("real/a")).unwrap(), b"1");
        assert_eq!(std::fs::read(t.join("real/b")).unwrap(), b"2");
        root.create_dir_all("/abs/x/y", 0o750).unwrap();
        assert!(t.join("real/x/y").is_dir());
        assert_eq!(mode_of(&t.join("real/x/y")), 0o750);
    }

    #[test]
    fn write_refuses_a_link_as_the_final_component() {
        let outside = Temp::new();
        write(&outside.join("victim"), b"original");
        let t = Temp::new();
        symlink(outside.join("victim"), t.join("f")).unwrap();
        mkfifo(&t.join("fifo"));
        let root = RootFs::open(t.path()).unwrap();
        assert!(root.write_file("/f", b"pwned", 0o644).is_err());
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"original");
        assert_eq!(mode_of(&outside.join("victim")) & 0o777, 0o644);
        // Neither blocks on a FIFO nor writes into it.
        assert!(root.write_file("/fifo", b"x", 0o644).is_err());
    }

    #[test]
    fn create_dir_all_makes_parents_and_keeps_existing_ones() {
        let t = Temp::new();
        std::fs::create_dir(t.join("var")).unwrap();
        std::fs::set_permissions(t.join("var"), std::fs::Permissions::from_mode(0o711)).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        root.create_dir_all("/var/lib/.cleanroom-x", 0o755).unwrap();
        root.create_dir_all("/var/lib/.cleanroom-x", 0o700).unwrap();
        assert_eq!(mode_of(&t.join("var")), 0o711);
        assert_eq!(mode_of(&t.join("var/lib/.cleanroom-x")), 0o755);
        write(&t.join("file"), b"");
        assert!(root.create_dir_all("/file/sub", 0o755).is_err());
        root.create_dir_all("/", 0o755).unwrap();
    }

    fn sample_tree(t: &Temp) {
        write(&t.join("src/run.sh"), b"#!/bin/sh\necho hi\n");
        std::fs::set_permissions(t.join("src/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        write(&t.join("src/data/a.csv"), b"x,y\n1,2\n");
        std::fs::set_permissions(t.join("src/data/a.csv"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::create_dir_all(t.join("src/empty")).unwrap();
        std::fs::set_permissions(t.join("src/empty"), std::fs::Permissions::from_mode(0o700)).unwrap();
        symlink("data/a.csv", t.join("src/link")).unwrap();
        write(&t.join("src/checks.toml"), b"secret");
    }

    #[test]
    fn copies_a_tree_in_with_modes_and_links() {
        let host = Temp::new();
        sample_tree(&host);
        let t = Temp::new();
        let root = RootFs::open(t.path()).unwrap();
        root.copy_tree_in(&host.join("src"), "/workspace/artifact").unwrap();
        let a = t.join("workspace/artifact");
        assert_eq!(std::fs::read(a.join("run.sh")).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(mode_of(&a.join("run.sh")), 0o755);
        assert_eq!(mode_of(&a.join("data/a.csv")), 0o600);
        assert_eq!(mode_of(&a.join("empty")), 0o700);
        assert_eq!(std::fs::read_link(a.join("link")).unwrap(), Path::new("data/a.csv"));
        let original = Manifest::of_host_dir(&host.join("src")).unwrap();
        let copied = root
            .manifest_against("/workspace/artifact", &original, WalkLimits::default(), &cancel())
            .unwrap();
        assert_eq!(original, copied);
        assert_eq!(copied.entries.len(), 6);
        assert_eq!(copied.incomplete, None);
    }

    #[test]
    fn copy_skips_what_the_filter_says() {
        let host = Temp::new();
        sample_tree(&host);
        let t = Temp::new();
        let root = RootFs::open(t.path()).unwrap();
        root.copy_tree_in_filtered(&host.join("src"), "/v", &|p| p == Path::new("checks.toml")).unwrap();
        assert!(!t.join("v/checks.toml").exists());
        assert!(t.join("v/run.sh").exists());
    }

    #[test]
    fn copy_replaces_links_in_the_way_instead_of_writing_through_them() {
        let outside = Temp::new();
        write(&outside.join("victim"), b"original");
        let host = Temp::new();
        write(&host.join("src/run.sh"), b"new");
        write(&host.join("src/data/a"), b"new");
        let t = Temp::new();
        std::fs::create_dir_all(t.join("dest")).unwrap();
        symlink(outside.join("victim"), t.join("dest/run.sh")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        root.copy_tree_in(&host.join("src"), "/dest").unwrap();
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"original");
        assert_eq!(std::fs::read(t.join("dest/run.sh")).unwrap(), b"new");
        // A linked directory in the way makes the copy fail; nothing is
        // written outside.
        std::fs::remove_dir_all(t.join("dest/data")).unwrap();
        symlink(outside.path(), t.join("dest/data")).unwrap();
        assert!(root.copy_tree_in(&host.join("src"), "/dest").is_err());
        assert!(!outside.join("a").exists());
    }

    #[test]
    fn removes_matching_paths_only() {
        let t = Temp::new();
        write(&t.join("art/results/t.csv"), b"old");
        write(&t.join("art/results/sub/x"), b"old");
        write(&t.join("art/src/a.o"), b"");
        write(&t.join("art/src/deep/b.o"), b"");
        write(&t.join("art/src/a.c"), b"");
        let root = RootFs::open(t.path()).unwrap();
        let removed = root.remove_matching("/art", &globs(&["results/**", "**/*.o"]), &cancel()).unwrap();
        assert_eq!(removed, ["results/sub", "results/t.csv", "src/a.o", "src/deep/b.o"]);
        assert!(t.join("art/results").is_dir(), "results/** keeps results itself");
        assert!(t.join("art/src/a.c").exists());
        assert!(t.join("art/src/deep").is_dir());
    }

    #[test]
    fn removal_never_follows_links() {
        let outside = Temp::new();
        write(&outside.join("keep/x"), b"keep");
        let t = Temp::new();
        std::fs::create_dir_all(t.join("art/results")).unwrap();
        symlink(outside.join("keep"), t.join("art/results/link")).unwrap();
        symlink(outside.join("keep"), t.join("art/out")).unwrap();
        symlink(outside.path(), t.join("linked-art")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        let removed =
            root.remove_matching("/art", &globs(&["results/**", "out/**", "out"]), &cancel()).unwrap();
        assert_eq!(removed, ["out", "results/link"]);
        assert!(std::fs::symlink_metadata(t.join("art/out")).is_err());
        assert_eq!(
            root.remove_matching("/linked-art", &globs(&["**"]), &cancel()).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(std::fs::read(outside.join("keep/x")).unwrap(), b"keep");
    }

    #[test]
    fn removal_is_bounded_and_cancellable() {
        let t = Temp::new();
        let mut p = t.join("art/results");
        for _ in 0..crate::bounds::MAX_DEPTH + 5 {
            p = p.join("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        let err = root.remove_matching("/art", &globs(&["results"]), &cancel()).unwrap_err();
        assert!(err.to_string().contains("more than 128 directory levels"), "{err}");
        let fired = cancel();
        fired.cancel();
        let err = root.remove_matching("/art", &globs(&["results"]), &fired).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted, "{err}");
    }

    #[test]
    fn the_harness_remembers_exactly_what_it_made() {
        let host = Temp::new();
        sample_tree(&host);
        let t = Temp::new();
        std::fs::create_dir(t.join("tmp")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        root.create_dir_all("/tmp/.cleanroom-x/log", 0o755).unwrap();
        root.write_file("/tmp/.cleanroom-x/run.sh", b"", 0o755).unwrap();
        root.copy_tree_in(&host.join("src/data"), "/tmp/.cleanroom-x/data").unwrap();
        root.claim("tmp//.cleanroom-x/./out", EntryKind::File);
        let made: Vec<String> = root.made_by_harness().iter().map(|(p, k)| format!("{p} {k:?}")).collect();
        assert_eq!(
            made,
            [
                "/tmp/.cleanroom-x Dir",
                "/tmp/.cleanroom-x/data Dir",
                "/tmp/.cleanroom-x/data/a.csv File",
                "/tmp/.cleanroom-x/log Dir",
                "/tmp/.cleanroom-x/out File",
                "/tmp/.cleanroom-x/run.sh File",
            ],
            "/tmp was there already"
        );
    }

    #[test]
    fn globs_follow_the_task_format() {
        let g = globs(&["eval/**", "*.log", "data/*.csv"]);
        assert!(g.is_match("eval/a.py"));
        assert!(g.is_match("eval/sub/b.py"));
        assert!(!g.is_match("eval"));
        assert!(g.is_match_dir("eval"));
        assert!(g.is_match("run.log"));
        assert!(!g.is_match("sub/run.log"), "* stays within a segment");
        assert!(g.is_match("data/a.csv"));
        assert!(!g.is_match("data/x/a.csv"));
        assert!(!g.is_match_dir("data"));
        assert!(g.may_match_below("eval"));
        assert!(g.may_match_below("eval/deep/er"));
        assert!(g.may_match_below("data"));
        assert!(!globs(&["eval/**", "data/*.csv"]).may_match_below("src"));
        assert!(globs(&["**/*.o"]).may_match_below("any/where"));
        assert!(globs(&["a/*/c/**"]).may_match_below("a/b/c/d"));
        assert!(!globs(&["a/*/c/**"]).may_match_below("b"));
        assert!(Globs::new(&["a/[".to_string()]).is_err());
        assert!(!Globs::new(&[]).unwrap().is_match("x"));
    }

    #[test]
    fn a_file_mount_point_is_made_only_where_nothing_is_and_never_through_a_link() {
        let t = Temp::new();
        write(&t.join("usr/lib/present.so"), b"real");
        write(&t.join("etc/passwd"), b"root");
        symlink("/etc/passwd", t.join("usr/lib/link.so")).unwrap();
        symlink("/etc", t.join("usr/linkdir")).unwrap();
        std::fs::create_dir(t.join("usr/lib/dir.so")).unwrap();
        let root = RootFs::open(t.path()).unwrap();
        assert!(root.make_file_mount_point("/usr/lib/new.so").unwrap(), "made");
        assert_eq!(std::fs::metadata(t.join("usr/lib/new.so")).unwrap().len(), 0);
        assert!(
            !root.make_file_mount_point("/usr/lib/present.so").unwrap(),
            "a regular file is mounted over"
        );
        for refused in ["/usr/lib/link.so", "/usr/lib/dir.so", "/usr/linkdir/passwd", "/usr/none/x.so"] {
            assert!(root.make_file_mount_point(refused).is_err(), "{refused}");
        }
        assert_eq!(std::fs::read(t.join("etc/passwd")).unwrap(), b"root", "nothing written through a link");
        root.remove_file_mount_point("/usr/lib/new.so");
        assert!(!t.join("usr/lib/new.so").exists());
        // Only an empty regular file goes: what a phase wrote there stays.
        root.remove_file_mount_point("/usr/lib/present.so");
        root.remove_file_mount_point("/usr/lib/link.so");
        assert!(t.join("usr/lib/present.so").exists());
        assert!(std::fs::symlink_metadata(t.join("usr/lib/link.so")).is_ok());
    }
}
