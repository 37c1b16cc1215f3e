//! The host's Debian mirror, read from its apt configuration, for
//! `source = "debian-source"` without a `mirror` key.
//!
//! A minimal copy of what cleanroom-env's `image/sources.rs` does (this
//! crate must not depend on cleanroom-env): the URIs of deb822 stanzas in
//! `sources.list.d/*.sources` and of one-line entries in `sources.list` and
//! `sources.list.d/*.list`. The first http(s) URI whose path ends in
//! `/debian` is the mirror.

use std::path::Path;

/// The host's Debian mirror, without a trailing slash.
pub(crate) fn host_debian_mirror(apt_dir: &Path) -> Option<String> {
    let mut uris = Vec::new();
    if let Ok(text) = std::fs::read_to_string(apt_dir.join("sources.list")) {
        uris.extend(one_line_uris(&text));
    }
    let mut files: Vec<_> = match std::fs::read_dir(apt_dir.join("sources.list.d")) {
        Ok(dir) => dir.filter_map(|e| e.ok()).map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    for path in files {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "list" && ext != "sources" {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if ext == "list" {
            uris.extend(one_line_uris(&text));
        } else {
            uris.extend(deb822_uris(&text));
        }
    }
    uris.into_iter().find_map(|u| debian_mirror_uri(&u))
}

/// `uri` without trailing slashes when it is an http(s) URI with a host
/// whose path ends in `/debian`.
fn debian_mirror_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("http://").or_else(|| uri.strip_prefix("https://"))?;
    let rest = rest.trim_end_matches('/');
    let (host, path) = rest.split_once('/')?;
    if host.is_empty() || uri.chars().any(char::is_whitespace) || !format!("/{path}").ends_with("/debian") {
        return None;
    }
    Some(uri.trim_end_matches('/').to_owned())
}

/// The URIs of the enabled stanzas of deb822 `.sources` text.
fn deb822_uris(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut uris: Vec<String> = Vec::new();
    let mut enabled = true;
    let mut in_uris = false;
    let mut flush = |uris: &mut Vec<String>, enabled: &mut bool| {
        if *enabled {
            out.append(uris);
        }
        uris.clear();
        *enabled = true;
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut uris, &mut enabled);
            in_uris = false;
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if in_uris {
                uris.extend(line.split_whitespace().map(str::to_owned));
            }
            continue;
        }
        in_uris = false;
        if let Some((key, value)) = line.split_once(':') {
            let key = key.trim();
            if key.eq_ignore_ascii_case("URIs") {
                in_uris = true;
                uris.extend(value.split_whitespace().map(str::to_owned));
            } else if key.eq_ignore_ascii_case("Enabled") {
                enabled = !value.trim().eq_ignore_ascii_case("no");
            }
        }
    }
    flush(&mut uris, &mut enabled);
    out
}

/// The URIs of one-line `deb`/`deb-src` entries: `deb [ options ] URI
/// SUITE [COMPONENT...]`.
fn one_line_uris(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut tokens = line.split_whitespace();
        let Some(kind) = tokens.next() else { continue };
        if kind != "deb" && kind != "deb-src" {
            continue;
        }
        let mut rest: Vec<&str> = tokens.collect();
        if rest.first().is_some_and(|t| t.starts_with('[')) {
            let Some(end) = rest.iter().position(|t| t.ends_with(']')) else {
                continue;
            };
            rest.drain(..=end);
        }
        if let [uri, _suite, ..] = rest.as_slice() {
            out.push((*uri).to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_deb822_and_one_line_sources() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir(d.join("sources.list.d")).unwrap();
        // Not a Debian archive, a disabled stanza, then the mirror.
        std::fs::write(
            d.join("sources.list.d/a.sources"),
            "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\n\n\
             Types: deb\nEnabled: no\nURIs: http://disabled.example/debian\nSuites: bookworm\n\n\
             Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n\
             URIs: http://deb.debian.org/debian/\nSuites: bookworm\nComponents: main\n",
        )
        .unwrap();
        std::fs::write(
            d.join("sources.list.d/b.list.disabled"),
            "deb http://other.example/debian bookworm main\n",
        )
        .unwrap();
        assert_eq!(host_debian_mirror(d).as_deref(), Some("http://deb.debian.org/debian"));
        // sources.list comes first.
        std::fs::write(
            d.join("sources.list"),
            "# comment\ndeb [arch=amd64 signed-by=/k.gpg] https://mirror.example/pub/debian bookworm main\n",
        )
        .unwrap();
        assert_eq!(host_debian_mirror(d).as_deref(), Some("https://mirror.example/pub/debian"));
        assert_eq!(host_debian_mirror(&d.join("nowhere")), None);
    }

    #[test]
    fn only_debian_archives() {
        assert_eq!(debian_mirror_uri("http://deb.debian.org/debian-security"), None);
        assert_eq!(debian_mirror_uri("ftp://deb.debian.org/debian"), None);
        assert_eq!(debian_mirror_uri("http:///debian"), None);
        assert_eq!(debian_mirror_uri("http://h/debian//").as_deref(), Some("http://h/debian"));
    }
}
