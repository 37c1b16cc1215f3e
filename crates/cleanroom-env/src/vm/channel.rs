//! The harness's end of the agent's port: requests out, answers routed to
//! whoever waits for them, and the guest's loopback connections relayed to
//! the listeners the harness serves.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::vm::protocol::{Frame, Message, Mode};

#[derive(Default)]
struct Routes {
    /// Who waits for answers to request id.
    waiting: HashMap<u64, Sender<Frame>>,
    /// Where connections to a guest port go on the host.
    ports: HashMap<u16, SocketAddr>,
    conns: HashMap<u64, TcpStream>,
    /// Why the port closed, once it has.
    closed: Option<String>,
}

/// Where frames to the agent go: QEMU's socket, or an ssh session's input.
type Writer = Arc<Mutex<Box<dyn Write + Send>>>;

/// A handle that writes whole frames to the port, from any thread.
#[derive(Clone)]
pub struct FrameSender(Writer);

impl FrameSender {
    pub fn send(&self, frame: &Frame) -> io::Result<()> {
        frame.write_to(&mut **self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

pub struct Channel {
    writer: Writer,
    routes: Arc<Mutex<Routes>>,
    next: AtomicU64,
    pub mode: Mode,
}

impl Channel {
    /// Connects to QEMU's socket for the port, sends `start` (a
    /// [`Message::Start`]) and waits for the agent's hello, for at most
    /// `timeout`; `alive` says whether QEMU still runs.
    pub fn open(
        socket: &Path,
        start: &Frame,
        timeout: Duration,
        alive: &mut dyn FnMut() -> bool,
    ) -> io::Result<Channel> {
        let began = Instant::now();
        let mut stream = connect(socket, timeout, alive)?;
        // Waits in the socket until the guest reads it, however long its
        // boot takes.
        start.write_to(&mut stream)?;
        let mut reader = stream.try_clone()?;
        let hello = |m: &Message| match m {
            Message::Hello { mode } => Some(*mode),
            _ => None,
        };
        let mode = first_frame(&mut reader, began, timeout, alive, "the hello", hello)?;
        reader.set_read_timeout(None)?;
        Ok(Channel::serving(Box::new(reader), Box::new(stream), mode))
    }

    /// The channel of an agent that has said hello in `mode` on `reader`.
    pub fn serving(reader: Box<dyn Read + Send>, writer: Box<dyn Write + Send>, mode: Mode) -> Channel {
        let routes = Arc::new(Mutex::new(Routes::default()));
        let writer: Writer = Arc::new(Mutex::new(writer));
        let channel =
            Channel { writer: writer.clone(), routes: routes.clone(), next: AtomicU64::new(1), mode };
        std::thread::spawn(move || read_loop(reader, FrameSender(writer), routes));
        channel
    }

    /// A new request id whose answers arrive on the receiver.
    pub fn register(&self) -> (u64, Receiver<Frame>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        let mut routes = self.routes();
        // A closed port drops the sender at once: the receiver sees the end.
        if routes.closed.is_none() {
            routes.waiting.insert(id, tx);
        }
        (id, rx)
    }

    pub fn forget(&self, id: u64) {
        self.routes().waiting.remove(&id);
    }

    pub fn send(&self, frame: &Frame) -> io::Result<()> {
        self.sender().send(frame)
    }

    pub fn sender(&self) -> FrameSender {
        FrameSender(self.writer.clone())
    }

    /// Sends a request and waits for its one answer (Done, FileIdIs or
    /// Failed), at most `timeout`.
    pub fn call(
        &self,
        request: impl FnOnce(u64) -> Message,
        data: Vec<u8>,
        timeout: Duration,
    ) -> io::Result<Frame> {
        let (id, rx) = self.register();
        let sent = self.send(&Frame::with_data(request(id), data));
        let answer = sent.and_then(|()| match rx.recv_timeout(timeout) {
            Ok(frame) => Ok(frame),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(io::Error::new(io::ErrorKind::TimedOut, "the guest agent did not answer in time"))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self.closed_error()),
        });
        self.forget(id);
        answer
    }

    /// Connections to the guest's 127.0.0.1:`port` go to `to`.
    pub fn route_port(&self, port: u16, to: SocketAddr) {
        self.routes().ports.insert(port, to);
    }

    /// The error of a request that the closed port cut off.
    pub fn closed_error(&self) -> io::Error {
        let why = self.routes().closed.clone().unwrap_or_else(|| "closed".into());
        io::Error::new(io::ErrorKind::BrokenPipe, format!("the machine's agent is gone ({why})"))
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Reads the agent's first frames until `wanted` picks one, at most
/// `timeout` after `began`, while QEMU runs. A [`Message::Waiting`] that is
/// not wanted is skipped: only a cold boot says it, before it reads the
/// start. Anything else is an error.
pub(crate) fn first_frame<T>(
    reader: &mut UnixStream,
    began: Instant,
    timeout: Duration,
    alive: &mut dyn FnMut() -> bool,
    what: &str,
    wanted: impl Fn(&Message) -> Option<T>,
) -> io::Result<T> {
    loop {
        let left = timeout.saturating_sub(began.elapsed());
        if left.is_zero() || !alive() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the guest agent did not send {what}"),
            ));
        }
        // Short reads so that a QEMU that died is noticed.
        reader.set_read_timeout(Some(left.min(Duration::from_millis(500))))?;
        match Frame::read_from(reader) {
            Ok(Some(frame)) => match wanted(&frame.message) {
                Some(found) => return Ok(found),
                None if frame.message == Message::Waiting => {}
                None => {
                    return Err(io::Error::other(format!("the guest agent began with {:?}", frame.message)))
                }
            },
            Ok(None) => return Err(io::Error::other(format!("the machine closed its port before {what}"))),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Connects to a socket QEMU makes as it starts: waits for it to appear,
/// at most `timeout`, while QEMU runs.
pub(crate) fn connect(
    socket: &Path,
    timeout: Duration,
    alive: &mut dyn FnMut() -> bool,
) -> io::Result<UnixStream> {
    let began = Instant::now();
    loop {
        match UnixStream::connect(socket) {
            Ok(stream) => return Ok(stream),
            Err(e) if began.elapsed() < timeout && alive() && is_not_yet(&e) => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(e),
        }
    }
}

fn is_not_yet(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused)
}

fn read_loop(mut reader: Box<dyn Read + Send>, writer: FrameSender, routes: Arc<Mutex<Routes>>) {
    let why = loop {
        let frame = match Frame::read_from(&mut reader) {
            Ok(Some(frame)) => frame,
            Ok(None) => break "the port closed".to_string(),
            Err(e) => break e.to_string(),
        };
        let mut r = routes.lock().unwrap_or_else(|p| p.into_inner());
        match &frame.message {
            Message::Output { id, .. } => {
                if let Some(tx) = r.waiting.get(id) {
                    let _ = tx.send(frame);
                }
            }
            Message::Exited { id, .. }
            | Message::Done { id }
            | Message::FileIdIs { id, .. }
            | Message::Failed { id, .. } => {
                if let Some(tx) = r.waiting.remove(id) {
                    let _ = tx.send(frame);
                }
            }
            Message::Accepted { conn, port } => {
                let (conn, to) = (*conn, r.ports.get(port).copied());
                match to.and_then(|to| TcpStream::connect(to).ok()) {
                    Some(stream) => {
                        if let Ok(reading) = stream.try_clone() {
                            r.conns.insert(conn, stream);
                            let writer = writer.clone();
                            std::thread::spawn(move || pump(reading, conn, writer));
                        }
                    }
                    None => {
                        drop(r);
                        let _ = writer.send(&Frame::new(Message::Close { conn }));
                    }
                }
            }
            Message::Data { conn } => {
                if let Some(stream) = r.conns.get_mut(conn) {
                    let _ = stream.write_all(&frame.data);
                }
            }
            Message::Close { conn } => {
                if let Some(stream) = r.conns.remove(conn) {
                    let _ = stream.shutdown(Shutdown::Write);
                }
            }
            _ => {}
        }
    };
    let mut r = routes.lock().unwrap_or_else(|p| p.into_inner());
    r.closed = Some(why);
    r.waiting.clear();
    for (_, stream) in r.conns.drain() {
        let _ = stream.shutdown(Shutdown::Both);
    }
}

/// The host side of a relayed connection, to the guest.
fn pump(mut stream: TcpStream, conn: u64, writer: FrameSender) {
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 || writer.send(&Frame::with_data(Message::Data { conn }, buf[..n].to_vec())).is_err() {
            break;
        }
    }
    let _ = writer.send(&Frame::new(Message::Close { conn }));
}
