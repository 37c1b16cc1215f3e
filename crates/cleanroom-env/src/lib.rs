//! Environments: fresh machines made from a base image, in which agents and
//! the hidden verifier run. See `backend.rs` for the interface.

mod access;
mod backend;
mod bounds;
mod cancel;
pub mod container;
mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod fanotify;
mod files;
mod gpu_pool;
pub mod image;
mod last_line;
mod output;
pub mod privilege;
mod registry;
mod removal;
mod rootfs;
pub mod sandbox;
pub mod seal;
mod slurm_options;
pub mod ssh;
pub mod time;
pub mod user_namespace;
pub mod vm;

pub use access::{AccessWatch, Accessed, FileId, Use};
pub use backend::{
    Backend, EnvDiff, EnvSpec, Environment, ExecOutcome, ExecRequest, ExitStatus, GpuDriver, HostMount,
    LimitState, Limits, MachineRecord, Needs, Network, PathChange, PathChangeKind, PhaseOptions,
    PreparedImage, SweepReport, Unmet,
};
pub use bounds::{Cancelled, WalkLimits, MAX_DEPTH, MAX_ENTRIES, MAX_NAME_BYTES, MAX_TIME};
pub use cancel::CancelToken;
pub use error::EnvError;
pub use files::Files;
pub use last_line::LastLine;
pub use output::Captured;
pub use registry::{open_backend, HostConfig, BACKENDS};
pub use rootfs::{Entry, EntryKind, Globs, Manifest, ReadError, RootFs};
pub use slurm_options::SlurmOptions;
