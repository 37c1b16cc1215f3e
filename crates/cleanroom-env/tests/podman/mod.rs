//! Podman's API service, as `scripts/container-engines.sh start` serves it
//! (CI's .ci/run starts it), for the container backend's tests.

use std::path::Path;

use cleanroom_env::container::Engine;

pub const PODMAN_SOCKET: &str = "/run/cleanroom-test/podman.sock";

pub fn engine() -> Engine {
    assert!(
        Path::new(PODMAN_SOCKET).exists(),
        "{PODMAN_SOCKET} is missing: run `bash scripts/container-engines.sh start` first"
    );
    Engine::at(Path::new(PODMAN_SOCKET))
}
