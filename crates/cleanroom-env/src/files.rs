//! Files in and out of an environment, through the environment: no caller
//! ever holds a host path of it, so a backend without one (a virtual
//! machine, a remote host, a container) offers the same operations.
//!
//! Every implementation keeps the sandbox's rules: nothing is resolved
//! through a link the agent left (writes, copies and reads refuse or
//! replace links, never follow them out of the environment), reads are
//! bounded, and walks are bounded in entries, depth, bytes and time.

use std::io;
use std::path::Path;

use crate::access::FileId;
use crate::bounds::{Cancelled, WalkLimits};
use crate::cancel::CancelToken;
use crate::rootfs::{EntryKind, Globs, Manifest, ReadError, RootFs};

pub trait Files: Send + Sync {
    /// Makes `path` and its parents, each a real directory (a link in the
    /// way is an error).
    fn create_dir_all(&self, path: &str, mode: u32) -> io::Result<()>;

    /// Writes `bytes` to `path` (replacing what is there, a link included).
    fn write_file(&self, path: &str, bytes: &[u8], mode: u32) -> io::Result<()>;

    /// Copies a host directory tree in at `dest`: directories, regular files
    /// with their modes, links as links; entries for which `exclude` (given
    /// the path relative to `host_src`) is true are left out.
    fn copy_tree_in(&self, host_src: &Path, dest: &str, exclude: &dyn Fn(&Path) -> bool) -> io::Result<()>;

    /// The bytes of the regular file `path`, at most `limit`.
    fn read_regular(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError>;

    /// What is under `dir` now, described against `original` (a file
    /// hashed only when of its original size), within `limits`.
    fn manifest_against(
        &self,
        dir: &str,
        original: &Manifest,
        limits: WalkLimits,
        cancel: &CancelToken,
    ) -> Result<Manifest, Cancelled>;

    /// Removes what `globs` match under `dir`; the removed paths.
    fn remove_matching(&self, dir: &str, globs: &Globs, cancel: &CancelToken) -> io::Result<Vec<String>>;

    /// The identity of the entry at `path` (not following a link), to match
    /// against what an [`crate::AccessWatch`] saw.
    fn file_id(&self, path: &str) -> io::Result<FileId>;

    /// Records that the harness made `path` itself (written by a command
    /// of the harness's inside), so the env-diff leaves it out.
    fn claim(&self, path: &str, kind: EntryKind);
}

impl Files for RootFs {
    fn create_dir_all(&self, path: &str, mode: u32) -> io::Result<()> {
        RootFs::create_dir_all(self, path, mode)
    }

    fn write_file(&self, path: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        RootFs::write_file(self, path, bytes, mode)
    }

    fn copy_tree_in(&self, host_src: &Path, dest: &str, exclude: &dyn Fn(&Path) -> bool) -> io::Result<()> {
        RootFs::copy_tree_in_filtered(self, host_src, dest, exclude)
    }

    fn read_regular(&self, path: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        RootFs::read_regular(self, path, limit)
    }

    fn manifest_against(
        &self,
        dir: &str,
        original: &Manifest,
        limits: WalkLimits,
        cancel: &CancelToken,
    ) -> Result<Manifest, Cancelled> {
        RootFs::manifest_against(self, dir, original, limits, cancel)
    }

    fn remove_matching(&self, dir: &str, globs: &Globs, cancel: &CancelToken) -> io::Result<Vec<String>> {
        RootFs::remove_matching(self, dir, globs, cancel)
    }

    fn claim(&self, path: &str, kind: EntryKind) {
        RootFs::claim(self, path, kind)
    }

    fn file_id(&self, path: &str) -> io::Result<FileId> {
        RootFs::file_id(self, path)
    }
}
