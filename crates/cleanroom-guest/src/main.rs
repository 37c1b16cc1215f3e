//! The guest agent of the `vm` backend. The host's initramfs starts it as
//! PID 1 (init.rs); it mounts the trial's disk and then either boots the
//! disk's own system with itself beside it (a phase), or stays alone to
//! serve the harness's file work between phases. Either way it answers the
//! harness over the virtio-serial port (serve.rs), never over a network.
//!
//! `cleanroom-guest --serve-stdio ROOT` serves on standard input and output
//! instead, with ROOT as the machine's root: the protocol's tests use it.

mod changes;
mod exec;
mod init;
mod relay;
mod serve;
mod show;
mod start;

use cleanroom_env::vm::protocol::Mode;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, root] = args.as_slice() {
        if flag == "--serve-stdio" {
            let served = serve::serve(
                Box::new(std::io::stdin()),
                Box::new(std::io::stdout()),
                root,
                Mode::Service,
                serve::Limits::none(),
            );
            if let Err(e) = served {
                eprintln!("cleanroom-guest: {e}");
                std::process::exit(1);
            }
            return;
        }
    }
    // SAFETY: getpid has no preconditions.
    if unsafe { libc::getpid() } != 1 {
        eprintln!("usage: cleanroom-guest --serve-stdio ROOT (as PID 1, it is a virtual machine's init)");
        std::process::exit(2);
    }
    init::run();
}
