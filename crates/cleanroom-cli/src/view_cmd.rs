//! `cleanroom view [RUNS_DIR] [--port N] [--bind ADDR]`: serves the
//! viewer (cleanroom_view) until interrupted.

use std::net::SocketAddr;

use cleanroom_view::Library;

use crate::args::ViewArgs;
use crate::error::{input, internal, CliError};

pub fn view(args: ViewArgs) -> Result<(), CliError> {
    if !args.runs_dir.is_dir() {
        return Err(input(format!(
            "{}: no such directory of runs: give the --out of `cleanroom run` (default ./runs)",
            args.runs_dir.display()
        )));
    }
    let addr = SocketAddr::new(args.bind, args.port);
    let dir = args.runs_dir.clone();
    cleanroom_view::serve(Library::new(args.runs_dir), addr, |bound| {
        eprintln!("cleanroom: viewing {} at http://{bound}/ (Ctrl-C stops)", dir.display());
    })
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::AddrInUse
        | std::io::ErrorKind::AddrNotAvailable
        | std::io::ErrorKind::PermissionDenied => {
            input(format!("cannot listen on {addr}: {e}: pick another --port or --bind"))
        }
        _ => internal(format!("viewer: {e}")),
    })
}
