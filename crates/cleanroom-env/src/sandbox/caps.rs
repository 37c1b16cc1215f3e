//! The capabilities a process inside an environment keeps.
//!
//! Root inside an environment must still be able to run package managers,
//! compilers and `make install`: change owners and modes, switch users (apt
//! drops to `_apt`), bind low ports, chroot. Everything else, above all
//! CAP_SYS_ADMIN (mount, setns), CAP_MKNOD (device nodes), CAP_SYS_PTRACE,
//! CAP_NET_ADMIN, CAP_SYS_MODULE, CAP_SYS_RAWIO and CAP_AUDIT_WRITE (the
//! host's audit log), is removed from the bounding set, so no later exec can
//! get it back.
//!
//! The phase's holder (PID 1 of its namespaces, see phase.rs) keeps one
//! capability more than any command: the kernel lets a process ptrace
//! another, or open its /proc/PID/mem, fd/ or environ, only when the
//! tracer's permitted set holds every capability of the target's (or it
//! has CAP_SYS_PTRACE). So no command can attach to the holder, which runs
//! without the seccomp filter, and make it run code of the agent's.

/// (name as bubblewrap spells it, number from linux/capability.h)
pub const KEPT: &[(&str, u32)] = &[
    ("CAP_CHOWN", 0),
    ("CAP_DAC_OVERRIDE", 1),
    ("CAP_FOWNER", 3),
    ("CAP_FSETID", 4),
    ("CAP_KILL", 5),
    ("CAP_SETGID", 6),
    ("CAP_SETUID", 7),
    ("CAP_SETPCAP", 8),
    ("CAP_NET_BIND_SERVICE", 10),
    ("CAP_SYS_CHROOT", 18),
    ("CAP_SETFCAP", 31),
];

/// Held by the phase's holder and by no command. Harmless in itself: it
/// only lets a process set wake-up alarms.
pub const HOLDER_ONLY: (&str, u32) = ("CAP_WAKE_ALARM", 35);

/// The kept set as a capability bit mask.
pub fn kept_mask() -> u64 {
    KEPT.iter().fold(0u64, |mask, (_, bit)| mask | (1u64 << bit))
}

/// The highest capability number this kernel knows.
pub fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(63)
}

/// bubblewrap arguments that leave the holder the kept set and
/// [`HOLDER_ONLY`].
pub fn holder_bwrap_args() -> Vec<String> {
    let mut args = vec!["--cap-drop".to_string(), "ALL".to_string()];
    for (name, _) in KEPT.iter().chain([&HOLDER_ONLY]) {
        args.push("--cap-add".into());
        args.push((*name).into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dangerous_capabilities_are_not_kept() {
        let mask = kept_mask();
        for (name, bit) in [
            ("SYS_ADMIN", 21),
            ("MKNOD", 27),
            ("SYS_PTRACE", 19),
            ("NET_ADMIN", 12),
            ("SYS_MODULE", 16),
            ("SYS_RAWIO", 17),
            ("DAC_READ_SEARCH", 2),
            ("AUDIT_WRITE", 29),
        ] {
            assert_eq!(mask & (1 << bit), 0, "CAP_{name} must be dropped");
        }
        assert_ne!(mask & 1, 0, "CAP_CHOWN is needed by package managers");
        assert_eq!(mask & (1 << HOLDER_ONLY.1), 0, "commands must not hold the holder's own capability");
    }
}
