//! The conformance suite: the contract every backend must meet, as
//! functions of the backend. A backend's test file runs all of it with
//! `conformance::conformance_tests!(backend)`, where `backend()` gives a
//! `&'static` backend with the base image prepared; checks that only mean
//! something for one backend stay in that backend's own file.
//!
//! The contract: commands report their own status; ending a phase kills
//! every process started in it (detached, setsid, stopped, ignoring
//! signals); the walls hold (no devices, kernel settings, mounts, user
//! namespaces, keyring, io_uring; PID 1 cannot be traced); outbound access
//! reaches registries but never the host, its neighbours, its gateways or
//! cloud metadata; limits hold; output is bounded; host directories shown
//! inside are read-only and leave no trace; sealed paths hold; the env-diff tells
//! nothing of the host's paths and is bounded; destroy leaves nothing; an
//! access watch, where the backend has one, sees exactly which files the
//! commands opened and executed, by identity, through every mount.
//! The adversarial agents of tests/fixtures/agents run on every backend
//! through the CLI's tests.

#![allow(dead_code, unused_macros, unused_imports)]

use std::io::Read;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use cleanroom_env::{
    image, Backend, CancelToken, EnvError, EnvSpec, Environment, ExecRequest, ExitStatus, Globs, HostMount,
    LastLine, LimitState, Manifest, Needs, Network, PhaseOptions, PreparedImage, ReadError, SweepReport,
    Unmet, WalkLimits,
};

/// The contract of every backend, as `#[test]` functions over `$backend()`.
/// With a second argument, each test runs through `$run(name, test)` (the
/// rootless suite runs each in a user namespace of its own).
macro_rules! conformance_tests {
    ($backend:path) => {
        conformance::conformance_tests!($backend, conformance::directly);
    };
    ($backend:path, $run:path) => {
        conformance::each_test!($backend, $run; memory_disk_and_process_limits_are_enforced);
        conformance::conformance_tests_but_limits!($backend, $run);
    };
}

/// The contract but for enforced limits: for a backend that documents
/// and tests that it has none (the rootless sandbox, docs/rootless.md).
macro_rules! conformance_tests_but_limits {
    ($backend:path, $run:path) => {
        conformance::each_test!($backend, $run; files_never_reach_the_host_through_what_the_agent_planted, commands_run_and_report_their_own_status, output_reaches_its_watcher_as_it_arrives, files_persist_across_phases_and_are_reachable_from_the_host, ending_a_phase_kills_detached_processes, outbound_network_reaches_registries_but_not_the_host, timeouts_and_cancellation_kill_the_command, output_floods_are_bounded, destroy_leaves_nothing_on_the_host, the_harness_serves_a_port_on_the_environments_own_loopback, sealed_paths_cannot_be_changed_removed_or_swapped_during_the_phase, the_diff_tells_nothing_of_the_hosts_paths, the_diff_leaves_out_exactly_what_the_harness_made, a_chain_deeper_than_path_max_is_listed_to_the_bound, an_access_watch_sees_what_commands_open_and_execute, host_mounts_are_read_only_and_leave_no_trace);
    };
}

/// Backends whose phase cannot undo a shown directory's read-only mount
/// (the sandbox; vm.rs has a stronger check of a machine's disk).
macro_rules! host_mount_tests {
    ($backend:path) => {
        conformance::host_mount_tests!($backend, conformance::directly);
    };
    ($backend:path, $run:path) => {
        conformance::each_test!($backend, $run; host_mounts_cannot_be_made_writable);
    };
}

/// Backends whose environments run on the host's own kernel (namespaces,
/// not machines): its walls hold, what it shows is the environment's, and
/// its network routes keep the host's neighbours out. A backend with a
/// kernel of its own tests the machine boundary instead.
macro_rules! shared_kernel_tests {
    ($backend:path) => {
        conformance::shared_kernel_tests!($backend, conformance::directly);
    };
    ($backend:path, $run:path) => {
        conformance::each_test!($backend, $run; the_walls_hold, the_syscall_filter_closes_the_keyring_and_io_uring, the_phase_holder_cannot_be_traced_or_read, the_kernel_views_show_the_environment_not_the_host, the_hosts_neighbours_and_gateways_are_unroutable);
    };
}

macro_rules! each_test {
    ($backend:path, $run:path; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                $run(stringify!($name), || conformance::$name($backend()));
            }
        )*
    };
}
pub(crate) use {
    conformance_tests, conformance_tests_but_limits, each_test, host_mount_tests, shared_kernel_tests,
};

/// Runs a test as it is.
pub fn directly(_name: &str, test: impl FnOnce()) {
    test()
}

/// A backend that is `inner` in all but how it makes environments: the
/// wrappers of a backend's own test file (the rootless sandbox's unlimited
/// environments).
pub struct Creating<B> {
    pub inner: B,
    pub create: MakeEnv<B>,
}

pub type MakeEnv<B> = fn(&B, &EnvSpec) -> Result<Box<dyn Environment>, EnvError>;

impl<B: Backend> Backend for Creating<B> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn unmet(&self, needs: &Needs) -> Vec<Unmet> {
        self.inner.unmet(needs)
    }
    fn prepare_images(
        &self,
        names: &[&str],
        progress: &mut dyn FnMut(&str),
    ) -> Result<Vec<PreparedImage>, EnvError> {
        self.inner.prepare_images(names, progress)
    }
    fn sweep(&self) -> Result<SweepReport, EnvError> {
        self.inner.sweep()
    }
    fn create(&self, spec: &EnvSpec) -> Result<Box<dyn Environment>, EnvError> {
        (self.create)(&self.inner, spec)
    }
    fn limits_never_enforced(&self) -> Option<String> {
        self.inner.limits_never_enforced()
    }
    fn accelerator(&self) -> Option<&'static str> {
        self.inner.accelerator()
    }
}

pub fn spec() -> EnvSpec {
    EnvSpec {
        image: image::DEFAULT_IMAGE.into(),
        cpus: 2,
        memory_mb: 512,
        disk_mb: 256,
        pids_max: 256,
        gpus: 0,
        gpu_driver: Default::default(),
        allow_unlimited: false,
        build: None,
    }
}

pub fn sh(env: &dyn Environment, script: &str) -> (ExitStatus, String) {
    let mut req =
        ExecRequest::login_shell(script, "/", vec![("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into())]);
    req.timeout = Some(Duration::from_secs(60));
    let out = env.exec(&req, &CancelToken::new().unwrap()).expect("exec");
    (out.status, out.combined.to_string_lossy())
}

/// How many processes inside the environment's current phase have
/// `marker` (which starts with "cleanroom-") in their command line.
pub fn processes_inside(env: &dyn Environment, marker: &str) -> usize {
    let pattern = format!("[c]{}", &marker[1..]);
    let (_, out) = sh(
        env,
        &format!(
            "{{ for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done; }} 2>/dev/null | grep -c -- '{pattern}'"
        ),
    );
    out.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("counting processes: {out}"))
}

/// Host processes whose command line holds `marker`.
pub fn host_processes_with(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
        })
        .collect()
}
/// The one exception of the contract (docs/backends.md): where an
/// environment's disk is not its own, a task's `disk_mb` is recorded as
/// unenforced. An ssh host's disk is the host's; a container's is the
/// engine's storage, shared by all its containers (a size per container
/// needs a storage driver with quotas).
pub fn disk_is_not_the_environments_own(backend: &dyn Backend) -> bool {
    matches!(backend.name(), "ssh" | "container")
}

pub fn commands_run_and_report_their_own_status(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    let state = |enforced: bool| if enforced { LimitState::Enforced } else { LimitState::Unenforced };
    let limited = backend.limits_never_enforced().is_none();
    assert_eq!(env.limits().memory, state(limited));
    assert_eq!(env.limits().pids, state(limited));
    assert_eq!(env.limits().disk, state(limited && !disk_is_not_the_environments_own(backend)));
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let req = ExecRequest::login_shell("echo out; echo err >&2; uname -s; exit 3", "/", vec![]);
    let out = env.exec(&req, &CancelToken::new().unwrap()).expect("exec");
    assert_eq!(out.status, ExitStatus::Exited(3));
    assert_eq!(out.stdout.to_string_lossy(), "out\nLinux\n");
    assert_eq!(out.stderr.to_string_lossy(), "err\n");
    // Both streams in arrival order: across two pipes, only each stream's
    // own order is certain.
    let combined = out.combined.to_string_lossy();
    assert!(combined.find("out").unwrap() < combined.find("Linux").unwrap(), "{combined}");
    assert!(combined.contains("err\n"), "{combined}");
    let (status, _) = sh(env.as_ref(), "kill -9 $$");
    assert_eq!(status, ExitStatus::Signaled(9));
    env.end_phase().unwrap();
    env.destroy().unwrap();
}

pub fn files_persist_across_phases_and_are_reachable_from_the_host(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    env.files().create_dir_all("/workspace/in", 0o755).unwrap();
    env.files().write_file("/workspace/in/note.txt", b"from host\n", 0o644).unwrap();
    let (status, out) = sh(env.as_ref(), "cat /workspace/in/note.txt; echo made > /tmp/made.txt");
    assert!(status.success() && out.contains("from host"), "{out}");
    env.end_phase().unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (_, out) = sh(env.as_ref(), "cat /tmp/made.txt");
    assert_eq!(out, "made\n");
    assert_eq!(env.files().read_regular("/tmp/made.txt", 100).unwrap(), b"made\n");
    env.destroy().unwrap();
}

pub fn ending_a_phase_kills_detached_processes(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let marker = format!("cleanroom-detached-{}", std::process::id());
    let (status, _) = sh(
        env.as_ref(),
        &format!(
            "setsid nohup bash -c 'exec -a {marker} sleep 1000' >/dev/null 2>&1 & disown; \
             (exec -a {marker} sleep 1000 &); \
             (exec -a {marker} sleep 1000 & kill -STOP $!); \
             perl -e 'fork and exit; $0 = shift; $SIG{{$_}} = \"IGNORE\" for keys %SIG; sleep 1000' {marker}; exit 0"
        ),
    );
    assert!(status.success());
    // setsid, double-forked, stopped, and one that ignores every signal.
    let running = processes_inside(env.as_ref(), &marker);
    assert!(running >= 4, "the detached processes should run: {running}");
    env.end_phase().unwrap();
    assert!(host_processes_with(&marker).is_empty(), "detached processes outlived the phase");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    assert_eq!(processes_inside(env.as_ref(), &marker), 0, "detached processes reached the next phase");
    env.destroy().unwrap();
}

pub fn the_walls_hold(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    for attempt in [
        "mknod /tmp/disk b 8 0",
        "echo 1 > /proc/sys/kernel/sysrq",
        "echo x > /proc/sys/kernel/hostname",
        "echo 1 > /sys/kernel/mm/ksm/run",
        "mount -t tmpfs none /mnt",
        "ls /sys/fs/cgroup/memory",
        "cat /dev/vda",
        "nsenter -t 1 -m true",
        "ip link set lo down",
        "unshare -Ur true",
        "unshare -Urm mount -t tmpfs none /mnt",
    ] {
        let (status, out) = sh(env.as_ref(), attempt);
        assert!(!status.success(), "`{attempt}` succeeded inside the environment: {out}");
    }
    let (status, out) = sh(env.as_ref(), "(sleep 0.1 & wait) && echo threads-and-forks-work");
    assert!(status.success() && out.contains("threads-and-forks-work"), "{out}");
    let (_, devs) = sh(env.as_ref(), "ls /dev");
    assert!(!devs.contains("vda") && !devs.contains("sda") && !devs.contains("loop"), "{devs}");
    env.destroy().unwrap();
}

pub fn outbound_network_reaches_registries_but_not_the_host(backend: &dyn Backend) {
    let loopback = TcpListener::bind("127.0.0.1:0").unwrap();
    let any = TcpListener::bind("0.0.0.0:0").unwrap();
    let host_ip = std::process::Command::new("hostname").arg("-I").output().unwrap();
    let host_ip = String::from_utf8_lossy(&host_ip.stdout).split_whitespace().next().unwrap().to_string();
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::Outbound).unwrap();
    let (status, out) = sh(env.as_ref(), "exec 3<>/dev/tcp/pypi.org/443 && echo connected");
    assert!(status.success(), "no outbound network: {out}");
    for (addr, port) in [
        ("10.0.2.2", loopback.local_addr().unwrap().port()),
        ("10.0.2.2", any.local_addr().unwrap().port()),
        (host_ip.as_str(), any.local_addr().unwrap().port()),
        ("169.254.169.254", 80),
    ] {
        let (status, out) = sh(
            env.as_ref(),
            &format!("timeout 5 bash -c 'exec 3<>/dev/tcp/{addr}/{port}' && echo connected"),
        );
        assert!(!status.success(), "reached {addr}:{port} from inside: {out}");
    }
    env.end_phase().unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, _) = sh(env.as_ref(), "timeout 5 bash -c 'exec 3<>/dev/tcp/pypi.org/443'");
    assert!(!status.success(), "a loopback-only phase reached the network");
    env.destroy().unwrap();
}

pub fn memory_disk_and_process_limits_are_enforced(backend: &dyn Backend) {
    let mut small = spec();
    small.memory_mb = 128;
    small.disk_mb = 64;
    small.pids_max = 64;
    let mut env = backend.create(&small).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, _) = sh(env.as_ref(), "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo ${#x}");
    assert!(!status.success(), "400 MB held under a 128 MB limit");
    if !disk_is_not_the_environments_own(backend) {
        let (status, out) = sh(env.as_ref(), "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1");
        assert!(!status.success() && out.contains("No space left"), "{out}");
    }
    let (_, out) = sh(env.as_ref(), "for i in $(seq 100); do sleep 30 & done 2>&1; jobs | wc -l");
    assert!(out.contains("Resource temporarily unavailable") || out.contains("fork"), "{out}");
    env.destroy().unwrap();
}

/// The last line a command printed is there while it runs (the terminal's
/// progress lines read it), not only when it has ended.
pub fn output_reaches_its_watcher_as_it_arrives(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let last_line = LastLine::new();
    let mut req = ExecRequest::login_shell("echo one; echo 'Building wheel'; sleep 1000", "/", vec![]);
    req.last_line = Some(last_line.clone());
    req.timeout = Some(Duration::from_secs(120));
    let cancel = CancelToken::new().unwrap();
    let watcher = {
        let (last_line, cancel) = (last_line.clone(), cancel.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let seen = loop {
                match last_line.get() {
                    Some(line) if line == "Building wheel" => break true,
                    _ if std::time::Instant::now() > deadline => break false,
                    _ => std::thread::sleep(Duration::from_millis(20)),
                }
            };
            cancel.cancel();
            seen
        })
    };
    let out = env.exec(&req, &cancel).unwrap();
    assert!(watcher.join().unwrap(), "the line was not there while the command ran");
    assert_eq!(out.status, ExitStatus::Cancelled, "the watcher's cancel ended it, not its end");
    env.destroy().unwrap();
}

pub fn timeouts_and_cancellation_kill_the_command(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let mut req = ExecRequest::login_shell("trap '' TERM; sleep 1000", "/", vec![]);
    req.timeout = Some(Duration::from_millis(300));
    req.grace = Duration::from_millis(200);
    let out = env.exec(&req, &CancelToken::new().unwrap()).unwrap();
    assert_eq!(out.status, ExitStatus::TimedOut);
    assert!(out.duration < Duration::from_secs(20));
    // One that TERM ends within the grace, leaving a child that ignores it:
    // the command's end is reported, and the child is killed after the grace.
    let marker = format!("cleanroom-term-child-{}", std::process::id());
    let mut req = ExecRequest::login_shell(
        &format!("(trap '' TERM; exec -a {marker} sleep 1000) & sleep 1000"),
        "/",
        vec![],
    );
    req.timeout = Some(Duration::from_millis(300));
    req.grace = Duration::from_millis(500);
    let out = env.exec(&req, &CancelToken::new().unwrap()).unwrap();
    assert_eq!(out.status, ExitStatus::TimedOut);
    assert!(out.duration < Duration::from_secs(20));
    assert_eq!(processes_inside(env.as_ref(), &marker), 0, "the command's child outlived its timeout");

    let cancel = CancelToken::new().unwrap();
    cancel.cancel();
    let req = ExecRequest::login_shell("sleep 1000", "/", vec![]);
    let out = env.exec(&req, &cancel).unwrap();
    assert_eq!(out.status, ExitStatus::Cancelled);
    env.destroy().unwrap();
}

pub fn output_floods_are_bounded(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let mut req =
        ExecRequest::login_shell("head -c 50000000 /dev/zero | tr '\\0' x; echo; echo END", "/", vec![]);
    req.output_limit = 1 << 16;
    let out = env.exec(&req, &CancelToken::new().unwrap()).unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.total_bytes(), 50_000_005);
    assert!(out.stdout.to_bytes().len() < (1 << 16) + 100);
    assert!(out.stdout.to_string_lossy().ends_with("x\nEND\n"));
    env.destroy().unwrap();
}

pub fn destroy_leaves_nothing_on_the_host(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    let id = env.id().to_string();
    env.begin_phase(Network::Outbound).unwrap();
    let marker = format!("cleanroom-destroyed-{}", std::process::id());
    sh(env.as_ref(), &format!("(exec -a {marker} sleep 1000 &); echo started"));
    assert_eq!(processes_inside(env.as_ref(), &marker), 1);
    env.destroy().unwrap();
    assert!(host_processes_with(&marker).is_empty(), "a process outlived destroy");
    let naming = host_processes_with(&id);
    let cmdlines: Vec<String> = naming
        .iter()
        .map(|p| std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .collect();
    assert!(naming.is_empty(), "a host process still names the environment: {cmdlines:?}");
    let mut mounts = String::new();
    std::fs::File::open("/proc/self/mountinfo").unwrap().read_to_string(&mut mounts).unwrap();
    assert!(!mounts.contains(&id), "mount left behind");
}

/// A directory of the harness's, with one file, to show inside.
fn host_dir_to_show(what: &str) -> HostPath {
    let dir = std::env::temp_dir().join(format!("cleanroom-conformance-{what}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::write(dir.join("bin/tool"), "installed on the host\n").unwrap();
    HostPath(dir)
}

const SHOWN_AT: &str = "/var/lib/cleanroom-test/prefix";

fn show_phase(env: &mut dyn Environment, host_dir: &std::path::Path) {
    let mount = HostMount { host: host_dir.to_path_buf(), path: SHOWN_AT.into() };
    env.begin_phase_with(Network::LoopbackOnly, &PhaseOptions { mounts: vec![mount], ..Default::default() })
        .unwrap();
}

pub fn host_mounts_are_read_only_and_leave_no_trace(backend: &dyn Backend) {
    let host_dir = host_dir_to_show("prefix");
    let mut env = backend.create(&spec()).expect("create environment");
    show_phase(env.as_mut(), &host_dir.0);
    let (status, out) = sh(env.as_ref(), &format!("cat {SHOWN_AT}/bin/tool"));
    assert_eq!((status, out.as_str()), (ExitStatus::Exited(0), "installed on the host\n"));
    for write in [format!("echo x > {SHOWN_AT}/bin/tool"), format!("touch {SHOWN_AT}/new")] {
        let (status, out) = sh(env.as_ref(), &write);
        assert_ne!(status, ExitStatus::Exited(0), "{write}: {out}");
        assert!(out.contains("Read-only file system"), "{write}: {out}");
    }
    env.end_phase().unwrap();
    assert_eq!(std::fs::read_to_string(host_dir.0.join("bin/tool")).unwrap(), "installed on the host\n");
    assert!(!host_dir.0.join("new").exists());
    // Only the mount's own paths: a machine's system writes its state
    // (journal, random seed) on every boot.
    let left: Vec<String> =
        diff_lines(env.as_ref()).into_iter().filter(|l| l.contains("/var/lib/cleanroom-test")).collect();
    assert!(left.is_empty(), "the mount point stayed behind: {left:?}");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, _) = sh(env.as_ref(), "test -e /var/lib/cleanroom-test");
    assert_eq!(status, ExitStatus::Exited(1), "the next phase sees nothing of the mount");
    env.destroy().unwrap();
}

/// Where the phase cannot undo the mount (the sandbox's walls, a
/// machine's read-only disk): the ssh backend's hosts are the agent's,
/// and tests/ssh.rs checks what a remount there reaches.
pub fn host_mounts_cannot_be_made_writable(backend: &dyn Backend) {
    let host_dir = host_dir_to_show("remount");
    let mut env = backend.create(&spec()).expect("create environment");
    show_phase(env.as_mut(), &host_dir.0);
    let remount = format!("mount -o remount,rw {SHOWN_AT} || mount -o remount,rw,bind {SHOWN_AT}");
    let (status, out) = sh(env.as_ref(), &format!("{remount}; echo x > {SHOWN_AT}/bin/tool"));
    assert_ne!(status, ExitStatus::Exited(0), "{out}");
    env.end_phase().unwrap();
    assert_eq!(std::fs::read_to_string(host_dir.0.join("bin/tool")).unwrap(), "installed on the host\n");
    env.destroy().unwrap();
}

pub fn the_harness_serves_a_port_on_the_environments_own_loopback(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::Outbound).unwrap();
    let listener = env.listen_loopback(47399).unwrap();
    // The host's own loopback has nothing there: the socket is the phase's.
    assert!(std::net::TcpStream::connect(("127.0.0.1", 47399)).is_err());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = String::new();
        conn.read_to_string(&mut got).unwrap();
        got
    });
    let (status, out) = sh(env.as_ref(), "echo hello from inside > /dev/tcp/127.0.0.1/47399");
    assert_eq!(status, ExitStatus::Exited(0), "{out}");
    assert_eq!(server.join().unwrap(), "hello from inside\n");
    env.destroy().unwrap();
}

/// Runs `perl -e CODE` inside and returns what it printed.
fn perl(env: &dyn Environment, code: &str) -> String {
    let (status, out) = sh(env, &format!("perl -e '{code}'"));
    assert!(status.success(), "perl failed: {out}");
    out
}

/// `syscall(ARGS)` inside: "ok RESULT" or "err ERRNO".
fn syscall(env: &dyn Environment, args: &str) -> String {
    let strings = r#"my ($type, $desc, $payload) = ("cleanroom-none", "d", "p");"#;
    perl(env, &format!(r#"{strings} my $r = syscall({args}); print $r == -1 ? "err " . ($!+0) : "ok $r""#))
}

pub fn the_syscall_filter_closes_the_keyring_and_io_uring(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let eperm = format!("err {}", libc::EPERM);
    // Each call is harmless if it went through, and its errno then differs
    // from the filter's EPERM.
    for (what, args) in [
        // KEYCTL_GET_KEYRING_ID of the user keyring: the host root's keys.
        ("keyctl", format!("{}, 0, -4, 0", libc::SYS_keyctl)),
        // An unknown key type: ENODEV if the call were allowed.
        ("add_key", format!("{}, $type, $desc, $payload, 1, -4", libc::SYS_add_key)),
        ("request_key", format!("{}, $type, $desc, 0, 0", libc::SYS_request_key)),
        // A null parameter block: EFAULT if allowed.
        ("io_uring_setup", format!("{}, 1, 0", libc::SYS_io_uring_setup)),
        ("perf_event_open", format!("{}, 0, 0, -1, -1, 0", libc::SYS_perf_event_open)),
    ] {
        assert_eq!(syscall(env.as_ref(), &args), eperm, "{what} was not refused");
    }
    let (status, keys) = sh(env.as_ref(), "cat /proc/keys /proc/key-users");
    assert!(status.success() && keys.is_empty(), "the host's key lists show: {keys}");
    env.destroy().unwrap();
}

pub fn the_phase_holder_cannot_be_traced_or_read(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    // PTRACE_ATTACH and PTRACE_SEIZE to PID 1, the phase's holder.
    for request in [16, 0x4206] {
        assert_eq!(
            syscall(env.as_ref(), &format!("{}, {request}, 1, 0, 0", libc::SYS_ptrace)),
            format!("err {}", libc::EPERM),
            "ptrace request {request:#x} reached the holder"
        );
    }
    for probe in [
        "head -c1 /proc/1/mem",
        "head -c1 /proc/1/environ",
        "readlink /proc/1/fd/100",
        "ls /proc/1/root/",
        "echo x > /proc/1/fd/100",
    ] {
        let (status, out) = sh(env.as_ref(), probe);
        assert!(!status.success(), "`{probe}` reads the holder: {out}");
    }
    // ptrace itself still works for the agent's own processes (debuggers).
    let own_child = perl(
        env.as_ref(),
        &format!(
            "my $p = fork; if (!$p) {{ sleep 30; exit }} print syscall({}, 16, $p, 0, 0); kill 9, $p",
            libc::SYS_ptrace
        ),
    );
    assert_eq!(own_child.trim(), "0", "PTRACE_ATTACH to an own child failed");
    env.destroy().unwrap();
}

pub fn the_kernel_views_show_the_environment_not_the_host(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::Outbound).unwrap();
    let (_, net) = sh(env.as_ref(), "ls /sys/class/net");
    let mut devices: Vec<&str> = net.split_whitespace().collect();
    devices.sort();
    assert_eq!(devices, ["lo", "tap0"], "network devices seen in /sys");
    for (what, script) in [
        ("the kernel command line", "cat /proc/cmdline"),
        ("the cgroup tree", "ls -A /sys/fs/cgroup"),
        ("firmware tables", "ls -A /sys/firmware"),
    ] {
        let (_, out) = sh(env.as_ref(), script);
        assert!(out.trim().is_empty(), "{what} is visible: {out}");
    }
    for attempt in ["touch /sys/kernel/x", "echo h > /proc/sysrq-trigger && grep -q . /proc/sysrq-trigger"] {
        let (status, out) = sh(env.as_ref(), attempt);
        assert!(!status.success(), "`{attempt}` succeeded: {out}");
    }
    // Software that reads /sys still finds the CPUs.
    let (status, cpus) = sh(env.as_ref(), "ls /sys/devices/system/cpu | grep -c '^cpu[0-9]'");
    assert!(status.success() && cpus.trim().parse::<u32>().unwrap() >= 1, "{cpus}");
    env.destroy().unwrap();
}

/// The host's IPv4 default gateway, from /proc/net/route.
fn host_gateway() -> Option<std::net::Ipv4Addr> {
    let routes = std::fs::read_to_string("/proc/net/route").ok()?;
    routes
        .lines()
        .skip(1)
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1) == Some(&"00000000")).then(|| u32::from_str_radix(f[2], 16).ok()).flatten()
        })
        .map(|hex| std::net::Ipv4Addr::from(hex.swap_bytes()))
}

pub fn the_hosts_neighbours_and_gateways_are_unroutable(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::Outbound).unwrap();
    // Prohibit routes show in /proc/net/route with RTF_REJECT (0x200): no
    // packet needs to leave the machine to see that they are there.
    let (_, routes) = sh(env.as_ref(), "cat /proc/net/route");
    let rejected: Vec<std::net::Ipv4Addr> = routes
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
            (flags & 0x200 != 0).then(|| u32::from_str_radix(f[1], 16).ok()).flatten()
        })
        .map(|hex| std::net::Ipv4Addr::from(hex.swap_bytes()))
        .collect();
    if let Some(gateway) = host_gateway().filter(|g| !g.is_loopback() && g.octets()[..3] != [10, 0, 2]) {
        assert!(rejected.contains(&gateway), "the host's gateway {gateway} is routable: {rejected:?}");
    }
    assert!(rejected.contains(&std::net::Ipv4Addr::new(169, 254, 0, 0)), "{rejected:?}");
    env.destroy().unwrap();
}

pub fn sealed_paths_cannot_be_changed_removed_or_swapped_during_the_phase(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    let root = env.files();
    root.create_dir_all("/w/art/data", 0o755).unwrap();
    root.write_file("/w/art/run.sh", b"echo original\n", 0o755).unwrap();
    root.write_file("/w/art/data/in.csv", b"1,2\n", 0o644).unwrap();
    root.create_dir_all("/.cleanroom-verify-test", 0o755).unwrap();
    root.write_file("/.cleanroom-verify-test/check.sh", b"exit 0\n", 0o755).unwrap();
    let sealed =
        ["/w/art/run.sh", "/w/art/data/in.csv", "/.cleanroom-verify-test"].map(String::from).to_vec();
    env.begin_phase_with(Network::LoopbackOnly, &PhaseOptions { sealed, ..Default::default() }).unwrap();
    for attack in [
        "echo forged > /w/art/run.sh",
        "rm -f /w/art/run.sh",
        "mv /w/art/run.sh /w/art/run.old",
        "chmod 777 /w/art/data/in.csv",
        "mv /w/art/data /w/art/data.old",
        "mv /w/art /w/art.old",
        "mv /w /w.old",
        "echo x > /.cleanroom-verify-test/check.sh",
        "touch /.cleanroom-verify-test/new",
        "umount -l /w/art/run.sh",
    ] {
        let (status, out) = sh(env.as_ref(), attack);
        assert!(!status.success(), "`{attack}` worked on a sealed path: {out}");
    }
    // Next to the sealed files, the verifier's steps still write outputs.
    let (status, out) = sh(
        env.as_ref(),
        "mkdir /w/art/results && echo 3 > /w/art/results/out.csv && echo 5 > /w/art/data/new.csv",
    );
    assert!(status.success(), "{out}");
    let (_, out) = sh(env.as_ref(), "cat /w/art/run.sh /w/art/data/in.csv");
    assert_eq!(out, "echo original\n1,2\n");
    env.end_phase().unwrap();
    // The seal lasts one phase.
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "echo changed > /w/art/run.sh && mv /w /w.old");
    assert!(status.success(), "{out}");
    env.destroy().unwrap();
}

/// The changes of an environment as env-diff lines, from the host.
fn diff_lines(env: &dyn Environment) -> Vec<String> {
    let diff = env.diff(&CancelToken::new().unwrap()).unwrap();
    diff.changes.iter().map(|c| format!("{} {}", c.kind.letter(), c.path)).collect()
}

/// Removes a host path when dropped.
struct HostPath(PathBuf);

impl Drop for HostPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn the_diff_tells_nothing_of_the_hosts_paths(backend: &dyn Backend) {
    // The image's /var/run is a link to /run. An agent that puts a real
    // directory there and files in it must not learn, from the diff,
    // whether the host's /run has the same names.
    let name = format!("cleanroom-probe-{}", std::process::id());
    let agent = format!(
        "rm /var/run && mkdir /var/run && touch /var/run/{name} && mkdir /var/run/{name}-d && touch /var/run/{name}-d/x"
    );
    // Only the host's root can make them in the host's /run: the harness
    // of the rootless sandbox can compare nothing, and checks what the
    // diff says.
    let host_writable = cleanroom_env::privilege::current() == cleanroom_env::privilege::Privilege::HostRoot;
    let cases: &[bool] = if host_writable { &[false, true] } else { &[false] };
    let mut seen: Vec<Vec<String>> = Vec::new();
    for &host_has_them in cases {
        let _host = host_has_them.then(|| {
            std::fs::create_dir_all(format!("/run/{name}-d/x")).unwrap();
            std::fs::write(format!("/run/{name}"), "host").unwrap();
            (HostPath(format!("/run/{name}").into()), HostPath(format!("/run/{name}-d").into()))
        });
        let mut env = backend.create(&spec()).expect("create environment");
        env.begin_phase(Network::LoopbackOnly).unwrap();
        let (status, out) = sh(env.as_ref(), &agent);
        assert!(status.success(), "{out}");
        env.end_phase().unwrap();
        seen.push(diff_lines(env.as_ref()));
        env.destroy().unwrap();
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "the diff depends on the host's /run");
    for line in ["A /var/run", &format!("A /var/run/{name}"), &format!("A /var/run/{name}-d/x")] {
        assert!(seen[0].iter().any(|l| l == line), "{line} not in {:?}", seen[0]);
    }
}

pub fn the_diff_leaves_out_exactly_what_the_harness_made(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.files().create_dir_all("/tmp/.cleanroom-agent-1234", 0o700).unwrap();
    env.files().write_file("/tmp/.cleanroom-agent-1234/agent.sh", b"true\n", 0o755).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(
        env.as_ref(),
        "touch /tmp/.cleanroom-agent-1234/planted && mkdir /tmp/.cleanroom-whatever && touch /tmp/.cleanroom-whatever/hidden",
    );
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    let lines = diff_lines(env.as_ref());
    let tmp: Vec<&String> = lines.iter().filter(|l| l.contains("/tmp/")).collect();
    assert_eq!(
        tmp,
        [
            "A /tmp/.cleanroom-agent-1234/planted",
            "A /tmp/.cleanroom-whatever",
            "A /tmp/.cleanroom-whatever/hidden"
        ]
    );
    env.destroy().unwrap();
}

pub fn a_chain_deeper_than_path_max_is_listed_to_the_bound(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(
        env.as_ref(),
        "cd /tmp && perl -e 'for (1..2100) { mkdir \"dd\" or die $!; chdir \"dd\" or die $! }'",
    );
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    let diff = env.diff(&CancelToken::new().unwrap()).unwrap();
    assert_eq!(diff.incomplete.as_deref(), Some("more than 128 directory levels"));
    let deepest = diff.changes.iter().map(|c| c.path.len()).max().unwrap();
    assert_eq!(deepest, "/tmp".len() + 128 * "/dd".len());
    env.destroy().unwrap();
}

/// What the agent plants (links to the host's paths and to `/`, a FIFO, a
/// hard link, a 1 TiB sparse file) never makes the harness's file
/// operations read, write, remove or hang on anything of the host's.
pub fn files_never_reach_the_host_through_what_the_agent_planted(backend: &dyn Backend) {
    let canary = std::env::temp_dir().join(format!("cleanroom-conformance-canary-{}", std::process::id()));
    std::fs::create_dir_all(canary.join("sub")).unwrap();
    std::fs::write(canary.join("sub/keep"), "host file\n").unwrap();
    let host_src = std::env::temp_dir().join(format!("cleanroom-conformance-src-{}", std::process::id()));
    std::fs::create_dir_all(&host_src).unwrap();
    std::fs::write(host_src.join("f"), "copied\n").unwrap();
    let mut env = backend.create(&spec()).expect("create environment");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(
        env.as_ref(),
        &format!(
            "mkdir -p /w && cd /w && ln -s /etc/hostname out.txt && ln -s / root && ln -s {canary} canary \
             && mkfifo fifo && ln /etc/passwd hard && truncate -s 1T sparse && echo planted",
            canary = canary.display()
        ),
    );
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    let files = env.files();
    assert!(matches!(files.read_regular("/w/out.txt", 1 << 20), Err(ReadError::SymlinkInPath)));
    assert!(matches!(files.read_regular("/w/root/etc/hostname", 1 << 20), Err(ReadError::SymlinkInPath)));
    assert!(files.read_regular("/w/canary/sub/keep", 1 << 20).is_err());
    // Opened without blocking: a FIFO with no writer would hang a plain open.
    assert!(matches!(files.read_regular("/w/fifo", 1 << 20), Err(ReadError::NotRegular)));
    assert!(matches!(files.read_regular("/w/sparse", 1 << 20), Err(ReadError::TooLarge { .. })));
    assert!(files.read_regular("/w/hard", 1 << 20).is_ok(), "a hard link to the environment's own file");
    // Writes replace a link or refuse it; they never go through it.
    let _ = files.write_file("/w/canary/sub/keep", b"forged\n", 0o644);
    let _ = files.write_file("/w/root/tmp/planted", b"x", 0o644);
    let _ = files.create_dir_all("/w/canary/made", 0o755);
    let _ = files.copy_tree_in(&host_src, "/w/canary/copied", &|_| false);
    let cancel = CancelToken::new().unwrap();
    let globs = Globs::new(&["canary/**".to_string(), "root/**".to_string()]).unwrap();
    let _ = files.remove_matching("/w", &globs, &cancel);
    assert_eq!(std::fs::read_to_string(canary.join("sub/keep")).unwrap(), "host file\n");
    assert!(!canary.join("made").exists() && !canary.join("copied").exists());
    assert!(std::path::Path::new("/etc/hostname").exists());
    // A listing sees the planted entries as they are, reading none of them.
    let original = Manifest::default();
    let listed = files.manifest_against("/w", &original, WalkLimits::default(), &cancel).unwrap();
    assert!(
        listed.entries.contains_key("sparse") && listed.entries.contains_key("fifo"),
        "{:?}",
        listed.entries.keys()
    );
    assert_eq!(listed.entries["sparse"].sha256, None, "the terabyte was read");
    env.destroy().unwrap();
    let _ = std::fs::remove_dir_all(&canary);
    let _ = std::fs::remove_dir_all(&host_src);
}

/// A backend without an access watch says so (none) and is exempt; one
/// with it must see, by identity, what a command opened and executed,
/// through sealed paths too, and nothing that only existed or was only
/// listed.
pub fn an_access_watch_sees_what_commands_open_and_execute(backend: &dyn Backend) {
    let mut env = backend.create(&spec()).expect("create environment");
    let root = env.files();
    root.create_dir_all("/w/art/sealed", 0o755).unwrap();
    root.write_file("/w/art/read.txt", b"read me\n", 0o644).unwrap();
    root.write_file("/w/art/untouched.txt", b"never opened\n", 0o644).unwrap();
    root.write_file("/w/art/sealed/run.sh", b"echo sealed\n", 0o755).unwrap();
    root.write_file("/w/art/tool", b"#!/bin/sh\necho tool\n", 0o755).unwrap();
    let sealed = vec!["/w/art/sealed/run.sh".to_string()];
    env.begin_phase_with(Network::LoopbackOnly, &PhaseOptions { sealed, ..Default::default() }).unwrap();
    let Some(watch) = env.watch_access("/w/art").expect("watch") else {
        env.destroy().unwrap();
        return;
    };
    let (status, out) =
        sh(&*env, "cat /w/art/read.txt; ls /w/art >/dev/null; bash /w/art/sealed/run.sh; /w/art/tool");
    assert_eq!(status, ExitStatus::Exited(0), "{out}");
    let seen = watch.finish();
    assert_eq!(seen.incomplete, None);
    let root = env.files();
    let used = |path: &str| seen.files.get(&root.file_id(path).unwrap()).copied().unwrap_or_default();
    assert!(used("/w/art/read.txt").opened && !used("/w/art/read.txt").executed);
    assert!(used("/w/art/sealed/run.sh").opened, "opened through its sealed self-bind");
    assert!(used("/w/art/tool").executed, "executed");
    assert!(!used("/w/art/sealed/run.sh").executed, "read by bash, not executed");
    assert_eq!(used("/w/art/untouched.txt"), Default::default(), "listed, never opened");
    // A second watch starts empty: what the first saw is not carried over.
    let again = env.watch_access("/w/art").unwrap().unwrap();
    let (status, _) = sh(&*env, "true");
    assert_eq!(status, ExitStatus::Exited(0));
    let seen = again.finish();
    assert!(!seen.files.contains_key(&env.files().file_id("/w/art/read.txt").unwrap()));
    env.end_phase().unwrap();
    env.destroy().unwrap();
}
