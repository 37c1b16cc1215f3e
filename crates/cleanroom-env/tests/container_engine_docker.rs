//! The Engine API client against Docker's dockerd (engine_suite/).

mod engine_suite;
mod engines;

use cleanroom_env::container::Engine;

const KIND: &str = "docker";

fn engine() -> Engine {
    engines::docker()
}
