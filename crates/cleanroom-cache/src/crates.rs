//! crates.io through the cache: cargo replaces crates-io with the sparse
//! registry `sparse+<cache>/crates/index/` (written into
//! /root/.cargo/config.toml). Its `config.json` is the cache's own, whose
//! `dl` template puts each crate's sha256 in its download link:
//! `<cache>/crates/dl/<crate>/<version>/<sha256>`, a blob fetched from
//! static.crates.io and kept only if it has that hash (cargo checks it
//! again, against the same `cksum` of the index). The index files
//! themselves (`/crates/index/se/rd/serde`) are documents fetched from
//! index.crates.io, served as they are. The `dl` link is absolute, made
//! with the address the client reached the cache by
//! ([`base_url`](crate::path::base_url)).
//!
//! Sparse registries need cargo 1.68 or later: Debian 12's own cargo (0.66,
//! with rust 1.63) cannot use the cache, nor can it fetch crates.io's git
//! index in these environments; a rustup toolchain can.

use cleanroom_model::http::Response;

use crate::fetch::{failure, Fetcher};
use crate::path::is_plain_segment;
use crate::store::Digest;

const INDEX: &str = "https://index.crates.io/";
const DOWNLOADS: &str = "https://static.crates.io/crates/";

/// Answers `rest`, the part of the path after `/crates/`, for a client
/// that reached the cache at `base`.
pub fn answer(fetcher: &Fetcher, rest: &str, base: &str) -> Response {
    if rest == "index/config.json" {
        return Response::Json { status: 200, body: config(base) };
    }
    if let Some(path) = rest.strip_prefix("index/") {
        if !is_index_path(path) {
            return failure(404, "not a file of crates.io's index");
        }
        return fetcher.serve_doc(&format!("{INDEX}{path}"), "*/*", |body| body);
    }
    if let Some(download) = rest.strip_prefix("dl/") {
        let parts: Vec<&str> = download.split('/').collect();
        let [name, version, sha256] = parts[..] else {
            return failure(404, "not a download of crates.io");
        };
        let Some(digest) = Digest::sha256(sha256) else {
            return failure(404, "not a download of crates.io");
        };
        if !is_crate_name(name) || !is_plain_segment(version) {
            return failure(404, "not a download of crates.io");
        }
        let url = format!("{DOWNLOADS}{name}/{name}-{version}.crate");
        return fetcher.blob(&digest, &url, "application/gzip");
    }
    failure(404, "crates.io's index is /crates/index/")
}

/// The registry's configuration as cargo reads it.
fn config(base: &str) -> serde_json::Value {
    serde_json::json!({
        "dl": format!("{base}/crates/dl/{{crate}}/{{version}}/{{sha256-checksum}}"),
        // Searching and publishing go to crates.io itself.
        "api": "https://crates.io",
    })
}

/// A crate's name as crates.io allows it: ASCII letters, digits, `-` and
/// `_`, beginning with a letter, at most 64 characters.
fn is_crate_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `path` is where the index keeps the lowercase crate name it
/// ends with: `1/a`, `2/ab`, `3/a/abc`, `ab/cd/abcd…`.
fn is_index_path(path: &str) -> bool {
    let Some((dir, name)) = path.rsplit_once('/') else {
        return false;
    };
    if !is_crate_name(name) || name.bytes().any(|b| b.is_ascii_uppercase()) {
        return false;
    }
    // ASCII only by now, so any byte is a place to cut.
    let expected = match name.len() {
        1 => "1".to_string(),
        2 => "2".to_string(),
        3 => format!("3/{}", &name[..1]),
        _ => format!("{}/{}", &name[..2], &name[2..4]),
    };
    dir == expected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_paths_follow_the_layout() {
        for good in ["1/a", "2/ab", "3/s/syn", "it/oa/itoa", "se/rd/serde", "se/rd/serde_json", "ab/-c/ab-cd"]
        {
            assert!(is_index_path(good), "{good}");
        }
        for bad in [
            "",
            "itoa",
            "3/x/syn",
            "it/oa/itob",
            "1/ab",
            "It/oa/Itoa",
            "it/oa/../itoa",
            "../oa/itoa",
            "2/a%2f",
            "it/oa/itoa/x",
            "config.json",
            "3/1/1ab",
            "3/é/éa",
        ] {
            assert!(!is_index_path(bad), "{bad}");
        }
    }

    #[test]
    fn crate_names_are_plain() {
        for good in ["itoa", "Inflector", "serde_json", "a-b"] {
            assert!(is_crate_name(good), "{good}");
        }
        for bad in ["", "1a", "-a", "a.b", "a/b", "a%2f", &"a".repeat(65)] {
            assert!(!is_crate_name(bad), "{bad}");
        }
    }

    #[test]
    fn downloads_carry_the_checksum() {
        let config = config("http://127.0.0.1:3142");
        assert_eq!(config["dl"], "http://127.0.0.1:3142/crates/dl/{crate}/{version}/{sha256-checksum}");
        assert_eq!(config["api"], "https://crates.io");
    }
}
