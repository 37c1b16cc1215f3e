//! A command in a running machine, through its agent: output as it comes,
//! the agent's own timeout (which kills the command's whole cgroup), and a
//! kill when the cancel token fires. A machine that stops answering (the
//! agent's commands powered it off, or killed the agent) ends the command
//! as killed, with a note in its output: that is the command's doing.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use crate::backend::{ExecOutcome, ExecRequest, ExitStatus};
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::output::Captured;
use crate::vm::channel::Channel;
use crate::vm::protocol::{Frame, Message, Status};

/// Beyond the command's timeout and grace, how long the agent has to
/// report that it ended it.
const SLACK: Duration = Duration::from_secs(30);

pub fn run(channel: &Channel, req: &ExecRequest, cancel: &CancelToken) -> Result<ExecOutcome, EnvError> {
    let started = Instant::now();
    let (id, rx) = channel.register();
    let exec = Message::Exec {
        id,
        argv: req.argv.clone(),
        cwd: req.cwd.clone(),
        env: req.env.clone(),
        timeout_ms: req.timeout.map(|t| t.as_millis() as u64),
        grace_ms: req.grace.as_millis() as u64,
    };
    let mut outcome = ExecOutcome {
        status: ExitStatus::Exited(0),
        duration: Duration::ZERO,
        stdout: Captured::new(req.output_limit),
        stderr: Captured::new(req.output_limit),
        combined: Captured::new(req.output_limit),
    };
    if channel.send(&Frame::new(exec)).is_err() {
        channel.forget(id);
        return Ok(lost(outcome, started, channel));
    }
    let watcher = CancelWatch::start(cancel, channel, id)?;
    let deadline = req.timeout.map(|t| started + t + req.grace + SLACK);
    let status = loop {
        let frame = match deadline {
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match frame {
            Ok(Frame { message: Message::Output { stream, .. }, data }) => {
                let captured = if stream == 1 { &mut outcome.stdout } else { &mut outcome.stderr };
                captured.push(&data);
                outcome.combined.push(&data);
                if let Some(last_line) = &req.last_line {
                    last_line.feed(&data);
                }
            }
            Ok(Frame { message: Message::Exited { status, .. }, .. }) => break Some(status),
            Ok(Frame { message: Message::Failed { failure, .. }, .. }) => {
                let _ = watcher.stop();
                return Err(EnvError::Phase(format!(
                    "the machine's agent refused the command: {}",
                    failure.message
                )));
            }
            Ok(_) => {}
            // The agent is stopped or starved by what runs in the machine
            // (the agent's own doing): the command timed out; the phase's
            // power-off ends it all.
            Err(RecvTimeoutError::Timeout) => {
                channel.forget(id);
                let note = format!(
                    "\n[cleanroom: the machine's agent did not end the command {}s after its timeout]\n",
                    (req.grace + SLACK).as_secs()
                );
                outcome.stderr.push(note.as_bytes());
                outcome.combined.push(note.as_bytes());
                outcome.status = ExitStatus::TimedOut;
                outcome.duration = started.elapsed();
                let _ = watcher.stop();
                return Ok(outcome);
            }
            Err(RecvTimeoutError::Disconnected) => break None,
        }
    };
    let cancelled = watcher.stop();
    channel.forget(id);
    let Some(status) = status else { return Ok(lost(outcome, started, channel)) };
    outcome.status = match status {
        Status::Exited(code) => ExitStatus::Exited(code),
        Status::Signaled(sig) => ExitStatus::Signaled(sig),
        Status::TimedOut => ExitStatus::TimedOut,
        Status::Killed if cancelled => ExitStatus::Cancelled,
        Status::Killed => ExitStatus::Signaled(libc::SIGKILL),
    };
    outcome.duration = started.elapsed();
    Ok(outcome)
}

fn lost(mut outcome: ExecOutcome, started: Instant, channel: &Channel) -> ExecOutcome {
    let note = format!("\n[cleanroom: {}]\n", channel.closed_error());
    outcome.stderr.push(note.as_bytes());
    outcome.combined.push(note.as_bytes());
    outcome.status = ExitStatus::Signaled(libc::SIGKILL);
    outcome.duration = started.elapsed();
    outcome
}

/// A thread that sends the agent a kill for command `id` when the cancel
/// token fires, woken by the token's descriptor or by [`CancelWatch::stop`].
struct CancelWatch {
    wake: OwnedFd,
    thread: std::thread::JoinHandle<bool>,
}

impl CancelWatch {
    fn start(cancel: &CancelToken, channel: &Channel, id: u64) -> Result<CancelWatch, EnvError> {
        let (read, wake) = crate::sandbox::pipe()?;
        let cancel = cancel.clone();
        let kill = Frame::new(Message::Kill { id });
        // The channel outlives the command: it is only borrowed for sending.
        let sender = channel.sender();
        let thread = std::thread::spawn(move || {
            let mut fds = [
                libc::pollfd { fd: cancel.poll_fd(), events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: read.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            ];
            loop {
                // SAFETY: two valid pollfds, no timeout.
                let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
                if r < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            if cancel.is_cancelled() {
                let _ = sender.send(&kill);
                return true;
            }
            false
        });
        Ok(CancelWatch { wake, thread })
    }

    /// Whether the token fired while the command ran.
    fn stop(self) -> bool {
        drop(self.wake);
        self.thread.join().unwrap_or(false)
    }
}
