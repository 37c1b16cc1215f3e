//! The guest agent of the `vm` backend. The host's initramfs starts it as
//! PID 1 (init.rs); it mounts the trial's disk and then either boots the
//! disk's own system with itself beside it (a phase), or stays alone to
//! serve the harness's file work between phases. Either way it answers the
//! harness over the virtio-serial port (serve.rs), never over a network.
//!
//! `cleanroom-guest --serve-stdio ROOT` serves on standard input and output
//! instead, with ROOT as the machine's root: the protocol's tests use it.
//! `cleanroom-guest --serve-host NETWORK` serves a host that the harness
//! reaches over SSH (host.rs).

mod changes;
mod exec;
mod host;
mod init;
mod relay;
mod serve;
mod show;
mod start;

use cleanroom_env::vm::protocol::Mode;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let served = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [_, "--serve-stdio", root] => serve::serve(
            Box::new(std::io::stdin()),
            Box::new(std::io::stdout()),
            root,
            Mode::Service,
            serve::Limits::none(),
            serve::Place::VirtualMachine,
        ),
        [_, "--serve-host", network] => host::serve(network),
        [_, "--reboot"] => host::reboot(),
        // SAFETY: getpid has no preconditions.
        _ if unsafe { libc::getpid() } == 1 => init::run(),
        _ => {
            eprintln!(
                "usage: cleanroom-guest --serve-stdio ROOT | --serve-host outbound|loopback \
                 (as PID 1, it is a virtual machine's init)"
            );
            std::process::exit(2);
        }
    };
    if let Err(e) = served {
        eprintln!("cleanroom-guest: {e}");
        std::process::exit(1);
    }
}
