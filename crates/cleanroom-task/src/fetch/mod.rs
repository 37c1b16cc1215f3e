//! Fetching a task's artifact into a host directory: copy, unpack, clone or
//! download, then lay overlay/ over it. See `materialize.rs`.

mod archive;
mod crates;
mod debian;
mod error;
pub(crate) mod git;
mod http;
mod materialize;
mod pypi;
pub(crate) mod tree;

pub use error::FetchError;
pub use materialize::{materialize_artifact, materialize_artifact_with, ArtifactRecord, FetchOptions};
