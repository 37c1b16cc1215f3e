//! The host's apt configuration: which Debian mirror (and security archive)
//! it already uses, so that images are built and Debian source packages
//! fetched from the same place, without a host name written in the code.
//!
//! Both formats apt reads are understood: deb822 stanzas in
//! `sources.list.d/*.sources` and one-line `deb URI SUITE COMPONENT...`
//! entries in `sources.list` and `sources.list.d/*.list`.

use std::path::Path;

/// One apt source: a deb822 stanza, or one line of the one-line format.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceEntry {
    pub types: Vec<String>,
    pub uris: Vec<String>,
    pub suites: Vec<String>,
    pub components: Vec<String>,
}

/// Every source the host configures: `sources.list` first, then the files of
/// `sources.list.d` in name order. Unreadable or missing files count as empty
/// (apt itself would complain about them; this is only a best guess at a
/// mirror, and the caller says to pass `--mirror` when it finds none).
pub fn host_sources(apt_dir: &Path) -> Vec<SourceEntry> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string(apt_dir.join("sources.list")) {
        out.extend(parse_one_line(&text));
    }
    let mut files: Vec<_> = match std::fs::read_dir(apt_dir.join("sources.list.d")) {
        Ok(dir) => dir.filter_map(|e| e.ok()).map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    for path in files {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        match ext {
            "list" => out.extend(parse_one_line(&text)),
            "sources" => out.extend(parse_deb822(&text)),
            _ => {}
        }
    }
    out
}

/// Parses deb822 `.sources` text. Stanzas are separated by blank lines;
/// lines starting with `#` are comments (they do not end a stanza); a line
/// starting with white space continues the previous field. Stanzas with
/// `Enabled: no` are dropped.
pub fn parse_deb822(text: &str) -> Vec<SourceEntry> {
    let mut out = Vec::new();
    let mut fields: Vec<(String, String)> = Vec::new();
    let flush = |fields: &mut Vec<(String, String)>, out: &mut Vec<SourceEntry>| {
        if fields.is_empty() {
            return;
        }
        let get = |name: &str| -> Vec<String> {
            fields
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .flat_map(|(_, v)| v.split_whitespace().map(str::to_owned))
                .collect()
        };
        let enabled = get("Enabled");
        let disabled = enabled.first().is_some_and(|v| v.eq_ignore_ascii_case("no"));
        if !disabled {
            out.push(SourceEntry {
                types: get("Types"),
                uris: get("URIs"),
                suites: get("Suites"),
                components: get("Components"),
            });
        }
        fields.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut fields, &mut out);
            continue;
        }
        if line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = fields.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            fields.push((key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    flush(&mut fields, &mut out);
    out
}

/// Parses one-line `sources.list` text:
/// `deb [ option=value ... ] URI SUITE [COMPONENT...]`, `#` to end of line
/// being a comment.
pub fn parse_one_line(text: &str) -> Vec<SourceEntry> {
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
            // Options run up to the token that closes the bracket.
            let Some(end) = rest.iter().position(|t| t.ends_with(']')) else {
                continue;
            };
            rest.drain(..=end);
        }
        let [uri, suite, components @ ..] = rest.as_slice() else {
            continue;
        };
        out.push(SourceEntry {
            types: vec![kind.to_owned()],
            uris: vec![(*uri).to_owned()],
            suites: vec![(*suite).to_owned()],
            components: components.iter().map(|c| (*c).to_owned()).collect(),
        });
    }
    out
}

/// The host's Debian mirror: a binary (`deb`) source over http(s) whose URI
/// path ends in `/debian`, preferring one that lists `suite`.
pub fn pick_mirror(entries: &[SourceEntry], suite: &str) -> Option<String> {
    pick(entries, "/debian", suite)
}

/// The host's Debian security archive (URI path ending in `/debian-security`),
/// preferring one that lists `<suite>-security`.
pub fn pick_security(entries: &[SourceEntry], suite: &str) -> Option<String> {
    pick(entries, "/debian-security", &format!("{suite}-security"))
}

fn pick(entries: &[SourceEntry], path_suffix: &str, suite: &str) -> Option<String> {
    let candidates = entries
        .iter()
        .filter(|e| e.types.iter().any(|t| t == "deb"))
        .flat_map(|e| e.uris.iter().map(move |u| (e, u)))
        .filter_map(|(e, u)| {
            let uri = normalize_http_uri(u)?;
            uri_path(&uri).ends_with(path_suffix).then_some((e, uri))
        });
    let mut first = None;
    for (entry, uri) in candidates {
        if entry.suites.iter().any(|s| s == suite) {
            return Some(uri);
        }
        first.get_or_insert(uri);
    }
    first
}

/// `uri` without trailing slashes if it is an http(s) URI with a host and no
/// white space; `None` otherwise.
pub fn normalize_http_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("http://").or_else(|| uri.strip_prefix("https://"))?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || uri.chars().any(char::is_whitespace) {
        return None;
    }
    Some(uri.trim_end_matches('/').to_owned())
}

fn uri_path(uri: &str) -> &str {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    rest.find('/').map_or("", |i| &rest[i..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEB822: &str = "\
# Debian's own sources
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

    #[test]
    fn deb822_host_file() {
        let entries = parse_deb822(DEB822);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].types, ["deb"]);
        assert_eq!(entries[0].uris, ["http://deb.debian.org/debian"]);
        assert_eq!(entries[0].suites, ["bookworm", "bookworm-updates"]);
        assert_eq!(entries[0].components, ["main"]);
        assert_eq!(pick_mirror(&entries, "bookworm").as_deref(), Some("http://deb.debian.org/debian"));
        assert_eq!(
            pick_security(&entries, "bookworm").as_deref(),
            Some("http://deb.debian.org/debian-security")
        );
    }

    #[test]
    fn deb822_multiple_uris_continuations_and_disabled() {
        let text = "\
Types: deb-src
URIs: http://src.example/debian
Suites: bookworm

types: deb deb-src
uris: ftp://old.example/debian
  https://mirror.example/pub/debian/
suites: trixie
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 abc
 -----END PGP PUBLIC KEY BLOCK-----
components: main contrib

Enabled: no
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
";
        let entries = parse_deb822(text);
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert_eq!(entries[1].uris, ["ftp://old.example/debian", "https://mirror.example/pub/debian/"]);
        assert_eq!(entries[1].components, ["main", "contrib"]);
        // deb-src only and ftp are not candidates; the trailing slash goes.
        assert_eq!(pick_mirror(&entries, "bookworm").as_deref(), Some("https://mirror.example/pub/debian"));
        assert_eq!(pick_security(&entries, "bookworm"), None);
    }

    #[test]
    fn one_line_format() {
        let text = "\
# deb http://commented.example/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://ftp.example.org/debian/ bookworm main contrib # trailing
deb [ trusted=yes ] http://security.example.org/debian-security bookworm-security main
deb-src http://ftp.example.org/debian bookworm main
deb https://packages.cloud.example.com/apt cloud-sdk-bookworm main
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
bogus line
";
        let entries = parse_one_line(text);
        assert_eq!(entries.len(), 5, "{entries:?}");
        assert_eq!(entries[0].uris, ["http://ftp.example.org/debian/"]);
        assert_eq!(entries[0].components, ["main", "contrib"]);
        assert_eq!(entries[1].uris, ["http://security.example.org/debian-security"]);
        assert_eq!(pick_mirror(&entries, "bookworm").as_deref(), Some("http://ftp.example.org/debian"));
        assert_eq!(
            pick_security(&entries, "bookworm").as_deref(),
            Some("http://security.example.org/debian-security")
        );
    }

    #[test]
    fn prefers_an_entry_for_the_suite() {
        let text = "\
deb http://a.example/debian trixie main
deb http://b.example/debian bookworm main
";
        let entries = parse_one_line(text);
        assert_eq!(pick_mirror(&entries, "bookworm").as_deref(), Some("http://b.example/debian"));
        assert_eq!(pick_mirror(&entries, "sid").as_deref(), Some("http://a.example/debian"));
    }

    #[test]
    fn security_and_other_archives_are_not_mirrors() {
        let text = "\
deb http://deb.example/debian-security bookworm-security main
deb http://deb.example/debian-ports bookworm main
deb http://deb.example/ubuntu jammy main
";
        assert_eq!(pick_mirror(&parse_one_line(text), "bookworm"), None);
    }

    #[test]
    fn reads_a_host_apt_directory() {
        let dir = std::env::temp_dir().join(format!("cleanroom-sources-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sources.list.d")).unwrap();
        std::fs::write(dir.join("sources.list"), "# nothing here\n").unwrap();
        std::fs::write(dir.join("sources.list.d/debian.sources"), DEB822).unwrap();
        std::fs::write(
            dir.join("sources.list.d/other.list.disabled"),
            "deb http://disabled.example/debian bookworm main\n",
        )
        .unwrap();
        std::fs::write(dir.join("sources.list.d/google.list"), "deb https://g.example/apt x main\n").unwrap();
        let entries = host_sources(&dir);
        assert_eq!(entries.len(), 3);
        assert_eq!(pick_mirror(&entries, "bookworm").as_deref(), Some("http://deb.debian.org/debian"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(host_sources(&dir).is_empty());
    }
}
