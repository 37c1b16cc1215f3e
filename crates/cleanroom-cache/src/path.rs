//! The paths the cache accepts from its clients before naming anything
//! upstream: relative, of plain segments, in the characters package names
//! and versions use. What is refused cannot climb out of a registry's tree
//! or smuggle a query, a fragment or another host into a URL.
//!
//! Also the address clients reached the cache by, for links that must be
//! absolute (npm's tarballs, cargo's downloads).

use crate::PORT;

/// Whether `path` is relative, without empty, `.` or `..` segments, and
/// only of `A-Z a-z 0-9 . _ - + ~ % = /`.
pub fn is_safe_path(path: &str) -> bool {
    !path.is_empty()
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+~%=/".contains(&b))
        && path.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
}

/// Whether `text` is one segment of such a path, not percent-escaped: a
/// package's name or version, a file's name.
pub fn is_plain_segment(text: &str) -> bool {
    is_safe_path(text) && !text.contains(['/', '%'])
}

/// `http://<host>` of the request's Host header: the cache as this client
/// reaches it (127.0.0.1:[`PORT`] in an environment; another port in a
/// test). Only the asking client is served links made with it, so it can
/// point them at nothing but itself; a missing or odd Host gives the
/// environment's address.
pub fn base_url(host: Option<&str>) -> String {
    let plain =
        |h: &&str| !h.is_empty() && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
    match host.filter(plain) {
        Some(host) => format!("http://{host}"),
        None => format!("http://127.0.0.1:{PORT}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_pass() {
        for good in
            ["packages/ab/x-1.0.tar.gz", "pool/main/g/gcc-12/cpp-12_12.2.0-14+deb12u1_amd64.deb", "a%3a1"]
        {
            assert!(is_safe_path(good), "{good}");
        }
        for bad in
            ["", "/etc/passwd", "a/../b", "a//b", "./a", "a/", "a?b", "a#b", "a@b", "a b", "a\\b", "x:80"]
        {
            assert!(!is_safe_path(bad), "{bad}");
        }
    }

    #[test]
    fn a_plain_segment_is_one_unescaped_piece() {
        assert!(is_plain_segment("is-number-7.0.0.tgz") && is_plain_segment("1.0.0+build"));
        for bad in ["", "..", "a/b", "a%2fb", "@scope", "a?b"] {
            assert!(!is_plain_segment(bad), "{bad}");
        }
    }

    #[test]
    fn links_name_the_host_the_client_asked() {
        assert_eq!(base_url(Some("127.0.0.1:41234")), "http://127.0.0.1:41234");
        assert_eq!(base_url(Some("[::1]:3142")), "http://[::1]:3142");
        for odd in [None, Some(""), Some("evil.example/x"), Some("a@b"), Some("a b"), Some("a\"\"")] {
            assert_eq!(base_url(odd), format!("http://127.0.0.1:{PORT}"), "{odd:?}");
        }
    }
}
