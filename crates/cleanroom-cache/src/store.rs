//! Where the cache keeps what it downloaded, on the host only (no
//! environment ever mounts it):
//!
//! ```text
//! blobs/<2 hex>/<sha256>   a package file, named by the hash the registry's
//!                          metadata gave for it and checked against it
//! docs/<2 hex>/<sha256 of url and variant>
//!                          an index document (a PyPI project page, an apt
//!                          InRelease, an npm packument), with .meta beside it
//! tmp/<pid>-<n>            downloads under way, renamed into place when done
//! ```
//!
//! Writers never change a file in place: each download goes to its own
//! temporary file and is renamed into place in one step, so concurrent
//! trials (and concurrent cleanroom processes) see a complete file or none.
//! A blob is renamed into place only when its content has the hash it is
//! named by. The total size is bounded: past the limit the least recently
//! used files go (each use touches the file's modification time).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

/// After an eviction the store holds at most this share of its limit, so
/// that the next download does not evict again at once.
const EVICT_TO_PERCENT: u64 = 90;

pub struct Store {
    root: PathBuf,
    limit: u64,
    /// Bytes in blobs/ and docs/, as last counted plus what was added since.
    size: AtomicU64,
    /// One eviction at a time within this process.
    evicting: Mutex<()>,
    temp_count: AtomicU64,
}

impl Store {
    /// Opens (making it if needed) the store at `root`, holding at most
    /// `limit` bytes. Temporary files of processes that died are removed.
    pub fn open(root: &Path, limit: u64) -> io::Result<Store> {
        for dir in ["blobs", "docs", "tmp"] {
            fs::create_dir_all(root.join(dir))?;
        }
        // Only the harness reads it; environments reach it over HTTP.
        fs::set_permissions(root, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        sweep_temp(&root.join("tmp"));
        let store = Store {
            root: root.to_path_buf(),
            limit,
            size: AtomicU64::new(0),
            evicting: Mutex::new(()),
            temp_count: AtomicU64::new(0),
        };
        let size = store.entries().iter().map(|e| e.len).sum();
        store.size.store(size, Ordering::SeqCst);
        Ok(store)
    }

    pub fn size(&self) -> u64 {
        self.size.load(Ordering::SeqCst)
    }

    /// The blob with this sha256 (lowercase hex), opened, with its length;
    /// None when it is not stored. Its use is noted for eviction.
    pub fn blob(&self, sha256: &str) -> Option<(File, u64)> {
        open_used(&self.blob_path(sha256))
    }

    /// A new temporary file for a download that becomes the blob `sha256`
    /// when it has that hash.
    pub fn new_blob(self: &Arc<Self>, sha256: &str) -> io::Result<Pending> {
        self.pending(self.blob_path(sha256), Some(sha256.to_string()))
    }

    /// The stored document under `key` (any text naming it: a URL and
    /// what variant of it), with the metadata stored beside it.
    pub fn doc(&self, key: &str) -> Option<(Vec<u8>, String)> {
        let path = self.doc_path(key);
        let (mut file, _) = open_used(&path)?;
        let mut body = Vec::new();
        file.read_to_end(&mut body).ok()?;
        let meta = fs::read_to_string(path.with_extension("meta")).ok()?;
        Some((body, meta))
    }

    /// Stores a document and its metadata, replacing what was there.
    pub fn put_doc(self: &Arc<Self>, key: &str, body: &[u8], meta: &str) -> io::Result<()> {
        self.put_doc_meta(key, meta)?;
        let mut body_file = self.pending(self.doc_path(key), None)?;
        body_file.write_all(body)?;
        body_file.commit()
    }

    /// Replaces the metadata of the document under `key` (found current).
    pub fn put_doc_meta(self: &Arc<Self>, key: &str, meta: &str) -> io::Result<()> {
        let mut meta_file = self.pending(self.doc_path(key).with_extension("meta"), None)?;
        meta_file.write_all(meta.as_bytes())?;
        meta_file.commit()
    }

    /// A path of its own in tmp/ for a file the caller writes and removes
    /// (swept with the others if the process dies first).
    pub fn scratch_path(&self) -> PathBuf {
        let n = self.temp_count.fetch_add(1, Ordering::SeqCst);
        self.root.join("tmp").join(format!("{}-{n}", std::process::id()))
    }

    fn blob_path(&self, sha256: &str) -> PathBuf {
        self.root.join("blobs").join(&sha256[..2]).join(sha256)
    }

    fn doc_path(&self, key: &str) -> PathBuf {
        let name = hex(&Sha256::digest(key.as_bytes()));
        self.root.join("docs").join(&name[..2]).join(name)
    }

    fn pending(self: &Arc<Self>, dest: PathBuf, sha256: Option<String>) -> io::Result<Pending> {
        let temp = self.scratch_path();
        let file = File::create(&temp)?;
        Ok(Pending { store: self.clone(), file, temp, dest, sha256, hasher: Sha256::new(), len: 0 })
    }

    /// Counts `len` more bytes, and evicts when over the limit.
    fn added(&self, len: u64) {
        if self.size.fetch_add(len, Ordering::SeqCst) + len > self.limit {
            self.evict();
        }
    }

    /// Removes the least recently used files until the store holds
    /// [`EVICT_TO_PERCENT`] of its limit. A file being read stays readable
    /// to its reader (it is only unlinked).
    fn evict(&self) {
        let Ok(_one) = self.evicting.try_lock() else { return };
        let mut entries = self.entries();
        let mut size: u64 = entries.iter().map(|e| e.len).sum();
        let target = self.limit / 100 * EVICT_TO_PERCENT;
        entries.sort_by_key(|e| e.used);
        for entry in entries {
            if size <= target {
                break;
            }
            if fs::remove_file(&entry.path).is_ok() {
                size -= entry.len;
                let _ = fs::remove_file(entry.path.with_extension("meta"));
            }
        }
        self.size.store(size, Ordering::SeqCst);
    }

    /// Every stored blob and document (a document's metadata counts with it).
    fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        for top in ["blobs", "docs"] {
            let Ok(fans) = fs::read_dir(self.root.join(top)) else { continue };
            for fan in fans.flatten() {
                let Ok(files) = fs::read_dir(fan.path()) else { continue };
                for file in files.flatten() {
                    let path = file.path();
                    if path.extension().is_some_and(|e| e == "meta") {
                        continue;
                    }
                    let Ok(meta) = file.metadata() else { continue };
                    let extra = fs::metadata(path.with_extension("meta")).map_or(0, |m| m.len());
                    let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    out.push(Entry { path, len: meta.len() + extra, used });
                }
            }
        }
        out
    }
}

struct Entry {
    path: PathBuf,
    len: u64,
    used: SystemTime,
}

/// A file being written into the store; it appears under its name only
/// through [`Pending::commit`], and is removed if dropped before.
pub struct Pending {
    store: Arc<Store>,
    file: File,
    temp: PathBuf,
    dest: PathBuf,
    /// The hash the content must have, for a blob.
    sha256: Option<String>,
    hasher: Sha256,
    len: u64,
}

impl Pending {
    /// Puts the file in place. A blob whose content does not have its
    /// hash is removed instead: the error says what it had.
    pub fn commit(mut self) -> io::Result<()> {
        self.file.flush()?;
        let actual = hex(&std::mem::take(&mut self.hasher).finalize());
        if let Some(expected) = &self.sha256 {
            if *expected != actual {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("sha256 {actual}, but the registry's index says {expected}"),
                ));
            }
        }
        if let Some(parent) = self.dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::rename(&self.temp, &self.dest)?;
        self.store.added(self.len);
        Ok(())
    }
}

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // After a commit the temporary name is gone already.
        let _ = fs::remove_file(&self.temp);
    }
}

/// Opens `path` and marks it used now; None when it is not there.
fn open_used(path: &Path) -> Option<(File, u64)> {
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let _ = filetime::set_file_handle_times(&file, None, Some(filetime::FileTime::now()));
    Some((file, len))
}

/// Removes the temporary files of processes that are gone.
fn sweep_temp(dir: &Path) {
    let Ok(files) = fs::read_dir(dir) else { return };
    for file in files.flatten() {
        let name = file.file_name();
        let pid = name.to_str().and_then(|n| n.split('-').next()).and_then(|p| p.parse::<i32>().ok());
        // SAFETY: kill with signal 0 only asks whether the process exists.
        let alive = pid.is_some_and(|pid| unsafe { libc::kill(pid, 0) } == 0);
        if !alive {
            let _ = fs::remove_file(file.path());
        }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `text` is a sha256 in lowercase hex.
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    #[test]
    fn a_blob_is_stored_only_with_the_hash_it_is_named_by() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), 1 << 20).unwrap());
        let good = sha(b"wheel");
        let mut pending = store.new_blob(&good).unwrap();
        pending.write_all(b"wheel").unwrap();
        pending.commit().unwrap();
        let (mut file, len) = store.blob(&good).unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!((text.as_str(), len), ("wheel", 5));

        let named = sha(b"the real file");
        let mut poisoned = store.new_blob(&named).unwrap();
        poisoned.write_all(b"something else").unwrap();
        let err = poisoned.commit().unwrap_err();
        assert!(err.to_string().contains(&named), "{err}");
        assert!(store.blob(&named).is_none());
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0, "no temporary file is left");
    }

    #[test]
    fn past_its_limit_the_least_recently_used_files_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), 1000).unwrap());
        let put = |content: &[u8]| {
            let name = sha(content);
            let mut p = store.new_blob(&name).unwrap();
            p.write_all(content).unwrap();
            p.commit().unwrap();
            name
        };
        let old = put(&[1; 400]);
        let used = put(&[2; 400]);
        // Make the first one older than the second, then use the second.
        let past = filetime::FileTime::from_unix_time(1_000_000, 0);
        filetime::set_file_mtime(store.blob_path(&old), past).unwrap();
        filetime::set_file_mtime(store.blob_path(&used), past).unwrap();
        assert!(store.blob(&used).is_some());
        let new = put(&[3; 400]);
        assert!(store.blob(&old).is_none(), "the least recently used blob was evicted");
        assert!(store.blob(&used).is_some() && store.blob(&new).is_some());
        assert_eq!(store.size(), 800);
        assert_eq!(Store::open(dir.path(), 1000).unwrap().size(), 800, "the size is counted again on open");
    }

    #[test]
    fn documents_are_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), 1 << 20).unwrap());
        assert!(store.doc("https://pypi.org/simple/x/ json").is_none());
        store.put_doc("https://pypi.org/simple/x/ json", b"one", "etag: a").unwrap();
        store.put_doc("https://pypi.org/simple/x/ json", b"two", "etag: b").unwrap();
        assert_eq!(store.doc("https://pypi.org/simple/x/ json").unwrap(), (b"two".to_vec(), "etag: b".into()));
    }
}
