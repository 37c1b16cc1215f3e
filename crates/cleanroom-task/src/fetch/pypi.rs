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
    let files = match http.get_json(&format!("{base}/{name}/{version}/json"))? {
        Some(doc) => doc.get("urls").cloned().unwrap_or(Value::Null),
        None => {
            let project_url = format!("{base}/{name}/json");
            let doc = http
                .get_json(&project_url)?
                .ok_or_else(|| err(format!("no project {name:?} on the index ({project_url})")))?;
            match doc.get("releases").and_then(|r| r.get(&version)) {
                Some(files) => files.clone(),
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
    pick_sdist(&files).map_err(err)
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
