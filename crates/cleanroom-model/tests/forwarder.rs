//! The forwarder against its clients, over real loopback sockets: what a
//! legitimate agent gets, and what an agent attacking it gets.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cleanroom_model::forwarder::Limits;
use common::{chat_request, connect, exchange, forwarder, models_request, read_answer, TOKEN};

#[test]
fn a_model_slower_than_every_client_deadline_still_gets_its_answer_through() {
    let short = Duration::from_millis(300);
    let limits = Limits {
        idle_timeout: short,
        request_deadline: short,
        response_deadline: short,
        ..Limits::default()
    };
    let f = forwarder(limits, Duration::from_millis(1500));
    let answer = exchange(f.addr, &chat_request());
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains(common::ANSWER), "{answer:?}");
}

#[test]
fn requests_on_one_kept_alive_connection_are_served_in_turn() {
    let f = forwarder(Limits::default(), Duration::ZERO);
    let mut conn = connect(f.addr, Duration::from_secs(20));
    conn.write_all(format!("{}{}", models_request(), chat_request()).as_bytes()).unwrap();
    let mut reader = BufReader::new(conn);
    let models = read_answer(&mut reader).expect("the first answer");
    assert_eq!(models.status, 200, "{models:?}");
    assert!(models.body.contains("agent-model"), "{models:?}");
    let chat = read_answer(&mut reader).expect("the second answer");
    assert_eq!(chat.status, 200, "{chat:?}");
    assert!(chat.body.contains(common::ANSWER), "{chat:?}");
}

/// An HTTP/1.0 client that reads its answer to the end gets it with the
/// connection closed, not after the idle timeout; one that asks to keep
/// the connection, or speaks HTTP/1.1, keeps it.
#[test]
fn an_http_1_0_answer_ends_with_its_connection_unless_kept() {
    let f = forwarder(Limits { idle_timeout: Duration::from_secs(600), ..Limits::default() }, Duration::ZERO);
    let http_1_0 = models_request().replacen("HTTP/1.1", "HTTP/1.0", 1);
    let mut conn = connect(f.addr, Duration::from_secs(20));
    conn.write_all(http_1_0.as_bytes()).unwrap();
    let mut all = String::new();
    conn.read_to_string(&mut all).expect("the connection closed after the answer");
    assert!(all.starts_with("HTTP/1.1 200 ") && all.contains("connection: close\r\n"), "{all}");
    assert!(all.contains("agent-model"), "{all}");

    let kept = http_1_0.replacen("\r\n", "\r\nconnection: keep-alive\r\n", 1);
    for request in [kept, models_request()] {
        let mut conn = connect(f.addr, Duration::from_secs(20));
        conn.write_all(format!("{request}{request}").as_bytes()).unwrap();
        let mut reader = BufReader::new(conn);
        for turn in ["first", "second"] {
            let answer = read_answer(&mut reader).unwrap_or_else(|| panic!("the {turn} answer to {request}"));
            assert_eq!(answer.status, 200, "{answer:?}");
        }
    }
}

#[test]
fn a_wrong_token_is_refused_from_the_headers_without_the_body_being_read() {
    let f = forwarder(Limits::default(), Duration::ZERO);
    // A body within the limits, announced and never sent (it would be
    // waited for if it were read), one over them, and one the client asks
    // leave to send: each is answered 401 on the headers alone.
    for extra in [
        "content-length: 1000\r\n",
        "content-length: 1099511627776\r\n",
        "content-length: 10\r\nexpect: 100-continue\r\n",
    ] {
        let mut conn = connect(f.addr, Duration::from_secs(20));
        write!(
            conn,
            "POST /v1/messages HTTP/1.1\r\nhost: forwarder\r\nx-api-key: not-{TOKEN}\r\n{extra}\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(conn);
        let answer = read_answer(&mut reader).expect("an answer to the headers");
        assert_eq!(answer.status, 401, "{extra}: {answer:?}");
        assert!(answer.body.contains("authentication_error"), "{answer:?}");
        assert!(answer.head.contains("connection: close"), "{answer:?}");
        assert_eq!(reader.read(&mut [0; 1]).unwrap(), 0, "the connection closes after a refusal");
    }
}

#[test]
fn oversized_requests_are_answered_with_their_status_before_the_excess_is_read() {
    let f = forwarder(Limits::default(), Duration::ZERO);
    let authorised = format!("host: forwarder\r\nauthorization: Bearer {TOKEN}\r\n");
    let many_headers: String = (0..200).map(|i| format!("x-header-{i}: v\r\n")).collect();
    let endless_header = format!("x-long: {}", "a".repeat(256 << 10));
    let cases = [
        // A body over the limit: announced, or as a chunk.
        (
            format!("POST /v1/chat/completions HTTP/1.1\r\n{authorised}content-length: 1073741824\r\n\r\n"),
            413,
        ),
        (
            format!(
                "POST /v1/responses HTTP/1.1\r\n{authorised}transfer-encoding: chunked\r\n\r\n4000000\r\n"
            ),
            413,
        ),
        (format!("POST /v1/chat/completions HTTP/1.1\r\n{authorised}{many_headers}\r\n"), 431),
        // A header line with no end: refused after the head's limit.
        (format!("POST /v1/chat/completions HTTP/1.1\r\n{authorised}{endless_header}"), 431),
        (format!("POST /v1/chat/completions HTTP/1.1\r\n{authorised}content-length: lots\r\n\r\n"), 400),
        ("NONSENSE\r\n\r\n".to_string(), 400),
    ];
    for (request, status) in cases {
        let answer = exchange(f.addr, &request);
        assert_eq!(answer.status, status, "{}: {answer:?}", &request[..60.min(request.len())]);
    }
}

#[test]
fn a_request_trickled_a_byte_at_a_time_is_cut_off_at_its_deadline() {
    let deadline = Duration::from_secs(1);
    let f = forwarder(Limits { request_deadline: deadline, ..Limits::default() }, Duration::ZERO);
    let conn = connect(f.addr, Duration::from_secs(20));
    let mut trickle = conn.try_clone().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let writer = {
        let done = done.clone();
        // A byte every 50 ms: far more often than any per-read timeout.
        std::thread::spawn(move || {
            let head = format!("GET /v1/models HTTP/1.1\r\nauthorization: Bearer {TOKEN}\r\nx-slow: ");
            for byte in head.bytes().chain(std::iter::repeat(b'a')) {
                if done.load(Ordering::SeqCst) || trickle.write_all(&[byte]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let mut reader = BufReader::new(conn);
    let answer = read_answer(&mut reader);
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let answer = answer.expect("an answer, not a hung connection");
    assert_eq!(answer.status, 408, "{answer:?}");
    // Past the deadline; without it the trickle would go on until the
    // connection's read timeout failed the expect above.
    assert!(took >= deadline, "cut off after {took:?}");
    assert!(reader.fill_buf().map(|b| b.is_empty()).unwrap_or(true), "the connection closes after it");
}

#[test]
fn a_second_forwarder_serves_normally_while_the_first_is_flooded() {
    let limits = Limits { max_connections: 4, ..Limits::default() };
    let flooded = forwarder(limits, Duration::ZERO);
    let other = forwarder(limits, Duration::ZERO);
    // Idle connections take every slot of the first (each waits for its
    // request for a minute) ...
    let held: Vec<_> =
        (0..limits.max_connections).map(|_| connect(flooded.addr, Duration::from_secs(20))).collect();
    // ... so that the next is refused at once, not left hanging.
    let refused = read_answer(&mut BufReader::new(connect(flooded.addr, Duration::from_secs(20))));
    let refused = refused.expect("an answer from the flooded forwarder");
    assert_eq!(refused.status, 503, "{refused:?}");
    let served = exchange(other.addr, &chat_request());
    assert_eq!(served.status, 200, "{served:?}");
    assert!(served.body.contains(common::ANSWER), "{served:?}");
    drop(held);
    let served = common::served_within(flooded.addr, &models_request(), Duration::from_secs(10));
    assert_eq!(served.status, 200, "the first serves again once its clients let go: {served:?}");
}
