//! The rootless sandbox (docs/rootless.md), for real: the sandbox backend
//! run by an ordinary user as root of a user namespace. Run as root, each
//! test starts this test binary again as the user `cleanroom-test`
//! (scripts/rootless-user.sh makes it, with subordinate ids) in a user
//! namespace of its own, where the test itself runs. The base image is the
//! user's own, built there without root on first use.
//!
//! It runs the conformance suite but for enforced limits, which the
//! rootless sandbox does not have, every environment allowed to be
//! unlimited: what it does instead (limits recorded as unenforced,
//! environments refused without `allow_unlimited`) is tested here.

mod conformance;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use cleanroom_env::privilege::{self, Privilege};
use cleanroom_env::sandbox::SandboxBackend;
use cleanroom_env::user_namespace::{self, IdMaps};
use cleanroom_env::{image, Backend, EnvError, EnvSpec, LimitState, Network};
use conformance::{sh, spec, Creating};

/// The rootless sandbox as the conformance suite gets it: every
/// environment allowed to be unlimited, as a rootless run must be.
fn backend() -> &'static Creating<SandboxBackend> {
    static BACKEND: OnceLock<Creating<SandboxBackend>> = OnceLock::new();
    BACKEND.get_or_init(|| {
        assert_eq!(privilege::current(), Privilege::NamespaceRoot, "runs inside a user namespace");
        let home = std::env::temp_dir().join(format!("cleanroom-rootless-test-{}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        let backend = SandboxBackend::new(&home).unwrap();
        backend
            .prepare_images(&[image::DEFAULT_IMAGE], &mut |line| eprintln!("image: {line}"))
            .expect("base image");
        Creating {
            inner: backend,
            create: |b, spec| b.create(&EnvSpec { allow_unlimited: true, ..spec.clone() }),
        }
    })
}

fn sandbox() -> &'static SandboxBackend {
    &backend().inner
}

/// The test user: uid, gid, home.
fn test_user() -> (u32, u32, String) {
    static USER: OnceLock<(u32, u32, String)> = OnceLock::new();
    USER.get_or_init(|| {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/rootless-user.sh");
        let out = Command::new("bash").arg(script).output().expect("run rootless-user.sh");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let fields: Vec<&str> = text.split_whitespace().collect();
        (fields[0].parse().unwrap(), fields[1].parse().unwrap(), fields[2].to_string())
    })
    .clone()
}

/// This test binary, copied where the test user may run it (the checkout
/// may be in a directory only root can enter).
fn runnable_copy() -> PathBuf {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        remove_copies_of_dead_runs();
        let dir = std::env::temp_dir().join(format!("cleanroom-rootless-bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = dir.join("rootless-test");
        std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy
    })
    .clone()
}

/// Removes the copies that test processes no longer running left.
fn remove_copies_of_dead_runs() {
    for entry in std::fs::read_dir(std::env::temp_dir()).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("cleanroom-rootless-bin-") {
            if !std::path::Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Runs `test` as root of the test user's namespace: here when already
/// there, else in this binary started again there for this test alone.
fn in_user_namespace(name: &str, test: impl FnOnce()) {
    match privilege::current() {
        Privilege::NamespaceRoot => test(),
        Privilege::HostRoot => {
            let (uid, gid, home) = test_user();
            let mut cmd = Command::new(runnable_copy());
            cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .env("HOME", &home)
                .env("RUST_BACKTRACE", "1")
                .current_dir("/")
                .uid(uid)
                .gid(gid)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let maps = IdMaps::for_user(uid, gid).expect("the test user's subordinate ids");
            let child = user_namespace::spawn(&mut cmd, &maps).expect("start the test in a user namespace");
            let output = child.wait_with_output().unwrap();
            let status = output.status;
            let out = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            println!("{out}");
            assert!(status.success(), "{name} failed in the user namespace ({status})");
            assert!(out.contains("1 passed"), "{name} did not run in the user namespace: {out}");
        }
        Privilege::User => panic!("run the rootless tests as root: each starts the test user's namespace"),
    }
}

use std::os::unix::process::CommandExt;

conformance::conformance_tests_but_limits!(backend, in_user_namespace);
conformance::host_mount_tests!(backend, in_user_namespace);
conformance::shared_kernel_tests!(backend, in_user_namespace);

/// The exception to the contract: no cgroup, so no memory or process
/// limit, and no disk limit. Each is recorded as unenforced, and an
/// environment is refused unless the run allows that.
#[test]
fn limits_are_recorded_as_unenforced_and_refused_unless_allowed() {
    in_user_namespace("limits_are_recorded_as_unenforced_and_refused_unless_allowed", || {
        let backend = sandbox();
        assert!(backend.limits_never_enforced().is_some());
        match backend.create(&spec()) {
            Err(EnvError::LimitUnavailable { limit, .. }) => assert_eq!(limit, "memory"),
            other => {
                panic!("an environment without limits was made: {:?}", other.map(|e| e.id().to_string()))
            }
        }
        let mut allowed = spec();
        allowed.allow_unlimited = true;
        let env = backend.create(&allowed).unwrap();
        let limits = env.limits();
        assert_eq!(
            (limits.memory, limits.pids, limits.disk),
            (LimitState::Unenforced, LimitState::Unenforced, LimitState::Unenforced)
        );
        env.destroy().unwrap();
    });
}

/// The user's own image, made without root, holds files of other owners
/// (the subordinate ids are mapped), and apt installs a package as on a
/// fresh machine: it downloads as `_apt`, not "unsandboxed as root".
#[test]
fn packages_install_as_on_a_fresh_machine() {
    in_user_namespace("packages_install_as_on_a_fresh_machine", || {
        let backend = sandbox();
        let image = image::lookup(image::DEFAULT_IMAGE, image::Flavour::Sandbox).unwrap().unwrap();
        let home = std::env::var("HOME").unwrap();
        assert!(image.root.starts_with(&home), "the image is the user's: {}", image.root.display());
        let partial = std::fs::metadata(image.root.join("var/cache/apt/archives/partial")).unwrap();
        assert_eq!(partial.uid(), 42, "apt's own directory belongs to _apt");
        let mut allowed = spec();
        allowed.allow_unlimited = true;
        allowed.disk_mb = 1024;
        let mut env = backend.create(&allowed).unwrap();
        env.begin_phase(Network::Outbound).unwrap();
        let (status, out) = sh(
            env.as_ref(),
            "apt-get -q update 2>&1 && apt-get install -y -q --no-install-recommends hello 2>&1 && hello \
             && touch /tmp/owned && chown _apt:nogroup /tmp/owned && stat -c '%U %G' /tmp/owned \
             && su nobody -s /bin/sh -c id",
        );
        assert!(status.success(), "{out}");
        assert!(!out.contains("unsandboxed"), "apt could not drop to _apt: {out}");
        for want in ["Setting up hello", "Hello, world!", "_apt nogroup", "uid=65534(nobody)"] {
            assert!(out.contains(want), "{want} missing: {out}");
        }
        env.end_phase().unwrap();
        env.destroy().unwrap();
    });
}

/// The image's set-user-ID programs and an environment's upper layer are
/// the user's own files on the host, with the user's ids: no other user
/// may reach them (they would run as this user).
#[test]
fn no_other_user_reaches_the_images_or_the_environments() {
    in_user_namespace("no_other_user_reaches_the_images_or_the_environments", || {
        let env = sandbox().create(&EnvSpec { allow_unlimited: true, ..spec() }).unwrap();
        let image = image::lookup(image::DEFAULT_IMAGE, image::Flavour::Sandbox).unwrap().unwrap();
        let su = std::fs::metadata(image.root.join("usr/bin/su")).unwrap();
        assert_ne!(su.mode() & 0o4000, 0, "su is set-user-ID in the image");
        let images = image.root.parent().and_then(|p| p.parent()).unwrap();
        let envs = std::env::temp_dir().join(format!("cleanroom-rootless-test-{}/envs", std::process::id()));
        assert!(envs.join(env.id()).is_dir());
        for dir in [images, envs.as_path()] {
            let mode = std::fs::metadata(dir).unwrap().mode();
            assert_eq!(mode & 0o077, 0, "{} is open to others: {mode:o}", dir.display());
        }
        env.destroy().unwrap();
    });
}
