//! Where the cache keeps what it downloaded, on the host only (no
//! environment ever mounts it):
//!
//! ```text
//! blobs/<2 hex>/<hex>      a package file, named by the hash the registry's
//!                          metadata gave for it and checked against it: a
//!                          sha256 (64 hex digits), or npm's sha512 (128)
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

use sha2::{Digest as _, Sha256, Sha512};

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

    /// The blob with this digest, opened, with its length; None when it
    /// is not stored. Its use is noted for eviction.
    pub fn blob(&self, digest: &Digest) -> Option<(File, u64)> {
        open_used(&self.blob_path(digest))
    }

    /// A new temporary file for a download that becomes the blob `digest`
    /// when it has that hash.
    pub fn new_blob(self: &Arc<Self>, digest: &Digest) -> io::Result<Pending> {
        self.pending(self.blob_path(digest), Some(digest.clone()))
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

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        // The two algorithms' names differ in length, so they share the
        // fan-out (and eviction's walk of it).
        self.root.join("blobs").join(&digest.hex[..2]).join(&digest.hex)
    }

    fn doc_path(&self, key: &str) -> PathBuf {
        let name = hex(&Sha256::digest(key.as_bytes()));
        self.root.join("docs").join(&name[..2]).join(name)
    }

    fn pending(self: &Arc<Self>, dest: PathBuf, expected: Option<Digest>) -> io::Result<Pending> {
        let temp = self.scratch_path();
        let file = File::create(&temp)?;
        let check = expected.map(|expected| (Hasher::new(expected.algorithm), expected));
        Ok(Pending { store: self.clone(), file, temp, dest, check, len: 0 })
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
    /// For a blob, the hash its content must have, and the hashing so far.
    check: Option<(Hasher, Digest)>,
    len: u64,
}

impl Pending {
    /// Puts the file in place. A blob whose content does not have its
    /// hash is removed instead: the error says what it had.
    pub fn commit(mut self) -> io::Result<()> {
        self.file.flush()?;
        if let Some((hasher, expected)) = self.check.take() {
            let actual = hasher.finish();
            if actual != expected.hex {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{} {actual}, but the registry's metadata says {}",
                        expected.algorithm.name(),
                        expected.hex
                    ),
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
        if let Some((hasher, _)) = self.check.as_mut() {
            hasher.update(&buf[..n]);
        }
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

/// What a blob is named by and checked against: a hash the registry's
/// metadata gave for the file. Made only from lowercase hex of the
/// algorithm's length, so that it is always a plain file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    algorithm: Algorithm,
    hex: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    /// What PyPI, Debian and crates.io give.
    Sha256,
    /// What npm's `dist.integrity` gives (its sha1 `shasum` is not enough).
    Sha512,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Algorithm::Sha256 => "sha256",
            Algorithm::Sha512 => "sha512",
        }
    }
}

impl Digest {
    /// A sha256 in lowercase hex.
    pub fn sha256(hex: &str) -> Option<Digest> {
        is_sha256(hex).then(|| Digest { algorithm: Algorithm::Sha256, hex: hex.to_string() })
    }

    /// A sha512 in lowercase hex.
    pub fn sha512(hex: &str) -> Option<Digest> {
        is_lower_hex(hex, 128).then(|| Digest { algorithm: Algorithm::Sha512, hex: hex.to_string() })
    }
}

enum Hasher {
    Sha256(Sha256),
    Sha512(Sha512),
}

impl Hasher {
    fn new(algorithm: Algorithm) -> Hasher {
        match algorithm {
            Algorithm::Sha256 => Hasher::Sha256(Sha256::new()),
            Algorithm::Sha512 => Hasher::Sha512(Sha512::new()),
        }
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
        }
    }

    fn finish(self) -> String {
        match self {
            Hasher::Sha256(h) => hex(&h.finalize()),
            Hasher::Sha512(h) => hex(&h.finalize()),
        }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `text` is a sha256 in lowercase hex.
pub fn is_sha256(text: &str) -> bool {
    is_lower_hex(text, 64)
}

fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(bytes: &[u8]) -> Digest {
        Digest::sha256(&hex(&Sha256::digest(bytes))).unwrap()
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
        assert!(err.to_string().contains(&named.hex), "{err}");
        assert!(store.blob(&named).is_none());
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0, "no temporary file is left");
    }

    #[test]
    fn a_sha512_blob_is_checked_against_its_sha512() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path(), 1 << 20).unwrap());
        let named = Digest::sha512(&hex(&Sha512::digest(b"tarball"))).unwrap();
        let mut poisoned = store.new_blob(&named).unwrap();
        poisoned.write_all(b"another tarball").unwrap();
        assert!(poisoned.commit().unwrap_err().to_string().starts_with("sha512 "));
        assert!(store.blob(&named).is_none());
        let mut pending = store.new_blob(&named).unwrap();
        pending.write_all(b"tarball").unwrap();
        pending.commit().unwrap();
        assert_eq!(store.blob(&named).unwrap().1, 7);
        assert_eq!(store.size(), 7);

        let sha256 = hex(&Sha256::digest(b"tarball"));
        assert!(Digest::sha512(&sha256).is_none() && Digest::sha256(&named.hex).is_none());
        assert!(Digest::sha512(&named.hex.to_uppercase()).is_none());
        assert!(store.blob(&Digest::sha256(&sha256).unwrap()).is_none(), "the algorithms do not share names");
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
        assert_eq!(
            store.doc("https://pypi.org/simple/x/ json").unwrap(),
            (b"two".to_vec(), "etag: b".into())
        );
    }
}
