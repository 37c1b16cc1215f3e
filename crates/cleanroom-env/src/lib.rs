//! Environments: fresh machines made from a base image, in which agents and
//! the hidden verifier run. See `backend.rs` for the interface.

mod backend;
mod cancel;
mod error;
mod output;
mod rootfs;

pub use backend::{
    Backend, EnvSpec, Environment, ExecOutcome, ExecRequest, ExitStatus, LimitState, Limits,
    Network,
};
pub use cancel::CancelToken;
pub use error::EnvError;
pub use output::Captured;
pub use rootfs::RootFs;
