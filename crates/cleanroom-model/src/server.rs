//! The connections of a harness service that an environment reaches (the
//! model forwarder, the package cache), served so that its client (the
//! agent under test, which may attack it) cannot exhaust or stop the
//! harness.
//!
//! One accept thread and at most [`Limits::max_connections`] connection
//! threads, all of this server's own (a server beside it shares nothing).
//! What can go wrong, and what holds:
//! - many connections: those over the cap get a 503 from the accept thread
//!   and are closed, so threads and descriptors stay bounded;
//! - a client that sends nothing, or trickles its request, or does not read
//!   its answer: each connection has a deadline for waiting, for receiving
//!   one request and for sending one answer (for a streamed answer, for
//!   each piece of it), so it gives its slot back;
//! - a wrong token or a huge body: the handler screens the head before the
//!   body is read, and sizes are bounded (http.rs);
//! - accept failing (EMFILE, ENFILE, ECONNABORTED): the loop pauses and goes
//!   on; only [`Server::stop`] ends it.
//!
//! The time the handler takes (the upstream model's answer) is under no
//! deadline here: the gateway bounds it.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::{self, Request, Response};

/// Connections served at once. An agent CLI keeps a few open (parallel
/// requests, a keep-alive pool); each costs the harness a thread.
const MAX_CONNECTIONS: usize = 32;
/// How long a connection may wait for its next request. Longer than the
/// keep-alive pools of the agents' HTTP clients (4 s to 90 s) mostly, so
/// that the client, not the forwarder, closes an idle connection.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// From a request's first byte to the end of its body. A 32 MB body takes
/// well under a second over loopback; this is for a starved client.
const REQUEST_DEADLINE: Duration = Duration::from_secs(30);
/// For writing one answer (a few hundred kilobytes at most).
const RESPONSE_DEADLINE: Duration = Duration::from_secs(30);
/// Closing a connection with a request unread makes the kernel send a
/// reset, which can destroy the answer before the client reads it; so the
/// forwarder first reads and drops what still comes, this long and this
/// much at most.
const LINGER: Duration = Duration::from_secs(2);
const LINGER_LIMIT: u64 = 1 << 20;
/// How long the accept loop waits after accept failed, so that a lasting
/// failure (out of descriptors) does not spin it.
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// Bounds on what the forwarder's clients can hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
    /// How long a connection may wait for its next request.
    pub idle_timeout: Duration,
    /// For receiving a request's head and body, from its first byte.
    pub request_deadline: Duration,
    /// For sending one answer.
    pub response_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: MAX_CONNECTIONS,
            idle_timeout: IDLE_TIMEOUT,
            request_deadline: REQUEST_DEADLINE,
            response_deadline: RESPONSE_DEADLINE,
        }
    }
}

/// What the server does with requests.
pub trait Handler: Send + Sync + 'static {
    /// An answer to a request from its head alone (a wrong token); the
    /// body is then never read, and the connection closes.
    fn screen(&self, head: &Request) -> Option<Response>;
    /// The answer to a whole request (this may take the model's time).
    fn respond(&self, request: &Request) -> Response;
    /// The answer for a request refused or not read (`path` is empty when
    /// its head is not known).
    fn error(&self, path: &str, status: u16, message: &str) -> Response;
}

pub struct Server {
    listener: TcpListener,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `listener`; `name` (`forwarder`, `cache`) names the threads
    /// and the errors the clients read.
    pub fn start(
        name: &'static str,
        listener: TcpListener,
        handler: Arc<dyn Handler>,
        limits: Limits,
    ) -> io::Result<Server> {
        let accepting = listener.try_clone()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let stop_seen = stopping.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-accept"))
            .spawn(move || accept_loop(name, &accepting, &handler, limits, &stop_seen))?;
        Ok(Server { listener, stopping, thread: Some(thread) })
    }

    /// Stops accepting. Connections being served end on their own: their
    /// peers close, or their deadlines pass.
    pub fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // SAFETY: shutdown(2) of a socket we own wakes the blocked accept.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(
    name: &'static str,
    listener: &TcpListener,
    handler: &Arc<dyn Handler>,
    limits: Limits,
    stopping: &AtomicBool,
) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = listener.accept();
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let conn = match accepted {
            Ok((conn, _)) => conn,
            // Whatever failed (EMFILE, ENFILE, ENOBUFS, ECONNABORTED), a
            // later accept may succeed.
            Err(_) => {
                std::thread::park_timeout(ACCEPT_PAUSE);
                continue;
            }
        };
        let Some(slot) = Slot::take(&active, limits.max_connections) else {
            refuse(name, conn, handler.as_ref(), limits.max_connections);
            continue;
        };
        let handler = handler.clone();
        let spawned = std::thread::Builder::new().name(format!("{name}-conn")).spawn(move || {
            let _slot = slot;
            serve(name, conn, handler.as_ref(), &limits);
        });
        // Out of threads: the closure, with the connection and its slot,
        // is dropped; pause as for a failed accept.
        if spawned.is_err() {
            std::thread::park_timeout(ACCEPT_PAUSE);
        }
    }
}

/// One of a server's connection slots, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        active.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < max).then_some(n + 1)).ok()?;
        Some(Slot(active.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers 503 without reading and closes, never blocking the accept loop
/// (a fresh connection's send buffer takes the answer at once).
fn refuse(name: &str, conn: TcpStream, handler: &dyn Handler, max: usize) {
    let message = format!("cleanroom {name}: {max} connections are open already; retry later");
    if conn.set_nonblocking(true).is_ok() {
        let _ = http::write_response(&mut &conn, handler.error("", 503, &message), false);
    }
}

fn serve(name: &str, conn: TcpStream, handler: &dyn Handler, limits: &Limits) {
    let mut conn = BufReader::new(Deadlined { stream: conn, deadline: Instant::now(), renew: None });
    loop {
        conn.get_mut().expire_in(limits.idle_timeout);
        match conn.fill_buf() {
            Ok([]) | Err(_) => return,
            Ok(_) => {}
        }
        conn.get_mut().expire_in(limits.request_deadline);
        let request = match receive(name, &mut conn, handler) {
            Ok(request) => request,
            Err(answer) => {
                if let Some(answer) = answer {
                    conn.get_mut().expire_in(limits.response_deadline);
                    if http::write_response(conn.get_mut(), answer, false).is_ok() {
                        linger(conn.get_mut());
                    }
                }
                return;
            }
        };
        let response = handler.respond(&request);
        conn.get_mut().expire_in(limits.response_deadline);
        // A streamed answer may be large (a download): its deadline is for
        // each piece, so only a client that stops reading loses it.
        conn.get_mut().renew =
            matches!(response, Response::Stream { .. }).then_some(limits.response_deadline);
        let sent = http::write_response(conn.get_mut(), response, !request.wants_close());
        conn.get_mut().renew = None;
        match sent {
            Ok(true) => {}
            _ => return,
        }
    }
}

/// Reads one request: its head, which the handler screens, then its body.
/// Err holds the answer to give before closing, if there is anyone to
/// give it to.
fn receive(
    name: &str,
    conn: &mut BufReader<Deadlined>,
    handler: &dyn Handler,
) -> Result<Request, Option<Response>> {
    let answer = |path: &str, e: http::ReadError| {
        e.status().map(|status| handler.error(path, status, &format!("cleanroom {name}: {e}")))
    };
    let mut request = match http::read_head(conn) {
        Ok(Some(head)) => head,
        Ok(None) => return Err(None),
        Err(e) => return Err(answer("", e)),
    };
    if let Some(refusal) = handler.screen(&request) {
        return Err(Some(refusal));
    }
    match http::read_body(conn, &mut request) {
        Ok(()) => Ok(request),
        Err(e) => Err(answer(&request.path, e)),
    }
}

/// Ends sending, then drops what the client still sends until it closes
/// (see [`LINGER`]).
fn linger(conn: &mut Deadlined) {
    let _ = conn.stream.shutdown(Shutdown::Write);
    conn.expire_in(LINGER);
    let _ = io::copy(&mut conn.take(LINGER_LIMIT), &mut io::sink());
}

/// A connection whose reads and writes fail once its deadline has passed:
/// each blocking call waits at most until then, so a client that sends or
/// reads a byte at a time cannot stretch it.
struct Deadlined {
    stream: TcpStream,
    deadline: Instant,
    /// While a streamed answer is written: each write renews the deadline
    /// by this much.
    renew: Option<Duration>,
}

impl Deadlined {
    fn expire_in(&mut self, within: Duration) {
        self.deadline = Instant::now() + within;
    }

    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.stream.set_read_timeout(Some(self.left()?))?;
        self.stream.read(buf)
    }
}

impl Write for Deadlined {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(within) = self.renew {
            self.expire_in(within);
        }
        self.stream.set_write_timeout(Some(self.left()?))?;
        self.stream.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}
