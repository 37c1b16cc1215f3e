//! The sandbox backend, for real: namespaces, overlayfs, cgroups, NAT.
//! Needs root and the base image (built on first use, about a minute). It
//! runs the whole conformance suite, then what only the sandbox has.

mod conformance;

use std::path::PathBuf;
use std::sync::OnceLock;

use cleanroom_env::sandbox::SandboxBackend;
use cleanroom_env::{image, Backend, Environment, Network};
use conformance::{host_processes_with, sh, spec};

fn home() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cleanroom-env-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn backend() -> &'static SandboxBackend {
    static BACKEND: OnceLock<SandboxBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        let backend = SandboxBackend::new(&home()).unwrap();
        backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).expect("base image");
        backend
    })
}

conformance::conformance_tests!(backend);
conformance::host_mount_tests!(backend);
conformance::shared_kernel_tests!(backend);

fn env_with(spec: &cleanroom_env::EnvSpec) -> Box<dyn Environment> {
    backend().create(spec).expect("create environment")
}

#[test]
fn only_the_kept_capabilities_remain() {
    let mut env = env_with(&spec());
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (_, out) = sh(env.as_ref(), "grep CapBnd /proc/self/status");
    assert_eq!(out.trim(), "CapBnd:\t00000000800405fb", "only the kept capabilities");
    env.destroy().unwrap();
}

#[test]
fn destroy_removes_the_environments_directory_and_cgroups() {
    let mut env = env_with(&spec());
    let id = env.id().to_string();
    env.begin_phase(Network::Outbound).unwrap();
    sh(env.as_ref(), "sleep 1000 & echo started");
    env.destroy().unwrap();
    assert!(!home().join("envs").join(&id).exists(), "environment directory left behind");
    for parent in
        ["/sys/fs/cgroup/memory/cleanroom", "/sys/fs/cgroup/pids/cleanroom", "/sys/fs/cgroup/cleanroom"]
    {
        assert!(!std::path::Path::new(parent).join(&id).exists(), "cgroup left behind in {parent}");
    }
}

#[test]
fn the_nat_runs_in_the_environments_cgroup() {
    let mut env = env_with(&spec());
    env.begin_phase(Network::Outbound).unwrap();
    let slirps = host_processes_with("slirp4netns");
    assert!(
        slirps
            .iter()
            .any(|pid| std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
                .is_ok_and(|c| c.contains(env.id()))),
        "no slirp4netns in the environment's cgroup"
    );
    env.destroy().unwrap();
}

/// Whether process `pid` holds `path` open.
fn holds(pid: u32, path: &std::path::Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == path))
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn helper_processes_hold_none_of_the_harness_files() {
    let mut env = env_with(&spec());
    env.begin_phase(Network::LoopbackOnly).unwrap();
    // Stands for the run's lock file, which must be free once the harness dies.
    let marker = home().join(format!("held-{}", std::process::id()));
    let held = std::fs::File::create(&marker).unwrap();
    // The command's name is unique to this test: its parent on the host is
    // the forked helper that waits for it (other tests fork helpers too).
    let name = format!("cleanroom-fd-probe-{}", std::process::id());
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let (mut holders, mut saw_helper) = (Vec::new(), false);
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                for command in host_processes_with(&name) {
                    if let Some(helper) = parent_of(command) {
                        saw_helper = true;
                        if holds(helper, &marker) && !holders.contains(&helper) {
                            holders.push(helper);
                        }
                    }
                }
            }
            (holders, saw_helper)
        });
        sh(env.as_ref(), &format!("exec -a {name} sleep 3"));
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let (holders, saw_helper) = watcher.join().unwrap();
        assert!(saw_helper, "the command and its helper should have been seen running");
        assert!(holders.is_empty(), "the forked helper {holders:?} held a harness file");
    });
    drop(held);
    env.destroy().unwrap();
}

#[test]
fn all_environments_together_leave_the_host_processes() {
    let env = env_with(&spec());
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let parent = ["/sys/fs/cgroup/cleanroom/pids.max", "/sys/fs/cgroup/pids/cleanroom/pids.max"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .expect("the parent cgroup has a pids limit");
    let limit: u64 = parent.trim().parse().unwrap_or_else(|_| panic!("pids.max is {parent}"));
    assert!(limit <= pid_max / 2, "all environments together may hold {limit} of {pid_max} pids");
    env.destroy().unwrap();
}

/// GPU passthrough's mounts, for real (bubblewrap, the overlay), with
/// stand-ins for what a GPU host has: /dev/null and /dev/zero as the two
/// GPUs' nodes, /dev/full as the control node, a file as the driver's
/// library and a script as its tool. Whether NVIDIA's driver works through
/// them needs a GPU host (docs/backends.md says how to check one).
mod gpus {
    use super::*;
    use cleanroom_env::sandbox::{Gpu, GpuHost};
    use cleanroom_env::{EnvSpec, GpuDriver};
    use std::os::unix::fs::PermissionsExt;

    fn backend(driver_dir: &std::path::Path) -> SandboxBackend {
        let library = driver_dir.join("libcuda.so.570.124.06");
        std::fs::write(&library, "stand-in for libcuda").unwrap();
        let smi = driver_dir.join("nvidia-smi");
        std::fs::write(&smi, "#!/bin/sh\necho stand-in for nvidia-smi\n").unwrap();
        std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).unwrap();
        let host = GpuHost {
            gpus: vec![
                Gpu { index: 0, node: "/dev/null".into(), name: Some("first".into()) },
                Gpu { index: 1, node: "/dev/zero".into(), name: Some("second".into()) },
            ],
            control: vec![("nvidiactl".into(), "/dev/full".into())],
            libraries: vec![("libcuda.so.1".into(), library)],
            programs: vec![("nvidia-smi".into(), smi)],
            driver: Some("570.124.06".into()),
        };
        let backend = SandboxBackend::new(&home()).unwrap().with_gpus(host);
        backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).expect("base image");
        backend
    }

    fn gpu_spec(driver: GpuDriver) -> EnvSpec {
        EnvSpec { gpus: 1, gpu_driver: driver, ..spec() }
    }

    const LIBCUDA: &str = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";

    #[test]
    fn an_environment_sees_its_gpus_nodes_and_the_drivers_files_read_only_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let backend = backend(dir.path());
        let mut first = backend.create(&gpu_spec(GpuDriver::Host)).unwrap();
        let mut second = backend.create(&gpu_spec(GpuDriver::Host)).unwrap();
        let mut shown = Vec::new();
        for env in [&mut first, &mut second] {
            env.begin_phase(Network::LoopbackOnly).unwrap();
            let (_, nodes) = sh(env.as_ref(), "ls /dev | grep nvidia | tr '\\n' ' '");
            shown.push(nodes.trim().to_string());
            let (status, out) =
                sh(env.as_ref(), &format!("nvidia-smi && cat {LIBCUDA} && test -c /dev/nvidiactl"));
            assert!(status.success(), "{out}");
            assert_eq!(out, "stand-in for nvidia-smi\nstand-in for libcuda");
            let (status, out) = sh(env.as_ref(), &format!("echo x > {LIBCUDA} || echo refused"));
            assert!(
                status.success() && out.contains("Read-only file system") && out.contains("refused"),
                "{out}"
            );
            // Of the host's /dev, only bubblewrap's own few nodes and these.
            let (_, all) = sh(env.as_ref(), "ls /dev | grep -v -e nvidia -e shm -e pts | tr '\\n' ' '");
            assert_eq!(all.trim(), "core fd full null ptmx random stderr stdin stdout tty urandom zero");
        }
        shown.sort();
        assert_eq!(shown, ["nvidia0 nvidiactl", "nvidia1 nvidiactl"], "each holds its own GPU");
        let machine = first.machine().expect("a GPU environment is on the record");
        assert_eq!((machine.gpus_declared, machine.driver.as_deref()), (1, Some("570.124.06")));
        for mut env in [first, second] {
            env.end_phase().unwrap();
            let diff = env.diff(&cleanroom_env::CancelToken::new().unwrap()).unwrap();
            assert!(diff.changes.is_empty(), "the driver's mounts left {:?}", diff.changes);
            env.destroy().unwrap();
        }
    }

    #[test]
    fn without_the_hosts_driver_an_environment_gets_the_nodes_only() {
        let dir = tempfile::tempdir().unwrap();
        let backend = backend(dir.path());
        let mut env = backend.create(&gpu_spec(GpuDriver::Agent)).unwrap();
        env.begin_phase(Network::LoopbackOnly).unwrap();
        let (_, out) = sh(
            env.as_ref(),
            &format!("ls /dev | grep nvidia | tr '\\n' ' '; command -v nvidia-smi || echo no-smi; ls {LIBCUDA} 2>&1"),
        );
        assert!(out.starts_with("nvidia1 nvidiactl no-smi\n") && out.contains("No such file"), "{out}");
        env.destroy().unwrap();
    }
}
