//! What the forwarder's tests share: a chat-completions upstream that
//! answers after a delay, forwarders in front of it, and HTTP spoken by
//! hand over sockets (the tests send half requests and hold connections
//! open, which no client library does).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cleanroom_model::forwarder::{Forwarder, Limits};
use cleanroom_model::{Budget, ChatClient, Gateway, Meter, ModelConfig};

pub const TOKEN: &str = "cleanroom-trial-token";

/// What the upstream's completions say.
pub const ANSWER: &str = "hello from upstream";

/// A forwarder on a loopback port of its own, before an upstream of its own.
pub struct Running {
    pub addr: SocketAddr,
    pub forwarder: Forwarder,
}

pub fn forwarder(limits: Limits, upstream_delay: Duration) -> Running {
    let config = ModelConfig {
        base_url: upstream(upstream_delay),
        api_key_env: None,
        model: "upstream-model".into(),
        prices: Default::default(),
        request_timeout_sec: 60,
        max_retries: 0,
        retry_backoff_ms: 10,
        request_defaults: Default::default(),
    };
    let gateway = Arc::new(Gateway::new(ChatClient::new(&config).unwrap(), Meter::new(Budget::default())));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let forwarder = Forwarder::start_with_limits(
        listener,
        gateway,
        TOKEN.into(),
        "agent-model".into(),
        Arc::new(|_| {}),
        None,
        limits,
    )
    .unwrap();
    Running { addr, forwarder }
}

/// A chat-completions server that answers every request with one
/// completion after `delay` (a model thinking); its base URL.
fn upstream(delay: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || answer_upstream(conn, delay));
        }
    });
    base_url
}

fn answer_upstream(conn: TcpStream, delay: Duration) {
    let mut reader = BufReader::new(conn);
    let Some((_, head, _)) = read_head(&mut reader) else { return };
    let mut body = vec![0; content_length(&head)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    std::thread::sleep(delay);
    let completion = serde_json::json!({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "upstream-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    })
    .to_string();
    let _ = write!(
        reader.get_mut(),
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{completion}",
        completion.len()
    );
}

/// An authorised request for the model list (answered by the forwarder
/// itself).
pub fn models_request() -> String {
    format!("GET /v1/models HTTP/1.1\r\nhost: forwarder\r\nauthorization: Bearer {TOKEN}\r\n\r\n")
}

/// An authorised chat completion request (answered through the upstream).
pub fn chat_request() -> String {
    let body = r#"{"model":"agent-model","messages":[{"role":"user","content":"hi"}]}"#;
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: forwarder\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A connection whose reads give up after `patience` (so a test fails
/// rather than hangs).
pub fn connect(addr: SocketAddr, patience: Duration) -> TcpStream {
    let conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(patience)).unwrap();
    conn
}

/// An answer as read from the socket.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// Sends `request` on a new connection and reads the answer.
pub fn exchange(addr: SocketAddr, request: &str) -> Answer {
    let mut conn = connect(addr, Duration::from_secs(20));
    conn.write_all(request.as_bytes()).unwrap();
    read_answer(&mut BufReader::new(conn)).expect("an answer")
}

/// Sends `request` on new connections until one is answered with other
/// than a refusal (503, or a connection closed unanswered), for `patience`
/// at most; the last answer.
pub fn served_within(addr: SocketAddr, request: &str, patience: Duration) -> Answer {
    let until = Instant::now() + patience;
    loop {
        let answer = TcpStream::connect(addr).ok().and_then(|mut conn| {
            conn.set_read_timeout(Some(patience)).unwrap();
            conn.write_all(request.as_bytes()).ok()?;
            read_answer(&mut BufReader::new(conn))
        });
        match answer {
            Some(a) if a.status != 503 => return a,
            Some(a) if Instant::now() > until => return a,
            _ if Instant::now() > until => panic!("no answer within {patience:?}"),
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// The next answer on a connection; None when it closed or failed first.
pub fn read_answer(reader: &mut BufReader<TcpStream>) -> Option<Answer> {
    let (status_line, head, length) = read_head(reader)?;
    let status = status_line.split_whitespace().nth(1)?.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Answer { status, head, body: String::from_utf8_lossy(&body).into_owned() })
}

/// The first line, the whole head, and the content length.
fn read_head(reader: &mut impl BufRead) -> Option<(String, String, usize)> {
    let mut first = String::new();
    if reader.read_line(&mut first).ok()? == 0 {
        return None;
    }
    let mut head = first.clone();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line.trim_end().is_empty() {
            break;
        }
    }
    let length = content_length(&head);
    Some((first.trim_end().to_string(), head, length))
}

fn content_length(head: &str) -> usize {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Threads of this process (each test binary runs in a process of its own).
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}
