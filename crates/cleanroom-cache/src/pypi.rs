//! PyPI through the cache: pip and uv use `/pypi/simple/` as their index
//! (written into /etc/pip.conf and /etc/uv/uv.toml). A project's page is a
//! document fetched from pypi.org; each file link in it that carries a
//! sha256 is rewritten to `/pypi/files/<sha256>/<path>`, so that the file
//! is a blob the cache checks against that hash (pip checks it again: the
//! link keeps its `#sha256=` fragment, the JSON page its `hashes`).

use std::sync::LazyLock;

use cleanroom_model::http::Response;
use regex::Regex;

use crate::fetch::{failure, Fetcher};
use crate::path::is_safe_path;
use crate::store::{is_sha256, Digest};

const INDEX: &str = "https://pypi.org/simple/";
const FILES: &str = "https://files.pythonhosted.org/";
const JSON: &str = "application/vnd.pypi.simple.v1+json";

/// Answers `rest`, the part of the path after `/pypi/`.
pub fn answer(fetcher: &Fetcher, rest: &str, accept: Option<&str>) -> Response {
    if let Some(project) = rest.strip_prefix("simple/") {
        return page(fetcher, project, accept);
    }
    if let Some(file) = rest.strip_prefix("files/") {
        let Some((sha256, path)) = file.split_once('/') else {
            return failure(404, "not a file of the index");
        };
        let Some(digest) = Digest::sha256(sha256) else {
            return failure(404, "not a file of the index");
        };
        if !path.starts_with("packages/") || !is_safe_path(path) {
            return failure(404, "not a file of the index");
        }
        let url = format!("{FILES}{path}");
        // Core metadata (PEP 658) beside a file: immutable on PyPI, small,
        // and checked by pip against the hash the page gives for it.
        if path.ends_with(".metadata") {
            return fetcher.serve_doc(&url, "*/*", |body| body);
        }
        return fetcher.blob(&digest, &url, "application/octet-stream");
    }
    failure(404, "the PyPI index is /pypi/simple/")
}

fn page(fetcher: &Fetcher, project: &str, accept: Option<&str>) -> Response {
    let name = project.trim_end_matches('/');
    if name.is_empty() || name.contains('/') || !is_safe_path(name) {
        return failure(404, "the cache serves projects' pages, not the whole index");
    }
    let url = format!("{INDEX}{name}/");
    if accept.is_some_and(|a| a.contains(JSON)) {
        fetcher.serve_doc(&url, JSON, rewrite_json)
    } else {
        fetcher.serve_doc(&url, "text/html", |body| rewrite_html(&body).into_bytes())
    }
}

/// The links of an HTML page (PEP 503) to files with a sha256, pointed at
/// the cache.
fn rewrite_html(body: &[u8]) -> String {
    static LINK: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r##"href="https://files\.pythonhosted\.org/([^"#]+)#sha256=([0-9a-f]{64})""##).unwrap()
    });
    LINK.replace_all(&String::from_utf8_lossy(body), r##"href="/pypi/files/$2/$1#sha256=$2""##).into_owned()
}

/// The same for a JSON page (PEP 691): each file's `url`, where its
/// `hashes` has a sha256.
fn rewrite_json(body: Vec<u8>) -> Vec<u8> {
    let Ok(mut page) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return body;
    };
    if let Some(files) = page.get_mut("files").and_then(|f| f.as_array_mut()) {
        for file in files {
            let sha256 = file.pointer("/hashes/sha256").and_then(|h| h.as_str()).map(str::to_string);
            let path = file.get("url").and_then(|u| u.as_str()).and_then(|u| u.strip_prefix(FILES));
            if let (Some(sha256), Some(path)) = (sha256.filter(|s| is_sha256(s)), path) {
                file["url"] = format!("/pypi/files/{sha256}/{path}").into();
            }
        }
    }
    serde_json::to_vec(&page).unwrap_or(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn html_links_with_a_hash_point_at_the_cache() {
        let page = format!(
            r##"<a href="https://files.pythonhosted.org/packages/ab/cd/x-1.0.tar.gz#sha256={SHA}" data-requires-python="&gt;=3.8">x-1.0.tar.gz</a>
<a href="https://files.pythonhosted.org/packages/ab/cd/old-0.1.zip">old-0.1.zip</a>"##
        );
        let out = rewrite_html(page.as_bytes());
        assert!(
            out.contains(&format!(r##"href="/pypi/files/{SHA}/packages/ab/cd/x-1.0.tar.gz#sha256={SHA}""##))
        );
        assert!(
            out.contains(r#"href="https://files.pythonhosted.org/packages/ab/cd/old-0.1.zip""#),
            "a link without a hash goes upstream: {out}"
        );
    }

    #[test]
    fn json_files_with_a_sha256_point_at_the_cache() {
        let page = serde_json::json!({"name": "x", "files": [
            {"filename": "x-1.0.whl", "url": "https://files.pythonhosted.org/packages/a/x-1.0.whl",
             "hashes": {"sha256": SHA}},
            {"filename": "x-0.1.zip", "url": "https://files.pythonhosted.org/packages/a/x-0.1.zip", "hashes": {}},
        ]});
        let out: serde_json::Value =
            serde_json::from_slice(&rewrite_json(page.to_string().into_bytes())).unwrap();
        assert_eq!(out["files"][0]["url"], format!("/pypi/files/{SHA}/packages/a/x-1.0.whl"));
        assert_eq!(out["files"][1]["url"], "https://files.pythonhosted.org/packages/a/x-0.1.zip");
    }
}
