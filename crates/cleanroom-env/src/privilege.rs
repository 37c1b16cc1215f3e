//! Who the harness runs as: the host's root, or root of a user namespace
//! that an ordinary user made (the rootless sandbox, see
//! docs/rootless.md). Root of a user namespace may mount overlayfs, make
//! namespaces and bind mounts, but not loop-mount a disk, write the host's
//! cgroups or watch a file system with fanotify.

/// How much of the host the harness holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    /// Root of the host's own user namespace.
    HostRoot,
    /// Root of a user namespace whose ids map to an ordinary user's.
    NamespaceRoot,
    /// An ordinary user.
    User,
}

/// The privilege of this process.
pub fn current() -> Privilege {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        Privilege::User
    } else if in_user_namespace() {
        Privilege::NamespaceRoot
    } else {
        Privilege::HostRoot
    }
}

/// Whether this process is in a user namespace other than the host's: the
/// host's own maps every id to itself.
pub fn in_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| !is_identity_map(&map))
}

fn is_identity_map(map: &str) -> bool {
    let fields: Vec<&str> = map.split_whitespace().collect();
    fields == ["0", "0", "4294967295"]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_full_identity_map_is_the_hosts() {
        assert!(is_identity_map("         0          0 4294967295\n"));
        assert!(!is_identity_map("         0       1001          1\n         1     100000      65535\n"));
        assert!(!is_identity_map("         0          0      65536\n"));
    }
}
