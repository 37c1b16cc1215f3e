//! The ssh backend, for real: the hosts of `scripts/test-hosts.sh up 2`
//! (virtual machines booting Debian with sshd; CI's .ci/run starts them),
//! reached with OpenSSH's client through the configuration the script
//! printed. It runs the conformance suite's contract with phases ended by
//! a kill of their cgroups (a reboot per phase end would make the suite
//! take an hour under TCG), then what differs: a reboot, the default, ends
//! even what left its cgroup, which a kill does not.

mod conformance;

use std::path::PathBuf;
use std::sync::OnceLock;

use cleanroom_env::ssh::config::PoolConfig;
use cleanroom_env::ssh::{PhaseEnd, SshBackend, SshConfig};
use cleanroom_env::{Backend, EnvError, EnvSpec, HostMount, LimitState, Needs, Network, PhaseOptions};
use conformance::{processes_inside, sh, spec};

/// Where `scripts/test-hosts.sh up` writes its configuration.
const TEST_HOSTS: &str = "/var/lib/cleanroom-test-hosts/cleanroom.toml";

fn home() -> PathBuf {
    let dir = std::env::temp_dir().join("cleanroom-ssh-test");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn config(phase_end: PhaseEnd) -> SshConfig {
    let text = std::fs::read_to_string(TEST_HOSTS).unwrap_or_else(|e| {
        panic!("{TEST_HOSTS}: {e}: start the test hosts first (scripts/test-hosts.sh up 2)")
    });
    let file: toml::Value = toml::from_str(&text).unwrap();
    let ssh: SshConfig = file["ssh"].clone().try_into().unwrap();
    SshConfig { phase_end, ..ssh }
}

fn backend() -> &'static SshBackend {
    static BACKEND: OnceLock<SshBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        let backend = SshBackend::new(&home(), &config(PhaseEnd::Kill)).unwrap();
        backend.sweep().expect("sweep");
        backend
    })
}

conformance::conformance_tests!(backend);

#[test]
fn a_reboot_ends_what_left_its_cgroup_and_a_kill_does_not() {
    let marker = format!("cleanroom-escaped-{}", std::process::id());
    // Moves itself out of its command's cgroup, as `systemd-run` would.
    let escape =
        format!("(echo $BASHPID > /sys/fs/cgroup/cgroup.procs && exec -a {marker} sleep 1000) & echo ok");
    let mut survivors = Vec::new();
    for phase_end in [PhaseEnd::Kill, PhaseEnd::Reboot] {
        let backend = SshBackend::new(&home(), &config(phase_end)).unwrap();
        let mut env = backend.create(&spec()).unwrap();
        let agent = PhaseOptions { agent: true, ..Default::default() };
        env.begin_phase_with(Network::LoopbackOnly, &agent).unwrap();
        let (_, boot) = sh(env.as_ref(), "cat /proc/sys/kernel/random/boot_id");
        let (status, out) = sh(env.as_ref(), &escape);
        assert!(status.success(), "{out}");
        assert_eq!(processes_inside(env.as_ref(), &marker), 1, "the escaped process runs");
        env.end_phase().unwrap();
        env.begin_phase(Network::LoopbackOnly).unwrap();
        survivors.push(processes_inside(env.as_ref(), &marker));
        let (_, boot_after) = sh(env.as_ref(), "cat /proc/sys/kernel/random/boot_id");
        assert_eq!(boot == boot_after, phase_end == PhaseEnd::Kill, "a reboot, and only with reboot");
        env.end_phase().unwrap();
        env.begin_phase(Network::LoopbackOnly).unwrap();
        let (_, boot_later) = sh(env.as_ref(), "cat /proc/sys/kernel/random/boot_id");
        assert_eq!(boot_after, boot_later, "a phase without the agent ends without a reboot");
        env.destroy().unwrap();
    }
    assert_eq!(survivors, [1, 0], "(kill, reboot)");
}

#[test]
fn a_host_is_recorded_and_its_disk_is_its_own() {
    let env = backend().create(&spec()).unwrap();
    let machine = env.machine().expect("a host's record");
    assert!(machine.host.starts_with("th-"), "{machine:?}");
    assert_eq!(machine.hostname, "test-host");
    assert_eq!((machine.gpus_declared, machine.driver), (0, None), "no GPU on the test hosts");
    assert_eq!(env.limits().disk, LimitState::Unenforced);
    env.destroy().unwrap();
}

/// Two cleanroom processes with homes of their own (the CLI's runs and
/// these tests, in CI) lease one host one at a time: its lock is the
/// machine's, not a home's, or one's reset reverts the host under the
/// other's phase.
#[test]
fn two_homes_never_hold_one_host_at_once() {
    let mut one_host = config(PhaseEnd::Kill);
    one_host.pools.truncate(1);
    one_host.pools[0].hosts.truncate(1);
    // Without a reset to wait for, a second lease would come at once.
    one_host.pools[0].reset = None;
    let first = SshBackend::new(&home().join("first-home"), &one_host).unwrap();
    let held = first.create(&spec()).unwrap();
    let (leased, second_leased) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let second = SshBackend::new(&home().join("second-home"), &one_host).unwrap();
        let env = second.create(&spec()).unwrap();
        leased.send(()).unwrap();
        env.destroy().unwrap();
    });
    // Without the shared lock the second lease comes in a second or two; a
    // loaded machine can only make this wait miss that, never fail a
    // correct lock.
    let early = second_leased.recv_timeout(std::time::Duration::from_secs(10));
    assert!(early.is_err(), "a second home leased the host the first holds");
    held.destroy().unwrap();
    second_leased.recv().expect("the second home leases the host once it is given back");
    waiter.join().unwrap();
}

#[test]
fn gpu_tasks_are_skipped_until_a_host_declares_gpus() {
    let unmet = backend().unmet(&Needs::new(1, false, false));
    assert_eq!(unmet.len(), 1);
    assert!(unmet[0].why.contains("declare `gpus`"), "{}", unmet[0].why);
    assert!(backend().unmet(&Needs::new(0, false, false)).is_empty());
    let err = backend().create(&EnvSpec { gpus: 1, ..spec() }).map(drop).unwrap_err();
    assert!(matches!(err, EnvError::Phase(_)), "{err}");
}

/// A provisioner's pool: `scripts/test-hosts.sh create` boots a new host
/// for the trial (no host is configured), and `destroy` removes it after.
#[test]
fn a_provisioner_makes_a_host_for_the_trial_and_destroys_it_after() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-hosts.sh");
    let script = script.canonicalize().unwrap().display().to_string();
    let pool = PoolConfig {
        name: "made".into(),
        create: Some(format!("bash {script} create")),
        destroy: Some(format!("bash {script} destroy {{name}}")),
        ..Default::default()
    };
    let backend =
        SshBackend::new(&home(), &SshConfig { pools: vec![pool], ..config(PhaseEnd::Kill) }).unwrap();
    let mut env = backend.create(&spec()).unwrap();
    let host = env.machine().expect("a host's record").host;
    let state = std::path::Path::new(TEST_HOSTS).with_file_name(&host);
    assert!(host.starts_with("th-1") && state.is_dir(), "{host} is a made host");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "cat /etc/hostname");
    assert!(status.success() && out.trim() == "test-host", "{out}");
    env.end_phase().unwrap();
    env.destroy().unwrap();
    assert!(!state.exists(), "{host} destroyed with its environment");
}

/// A shown directory is a copy on the host, bound read-only: root there
/// can remount the bind and write the copy (the host is the agent's), but
/// never the harness's directory, and the next phase that shows it gets a
/// fresh copy of the original.
#[test]
fn root_on_a_host_writes_only_its_own_copy_of_a_shown_directory() {
    let dir = std::env::temp_dir().join(format!("cleanroom-ssh-shown-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::write(dir.join("bin/tool"), "installed on the harness's machine\n").unwrap();
    let at = "/opt/cleanroom-test/prefix";
    let show =
        PhaseOptions { mounts: vec![HostMount { host: dir.clone(), path: at.into() }], ..Default::default() };
    let mut env = backend().create(&spec()).unwrap();
    env.begin_phase_with(Network::LoopbackOnly, &show).unwrap();
    let (status, out) = sh(
        env.as_ref(),
        &format!("mount -o remount,rw,bind {at} && echo changed > {at}/bin/tool && cat {at}/bin/tool"),
    );
    assert_eq!((status.success(), out.as_str()), (true, "changed\n"), "root remounts its bind: {out}");
    env.end_phase().unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("bin/tool")).unwrap(),
        "installed on the harness's machine\n"
    );
    env.begin_phase_with(Network::LoopbackOnly, &show).unwrap();
    let (_, out) = sh(env.as_ref(), &format!("cat {at}/bin/tool; ls -d /var/tmp/cleanroom-shown.* | wc -l"));
    assert_eq!(out, "installed on the harness's machine\n1\n", "a fresh copy, the last one gone");
    env.end_phase().unwrap();
    let left: Vec<String> = env
        .diff(&cleanroom_env::CancelToken::new().unwrap())
        .unwrap()
        .changes
        .iter()
        .map(|c| c.path.clone())
        .filter(|p| p.starts_with("/opt") || p.contains("cleanroom-shown"))
        .collect();
    assert!(left.is_empty(), "the copies and mount points stayed: {left:?}");
    env.destroy().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
