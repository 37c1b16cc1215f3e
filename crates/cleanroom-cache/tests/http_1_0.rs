//! The package cache answers an HTTP/1.0 client (an agent's `/dev/tcp`
//! fetch, an old pip) and closes the connection, as HTTP/1.0 asks unless
//! the client says keep-alive: the client reads to the end of the answer
//! and goes on, instead of waiting out the server's idle timeout. Against
//! the real PyPI (an answer that is not an error, which would close anyway).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use cleanroom_cache::{AptSources, Cache};

#[test]
fn an_http_1_0_answer_ends_with_its_connection() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path(), 1 << 20).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let session = cache.serve(listener, AptSources::default()).unwrap();
    let mut conn = TcpStream::connect(addr).unwrap();
    // Far less than the idle timeout (60 s): a kept connection fails here.
    conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    conn.write_all(b"GET /pypi/simple/six/ HTTP/1.0\r\nAccept: text/html\r\n\r\n").unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).expect("the connection closed after the answer");
    assert!(
        answer.starts_with("HTTP/1.1 200 ") && answer.contains("six-1.16.0"),
        "{}",
        &answer[..answer.len().min(400)]
    );
    session.stop();
}
