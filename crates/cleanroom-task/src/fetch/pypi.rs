//! `source = "pypi-sdist"`: find the source distribution that the package
//! index lists for exactly one version, with the index's sha256.
//!
//! The index's JSON API is asked for the release
//! (`<index>/<name>/<version>/json`); where that answers 404 (some mirrors
//! and proxies serve only the project document), the project document's
//! `releases[<version>]` gives the same file list.

use serde_json::Value;

use super::error::FetchError;
use super::http::Http;
use crate::rules::parse_requirement;

#[derive(Debug)]
pub(crate) struct Sdist {
    pub url: String,
    pub sha256: String,
    pub filename: String,
}

/// Archive kinds we can unpack, best first.
const EXTENSIONS: &[&str] = &[".tar.gz", ".tgz", ".tar.bz2", ".zip", ".tar"];

pub(crate) fn resolve(http: &Http, index: &str, requirement: &str) -> Result<Sdist, FetchError> {
    let err = |message: String| FetchError::Pypi { requirement: requirement.to_owned(), message };
    let (name, version) = parse_requirement(requirement)
        .ok_or_else(|| err("not an exact pin; expected \"name==version\"".to_owned()))?;
    let base = index.trim_end_matches('/');
    let version_url = format!("{base}/{name}/{version}/json");
    let project_url = format!("{base}/{name}/json");
    let (files, doc_url) = match http.get_json(&version_url)? {
        Some(doc) => (doc.get("urls").cloned().unwrap_or(Value::Null), &version_url),
        None => {
            let doc = http
                .get_json(&project_url)?
                .ok_or_else(|| err(format!("no project {name:?} on the index ({project_url})")))?;
            match doc.get("releases").and_then(|r| r.get(&version)) {
                Some(files) => (files.clone(), &project_url),
                None => {
                    let mut known: Vec<&str> = doc
                        .get("releases")
                        .and_then(Value::as_object)
                        .map(|r| r.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    known.sort();
                    let tail: Vec<&str> = known.iter().rev().take(8).rev().copied().collect();
                    return Err(err(format!(
                        "version {version:?} not found on the index; it lists {}",
                        if tail.is_empty() { "no releases".to_owned() } else { tail.join(", ") }
                    )));
                }
            }
        }
    };
    let mut sdist = pick_sdist(&files).map_err(err)?;
    sdist.url = join_url(doc_url, &sdist.url);
    Ok(sdist)
}

/// `href` from a JSON document at `base`, as an absolute URL: some mirrors
/// of the index give file URLs relative to the document
/// (`../../packages/...`).
fn join_url(base: &str, href: &str) -> String {
    if href.contains("://") {
        return href.to_owned();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    if let Some(netloc_path) = href.strip_prefix("//") {
        return format!("{scheme}://{netloc_path}");
    }
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut segments: Vec<&str> = if href.starts_with('/') {
        Vec::new()
    } else {
        // The document's directory: everything up to its last '/'.
        let mut dir: Vec<&str> = path.split('/').collect();
        dir.pop();
        dir
    };
    for seg in href.trim_start_matches('/').split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    segments.retain(|s| !s.is_empty());
    format!("{scheme}://{host}/{}", segments.join("/"))
}

fn pick_sdist(files: &Value) -> Result<Sdist, String> {
    let files = files.as_array().ok_or_else(|| "the index's answer has no file list".to_owned())?;
    let sdists: Vec<&Value> =
        files.iter().filter(|f| f.get("packagetype").and_then(Value::as_str) == Some("sdist")).collect();
    if sdists.is_empty() {
        return Err(
            "the index lists no source distribution (sdist) for this version, only built distributions"
                .to_owned(),
        );
    }
    let rank = |f: &&&Value| {
        let name = f.get("filename").and_then(Value::as_str).unwrap_or("");
        EXTENSIONS.iter().position(|e| name.ends_with(e)).unwrap_or(EXTENSIONS.len())
    };
    let best = sdists.iter().min_by_key(rank).expect("non-empty");
    let best_rank = rank(&best);
    let filename = best.get("filename").and_then(Value::as_str).unwrap_or("").to_owned();
    if best_rank == EXTENSIONS.len() {
        return Err(format!(
            "the source distribution {filename:?} is in an unsupported format; supported: tar.gz, tar.bz2, zip"
        ));
    }
    let url = best
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{filename}: the index gives no url"))?
        .to_owned();
    let sha256 = best
        .get("digests")
        .and_then(|d| d.get("sha256"))
        .and_then(Value::as_str)
        .filter(|s| crate::rules::is_hex(s, 64))
        .ok_or_else(|| format!("{filename}: the index gives no sha256 digest"))?
        .to_ascii_lowercase();
    Ok(Sdist { url, sha256, filename })
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_urls_relative_to_the_document_become_absolute() {
        let doc = "https://pypi.org/pypi/SALib/json";
        assert_eq!(
            super::join_url(doc, "../../packages/packages/9d/44/SALib-1.1.3.tar.gz"),
            "https://pypi.org/packages/packages/9d/44/SALib-1.1.3.tar.gz"
        );
        assert_eq!(super::join_url(doc, "https://files.example/x.tar.gz"), "https://files.example/x.tar.gz");
        assert_eq!(super::join_url(doc, "/packages/x.tar.gz"), "https://pypi.org/packages/x.tar.gz");
        assert_eq!(super::join_url(doc, "//files.example/x.tar.gz"), "https://files.example/x.tar.gz");
        assert_eq!(
            super::join_url("https://pypi.org/pypi/a/1.0/json", "./x.zip"),
            "https://pypi.org/pypi/a/1.0/x.zip"
        );
    }

    use super::*;

    #[test]
    fn picks_the_tarball_sdist() {
        let files = serde_json::json!([
            {"packagetype": "bdist_wheel", "filename": "x-1.0-py3-none-any.whl", "url": "u1", "digests": {"sha256": "a".repeat(64)}},
            {"packagetype": "sdist", "filename": "x-1.0.zip", "url": "u2", "digests": {"sha256": "b".repeat(64)}},
            {"packagetype": "sdist", "filename": "x-1.0.tar.gz", "url": "u3", "digests": {"sha256": "C".repeat(64)}},
        ]);
        let s = pick_sdist(&files).unwrap();
        assert_eq!(s.url, "u3");
        assert_eq!(s.sha256, "c".repeat(64));
        assert_eq!(s.filename, "x-1.0.tar.gz");
    }

    #[test]
    fn wheels_only_is_an_error() {
        let files = serde_json::json!([{"packagetype": "bdist_wheel", "filename": "x.whl", "url": "u", "digests": {"sha256": "a".repeat(64)}}]);
        assert!(pick_sdist(&files).unwrap_err().contains("no source distribution"));
        let files =
            serde_json::json!([{"packagetype": "sdist", "filename": "x.tar.gz", "url": "u", "digests": {}}]);
        assert!(pick_sdist(&files).unwrap_err().contains("no sha256"));
    }
}
