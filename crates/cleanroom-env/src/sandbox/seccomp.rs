//! The seccomp filter of every command in an environment.
//!
//! It denies what Docker's default profile denies and a deployment does not
//! need, whatever the capabilities say (the capability set is a second
//! wall, not the only one):
//!
//! - new user namespaces: inside one, root regains every capability over
//!   fresh namespaces of its own, a large kernel attack surface. `clone3`
//!   passes its flags in memory, which a filter cannot read, so it fails
//!   with ENOSYS and the C library falls back to `clone`, whose flags it can;
//! - the kernel keyring (`add_key`, `keyctl`, `request_key`): keyrings are
//!   not namespaced, so root inside would share the host root's keys and
//!   could carry data from one trial to the next through them;
//! - io_uring, whose operations bypass any filter of the calls they stand
//!   for; bpf, perf events and userfaultfd (kernel attack surface);
//! - everything that needs a capability the environment never has (mounts,
//!   modules, kexec, reboot, clocks, swap, quotas, accounting, raw I/O,
//!   file handles, setns, the kernel log), so that a mistake in the
//!   capability set does not open them;
//! - the x32 ABI's numbers (same architecture, bit 30 set), which would
//!   otherwise pass every comparison below.
//!
//! ptrace stays allowed (debuggers and strace of the agent's own processes);
//! the phase's PID 1 is protected from it by its capabilities (caps.rs).

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;

/// x86-64's marker of an x32 system call number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

// Offsets into struct seccomp_data.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian).
const OFFSET_ARG0_LOW: u32 = 16;

/// System calls that fail with EPERM inside an environment.
pub(crate) const DENIED: &[(&str, libc::c_long)] = &[
    ("add_key", libc::SYS_add_key),
    ("keyctl", libc::SYS_keyctl),
    ("request_key", libc::SYS_request_key),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("setns", libc::SYS_setns),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("syslog", libc::SYS_syslog),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("lookup_dcookie", libc::SYS_lookup_dcookie),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter program, built before fork (no allocation after it).
pub(crate) fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let load = (BPF_LD | BPF_W | BPF_ABS) as u16;
    let jeq = (BPF_JMP | BPF_JEQ | BPF_K) as u16;
    let jge = (BPF_JMP | BPF_JGE | BPF_K) as u16;
    let jset = (BPF_JMP | BPF_JSET | BPF_K) as u16;
    let ret = (BPF_RET | BPF_K) as u16;
    let eperm = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let enosys = SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    let mut prog = vec![
        // A foreign architecture's system call numbers mean other things.
        stmt(load, OFFSET_ARCH),
        jump(jeq, AUDIT_ARCH, 1, 0),
        stmt(ret, SECCOMP_RET_KILL_PROCESS),
        stmt(load, OFFSET_NR),
        jump(jge, X32_SYSCALL_BIT, 0, 1),
        stmt(ret, enosys),
        jump(jeq, libc::SYS_clone3 as u32, 0, 1),
        stmt(ret, enosys),
    ];
    for (_, nr) in DENIED {
        prog.push(jump(jeq, *nr as u32, 0, 1));
        prog.push(stmt(ret, eperm));
    }
    prog.extend([
        jump(jeq, libc::SYS_unshare as u32, 1, 0),
        jump(jeq, libc::SYS_clone as u32, 0, 3),
        // unshare or clone: look at the flags.
        stmt(load, OFFSET_ARG0_LOW),
        jump(jset, libc::CLONE_NEWUSER as u32, 0, 1),
        stmt(ret, eperm),
        stmt(ret, SECCOMP_RET_ALLOW),
    ]);
    prog
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one system call, as the kernel would.
    fn verdict(nr: u32, arg0: u32) -> u32 {
        let prog = program();
        let data = |offset: u32| match offset {
            OFFSET_NR => nr,
            OFFSET_ARCH => AUDIT_ARCH,
            OFFSET_ARG0_LOW => arg0,
            other => panic!("the filter reads offset {other}"),
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let ins = prog[pc];
            let class = ins.code & 0x07;
            match class as u32 {
                libc::BPF_LD => acc = data(ins.k),
                libc::BPF_RET => return ins.k,
                libc::BPF_JMP => {
                    let taken = match (ins.code & 0xf0) as u32 {
                        libc::BPF_JEQ => acc == ins.k,
                        libc::BPF_JGE => acc >= ins.k,
                        libc::BPF_JSET => acc & ins.k != 0,
                        op => panic!("unexpected jump {op:#x}"),
                    };
                    pc += usize::from(if taken { ins.jt } else { ins.jf });
                }
                other => panic!("unexpected instruction class {other}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn denied_calls_fail_with_eperm_and_others_pass() {
        for (name, nr) in DENIED {
            assert_eq!(verdict(*nr as u32, 0), SECCOMP_RET_ERRNO | libc::EPERM as u32, "{name}");
        }
        for nr in [libc::SYS_read, libc::SYS_openat, libc::SYS_ptrace, libc::SYS_execve] {
            assert_eq!(verdict(nr as u32, 0), SECCOMP_RET_ALLOW, "{nr}");
        }
    }

    #[test]
    fn user_namespaces_are_refused_in_every_form() {
        let newuser = libc::CLONE_NEWUSER as u32;
        assert_eq!(verdict(libc::SYS_unshare as u32, newuser), SECCOMP_RET_ERRNO | libc::EPERM as u32);
        assert_eq!(verdict(libc::SYS_clone as u32, newuser), SECCOMP_RET_ERRNO | libc::EPERM as u32);
        assert_eq!(verdict(libc::SYS_clone3 as u32, 0), SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
        assert_eq!(verdict(libc::SYS_clone as u32, libc::SIGCHLD as u32), SECCOMP_RET_ALLOW);
        // The same call through the x32 numbering.
        let x32_unshare = libc::SYS_unshare as u32 | X32_SYSCALL_BIT;
        assert_eq!(verdict(x32_unshare, newuser), SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
    }

    #[test]
    fn the_program_fits_the_kernels_limit_and_its_jumps() {
        let prog = program();
        assert!(prog.len() < 4096);
        for (i, ins) in prog.iter().enumerate().filter(|(_, ins)| u32::from(ins.code & 0x07) == libc::BPF_JMP)
        {
            assert!(i + 1 + usize::from(ins.jt.max(ins.jf)) < prog.len(), "jump out of the program at {i}");
        }
    }
}
