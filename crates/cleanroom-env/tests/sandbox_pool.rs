//! The sandbox backend with environments made ahead of need
//! (`Backend::keep_ready`): the whole conformance suite again, every
//! environment taken from the pool (its agent phase begun ahead, taken
//! over by the first outbound phase), then what only the pool promises.
//! Needs root and the base image.

mod conformance;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cleanroom_env::sandbox::SandboxBackend;
use cleanroom_env::{image, Backend, EnvSpec, Environment, Network};
use conformance::{sh, spec};

fn home(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cleanroom-env-pool-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn pooled(name: &str, size: usize) -> SandboxBackend {
    let backend = SandboxBackend::new(&home(name)).unwrap();
    backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).expect("base image");
    backend.keep_ready(size).unwrap();
    backend
}

fn backend() -> &'static SandboxBackend {
    static BACKEND: OnceLock<SandboxBackend> = OnceLock::new();
    BACKEND.get_or_init(|| pooled("conformance", 4))
}

conformance::conformance_tests!(backend);
conformance::host_mount_tests!(backend);
conformance::shared_kernel_tests!(backend);

/// The memory limit of environment `id`'s cgroup, as the host shows it.
fn memory_limit(id: &str) -> u64 {
    ["/sys/fs/cgroup/cleanroom/{id}/memory.max", "/sys/fs/cgroup/memory/cleanroom/{id}/memory.limit_in_bytes"]
        .iter()
        .find_map(|f| std::fs::read_to_string(f.replace("{id}", id)).ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no memory limit for {id}"))
}

fn environments(home: &Path) -> Vec<String> {
    let dirs = std::fs::read_dir(home.join("envs")).into_iter().flatten().flatten();
    dirs.map(|e| e.file_name().to_string_lossy().into_owned()).collect()
}

#[test]
fn each_environment_is_handed_out_once_and_fitted_to_its_spec() {
    let backend = pooled("once", 3);
    // The first of a shape is made on the spot; the pool then makes three.
    backend.create(&spec()).unwrap().destroy().unwrap();
    backend.wait_until_ready();
    assert_eq!(environments(&home("once")).len(), 3, "three wait");
    let specs: Vec<EnvSpec> =
        [1024, 2048, 768].iter().map(|&memory_mb| EnvSpec { memory_mb, ..spec() }).collect();
    let envs: Vec<Box<dyn Environment>> = std::thread::scope(|s| {
        let taking: Vec<_> = specs.iter().map(|spec| s.spawn(|| backend.create(spec).unwrap())).collect();
        taking.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let mut ids: Vec<&str> = envs.iter().map(|e| e.id()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "each environment went to one taker");
    let mut envs = envs;
    for (env, spec) in envs.iter_mut().zip(&specs) {
        assert_eq!(memory_limit(env.id()), spec.memory_mb << 20, "the limit of the spec it was taken for");
        env.begin_phase(Network::Outbound).unwrap();
        let (status, out) = sh(env.as_ref(), "ls /marker 2>/dev/null; touch /marker; echo fresh");
        assert!(status.success() && out.trim() == "fresh", "a fresh root, not another's: {out}");
        env.end_phase().unwrap();
    }
    for env in envs {
        env.destroy().unwrap();
    }
    // Asked for none, the pool goes, and everything it made with it.
    backend.wait_until_ready();
    backend.keep_ready(0).unwrap();
    assert_eq!(environments(&home("once")), Vec::<String>::new(), "the pool was drained");
}

#[test]
fn a_loopback_phase_does_not_take_over_the_outbound_one_begun_ahead() {
    let backend = pooled("loopback", 1);
    backend.create(&spec()).unwrap().destroy().unwrap();
    backend.wait_until_ready();
    let mut env = backend.create(&spec()).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (_, out) = sh(env.as_ref(), "cat /proc/net/route | wc -l");
    assert_eq!(out.trim(), "1", "no route out of a loopback-only phase (only the header): {out}");
    env.destroy().unwrap();
}

#[test]
fn dropping_the_backend_drains_its_pool() {
    let backend = pooled("drop", 2);
    backend.create(&spec()).unwrap().destroy().unwrap();
    backend.wait_until_ready();
    let waiting = environments(&home("drop"));
    assert_eq!(waiting.len(), 2);
    drop(backend);
    assert_eq!(environments(&home("drop")), Vec::<String>::new());
    for id in waiting {
        assert!(
            !Path::new("/sys/fs/cgroup/memory/cleanroom").join(&id).exists()
                && !Path::new("/sys/fs/cgroup/cleanroom").join(&id).exists(),
            "cgroup of {id} left"
        );
    }
}
