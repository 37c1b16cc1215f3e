//! The `container` backend (backend.rs, environment.rs) and its way to a
//! container engine: Docker's, or Podman's API service, through the Docker
//! Engine API.

mod backend;
mod build;
pub mod engine;
mod environment;
pub mod exec;
mod frames;
mod http;
mod profile;
mod shown;

pub use backend::ContainerBackend;
pub use engine::{Engine, EngineVersion, ExecStreams};
pub use frames::{next as next_frame, Stream};
