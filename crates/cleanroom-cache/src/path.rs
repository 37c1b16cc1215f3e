//! The paths the cache accepts from its clients before naming anything
//! upstream: relative, of plain segments, in the characters package names
//! and versions use. What is refused cannot climb out of a registry's tree
//! or smuggle a query, a fragment or another host into a URL.

/// Whether `path` is relative, without empty, `.` or `..` segments, and
/// only of `A-Z a-z 0-9 . _ - + ~ % = /`.
pub fn is_safe_path(path: &str) -> bool {
    !path.is_empty()
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+~%=/".contains(&b))
        && path.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_pass() {
        for good in ["packages/ab/x-1.0.tar.gz", "pool/main/g/gcc-12/cpp-12_12.2.0-14+deb12u1_amd64.deb", "a%3a1"] {
            assert!(is_safe_path(good), "{good}");
        }
        for bad in ["", "/etc/passwd", "a/../b", "a//b", "./a", "a/", "a?b", "a#b", "a@b", "a b", "a\\b", "x:80"] {
            assert!(!is_safe_path(bad), "{bad}");
        }
    }
}
