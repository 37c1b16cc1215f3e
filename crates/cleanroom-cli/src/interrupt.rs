//! Ctrl-C: the first SIGINT (or SIGTERM) fires the run's cancel token, so
//! running trials stop, their environments are destroyed and the run stays
//! resumable; a second one exits at once (the next command sweeps).

use std::io::Write;

use cleanroom_env::CancelToken;

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; the calls initialise it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks the signals in the calling thread and every thread it starts.
pub fn block_signals() {
    let set = signal_set();
    // SAFETY: a valid set; the old mask is not needed.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// Starts the thread that turns signals into `cancel`.
pub fn watch(cancel: CancelToken) {
    std::thread::spawn(move || {
        let set = signal_set();
        let mut count = 0;
        loop {
            let mut sig = 0;
            // SAFETY: waits for one of the blocked signals.
            if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
                continue;
            }
            count += 1;
            if count > 1 {
                let _ = writeln!(std::io::stderr(), "cleanroom: interrupted again; exiting now");
                std::process::exit(130);
            }
            let _ = writeln!(
                std::io::stderr(),
                "cleanroom: interrupting: stopping running trials (again to exit at once)"
            );
            cancel.cancel();
        }
    });
}
