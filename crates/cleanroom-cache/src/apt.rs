//! Debian's archive through the cache. apt in the environment keeps its
//! sources as the image has them; an apt.conf.d file names the cache as
//! the HTTP proxy for each of their hosts (`Acquire::http::Proxy::<host>`),
//! so apt asks the cache for `http://<host>/<path>` and every other host
//! goes direct. apt checks every file itself (signed InRelease, hashes of
//! the indexes and packages); the cache checks what it stores the same
//! way, on the host, before another trial can receive it:
//! - `dists/.../by-hash/SHA256/<sha256>` (how apt fetches indexes where
//!   the archive offers it) is a blob named by its own hash;
//! - `pool/...` files are blobs whose sha256 the archive's Packages index
//!   gives, read from an InRelease that the host's `gpgv` verified with
//!   Debian's archive keyring, then the index it names by hash;
//! - the rest of `dists/` (InRelease itself) is a revalidated document;
//!   anything else of those hosts passes through, kept nowhere.
//!
//! Without gpgv or the keyring on the host, pool files are not kept.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

use cleanroom_apt::SourceEntry;
use cleanroom_model::http::Response;

use crate::fetch::{failure, Fetcher, FRESH_FOR};
use crate::path::is_safe_path;
use crate::store::{is_sha256, Digest};

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// The largest decompressed Packages index read (main of bookworm is 45 MB).
const INDEX_LIMIT: u64 = 256 << 20;

/// The archives an environment's apt uses, over plain HTTP (those over
/// HTTPS cannot be proxied without reading their TLS; they go direct).
#[derive(Debug, Clone, Default)]
pub struct AptSources {
    archives: Vec<Archive>,
}

#[derive(Debug, Clone)]
struct Archive {
    /// `http://host/path`, without a trailing slash.
    base: String,
    suites: Vec<String>,
    components: Vec<String>,
}

impl AptSources {
    pub fn new(entries: &[SourceEntry]) -> AptSources {
        let mut archives: Vec<Archive> = Vec::new();
        for entry in entries.iter().filter(|e| e.types.iter().any(|t| t == "deb")) {
            for uri in &entry.uris {
                let base = uri.trim_end_matches('/').to_string();
                if host_of(&base).is_none() {
                    continue;
                }
                let archive = match archives.iter_mut().position(|a| a.base == base) {
                    Some(i) => &mut archives[i],
                    None => {
                        archives.push(Archive { base, suites: Vec::new(), components: Vec::new() });
                        archives.last_mut().expect("just pushed")
                    }
                };
                for suite in &entry.suites {
                    if !archive.suites.contains(suite) {
                        archive.suites.push(suite.clone());
                    }
                }
                for component in &entry.components {
                    if !archive.components.contains(component) {
                        archive.components.push(component.clone());
                    }
                }
            }
        }
        AptSources { archives }
    }

    /// The hosts apt is told to reach through the cache.
    pub fn hosts(&self) -> Vec<&str> {
        let mut hosts: Vec<&str> = self.archives.iter().filter_map(|a| host_of(&a.base)).collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

/// `host[:port]` of an `http://` URL with a path of safe characters.
fn host_of(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("http://")?;
    let host = rest.split('/').next()?;
    let plain = |b: u8| b.is_ascii_alphanumeric() || b".-:".contains(&b);
    (!host.is_empty() && host.bytes().all(plain)).then_some(host)
}

/// What the cache knows of the archives' packages: for each archive, the
/// sha256 of each pool file, from verified indexes. Shared by the
/// sessions of one cache.
pub struct AptIndex {
    keyring: Option<PathBuf>,
    arch: &'static str,
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// (archive base, path under it) → sha256.
    files: HashMap<(String, String), String>,
    /// (archive base, suite, component) → when its index was read.
    loaded: HashMap<(String, String, String), Instant>,
}

impl AptIndex {
    pub fn new() -> AptIndex {
        let gpgv = Command::new("gpgv").arg("--version").stdout(Stdio::null()).status().is_ok();
        let keyring = (gpgv && std::path::Path::new(KEYRING).is_file()).then(|| PathBuf::from(KEYRING));
        let arch = match std::env::consts::ARCH {
            "aarch64" => "arm64",
            "x86" => "i386",
            _ => "amd64",
        };
        AptIndex { keyring, arch, known: Mutex::new(Known::default()) }
    }

    /// Why pool files are not kept, if they are not.
    pub fn unverifiable(&self) -> Option<String> {
        self.keyring.is_none().then(|| format!("gpgv or {KEYRING} is missing on this host"))
    }

    /// The sha256 of `path` (`pool/...`, unescaped) in `archive`, reading
    /// the indexes of the archive's suites and components that are not
    /// read yet, or are stale.
    fn sha256_of(&self, fetcher: &Fetcher, archive: &Archive, path: &str) -> Option<String> {
        let key = (archive.base.clone(), path.to_string());
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sha) = known.files.get(&key) {
            return Some(sha.clone());
        }
        let keyring = self.keyring.as_ref()?;
        for suite in &archive.suites {
            for component in &archive.components {
                let loaded = (archive.base.clone(), suite.clone(), component.clone());
                if known.loaded.get(&loaded).is_some_and(|at| at.elapsed() < FRESH_FOR) {
                    continue;
                }
                // An index that cannot be read now is tried again after a while.
                known.loaded.insert(loaded, Instant::now());
                let Some(files) = self.read_index(fetcher, keyring, archive, suite, component) else {
                    continue;
                };
                known.files.extend(files.into_iter().map(|(p, sha)| ((archive.base.clone(), p), sha)));
            }
        }
        known.files.get(&key).cloned()
    }

    /// Pool paths and their sha256 for one suite and component: its
    /// InRelease verified, then its Packages index, named there by hash.
    fn read_index(
        &self,
        fetcher: &Fetcher,
        keyring: &std::path::Path,
        archive: &Archive,
        suite: &str,
        component: &str,
    ) -> Option<Vec<(String, String)>> {
        let url = format!("{}/dists/{suite}/InRelease", archive.base);
        let doc = fetcher.doc(&url, "*/*").ok().filter(|d| d.status == 200)?;
        let release = verified(fetcher, keyring, &doc.body)?;
        for (compression, suffix) in [(Compression::Xz, ".xz"), (Compression::Gzip, ".gz")] {
            let name = format!("{component}/binary-{}/Packages{suffix}", self.arch);
            let Some(sha) = release_sha256(&release, &name) else { continue };
            let url = format!("{}/dists/{suite}/{name}", archive.base);
            let packed = fetcher.blob_bytes(&Digest::sha256(&sha)?, &url)?;
            let text = compression.unpack(&packed)?;
            return Some(pool_hashes(&text));
        }
        None
    }
}

impl Default for AptIndex {
    fn default() -> Self {
        AptIndex::new()
    }
}

/// Answers a proxy request for `url` (`http://host/path`).
pub fn answer(fetcher: &Fetcher, index: &AptIndex, sources: &AptSources, url: &str) -> Response {
    let Some(host) = host_of(url) else {
        return failure(403, "the cache proxies only the hosts of the environment's apt sources");
    };
    if !sources.hosts().contains(&host) {
        return failure(403, &format!("the cache proxies only the hosts of the apt sources, not {host}"));
    }
    let path = &url["http://".len() + host.len()..].trim_start_matches('/');
    if !is_safe_path(path) {
        return failure(404, "not a path of the archive");
    }
    let url = format!("http://{host}/{path}");
    let archive = sources.archives.iter().find(|a| url.starts_with(&format!("{}/", a.base)));
    let Some(archive) = archive else {
        return fetcher.pass(&url, None);
    };
    let rel = &url[archive.base.len() + 1..];
    if rel.starts_with("dists/") {
        if let Some(digest) = by_hash(rel).and_then(Digest::sha256) {
            return fetcher.blob(&digest, &url, "application/octet-stream");
        }
        return fetcher.serve_doc(&url, "*/*", |body| body);
    }
    if rel.starts_with("pool/") {
        let sha = index.sha256_of(fetcher, archive, &percent_decoded(rel));
        if let Some(digest) = sha.and_then(|sha| Digest::sha256(&sha)) {
            return fetcher.blob(&digest, &url, "application/vnd.debian.binary-package");
        }
    }
    fetcher.pass(&url, None)
}

/// `path` with its `%XX` escapes decoded (apt escapes the `+` and `~`
/// of versions; Packages names files unescaped).
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%').then(|| path.get(i + 1..i + 3)).flatten();
        match escaped.and_then(|hex| u8::from_str_radix(hex, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The sha256 of a `.../by-hash/SHA256/<sha256>` path.
fn by_hash(rel: &str) -> Option<&str> {
    let (dir, sha) = rel.rsplit_once('/')?;
    (dir.ends_with("/by-hash/SHA256") && is_sha256(sha)).then_some(sha)
}

/// The signed text of an InRelease whose signature the keyring's keys
/// made; None when gpgv does not say so.
fn verified(fetcher: &Fetcher, keyring: &std::path::Path, signed: &[u8]) -> Option<String> {
    let (input, output) = (fetcher.store.scratch_path(), fetcher.store.scratch_path());
    std::fs::write(&input, signed).ok()?;
    let status = Command::new("gpgv")
        .arg("--keyring")
        .arg(keyring)
        .arg("--output")
        .arg(&output)
        .arg(&input)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let text = std::fs::read_to_string(&output).ok();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    status.ok().filter(|s| s.success()).and(text)
}

/// The sha256 a Release file gives for `name`.
fn release_sha256(release: &str, name: &str) -> Option<String> {
    let section = release.split_once("\nSHA256:\n")?.1;
    section
        .lines()
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            Some((fields.next()?, fields.next()?, fields.next()?))
        })
        .find(|(_, _, n)| *n == name)
        .map(|(sha, _, _)| sha.to_string())
        .filter(|sha| is_sha256(sha))
}

/// `Filename` and `SHA256` of each stanza of a Packages index.
fn pool_hashes(packages: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for stanza in packages.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(": ")))
                .map(str::trim)
        };
        if let (Some(file), Some(sha)) = (field("Filename"), field("SHA256")) {
            if is_sha256(sha) {
                out.push((file.to_string(), sha.to_string()));
            }
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Compression {
    Xz,
    Gzip,
}

impl Compression {
    fn unpack(self, packed: &[u8]) -> Option<String> {
        let mut text = Vec::new();
        match self {
            Compression::Xz => {
                let mut out = std::io::Cursor::new(&mut text);
                lzma_rs::xz_decompress(&mut std::io::BufReader::new(packed), &mut out).ok()?;
            }
            Compression::Gzip => {
                flate2::read::GzDecoder::new(packed).take(INDEX_LIMIT).read_to_end(&mut text).ok()?;
            }
        }
        String::from_utf8(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn sources() -> AptSources {
        AptSources::new(&[
            SourceEntry {
                types: vec!["deb".into()],
                uris: vec!["http://deb.debian.org/debian".into()],
                suites: vec!["bookworm".into(), "bookworm-updates".into()],
                components: vec!["main".into()],
            },
            SourceEntry {
                types: vec!["deb".into()],
                uris: vec!["https://secure.example/debian".into()],
                suites: vec!["bookworm".into()],
                components: vec!["main".into()],
            },
        ])
    }

    #[test]
    fn only_plain_http_archives_are_proxied() {
        assert_eq!(sources().hosts(), ["deb.debian.org"]);
    }

    #[test]
    fn escapes_are_decoded_as_packages_names_files() {
        assert_eq!(
            percent_decoded("pool/main/k/krb5/libk5crypto3_1.20.1-2%2bdeb12u5_amd64.deb"),
            "pool/main/k/krb5/libk5crypto3_1.20.1-2+deb12u5_amd64.deb"
        );
        assert_eq!(percent_decoded("a%7eb%zz%"), "a~b%zz%");
    }

    #[test]
    fn by_hash_paths_name_their_hash() {
        assert_eq!(by_hash(&format!("dists/bookworm/main/binary-amd64/by-hash/SHA256/{SHA}")), Some(SHA));
        assert_eq!(by_hash("dists/bookworm/InRelease"), None);
        assert_eq!(by_hash("dists/bookworm/by-hash/SHA256/nothex"), None);
    }

    #[test]
    fn release_and_packages_give_hashes() {
        let release = format!("Origin: Debian\nMD5Sum:\n 0123 10 main/binary-amd64/Packages.xz\nSHA256:\n {SHA}   6924 main/binary-amd64/Packages.xz\n");
        assert_eq!(release_sha256(&release, "main/binary-amd64/Packages.xz").as_deref(), Some(SHA));
        assert_eq!(release_sha256(&release, "main/binary-arm64/Packages.xz"), None);
        let packages = format!("Package: a\nFilename: pool/main/a/a_1_amd64.deb\nSHA256: {SHA}\n\nPackage: b\nFilename: pool/main/b/b.deb\n");
        assert_eq!(pool_hashes(&packages), [("pool/main/a/a_1_amd64.deb".to_string(), SHA.to_string())]);
    }
}
