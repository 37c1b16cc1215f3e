//! The container backend on Docker's dockerd: the conformance suite and
//! what only the container backend has (container_suite/).

mod conformance;
mod container_suite;
mod engines;

use cleanroom_env::container::Engine;

fn engine() -> Engine {
    engines::docker()
}
