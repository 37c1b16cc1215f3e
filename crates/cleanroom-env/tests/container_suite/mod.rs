//! The container backend, for real: containers of the engine that
//! `crate::engine()` gives, as `scripts/container-engines.sh start` serves
//! it. Needs root and the base image (built on first use). It runs the
//! whole conformance suite, then what only the container backend has.

use std::sync::OnceLock;

use crate::{conformance, engine};
use cleanroom_env::container::ContainerBackend;
use cleanroom_env::{image, Backend, Network};
use conformance::{sh, spec};
use serde_json::json;

fn backend() -> &'static ContainerBackend {
    static BACKEND: OnceLock<ContainerBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        let kind = engine().version().unwrap().kind;
        let home = std::env::temp_dir().join(format!("cleanroom-container-test-{kind}"));
        let backend = ContainerBackend::with_engine(engine(), &home).unwrap();
        backend.sweep().expect("sweep");
        backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).expect("base image");
        backend
    })
}

conformance::conformance_tests!(backend);
conformance::host_mount_tests!(backend);
// The shared kernel's walls but one: the_phase_holder_cannot_be_traced_or_read
// (PID 1 is catatonit; see pid_1_is_catatonit_pausing_and_holds_nothing).
conformance::each_test!(backend, conformance::directly; the_walls_hold, the_syscall_filter_closes_the_keyring_and_io_uring, the_kernel_views_show_the_environment_not_the_host, the_hosts_neighbours_and_gateways_are_unroutable);

/// The containers of the engine that name `id` as the environment they are.
fn containers_of(id: &str) -> usize {
    let labelled = engine().containers_labelled("cleanroom.env").unwrap();
    labelled.iter().filter(|(_, labels)| labels["cleanroom.env"] == id).count()
}

#[test]
fn destroy_removes_the_container() {
    let mut env = backend().create(&spec()).unwrap();
    let id = env.id().to_string();
    assert_eq!(containers_of(&id), 1);
    env.begin_phase(Network::Outbound).unwrap();
    sh(env.as_ref(), "sleep 1000 & echo started");
    env.destroy().unwrap();
    assert_eq!(containers_of(&id), 0, "the container outlived destroy");
}

/// Between phases the container is stopped; a phase starts it with the
/// engine's own init and nothing of the image, which the agent may have
/// replaced: nothing it planted runs before the phase's seals are made.
#[test]
fn nothing_the_agent_planted_runs_when_a_phase_starts() {
    let mut env = backend().create(&spec()).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let plant = "for p in /usr/bin/sleep /usr/bin/catatonit /sbin/init /usr/bin/tini; do \
                 printf '#!/bin/sh\\necho ran > /planted-ran\\nexec /bin/true\\n' > $p; chmod +x $p; done; echo planted";
    let (status, out) = sh(env.as_ref(), plant);
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (_, out) = sh(env.as_ref(), "ls /planted-ran 2>&1");
    assert!(out.contains("No such file"), "a planted program ran at the phase's start: {out}");
    env.destroy().unwrap();
}

#[test]
fn the_sweep_removes_the_containers_of_dead_runs_only() {
    let live = backend().create(&spec()).unwrap();
    // No process has pid 0: the run this id names is dead.
    let dead = "0-0-0";
    let name = format!("cleanroom-sweep-test-{}", std::process::id());
    let made = engine()
        .create_container(
            Some(&name),
            json!({ "Image": base_reference(), "Cmd": ["true"], "Labels": { "cleanroom.env": dead } }),
        )
        .unwrap();
    let swept = backend().sweep().unwrap();
    assert!(swept.environments.contains(&dead.to_string()), "{:?}", swept.environments);
    assert_eq!(containers_of(dead), 0);
    assert_eq!(containers_of(live.id()), 1, "a live run's container was swept");
    let _ = engine().remove(&made);
    live.destroy().unwrap();
}

/// The reference the backend imported the base image as.
fn base_reference() -> String {
    backend();
    let base = image::ensure(image::DEFAULT_IMAGE, image::Flavour::Sandbox, None, &mut |_| {}).unwrap();
    let digest = base.digest.trim_start_matches("sha256:");
    format!("cleanroom/{}:{}", image::DEFAULT_IMAGE, &digest[..16])
}

/// The exception to the suite (docs/backends.md): PID 1 of a container is
/// the host's catatonit, pausing, with the container's own capabilities, so root in
/// the container may trace it, where the sandbox's holder keeps
/// capabilities its commands lack. It holds nothing of the host's: its
/// output, which root may write through /proc/1/fd, goes to no file (the
/// container's log driver is `none`), and the harness acts on it only
/// through the engine.
#[test]
fn pid_1_is_catatonit_pausing_and_holds_nothing() {
    let mut env = backend().create(&spec()).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (_, init) = sh(env.as_ref(), "tr '\\0' ' ' < /proc/1/cmdline");
    assert_eq!(init.trim(), "/run/cleanroom-init -P");
    let (status, out) = sh(env.as_ref(), "head -c 1000000 /dev/zero > /proc/1/fd/1 && echo written");
    assert!(status.success(), "{out}");
    let labelled = engine().containers_labelled("cleanroom.env").unwrap();
    let (container, _) = labelled.iter().find(|(_, l)| l["cleanroom.env"] == env.id()).unwrap();
    let state = engine().inspect(container).unwrap();
    assert_eq!(state["HostConfig"]["LogConfig"]["Type"], "none");
    let log = state["LogPath"].as_str().unwrap_or_default();
    let logged = std::fs::metadata(log).map(|m| m.len()).unwrap_or(0);
    assert_eq!(logged, 0, "PID 1's output reached {log}");
    env.destroy().unwrap();
}

/// Commands run through the image's `env` and `sh` (the wrapper that
/// clears the environment and tells the pid). An agent that removes or
/// breaks them makes later commands fail as commands do, exit 126 or 127, never
/// the harness: that is the agent's failure, not the infrastructure's.
#[test]
fn a_command_whose_wrapper_the_agent_removed_fails_as_a_command() {
    let mut env = backend().create(&spec()).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "rm /usr/bin/env && echo removed");
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let req = cleanroom_env::ExecRequest::login_shell("true", "/", vec![]);
    let out = env
        .exec(&req, &cleanroom_env::CancelToken::new().unwrap())
        .expect("a command's failure, not an error");
    // The engine's own code for a command it could not start: Podman's
    // 127, Docker's 126.
    assert!(
        matches!(out.status, cleanroom_env::ExitStatus::Exited(126 | 127)),
        "{:?}: {}",
        out.status,
        out.combined.to_string_lossy()
    );
    env.destroy().unwrap();
}

/// A build context under the system's temporary directory, removed on drop.
/// Its image is named after `name` alone, so each run of the tests finds the
/// image the last one built instead of leaving one more in the engine.
struct Context(std::path::PathBuf);

impl Context {
    fn new(name: &str, dockerfile: &str) -> Context {
        let dir = std::env::temp_dir()
            .join(format!("cleanroom-build-test-{}", std::process::id()))
            .join(format!("cleanroom-test-build-{name}"));
        let context = dir.join("environment");
        std::fs::create_dir_all(&context).unwrap();
        std::fs::write(context.join("Dockerfile"), dockerfile).unwrap();
        std::fs::write(context.join("data.txt"), "from the context\n").unwrap();
        Context(dir)
    }

    fn spec(&self) -> cleanroom_env::EnvSpec {
        cleanroom_env::EnvSpec { build: Some(self.0.join("environment")), ..spec() }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.parent().unwrap_or(&self.0));
    }
}

/// `environment.build`: the Dockerfile builds the environment's image
/// FROM the imported base, with nothing pulled; commands start with its
/// `ENV`; what the build made is the image's, so the env-diff lists only
/// what the environment's own commands change.
#[test]
fn a_dockerfile_builds_the_environment_from_the_base_image() {
    let context = Context::new(
        "ok",
        &format!(
            "FROM cleanroom/{}\nRUN mkdir -p /opt/built && echo built > /opt/built/mark && rm /etc/issue\n\
             COPY data.txt /opt/built/data.txt\nENV BUILT_BY=dockerfile LANG=C.UTF-8\n",
            image::DEFAULT_IMAGE
        ),
    );
    let mut env = backend().create(&context.spec()).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(
        env.as_ref(),
        "cat /opt/built/mark /opt/built/data.txt; test ! -e /etc/issue && echo gone; echo \"$BUILT_BY $LANG\"",
    );
    assert!(status.success(), "{out}");
    // The image's variables, under the command's own (the suite's PATH).
    assert_eq!(out, "built\nfrom the context\ngone\ndockerfile C.UTF-8\n");
    let (status, out) = sh(env.as_ref(), "echo agent > /opt/built/mark && touch /opt/new");
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    let diff = env.diff(&cleanroom_env::CancelToken::new().unwrap()).unwrap();
    let lines: Vec<String> = diff.changes.iter().map(|c| format!("{} {}", c.kind.letter(), c.path)).collect();
    assert_eq!(lines, ["M /opt/built/mark", "A /opt/new"]);
    // A phase after the first runs in the same image.
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "cat /opt/built/mark");
    assert_eq!((status.success(), out.as_str()), (true, "agent\n"));
    env.destroy().unwrap();
}

/// A build that fails, or names an image the engine has not (nothing is
/// pulled), is the environment's error, saying why.
#[test]
fn a_failed_build_says_why() {
    let failing = Context::new(
        "fails",
        &format!("FROM cleanroom/{}\nRUN echo about to fail && false\n", image::DEFAULT_IMAGE),
    );
    let err = backend().create(&failing.spec()).map(drop).unwrap_err().to_string();
    assert!(err.contains("about to fail"), "{err}");
    let elsewhere = Context::new("pulls", "FROM registry.invalid/nothing:1\nRUN true\n");
    let err = backend().create(&elsewhere.spec()).map(drop).unwrap_err().to_string();
    assert!(err.contains("registry.invalid/nothing"), "{err}");
    // A step whose container the runtime cannot start is tried again where
    // the engine says so (Docker's glitch looks the same; build.rs), then
    // is the environment's error.
    let unstartable = Context::new(
        "unstartable",
        &format!("FROM cleanroom/{}\nRUN [\"/no/such/program\"]\n", image::DEFAULT_IMAGE),
    );
    let err = backend().create(&unstartable.spec()).map(drop).unwrap_err().to_string();
    assert!(err.contains("/no/such/program"), "{err}");
    let kind = engine().version().unwrap().kind;
    assert_eq!(err.contains("the build was tried "), kind == "docker", "{kind}: {err}");
}
