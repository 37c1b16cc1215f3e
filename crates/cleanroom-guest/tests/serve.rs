//! The guest agent's protocol, against the real binary serving on its
//! standard input and output (`--serve-stdio ROOT`), as the harness speaks
//! it over a machine's port: files through the sandbox's rules, and no
//! commands outside a phase.

use std::io::Write;
use std::process::{Child, Command, Stdio};

use cleanroom_env::vm::protocol::{Frame, Message, Mode};

struct Agent {
    child: Child,
    root: tempfile::TempDir,
}

impl Agent {
    fn start() -> Agent {
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_cleanroom-guest"))
            .arg("--serve-stdio")
            .arg(root.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let hello = Frame::read_from(child.stdout.as_mut().unwrap()).unwrap().unwrap();
        assert_eq!(hello.message, Message::Hello { mode: Mode::Service });
        Agent { child, root }
    }

    fn ask(&mut self, message: Message, data: &[u8]) -> Frame {
        Frame::with_data(message, data.to_vec()).write_to(self.child.stdin.as_mut().unwrap()).unwrap();
        self.child.stdin.as_mut().unwrap().flush().unwrap();
        Frame::read_from(self.child.stdout.as_mut().unwrap()).unwrap().expect("an answer")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn errno(frame: &Frame) -> Option<i32> {
    match &frame.message {
        Message::Failed { failure, .. } => failure.errno,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn files_go_in_and_out_within_the_root_and_never_through_a_link() {
    let mut agent = Agent::start();
    let done = agent.ask(Message::CreateDirAll { id: 1, path: "/w/in".into(), mode: 0o755 }, b"");
    assert_eq!(done.message, Message::Done { id: 1 });
    let done =
        agent.ask(Message::WriteFile { id: 2, path: "/w/in/a.txt".into(), mode: 0o640 }, b"bytes\0\xff");
    assert_eq!(done.message, Message::Done { id: 2 });
    let read = agent.ask(Message::ReadRegular { id: 3, path: "/w/in/a.txt".into(), limit: 100 }, b"");
    assert_eq!((read.message, read.data.as_slice()), (Message::Done { id: 3 }, &b"bytes\0\xff"[..]));
    let too_large = agent.ask(Message::ReadRegular { id: 4, path: "/w/in/a.txt".into(), limit: 3 }, b"");
    assert_eq!(errno(&too_large), Some(libc::EFBIG));

    // A link the agent left, to a host path: reads and writes refuse it,
    // nothing outside the root changes.
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "host\n").unwrap();
    let link = agent.ask(
        Message::Symlink { id: 5, path: "/w/out".into(), target: outside.path().display().to_string() },
        b"",
    );
    assert_eq!(link.message, Message::Done { id: 5 });
    assert_eq!(std::fs::read_link(agent.root.path().join("w/out")).unwrap(), outside.path());
    let read = agent.ask(Message::ReadRegular { id: 6, path: "/w/out".into(), limit: 100 }, b"");
    assert_eq!(errno(&read), Some(libc::ELOOP));
    let wrote = agent.ask(Message::WriteFile { id: 7, path: "/w/out".into(), mode: 0o644 }, b"forged\n");
    assert!(
        matches!(&wrote.message, Message::Failed { failure, .. } if failure.message.contains("symbolic link"))
    );
    assert_eq!(std::fs::read_to_string(outside.path()).unwrap(), "host\n");
    let escape =
        agent.ask(Message::ReadRegular { id: 8, path: "/../../etc/passwd".into(), limit: 1 << 20 }, b"");
    assert!(matches!(escape.message, Message::Failed { .. }), "{:?}", escape.message);
}

#[test]
fn commands_and_ports_are_refused_outside_a_phase() {
    let mut agent = Agent::start();
    let exec = Message::Exec {
        id: 1,
        argv: vec!["/bin/true".into()],
        cwd: "/".into(),
        env: vec![],
        timeout_ms: None,
        grace_ms: 0,
    };
    assert_eq!(errno(&agent.ask(exec, b"")), Some(libc::EPERM));
    assert_eq!(errno(&agent.ask(Message::Listen { id: 2, port: 47311 }, b"")), Some(libc::EPERM));
    let off = agent.ask(Message::PowerOff { id: 3 }, b"");
    assert_eq!(off.message, Message::Done { id: 3 });
    assert!(agent.child.wait().unwrap().success(), "the agent ends once told to power off");
}
