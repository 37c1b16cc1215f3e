//! The digest of an image: sha256 over a deterministic manifest of its tree.
//!
//! The manifest starts with `cleanroom-tree-v1\0` and has one record per
//! entry below the root (the root directory itself is left out: its mode is
//! changed to read-only after the digest is taken), in byte order of the
//! relative paths. A record is seven fields, each ended by a NUL byte (the
//! one byte no path or link target can hold, so no escaping is needed):
//!
//! ```text
//! path  type  mode  uid  gid  size  extra
//! ```
//!
//! `type` is `f` (regular file), `d`, `l`, `c`, `b`, `p` or `s`; `mode` is
//! the permission bits in octal; `size` is the byte count of regular files
//! and 0 otherwise (directory sizes depend on the file system's history);
//! `extra` is the hex sha256 of a regular file's content, a symlink's target,
//! a device's `rdev`, or empty. Times, extended attributes and hard-link
//! identity are not part of it. Nor is what `/dev` holds: no environment
//! sees it (each phase gets a /dev of its own, a machine its devtmpfs), and
//! an image built or imported in a user namespace can hold no device node.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::EnvError;

/// `sha256:<hex>` of the manifest of the tree under `root`.
pub fn tree_digest(root: &Path) -> Result<String, EnvError> {
    let mut entries: Vec<(Vec<u8>, std::fs::Metadata)> = Vec::new();
    collect(root, &[], &mut entries)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));

    let mut manifest = Sha256::new();
    manifest.update(b"cleanroom-tree-v1\0");
    let mut buf = vec![0u8; 256 * 1024];
    for (rel, meta) in &entries {
        let path = root.join(std::ffi::OsStr::from_bytes(rel));
        let ft = meta.file_type();
        let (kind, size, extra): (&str, u64, Vec<u8>) = if ft.is_file() {
            ("f", meta.len(), file_sha256(&path, &mut buf)?.into_bytes())
        } else if ft.is_dir() {
            ("d", 0, Vec::new())
        } else if ft.is_symlink() {
            let target = std::fs::read_link(&path)
                .map_err(|e| EnvError::io(format!("reading link {}", path.display()), e))?;
            ("l", 0, target.into_os_string().into_vec())
        } else if ft.is_char_device() {
            ("c", 0, meta.rdev().to_string().into_bytes())
        } else if ft.is_block_device() {
            ("b", 0, meta.rdev().to_string().into_bytes())
        } else if ft.is_fifo() {
            ("p", 0, Vec::new())
        } else {
            ("s", 0, Vec::new())
        };
        record(&mut manifest, rel, kind, meta, size, &extra);
    }
    Ok(format!("sha256:{}", hex(&manifest.finalize())))
}

fn record(h: &mut Sha256, rel: &[u8], kind: &str, meta: &std::fs::Metadata, size: u64, extra: &[u8]) {
    h.update(rel);
    h.update(b"\0");
    let fields = format!("{kind}\0{:o}\0{}\0{}\0{size}\0", meta.mode() & 0o7777, meta.uid(), meta.gid());
    h.update(fields.as_bytes());
    h.update(extra);
    h.update(b"\0");
}

fn collect(root: &Path, rel: &[u8], out: &mut Vec<(Vec<u8>, std::fs::Metadata)>) -> Result<(), EnvError> {
    let dir = root.join(std::ffi::OsStr::from_bytes(rel));
    let read = std::fs::read_dir(&dir).map_err(|e| EnvError::io(format!("reading {}", dir.display()), e))?;
    let mut names: Vec<OsString> = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| EnvError::io(format!("reading {}", dir.display()), e))?;
        names.push(entry.file_name());
    }
    for name in names {
        let mut child = rel.to_vec();
        if !child.is_empty() {
            child.push(b'/');
        }
        child.extend_from_slice(&name.into_vec());
        let path = root.join(std::ffi::OsStr::from_bytes(&child));
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| EnvError::io(format!("reading {}", path.display()), e))?;
        let is_dir = meta.file_type().is_dir();
        let shown = child != b"dev";
        out.push((child.clone(), meta));
        if is_dir && shown {
            collect(root, &child, out)?;
        }
    }
    Ok(())
}

fn file_sha256(path: &Path, buf: &mut [u8]) -> Result<String, EnvError> {
    let err = |e| EnvError::io(format!("hashing {}", path.display()), e);
    let mut file = File::options()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(err)?;
    let mut h = Sha256::new();
    loop {
        match file.read(buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(err(e)),
        }
    }
    Ok(hex(&h.finalize()))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cleanroom-digest-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn populate(root: &Path) {
        std::fs::create_dir_all(root.join("etc/apt")).unwrap();
        std::fs::create_dir_all(root.join("a-b")).unwrap();
        std::fs::write(root.join("etc/hostname"), "cleanroom\n").unwrap();
        std::fs::write(root.join("etc/apt/x"), "x").unwrap();
        std::os::unix::fs::symlink("/proc/self/fd", root.join("fd")).unwrap();
    }

    #[test]
    fn digest_is_deterministic_and_sensitive() {
        let a = scratch("a");
        let b = scratch("b");
        populate(&a);
        // Same tree made in another order, with another top-directory mode.
        std::fs::create_dir_all(b.join("a-b")).unwrap();
        std::os::unix::fs::symlink("/proc/self/fd", b.join("fd")).unwrap();
        std::fs::create_dir_all(b.join("etc/apt")).unwrap();
        std::fs::write(b.join("etc/apt/x"), "x").unwrap();
        std::fs::write(b.join("etc/hostname"), "cleanroom\n").unwrap();
        std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o555)).unwrap();
        let da = tree_digest(&a).unwrap();
        assert!(da.starts_with("sha256:") && da.len() == 7 + 64, "{da}");
        assert_eq!(da, tree_digest(&b).unwrap());
        std::fs::set_permissions(&b, std::fs::Permissions::from_mode(0o755)).unwrap();

        // Content, mode, link target and a new empty file each change it.
        std::fs::write(b.join("etc/hostname"), "cleanroom!\n").unwrap();
        let d1 = tree_digest(&b).unwrap();
        assert_ne!(da, d1);
        std::fs::set_permissions(b.join("etc/apt/x"), std::fs::Permissions::from_mode(0o600)).unwrap();
        let d2 = tree_digest(&b).unwrap();
        assert_ne!(d1, d2);
        std::fs::remove_file(b.join("fd")).unwrap();
        std::os::unix::fs::symlink("/proc/self/fdx", b.join("fd")).unwrap();
        let d3 = tree_digest(&b).unwrap();
        assert_ne!(d2, d3);
        std::fs::write(b.join("a-b/empty"), "").unwrap();
        assert_ne!(d3, tree_digest(&b).unwrap());

        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
    }
}
