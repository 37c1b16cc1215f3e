//! The container engines that `scripts/container-engines.sh start` serves
//! (CI's .ci/run starts them) for the container backend's tests: Podman's
//! API service and Docker's dockerd, each at a socket of its own.

use std::path::Path;

use cleanroom_env::container::Engine;

pub const PODMAN_SOCKET: &str = "/run/cleanroom-test/podman.sock";
pub const DOCKER_SOCKET: &str = "/run/cleanroom-test/docker.sock";

#[allow(dead_code)] // Each test binary uses one of the two.
pub fn podman() -> Engine {
    at(PODMAN_SOCKET)
}

#[allow(dead_code)]
pub fn docker() -> Engine {
    at(DOCKER_SOCKET)
}

fn at(socket: &str) -> Engine {
    assert!(
        Path::new(socket).exists(),
        "{socket} is missing: run `bash scripts/container-engines.sh start` first"
    );
    Engine::at(Path::new(socket))
}
