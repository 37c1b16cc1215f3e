//! The rootless sandbox's entry: an ordinary user's `cleanroom` runs
//! itself again as root of a new user namespace (cleanroom_env's
//! user_namespace.rs), where it may make the sandbox's namespaces and
//! mounts (docs/rootless.md). This process stays outside: it passes
//! SIGINT, SIGTERM and SIGHUP on, and exits as the inner one did.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Command;

use cleanroom_env::user_namespace::{self, IdMaps};

use crate::error::CliError;

/// Runs this command again in a new user namespace and exits as it does.
/// Returns only with an error, before the command started there.
pub fn run_in_user_namespace() -> Result<std::convert::Infallible, CliError> {
    let maps = IdMaps::for_this_user()?;
    let exe =
        std::env::current_exe().map_err(|e| CliError::Internal(format!("finding this program: {e}")))?;
    let mut args = std::env::args_os();
    let mut cmd = Command::new(&exe);
    cmd.arg0(args.next().unwrap_or_default()).args(args);
    let watched = waited_signals();
    // SAFETY: raw system calls only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Its own process group: a Ctrl-C reaches it once, through us.
            if libc::setpgid(0, 0) != 0
                || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // SIGCHLD is ours to wait on; the command blocks the rest itself.
            let mut chld: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut chld);
            libc::sigaddset(&mut chld, libc::SIGCHLD);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &chld, std::ptr::null_mut());
            Ok(())
        });
    }
    // SAFETY: a valid set; blocked so that sigwait below receives them.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &watched, std::ptr::null_mut()) };
    let mut child = user_namespace::spawn(&mut cmd, &maps)?;
    let child_pid = child.id() as i32;
    loop {
        let mut sig = 0;
        // SAFETY: waits for one of the blocked signals.
        if unsafe { libc::sigwait(&watched, &mut sig) } != 0 {
            continue;
        }
        if sig != libc::SIGCHLD {
            // SAFETY: plain kill(2) of our child.
            unsafe { libc::kill(child_pid, sig) };
            continue;
        }
        if let Ok(Some(status)) = child.try_wait() {
            std::process::exit(status.code().or(status.signal().map(|s| 128 + s)).unwrap_or(1));
        }
    }
}

/// The signals this process waits on: the child's end, and those it
/// passes on.
fn waited_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; the calls initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}
