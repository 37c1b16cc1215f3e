//! `source = "crate"` (a cleanroom addition): the .crate file of exactly one
//! version from the crates.io registry.
//!
//! The expected sha256 is the `cksum` of that version's line in the sparse
//! index (`<index>/<prefix>/<name>`, one JSON object per published version).
//! A `sha256` in task.toml pins the digest: it must equal the index's, and
//! when the cache already holds a file with that digest, the registry is not
//! asked at all. A yanked version is refused. The .crate (a tar.gz with one
//! top-level `name-version/` directory) is unpacked like any archive; nothing
//! in it is built or run.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::FetchError;
use super::http::Http;
use super::materialize::{cache_hit, cache_path, cached_download_with, FetchOptions};

/// An index file lists every version of one crate; the largest ones hold
/// a few thousand lines.
const INDEX_LIMIT: u64 = 32 << 20;

/// A resolved .crate file, in the cache.
#[derive(Debug)]
pub(crate) struct CrateFile {
    pub url: String,
    pub sha256: String,
    pub path: PathBuf,
}

/// What the index says of one version.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// The crate's name as published (the index path is lowercase).
    pub name: String,
    pub sha256: String,
}

/// The path of a crate's file in the registry index: `1/a`, `2/ab`,
/// `3/a/abc`, `ab/cd/abcd...`, all lowercase.
pub(crate) fn index_path(name: &str) -> String {
    let name = name.to_ascii_lowercase();
    match name.len() {
        0 => String::new(),
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    }
}

/// Finds `version` in the text of an index file.
pub(crate) fn pick_version(index: &str, version: &str) -> Result<IndexEntry, String> {
    let mut versions = Vec::new();
    for line in index.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let Some(vers) = entry.get("vers").and_then(Value::as_str) else {
            continue;
        };
        if vers != version {
            versions.push(vers.to_owned());
            continue;
        }
        if entry.get("yanked").and_then(Value::as_bool) == Some(true) {
            return Err(format!(
                "version {version} is yanked on the registry; its authors withdrew it, so pick a version that is not yanked"
            ));
        }
        let name = entry.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
        let sha256 = entry
            .get("cksum")
            .and_then(Value::as_str)
            .filter(|s| crate::rules::is_hex(s, 64))
            .ok_or_else(|| format!("the index gives no sha256 (`cksum`) for version {version}"))?
            .to_ascii_lowercase();
        return Ok(IndexEntry { name, sha256 });
    }
    if versions.is_empty() {
        return Err("the index file lists no versions".to_owned());
    }
    let tail: Vec<&str> = versions.iter().rev().take(8).rev().map(String::as_str).collect();
    Err(format!("version {version:?} is not published; the latest versions are {}", tail.join(", ")))
}

fn download_url(base: &str, name: &str, version: &str) -> String {
    format!("{}/{name}/{name}-{version}.crate", base.trim_end_matches('/'))
}

/// Resolves and downloads (or finds in the cache) the .crate file.
pub(crate) fn fetch(
    cache_dir: &Path,
    opts: &FetchOptions,
    name: &str,
    version: &str,
    pinned: Option<&str>,
) -> Result<CrateFile, FetchError> {
    let err =
        |message: String| FetchError::Crate { name: name.to_owned(), version: version.to_owned(), message };
    if let Some(pinned) = pinned {
        let path = cache_path(cache_dir, pinned);
        if cache_hit(&path, pinned) {
            return Ok(CrateFile {
                url: download_url(&opts.crates_download_url, name, version),
                sha256: pinned.to_ascii_lowercase(),
                path,
            });
        }
    }
    let http = Http::new(opts.http_timeout)?;
    let index_url = format!("{}/{}", opts.crates_index_url.trim_end_matches('/'), index_path(name));
    let index = http
        .get_bytes(&index_url, INDEX_LIMIT)?
        .ok_or_else(|| err(format!("no crate named {name:?} in the registry index ({index_url})")))?;
    let index =
        String::from_utf8(index).map_err(|_| err(format!("{index_url}: the index file is not utf-8")))?;
    let entry = pick_version(&index, version).map_err(err)?;
    if let Some(pinned) = pinned {
        if !entry.sha256.eq_ignore_ascii_case(pinned) {
            return Err(err(format!(
                "task.toml pins sha256 {pinned}, but the registry index ({index_url}) gives {}",
                entry.sha256
            )));
        }
    }
    let published = if entry.name.is_empty() { name } else { entry.name.as_str() };
    let url = download_url(&opts.crates_download_url, published, version);
    let path = cached_download_with(&http, cache_dir, &url, &entry.sha256)?;
    Ok(CrateFile { url, sha256: entry.sha256, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_prefixes() {
        assert_eq!(index_path("a"), "1/a");
        assert_eq!(index_path("ab"), "2/ab");
        assert_eq!(index_path("abc"), "3/a/abc");
        assert_eq!(index_path("itoa"), "it/oa/itoa");
        assert_eq!(index_path("serde_json"), "se/rd/serde_json");
        assert_eq!(index_path("Inflector"), "in/fl/inflector");
        assert_eq!(index_path("Cc"), "2/cc");
        assert_eq!(index_path("XYz"), "3/x/xyz");
    }

    fn line(vers: &str, cksum: &str, yanked: bool) -> String {
        serde_json::json!({"name": "Demo", "vers": vers, "deps": [], "cksum": cksum, "features": {}, "yanked": yanked})
            .to_string()
    }

    #[test]
    fn picks_the_exact_version() {
        let a = "a".repeat(64);
        let b = "B".repeat(64);
        let index =
            [line("0.1.0", &a, false), line("0.1.1", &b, false), line("0.1.10", &a, false)].join("\n");
        assert_eq!(
            pick_version(&index, "0.1.1").unwrap(),
            IndexEntry { name: "Demo".into(), sha256: "b".repeat(64) }
        );
        let err = pick_version(&index, "0.1").unwrap_err();
        assert!(err.contains("not published") && err.contains("0.1.10"), "{err}");
    }

    #[test]
    fn yanked_and_broken_entries() {
        let index = format!("{}\nnot json\n", line("1.0.0", &"c".repeat(64), true));
        let err = pick_version(&index, "1.0.0").unwrap_err();
        assert!(err.contains("yanked"), "{err}");
        let index = line("1.0.0", "xyz", false);
        assert!(pick_version(&index, "1.0.0").unwrap_err().contains("no sha256"));
        assert!(pick_version("", "1.0.0").unwrap_err().contains("lists no versions"));
    }
}
