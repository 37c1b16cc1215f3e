//! The Engine API client against Podman's API service (engine_suite/).

mod engine_suite;
mod engines;

use cleanroom_env::container::Engine;

const KIND: &str = "podman";

fn engine() -> Engine {
    engines::podman()
}
