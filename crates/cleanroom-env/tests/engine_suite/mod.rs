//! The Engine API client against a real engine (`crate::engine()`), as
//! `scripts/container-engines.sh start` serves it. Needs root and the
//! sandbox's base image (built on first use).

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::engine;
use cleanroom_env::container::{exec, next_frame, Stream};
use cleanroom_env::image::{self, Flavour};
use cleanroom_env::{CancelToken, ExecOutcome, ExecRequest, ExitStatus};
use serde_json::json;

/// The base image imported once for this test binary.
fn base_image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| {
        let base =
            image::ensure(image::DEFAULT_IMAGE, Flavour::Sandbox, None, &mut |_| {}).expect("base image");
        // Imported once per build of the base image: the engine keeps it.
        let digest = base.digest.trim_start_matches("sha256:");
        let reference = format!("cleanroom-test/engine:{}", &digest[..16]);
        if engine().image_id(&reference).unwrap().is_some() {
            return reference;
        }
        let mut tar = Command::new("tar")
            .args(["-C", &base.root.display().to_string(), "-c", "."])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let id = engine().import_image(tar.stdout.as_mut().unwrap(), &reference).unwrap();
        assert!(tar.wait().unwrap().success());
        assert_eq!(engine().image_id(&reference).unwrap().as_deref(), Some(id.as_str()));
        reference
    })
}

/// A container of the base image, labelled as the tests' own, removed on drop.
struct Container {
    id: String,
}

impl Container {
    fn new(network: &str) -> Container {
        let name = format!("cleanroom-test-{}-{}", std::process::id(), rand_suffix());
        let id = engine()
            .create_container(
                Some(&name),
                json!({
                    "Image": base_image(),
                    "Cmd": ["sleep", "infinity"],
                    "Labels": { "cleanroom.owner": std::process::id().to_string() },
                    "HostConfig": {
                        "NetworkMode": network,
                        "Init": true,
                        "Ulimits": [
                            { "Name": "nofile", "Soft": 4096, "Hard": 4096 },
                            { "Name": "nproc", "Soft": 4096, "Hard": 4096 },
                        ],
                    },
                }),
            )
            .unwrap();
        Container { id }
    }

    /// Runs `script` with `input` on its standard input; its exit code and
    /// both outputs.
    fn sh(&self, script: &str, input: &[u8]) -> (i64, String, String) {
        let mut exec = engine()
            .exec(&self.id, &["sh".into(), "-c".into(), script.into()], &[("A".into(), "b c".into())], "/tmp")
            .unwrap();
        exec.stream.get_mut().write_all(input).unwrap();
        exec.stream.get_ref().shutdown(std::net::Shutdown::Write).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        while let Some((stream, bytes)) = next_frame(&mut exec.stream).unwrap() {
            match stream {
                Stream::Stdout => out.extend(bytes),
                Stream::Stderr => err.extend(bytes),
            }
        }
        let code = engine().exec_exit_code(&exec.id).unwrap().expect("the exec has ended");
        (code, String::from_utf8_lossy(&out).into_owned(), String::from_utf8_lossy(&err).into_owned())
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = engine().remove(&self.id);
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[test]
fn the_engine_says_what_it_is() {
    let version = engine().version().unwrap();
    assert_eq!(version.kind, crate::KIND);
    assert!(!version.version.is_empty());
}

#[test]
fn commands_run_with_their_input_output_environment_and_exit_code() {
    let container = Container::new("none");
    engine().start(&container.id).unwrap();
    let (code, out, err) =
        container.sh("cat; echo \"[$A]\" \"$(pwd)\"; echo oops >&2; exit 7", b"from stdin\n");
    assert_eq!(code, 7);
    assert_eq!(out, "from stdin\n[b c] /tmp\n");
    assert_eq!(err, "oops\n");
    // Larger than one frame, larger than the socket's buffers.
    let (code, out, _) = container.sh("head -c 3000000 /dev/zero | tr '\\0' x", b"");
    assert_eq!((code, out.len()), (0, 3_000_000));
}

#[test]
fn a_kill_ends_every_process_and_a_restart_begins_afresh() {
    let container = Container::new("none");
    engine().start(&container.id).unwrap();
    container.sh("setsid sleep 1000 >/dev/null 2>&1 < /dev/null & echo $! > /root/pid", b"");
    // The sleepers by their command line, not a count of every process: an
    // exec of the engine's may still be ending beside the one that counts.
    let sleepers = || {
        let every = "for p in /proc/[0-9]*; do tr '\\0' ' ' <$p/cmdline 2>/dev/null; echo; done";
        container.sh(&format!("{every} | grep -c '^sleep 1000 '"), b"").1.trim().to_string()
    };
    assert_eq!(sleepers(), "1");
    engine().kill(&container.id).unwrap();
    assert_eq!(engine().inspect(&container.id).unwrap()["State"]["Running"], json!(false));
    engine().start(&container.id).unwrap();
    let (_, alive, _) = container.sh("kill -0 $(cat /root/pid) 2>/dev/null && echo alive || echo gone", b"");
    assert_eq!(alive.trim(), "gone");
    assert_eq!(sleepers(), "0");
}

fn run(container: &Container, script: &str, timeout_ms: Option<u64>, cancel: &CancelToken) -> ExecOutcome {
    let mut req = ExecRequest::login_shell(script, "/tmp", vec![("PATH".into(), "/usr/bin:/bin".into())]);
    // A plain shell: a login shell sets PATH and HOSTNAME itself.
    req.argv = vec!["/bin/sh".into(), "-c".into(), script.into()];
    req.timeout = timeout_ms.map(Duration::from_millis);
    req.grace = Duration::from_millis(300);
    req.output_limit = 1 << 16;
    exec::run(&engine(), &container.id, &[], &req, cancel).unwrap()
}

#[test]
fn a_command_reports_its_own_status_streams_and_environment_only() {
    let container = Container::new("none");
    engine().start(&container.id).unwrap();
    let cancel = CancelToken::new().unwrap();
    let out = run(
        &container,
        "echo out; echo err >&2; echo \"$PATH $(pwd) ${container:-none} ${HOSTNAME:-none}\"; exit 3",
        None,
        &cancel,
    );
    assert_eq!(out.status, ExitStatus::Exited(3));
    assert_eq!(out.stdout.to_string_lossy(), "out\n/usr/bin:/bin /tmp none none\n");
    assert_eq!(out.stderr.to_string_lossy(), "err\n");
    assert_eq!(run(&container, "kill -9 $$", None, &cancel).status, ExitStatus::Signaled(9));
    // A child that keeps the output open does not hold the command.
    let out =
        run(&container, "(exec -a cleanroom-lingering sleep 1000 &); echo started", Some(20_000), &cancel);
    assert_eq!((out.status, out.stdout.to_string_lossy()), (ExitStatus::Exited(0), "started\n".to_string()));
    // A flood is bounded.
    let out = run(&container, "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END", None, &cancel);
    assert_eq!(out.stdout.total_bytes(), 5_000_005);
    assert!(out.stdout.to_string_lossy().ends_with("x\nEND\n"));
}

#[test]
fn timeouts_and_cancellation_end_the_commands_group() {
    let container = Container::new("none");
    engine().start(&container.id).unwrap();
    let cancel = CancelToken::new().unwrap();
    let out = run(&container, "trap '' TERM; sleep 1000", Some(300), &cancel);
    assert_eq!(out.status, ExitStatus::TimedOut);
    assert!(out.duration < Duration::from_secs(20), "{:?}", out.duration);
    let out = run(
        &container,
        "(trap '' TERM; exec -a cleanroom-term-child sleep 1000) & sleep 1000",
        Some(300),
        &cancel,
    );
    assert_eq!(out.status, ExitStatus::TimedOut);
    let left = run(
        &container,
        "grep -l '[c]leanroom-term-child' /proc/[0-9]*/cmdline 2>/dev/null | wc -l",
        None,
        &cancel,
    );
    assert_eq!(left.stdout.to_string_lossy().trim(), "0", "the command's child outlived its timeout");
    let cancelled = CancelToken::new().unwrap();
    cancelled.cancel();
    assert_eq!(run(&container, "sleep 1000", None, &cancelled).status, ExitStatus::Cancelled);
}
