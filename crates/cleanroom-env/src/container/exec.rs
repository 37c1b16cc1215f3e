//! A command in a running container, through the engine's exec. The engine
//! starts every exec as the leader of a session of its own but cannot
//! signal it, so the command runs under a wrapper that clears the
//! environment to the request's own and first tells its pid (the first
//! line of its error output, taken out of what is captured): a timeout or
//! a cancel signals the command's process group from a second exec. What
//! the command leaves outside its group lives until the phase ends.
//!
//! The engine reports an exit code only, so a code above 128 is taken as
//! the signal that killed the command (as a shell reports it).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::backend::{ExecOutcome, ExecRequest, ExitStatus};
use crate::cancel::CancelToken;
use crate::container::engine::Engine;
use crate::container::frames::{self, Stream};
use crate::error::EnvError;
use crate::output::Captured;

/// How often the cancel token and the deadlines are looked at while output
/// is awaited.
const TICK: Duration = Duration::from_millis(100);
/// After its streams end, how long an exec may take to be reported ended.
const EXIT_REPORT: Duration = Duration::from_secs(10);
/// After the exec has ended, how long without output before what it left
/// behind is taken to hold its streams.
const QUIET: Duration = Duration::from_millis(200);
/// The most bytes of the pid line.
const PID_LINE: usize = 32;

/// The wrapper's script: its pid, then the command itself in its place.
const WRAPPER: &str = "echo \"$$\" >&2; exec \"$@\"";

/// Runs `req` in `container`, in an environment of `base` (the image's
/// variables) overridden by the request's own.
pub fn run(
    engine: &Engine,
    container: &str,
    base: &[(String, String)],
    req: &ExecRequest,
    cancel: &CancelToken,
) -> Result<ExecOutcome, EnvError> {
    let started = Instant::now();
    let mut argv: Vec<String> = vec!["/usr/bin/env".into(), "-i".into()];
    // `env` sets them in order: the request's, after, win.
    argv.extend(base.iter().chain(&req.env).map(|(k, v)| format!("{k}={v}")));
    argv.extend(["/bin/sh".into(), "-c".into(), WRAPPER.into(), "cleanroom-exec".into()]);
    argv.extend(req.argv.iter().cloned());
    let exec = engine.exec(container, &argv, &[], &req.cwd)?;
    // No input: the command reads the end of it.
    let _ = exec.stream.get_ref().shutdown(std::net::Shutdown::Write);
    let (tx, rx) = mpsc::channel();
    let mut stream = exec.stream;
    std::thread::spawn(move || loop {
        let frame = frames::next(&mut stream);
        let end = !matches!(frame, Ok(Some(_)));
        if tx.send(frame).is_err() || end {
            break;
        }
    });
    let mut outcome = ExecOutcome {
        status: ExitStatus::Exited(0),
        duration: Duration::ZERO,
        stdout: Captured::new(req.output_limit),
        stderr: Captured::new(req.output_limit),
        combined: Captured::new(req.output_limit),
    };
    let mut pid = PidLine::default();
    let mut state = State::Running;
    let deadline = req.timeout.map(|t| started + t);
    let mut exit_code = None;
    let mut last_output = Instant::now();
    let mut last_poll = Instant::now();
    loop {
        match rx.recv_timeout(TICK) {
            Ok(Ok(Some((stream, bytes)))) => {
                let bytes = match stream {
                    Stream::Stderr => pid.take_from(&bytes),
                    Stream::Stdout => bytes,
                };
                let captured =
                    if stream == Stream::Stdout { &mut outcome.stdout } else { &mut outcome.stderr };
                captured.push(&bytes);
                outcome.combined.push(&bytes);
                if let Some(last_line) = &req.last_line {
                    last_line.feed(&bytes);
                }
                last_output = Instant::now();
            }
            Ok(Ok(None)) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(Err(e)) => return Err(EnvError::io("reading an exec's output", e)),
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if exit_code.is_none() && now - last_poll >= TICK {
            exit_code = engine.exec_exit_code(&exec.id)?;
            last_poll = now;
        }
        state = match state {
            State::Running => {
                let why = if cancel.is_cancelled() {
                    Some(ExitStatus::Cancelled)
                } else if deadline.is_some_and(|d| now >= d) {
                    Some(ExitStatus::TimedOut)
                } else {
                    None
                };
                match (why, pid.value) {
                    (None, _) => State::Running,
                    // Nothing to signal: the phase's end kills it.
                    (Some(why), None) => return Ok(finish(outcome, why, started)),
                    (Some(why), Some(pid)) => {
                        signal(engine, container, pid, "TERM")?;
                        State::Terminating { why, kill_at: now + req.grace }
                    }
                }
            }
            // KILL after the grace, or as soon as the command itself has
            // ended (what it left in its group holds the streams open).
            State::Terminating { why, kill_at } if now >= kill_at || exit_code.is_some() => {
                if let Some(pid) = pid.value {
                    signal(engine, container, pid, "KILL")?;
                }
                State::Killed { why }
            }
            other => other,
        };
        // Ended, but what it left behind holds its streams open: what it
        // wrote before its end has come by now (after a timeout, once what
        // it left in its group was killed).
        if exit_code.is_some() && now - last_output >= QUIET && !matches!(state, State::Terminating { .. }) {
            break;
        }
    }
    match state {
        State::Running => {}
        // Its streams ended with the command (Podman ends them then): what
        // it left in its group goes now.
        State::Terminating { why, .. } => {
            if let Some(pid) = pid.value {
                signal(engine, container, pid, "KILL")?;
            }
            return Ok(finish(outcome, why, started));
        }
        State::Killed { why } => return Ok(finish(outcome, why, started)),
    }
    let reported = Instant::now();
    let code = loop {
        if let Some(code) = exit_code.or(engine.exec_exit_code(&exec.id)?) {
            break code;
        }
        if reported.elapsed() > EXIT_REPORT {
            return Err(EnvError::Phase(
                "the engine did not report an exec's end after its output ended".into(),
            ));
        }
        std::thread::sleep(TICK);
    };
    let status = match i32::try_from(code).unwrap_or(i32::MAX) {
        code @ 129..=192 => ExitStatus::Signaled(code - 128),
        code => ExitStatus::Exited(code),
    };
    Ok(finish(outcome, status, started))
}

/// Where the harness is with ending a command.
enum State {
    Running,
    /// TERM sent; KILL at `kill_at`.
    Terminating {
        why: ExitStatus,
        kill_at: Instant,
    },
    Killed {
        why: ExitStatus,
    },
}

fn finish(mut outcome: ExecOutcome, status: ExitStatus, started: Instant) -> ExecOutcome {
    outcome.status = status;
    outcome.duration = started.elapsed();
    outcome
}

/// Sends `signal` to the process group `pid` leads, from an exec of its own.
fn signal(engine: &Engine, container: &str, pid: u32, signal: &str) -> Result<(), EnvError> {
    let script = format!("kill -s {signal} -- -{pid} 2>/dev/null; true");
    let mut exec = engine.exec(container, &["/bin/sh".into(), "-c".into(), script], &[], "/")?;
    let _ = exec.stream.get_ref().shutdown(std::net::Shutdown::Write);
    while frames::next(&mut exec.stream).map_err(|e| EnvError::io("signalling a command", e))?.is_some() {}
    Ok(())
}

/// The wrapper's first line of error output, as it arrives.
#[derive(Default)]
struct PidLine {
    seen: Vec<u8>,
    done: bool,
    value: Option<u32>,
}

impl PidLine {
    /// What of `bytes` is the command's own output.
    fn take_from(&mut self, bytes: &[u8]) -> Vec<u8> {
        if self.done {
            return bytes.to_vec();
        }
        let Some(end) = bytes.iter().position(|b| *b == b'\n') else {
            self.seen.extend_from_slice(bytes);
            if self.seen.len() > PID_LINE {
                self.done = true;
                return std::mem::take(&mut self.seen);
            }
            return Vec::new();
        };
        self.seen.extend_from_slice(&bytes[..end]);
        self.done = true;
        self.value = std::str::from_utf8(&self.seen).ok().and_then(|s| s.trim().parse().ok());
        if self.value.is_none() {
            // Not the wrapper's line: the command's own.
            let mut all = std::mem::take(&mut self.seen);
            all.extend_from_slice(&bytes[end..]);
            return all;
        }
        bytes[end + 1..].to_vec()
    }
}
