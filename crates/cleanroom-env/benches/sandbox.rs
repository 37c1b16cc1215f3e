//! Environment lifecycle benchmark (plain `main`, no criterion).
//!
//! Each trial: create an environment with every limit in force (memory,
//! pids, disk), write a file into it, begin a phase, exec `/bin/true`, end
//! the phase, destroy.
//! Needs root and the base image (built on first use).
//!
//! Environment variables:
//! - `BENCH_BACKEND` the backend (default `sandbox`; `vm` boots a machine
//!   per phase, with KVM where it works, else TCG, resumed from a booted
//!   snapshot unless `CLEANROOM_VM_BOOT=cold`)
//! - `BENCH_N` trials per variant (default 50)
//! - `BENCH_WARMUP` untimed trials first (default 2)
//! - `BENCH_DISK_MB`, `BENCH_MEMORY_MB`, `BENCH_PIDS_MAX`, `BENCH_CPUS`
//!   (defaults: the task format's defaults 20480, 4096, 4096 pids, 2 cpus)
//! - `BENCH_HOME` where environments are made (default: a fresh directory
//!   under the system temp dir, removed at the end)
//! - `BENCH_VARIANTS` comma list of `loopback`, `outbound`, `pooled`
//!   (default all three; `pooled` is `outbound` from environments the
//!   backend made ahead of need, `Backend::keep_ready(1)`: between samples
//!   the bench waits, untimed, until the pool has made the next one, as a
//!   run's trials, seconds to hours long, give it time to)
//! - `BENCH_RAW_DIR` if set, every sample (ms) is also appended, one per
//!   line, to `<dir>/<prefix>-<variant>-<part>.txt` (scripts/bench.sh pools
//!   several rounds this way), the prefix `BENCH_RAW_PREFIX` (default
//!   `cleanroom`)
//!
//! `start` is the part a trial waits for before its agent can run:
//! create + write_file + begin_phase.
//!
//! Output: one `RESULT` line per variant and part, easy to grep:
//! `RESULT <variant> <part> median_ms=.. p10_ms=.. p90_ms=..`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cleanroom_env::{image, open_backend, Backend, CancelToken, EnvSpec, ExecRequest, Network};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

const PARTS: [&str; 8] =
    ["total", "create", "write_file", "begin_phase", "exec", "end_phase", "destroy", "start"];

#[derive(Default)]
struct Samples {
    /// One vector per entry of PARTS, in ms.
    parts: [Vec<f64>; 8],
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile of sorted data.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn one_trial(
    backend: &dyn Backend,
    spec: &EnvSpec,
    network: Network,
    req: &ExecRequest,
    cancel: &CancelToken,
) -> [Duration; 8] {
    let t0 = Instant::now();
    let mut env = backend.create(spec).expect("create environment");
    let t1 = Instant::now();
    // The harness puts the task's files in before the agent's phase (on a
    // machine: a boot of the agent alone, with the disk mounted).
    env.files().write_file("/tmp/bench-file", b"bench", 0o644).expect("write a file");
    let t2 = Instant::now();
    env.begin_phase(network).expect("begin_phase");
    let t3 = Instant::now();
    let out = env.exec(req, cancel).expect("exec /bin/true");
    let t4 = Instant::now();
    assert!(out.status.success(), "/bin/true failed: {:?} {}", out.status, out.combined.to_string_lossy());
    env.end_phase().expect("end_phase");
    let t5 = Instant::now();
    env.destroy().expect("destroy");
    let t6 = Instant::now();
    [t6 - t0, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t3 - t0]
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let n = env_u64("BENCH_N", 50).max(1) as usize;
    let warmup = env_u64("BENCH_WARMUP", 2) as usize;
    let spec = EnvSpec {
        image: image::DEFAULT_IMAGE.into(),
        cpus: env_u64("BENCH_CPUS", 2) as u32,
        memory_mb: env_u64("BENCH_MEMORY_MB", 4096),
        disk_mb: env_u64("BENCH_DISK_MB", 20480),
        pids_max: env_u64("BENCH_PIDS_MAX", 4096),
        gpus: 0,
        gpu_driver: Default::default(),
        allow_unlimited: false,
        build: None,
    };
    let (home, remove_home) = match std::env::var_os("BENCH_HOME") {
        Some(h) if !h.is_empty() => (PathBuf::from(h), false),
        _ => (std::env::temp_dir().join(format!("cleanroom-bench-{}", std::process::id())), true),
    };
    let name = std::env::var("BENCH_BACKEND").unwrap_or_else(|_| "sandbox".into());
    let backend = open_backend(&name, &home, &Default::default()).expect("backend");
    let backend = backend.as_ref();
    let started = Instant::now();
    backend
        .prepare_images(&[image::DEFAULT_IMAGE], &mut |msg| eprintln!("image: {msg}"))
        .expect("base image");
    eprintln!("image ready ({:.1} s)", started.elapsed().as_secs_f64());
    {
        // Every limit must be in force, or the figures mean nothing.
        let env = backend.create(&spec).expect("create environment");
        let l = env.limits();
        assert!(
            [l.memory, l.pids, l.disk].iter().all(|s| *s == cleanroom_env::LimitState::Enforced),
            "a limit is not enforced: {l:?}"
        );
        env.destroy().expect("destroy");
    }
    let req = ExecRequest {
        argv: vec!["/bin/true".into()],
        cwd: "/".into(),
        env: vec![("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into())],
        timeout: Some(Duration::from_secs(60)),
        grace: Duration::from_secs(1),
        last_line: None,
        output_limit: 64 * 1024,
    };
    let cancel = CancelToken::new().expect("cancel token");
    let variants = std::env::var("BENCH_VARIANTS").unwrap_or_else(|_| "loopback,outbound,pooled".into());
    println!(
        "cleanroom {name} bench{}: N={n} (+{warmup} warm-up), cpus={} memory_mb={} disk_mb={} pids_max={}, home={}",
        backend.accelerator().map(|a| format!(" ({a})")).unwrap_or_default(),
        spec.cpus,
        spec.memory_mb,
        spec.disk_mb,
        spec.pids_max,
        home.display()
    );
    for variant in variants.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let network = match variant {
            "loopback" => Network::LoopbackOnly,
            "outbound" | "pooled" => Network::Outbound,
            other => panic!("unknown variant {other} (loopback, outbound, pooled)"),
        };
        let pooled = variant == "pooled";
        backend.keep_ready(usize::from(pooled)).expect("keep_ready");
        let trial = || {
            if pooled {
                backend.wait_until_ready();
            }
            one_trial(backend, &spec, network, &req, &cancel)
        };
        for _ in 0..warmup {
            trial();
        }
        let mut s = Samples::default();
        for _ in 0..n {
            let d = trial();
            for (i, d) in d.iter().enumerate() {
                s.parts[i].push(ms(*d));
            }
        }
        if let Some(dir) = std::env::var_os("BENCH_RAW_DIR").filter(|d| !d.is_empty()) {
            use std::io::Write;
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("BENCH_RAW_DIR");
            for (i, part) in PARTS.iter().enumerate() {
                let prefix = std::env::var("BENCH_RAW_PREFIX").unwrap_or_else(|_| "cleanroom".into());
                let path = dir.join(format!("{prefix}-{variant}-{part}.txt"));
                let mut f =
                    std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("raw file");
                for v in &s.parts[i] {
                    writeln!(f, "{v:.3}").expect("write raw file");
                }
            }
        }
        backend.keep_ready(0).expect("keep_ready");
        println!(
            "-- variant {variant} (Network::{network:?}{}): create + write_file + begin_phase + exec /bin/true + end_phase + destroy",
            if pooled { ", from the pool" } else { "" }
        );
        for (i, part) in PARTS.iter().enumerate() {
            let v = &mut s.parts[i];
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "RESULT {variant:<8} {part:<11} median_ms={:8.2} p10_ms={:8.2} p90_ms={:8.2} min_ms={:8.2} max_ms={:8.2}",
                median(v),
                percentile(v, 10.0),
                percentile(v, 90.0),
                v[0],
                v[v.len() - 1],
            );
        }
    }
    if remove_home {
        let _ = std::fs::remove_dir_all(&home);
    }
}
