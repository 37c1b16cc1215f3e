//! The vm backend, for real: QEMU (KVM where it works, else TCG), the
//! machine image (built on first use, about a minute), the guest agent.
//! It runs the conformance suite's contract, then what differs on a
//! machine: a kernel of its own instead of the host's walls (the agent may
//! mount, load modules, make namespaces: none of it reaches the host), the
//! host's neighbours kept out by the routes of QEMU's namespace, power-off
//! between phases, and host directories shown on read-only disks.

mod conformance;

use std::path::PathBuf;
use std::sync::OnceLock;

use cleanroom_env::vm::{BootFrom, VmBackend};
use cleanroom_env::{
    image, Backend, CancelToken, EnvError, EnvSpec, Environment, ExitStatus, GpuDriver, HostMount, Needs,
    Network, PhaseOptions,
};
use conformance::{host_processes_with, processes_inside, sh, spec};

/// One home for every run of the suite: a dead run's machines are swept,
/// the initramfs archives are pruned, so it does not grow run by run.
fn home() -> PathBuf {
    let dir = std::env::temp_dir().join("cleanroom-vm-test");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The backend of this test process. How many machines run at once across
/// the suite is the test runner's to bound (the emulated-machines group of
/// .config/nextest.toml): under TCG a machine's CPUs share one QEMU thread
/// (qemu.rs), and machines beyond the host's cores starve each other's boot.
fn backend() -> &'static VmBackend {
    static BACKEND: OnceLock<VmBackend> = OnceLock::new();
    BACKEND.get_or_init(|| {
        let backend = VmBackend::new(&home()).unwrap();
        // What an earlier run that was killed left, as every command sweeps.
        backend.sweep().expect("sweep");
        backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).expect("machine image");
        backend
    })
}

conformance::conformance_tests!(backend);

fn env() -> Box<dyn Environment> {
    backend().create(&spec()).expect("create environment")
}

#[test]
fn the_agent_is_root_of_a_kernel_of_its_own_and_none_of_it_reaches_the_host() {
    let host_hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    // What is mounted at the host's /mnt, where the agent mounts in its
    // machine (not the count of every mount: the suite's other processes
    // mount and unmount as they go).
    let mounts_at_mnt = || {
        let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        table.lines().filter(|l| l.split(' ').nth(4) == Some("/mnt")).map(str::to_string).collect::<Vec<_>>()
    };
    let host_mounts = mounts_at_mnt();
    let mut env = env();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    // What the sandbox's walls refuse, a machine allows: it is the
    // agent's own kernel.
    for allowed in [
        "mount -t tmpfs none /mnt && touch /mnt/x",
        "modprobe dummy && grep -q '^dummy ' /proc/modules",
        "unshare -Urm true",
        "echo other > /proc/sys/kernel/hostname",
        "ip link set lo down && ip link set lo up",
        "test -b /dev/vda",
    ] {
        let (status, out) = sh(env.as_ref(), allowed);
        assert_eq!(status, ExitStatus::Exited(0), "`{allowed}` failed in the machine: {out}");
    }
    let (_, cmdline) = sh(env.as_ref(), "cat /proc/cmdline");
    assert!(cmdline.contains("systemd.show_status=0"), "not the machine's command line: {cmdline}");
    let (_, init) = sh(env.as_ref(), "cat /proc/1/comm");
    assert_eq!(init.trim(), "systemd");
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap(), host_hostname);
    assert_eq!(mounts_at_mnt(), host_mounts);
    env.destroy().unwrap();
}

#[test]
fn ending_a_phase_powers_the_machine_off() {
    let mut env = env();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let marker = format!("cleanroom-powered-off-{}", std::process::id());
    let (status, out) = sh(
        env.as_ref(),
        &format!(
            "modprobe dummy && echo kept > /dev/shm/in-memory && (exec -a {marker} sleep 1000 &) && echo ok"
        ),
    );
    assert!(status.success(), "{out}");
    assert_eq!(processes_inside(env.as_ref(), &marker), 1);
    env.end_phase().unwrap();
    assert!(host_processes_with(env.id()).is_empty(), "QEMU still runs after the phase");
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (_, out) = sh(env.as_ref(), "grep -c '^dummy ' /proc/modules; ls /dev/shm; cut -d. -f1 /proc/uptime");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "0", "a module outlived the power-off: {out}");
    assert_eq!(lines.len(), 2, "memory outlived the power-off: {out}");
    assert!(lines[1].parse::<u64>().unwrap() < 120, "not a fresh boot: {out}");
    assert_eq!(processes_inside(env.as_ref(), &marker), 0);
    env.destroy().unwrap();
}

#[test]
fn the_hosts_neighbours_are_unroutable_from_qemus_namespace() {
    let mut env = env();
    env.begin_phase(Network::Outbound).unwrap();
    let qemu = host_processes_with(env.id())
        .into_iter()
        .find(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with("qemu")))
        .expect("QEMU runs");
    let routes = std::process::Command::new("nsenter")
        .arg(format!("--net=/proc/{qemu}/ns/net"))
        .args(["ip", "-o", "route", "show", "type", "prohibit"])
        .output()
        .unwrap();
    let routes = String::from_utf8_lossy(&routes.stdout);
    assert!(routes.contains("169.254.0.0/16"), "{routes}");
    // The guest itself has only QEMU's network: nothing of the host's.
    let (_, inside) = sh(env.as_ref(), "ip -o -4 addr show scope global");
    assert!(inside.contains("10.0.2.15/24"), "{inside}");
    env.destroy().unwrap();
}

/// The machine's root may unmount a host directory's disk and go at the
/// device itself: the disk is read-only below the guest's kernel (QEMU's
/// `readonly=on`), so neither the host's directory nor the disk made of it
/// changes.
#[test]
fn a_shown_directorys_disk_cannot_be_written_by_the_machines_root() {
    let host_dir = std::env::temp_dir().join(format!("cleanroom-vm-shown-{}", std::process::id()));
    std::fs::create_dir_all(host_dir.join("bin")).unwrap();
    std::fs::write(host_dir.join("bin/tool"), "installed on the host\n").unwrap();
    let mut env = env();
    let mount = HostMount { host: host_dir.clone(), path: "/opt/agent".into() };
    env.begin_phase_with(Network::LoopbackOnly, &PhaseOptions { mounts: vec![mount], ..Default::default() })
        .unwrap();
    let disks = || -> Vec<(PathBuf, Vec<u8>)> {
        let dir = home().join("vm");
        let mut found: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("shown-"))
            .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
            .collect();
        found.sort();
        found
    };
    let before = disks();
    assert!(!before.is_empty(), "no disk was made of the host directory");
    let (status, out) = sh(
        env.as_ref(),
        "dev=$(for d in /sys/block/vd*; do [ \"$(cat $d/serial)\" = cleanroom-shown-0 ] && echo /dev/${d##*/}; done)
         test -b \"$dev\" || { echo no device; exit 99; }
         umount /opt/agent || exit 98
         blockdev --setrw $dev
         dd if=/dev/zero of=$dev bs=4096 count=16 conv=notrunc,fsync 2>&1 && echo WROTE
         mount -o rw $dev /opt/agent 2>&1; echo x > /opt/agent/bin/tool && echo CHANGED
         exit 0",
    );
    assert_eq!(status, ExitStatus::Exited(0), "{out}");
    assert!(!out.contains("WROTE") && !out.contains("CHANGED"), "{out}");
    env.end_phase().unwrap();
    assert_eq!(std::fs::read_to_string(host_dir.join("bin/tool")).unwrap(), "installed on the host\n");
    for (disk, bytes) in &before {
        assert!(std::fs::read(disk).unwrap() == *bytes, "{} changed", disk.display());
    }
    env.destroy().unwrap();
    std::fs::remove_dir_all(&host_dir).unwrap();
}

/// With no GPU named for passthrough, a GPU task is skipped saying what to
/// configure, and a machine asked for one anyway is refused: never made
/// without it. A task that wants the host's driver is skipped too: a
/// machine has its own kernel.
#[test]
fn gpus_come_only_from_the_configuration() {
    let unmet = backend().unmet(&Needs::new(1, false, false).with_gpu_driver(GpuDriver::Agent));
    assert_eq!(unmet.len(), 1);
    assert!(unmet[0].need == "gpus" && unmet[0].why.contains("vm.gpus"), "{:?}", unmet[0]);
    let unmet = backend().unmet(&Needs::new(1, false, false));
    assert!(unmet.iter().any(|u| u.why.contains("set `environment.gpu_driver = \"agent\"`")), "{unmet:?}");
    let err = backend().create(&EnvSpec { gpus: 1, ..spec() }).map(drop).unwrap_err();
    assert!(err.to_string().contains("GPUs wanted: 1, and the backend has 0"), "{err}");
    assert!(backend().unmet(&Needs::new(0, false, false)).is_empty());
}

#[test]
fn destroy_removes_the_machines_directory() {
    let mut env = env();
    let id = env.id().to_string();
    env.begin_phase(Network::Outbound).unwrap();
    env.destroy().unwrap();
    assert!(!home().join("vm-envs").join(&id).exists(), "the disk overlay or socket stayed behind");
    assert!(host_processes_with(&id).is_empty());
}

/// Root of its own machine, the agent can wreck its disk; the next boot's
/// failure is then the environment's breakage, not the harness's.
#[test]
fn a_disk_the_agent_wrecked_is_its_breakage_not_an_infrastructure_error() {
    let mut env = env();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "dd if=/dev/zero of=/dev/vda bs=1M count=16 conv=fsync 2>&1");
    assert!(status.success(), "{out}");
    env.end_phase().unwrap();
    let err = env.begin_phase(Network::LoopbackOnly).unwrap_err();
    assert!(matches!(err, EnvError::Broken(_)), "{err}");
    let err = env.diff(&CancelToken::new().unwrap()).unwrap_err();
    assert!(matches!(err, EnvError::Broken(_)), "{err}");
    env.destroy().unwrap();
}

/// The guest kernel patches its own code while its other CPU runs that
/// code (a static key in the scheduler flipped under a fork loop): every
/// vCPU keeps running. Under QEMU's multi-threaded TCG one of them could
/// loop on a stale breakpoint and hang the machine (qemu.rs).
#[test]
fn a_kernel_patching_its_own_code_under_load_keeps_every_cpu_running() {
    let mut env = env();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let storm = "(while :; do /bin/true; done) & busy=$!; n=0; \
                 while [ $n -lt 500 ]; do \
                   echo 1 > /proc/sys/kernel/sched_schedstats; echo 0 > /proc/sys/kernel/sched_schedstats; \
                   n=$((n+1)); \
                 done; kill $busy; echo flipped $n";
    let (status, out) = sh(env.as_ref(), storm);
    assert_eq!((status, out.trim()), (ExitStatus::Exited(0), "flipped 500"));
    let (status, out) = sh(env.as_ref(), "nproc");
    assert_eq!((status, out.trim()), (ExitStatus::Exited(0), "2"), "both CPUs run");
    env.destroy().unwrap();
}

fn snapshots_dir() -> PathBuf {
    let image = image::lookup(image::DEFAULT_IMAGE, image::Flavour::Machine).unwrap().unwrap();
    image.root.parent().unwrap().join("snapshots")
}

/// The snapshots made for machines of `memory_mb` (a size no other test
/// uses), beside the machine image, with when each was last used.
fn snapshots_of(memory_mb: u64) -> Vec<(std::ffi::OsString, std::time::SystemTime)> {
    let mut found: Vec<_> = std::fs::read_dir(snapshots_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".state") && name.contains(&format!("-{memory_mb}mb-"))
        })
        .map(|e| (e.file_name(), e.metadata().unwrap().modified().unwrap()))
        .collect();
    found.sort();
    found
}

fn remove_snapshots_of(memory_mb: u64) {
    let dir = snapshots_dir();
    for (name, _) in snapshots_of(memory_mb) {
        let state = dir.join(name);
        std::fs::remove_file(&state).unwrap();
        let _ = std::fs::remove_file(state.with_extension("lock"));
    }
}

/// Machines resume from a booted snapshot, one for each shape, made on
/// first need; each resumed machine still has its own disk, clock and
/// random numbers, though all share the snapshot's memory.
#[test]
fn machines_of_one_shape_resume_from_one_snapshot_and_keep_their_own_time_and_randomness() {
    const MEMORY_MB: u64 = 1000;
    remove_snapshots_of(MEMORY_MB);
    let shape = EnvSpec { memory_mb: MEMORY_MB, ..spec() };
    let backend = VmBackend::booting(&home(), BootFrom::Snapshot).unwrap();
    backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).unwrap();
    // What a maker killed mid-way left (pid beyond pid_max), and the work of
    // a live one (this process, as the sweep identifies it).
    let dir = snapshots_dir();
    let dead = dir.join(".make-4194305-1-0");
    let live = dir.join(format!(".make-{}-{}-999", std::process::id(), own_start_time()));
    for planted in [&dead, &live] {
        std::fs::create_dir_all(planted).unwrap();
        std::fs::write(planted.join("state"), b"half a snapshot").unwrap();
    }
    let mut seen = Vec::new();
    for round in 0..2 {
        let mut env = backend.create(&shape).unwrap();
        env.files().write_file("/root/round", round.to_string().as_bytes(), 0o644).unwrap();
        let made = snapshots_of(MEMORY_MB);
        assert_eq!(made.len(), 1, "one shape, one snapshot: {made:?}");
        assert!(!dead.exists(), "a dead maker's work is left");
        assert!(live.join("state").exists(), "a live maker's work was removed");
        env.begin_phase(Network::LoopbackOnly).unwrap();
        let used = snapshots_of(MEMORY_MB);
        assert_eq!(used.len(), 1, "a phase without network has the file work's shape: {used:?}");
        assert_eq!(used[0].0, made[0].0);
        let (status, out) = sh(
            env.as_ref(),
            "cat /root/round; echo; cat /proc/sys/kernel/random/boot_id; head -c 16 /dev/urandom | od -An -tx1; date +%s",
        );
        assert!(status.success(), "{out}");
        let lines: Vec<String> = out.lines().map(|l| l.trim().to_string()).collect();
        assert_eq!(lines[0], round.to_string(), "not this trial's disk: {out}");
        let host_now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let guest_now: u64 = lines[3].parse().unwrap();
        // The snapshot was taken before the first round's phase: its clock
        // would be that far behind.
        assert!(host_now.abs_diff(guest_now) <= 2, "the machine's clock is the snapshot's: {out}");
        seen.push((lines[1].clone(), lines[2].clone()));
        env.end_phase().unwrap();
        env.destroy().unwrap();
    }
    assert_ne!(seen[0].0, seen[1].0, "two machines share a boot id");
    assert_ne!(seen[0].1, seen[1].1, "two machines share their random numbers");
    let mut env = backend.create(&shape).unwrap();
    env.begin_phase(Network::Outbound).unwrap();
    assert_eq!(snapshots_of(MEMORY_MB).len(), 2, "a network card is another shape");
    env.destroy().unwrap();
    remove_snapshots_of(MEMORY_MB);
    std::fs::remove_dir_all(&live).unwrap();
}

fn own_start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    stat[stat.rfind(')').unwrap() + 2..].split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn a_backend_that_boots_cold_makes_no_snapshot() {
    const MEMORY_MB: u64 = 1001;
    remove_snapshots_of(MEMORY_MB);
    let backend = VmBackend::booting(&home(), BootFrom::Cold).unwrap();
    backend.prepare_images(&[image::DEFAULT_IMAGE], &mut |_| {}).unwrap();
    let mut env = backend.create(&EnvSpec { memory_mb: MEMORY_MB, ..spec() }).unwrap();
    env.files().write_file("/root/cold", b"cold", 0o644).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "cat /root/cold");
    assert_eq!((status, out.trim()), (ExitStatus::Exited(0), "cold"));
    env.destroy().unwrap();
    assert!(snapshots_of(MEMORY_MB).is_empty());
}

/// A frame carries at most 64 MB; larger files go in parts, from memory
/// and from the host's tree alike.
#[test]
fn files_larger_than_a_frame_are_written_whole() {
    use sha2::{Digest, Sha256};
    let big: Vec<u8> = (0..70u32 << 20).map(|i| (i % 251) as u8).collect();
    let digest: String = Sha256::digest(&big).iter().map(|b| format!("{b:02x}")).collect();
    let tree = home().join("big-tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("weights.bin"), &big).unwrap();
    let mut env = env();
    env.files().write_file("/root/big.bin", &big, 0o644).unwrap();
    env.files().copy_tree_in(&tree, "/opt/artifact", &|_| false).unwrap();
    env.begin_phase(Network::LoopbackOnly).unwrap();
    let (status, out) = sh(env.as_ref(), "sha256sum /root/big.bin /opt/artifact/weights.bin | cut -d' ' -f1");
    assert!(status.success(), "{out}");
    assert_eq!(out.lines().collect::<Vec<_>>(), [digest.as_str(), digest.as_str()]);
    env.destroy().unwrap();
    std::fs::remove_dir_all(&tree).unwrap();
}
