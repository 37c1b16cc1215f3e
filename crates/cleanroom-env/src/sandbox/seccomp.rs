//! A seccomp filter for every command in an environment: no new user
//! namespaces. Inside one, root would regain every capability over fresh
//! namespaces of its own, a large kernel attack surface that nothing a
//! deployment does needs. `clone3` passes its flags in memory, which a
//! filter cannot read, so it fails with ENOSYS and the C library falls back
//! to `clone`, whose flags it can (as Docker's default profile does).

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;

// Offsets into struct seccomp_data.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian).
const OFFSET_ARG0_LOW: u32 = 16;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter program, built before fork (no allocation after it).
pub(crate) fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let load = (BPF_LD | BPF_W | BPF_ABS) as u16;
    let jeq = (BPF_JMP | BPF_JEQ | BPF_K) as u16;
    let jset = (BPF_JMP | BPF_JSET | BPF_K) as u16;
    let ret = (BPF_RET | BPF_K) as u16;
    vec![
        // 0: a foreign architecture's system call numbers mean other things.
        stmt(load, OFFSET_ARCH),
        jump(jeq, AUDIT_ARCH, 1, 0),
        stmt(ret, SECCOMP_RET_KILL_PROCESS),
        // 3
        stmt(load, OFFSET_NR),
        jump(jeq, libc::SYS_clone3 as u32, 0, 1),
        stmt(ret, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        // 6
        jump(jeq, libc::SYS_unshare as u32, 1, 0),
        jump(jeq, libc::SYS_clone as u32, 0, 3),
        // 8: unshare or clone: look at the flags.
        stmt(load, OFFSET_ARG0_LOW),
        jump(jset, libc::CLONE_NEWUSER as u32, 0, 1),
        stmt(ret, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        // 11
        stmt(ret, SECCOMP_RET_ALLOW),
    ]
}
