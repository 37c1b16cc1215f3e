//! Just enough HTTP/1.1 for the harness's services (the forwarder, the
//! package cache): one request at a time per connection, read in two steps
//! (the head, then the body, so that the token is checked before a byte of
//! the body is read), bodies by Content-Length or chunked, answers with a
//! length, as a server-sent event stream that ends with the connection, or
//! streamed from a reader. Every size is bounded: the client is the agent
//! under test.

use std::io::{self, BufRead, BufReader, Read, Write};

/// The request line and headers together (the prompt is in the body).
const HEAD_LIMIT: usize = 64 << 10;
/// Headers in one request; clients send 10 to 30.
const HEADER_COUNT_LIMIT: usize = 100;
/// The largest body read. The Anthropic API itself refuses requests over
/// 32 MB; the limit also bounds the memory one connection can take.
const BODY_LIMIT: usize = 32 << 20;
/// A chunk-size line: hex digits and perhaps an extension.
const CHUNK_LINE_LIMIT: usize = 1 << 10;

#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The request target without its query string: a path, or an
    /// absolute URL when the client takes the server for a proxy.
    pub path: String,
    /// HTTP/1.0, whose connections close after one answer unless the
    /// client asks to keep them (RFC 9112, 9.3).
    http_1_0: bool,
    headers: Vec<(String, String)>,
    /// Empty until [`read_body`] has read it.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Whether the connection ends with this request's answer: the client
    /// said `close`, or spoke HTTP/1.0 without asking for `keep-alive`
    /// (an HTTP/1.0 client reading to the end of the answer would wait
    /// out the idle timeout otherwise).
    pub fn wants_close(&self) -> bool {
        let says = |option: &str| {
            self.header("connection")
                .is_some_and(|c| c.split(',').any(|o| o.trim().eq_ignore_ascii_case(option)))
        };
        says("close") || (self.http_1_0 && !says("keep-alive"))
    }
}

/// Why a request could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("bad request: {0}")]
    Malformed(&'static str),
    #[error("the request line and headers exceed {HEAD_LIMIT} bytes or {HEADER_COUNT_LIMIT} headers")]
    HeadTooLarge,
    #[error("the body exceeds {BODY_LIMIT} bytes")]
    BodyTooLarge,
    #[error("the request did not arrive in time")]
    TimedOut,
    /// The connection closed or failed: there is no one to answer.
    #[error("the connection failed: {0}")]
    Closed(io::Error),
}

impl ReadError {
    /// The status to answer with; none when the connection is gone.
    pub fn status(&self) -> Option<u16> {
        match self {
            ReadError::Malformed(_) => Some(400),
            ReadError::HeadTooLarge => Some(431),
            ReadError::BodyTooLarge => Some(413),
            ReadError::TimedOut => Some(408),
            ReadError::Closed(_) => None,
        }
    }
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> ReadError {
        match e.kind() {
            // A socket's read timeout shows as WouldBlock.
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => ReadError::TimedOut,
            _ => ReadError::Closed(e),
        }
    }
}

/// Reads the next request's line and headers; Ok(None) when the peer
/// closed the connection before sending anything.
pub fn read_head(reader: &mut impl BufRead) -> Result<Option<Request>, ReadError> {
    let Some(line) = read_line(reader, HEAD_LIMIT, ReadError::HeadTooLarge)? else {
        return Ok(None);
    };
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(ReadError::Malformed("malformed request line"));
    };
    let http_1_0 = parts.next() == Some("HTTP/1.0");
    let path = target.split('?').next().unwrap_or_default().to_string();
    let method = method.to_string();
    let mut headers = Vec::new();
    let mut head_size = line.len();
    loop {
        let left = HEAD_LIMIT.saturating_sub(head_size);
        let h = read_line(reader, left, ReadError::HeadTooLarge)?
            .ok_or(ReadError::Malformed("connection closed inside the headers"))?;
        head_size += h.len() + 2;
        if h.is_empty() {
            break;
        }
        if headers.len() == HEADER_COUNT_LIMIT {
            return Err(ReadError::HeadTooLarge);
        }
        let (k, v) = h.split_once(':').ok_or(ReadError::Malformed("malformed header"))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(Some(Request { method, path, http_1_0, headers, body: Vec::new() }))
}

/// Reads the body that `request`'s headers announce, after checking its
/// announced size and answering `Expect: 100-continue`.
pub fn read_body<S: Read + Write>(conn: &mut BufReader<S>, request: &mut Request) -> Result<(), ReadError> {
    let chunked = request.header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    // None: chunked, its size known only at its end.
    let length = if chunked {
        None
    } else {
        let announced = request.header("content-length").unwrap_or("0");
        Some(announced.parse::<u64>().map_err(|_| ReadError::Malformed("bad content-length"))?)
    };
    if length.is_some_and(|len| len > BODY_LIMIT as u64) {
        return Err(ReadError::BodyTooLarge);
    }
    if request.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        conn.get_mut().write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    request.body = match length {
        None => read_chunked(conn)?,
        Some(len) => read_exactly(conn, len)?,
    };
    Ok(())
}

/// `len` bytes, the buffer growing as they arrive (a client that announces
/// a large body and sends none gets no large buffer).
fn read_exactly(reader: &mut impl Read, len: u64) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    reader.take(len).read_to_end(&mut body)?;
    if body.len() as u64 != len {
        return Err(ReadError::Closed(io::ErrorKind::UnexpectedEof.into()));
    }
    Ok(body)
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let size = read_line(reader, CHUNK_LINE_LIMIT, ReadError::Malformed("chunk-size line too long"))?
            .ok_or(ReadError::Malformed("connection closed inside the body"))?;
        let size = u64::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| ReadError::Malformed("bad chunk size"))?;
        if body.len() as u64 + size > BODY_LIMIT as u64 {
            return Err(ReadError::BodyTooLarge);
        }
        body.extend(read_exactly(reader, size)?);
        // The CRLF after the chunk, or after the last (empty) one.
        read_line(reader, 0, ReadError::Malformed("chunk longer than its size"))?;
        if size == 0 {
            return Ok(body);
        }
    }
}

/// One line without its line ending, of at most `limit` bytes (a longer
/// one is `too_long`, found without reading past the limit); Ok(None) at
/// the end of the stream.
fn read_line(
    reader: &mut impl BufRead,
    limit: usize,
    too_long: ReadError,
) -> Result<Option<String>, ReadError> {
    let mut line = Vec::new();
    // Room for the CRLF.
    let n = reader.take(limit as u64 + 2).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.pop() != Some(b'\n') {
        return Err(if n > limit {
            too_long
        } else {
            ReadError::Closed(io::ErrorKind::UnexpectedEof.into())
        });
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.len() > limit {
        return Err(too_long);
    }
    String::from_utf8(line).map(Some).map_err(|_| ReadError::Malformed("not UTF-8"))
}

/// What to send back.
pub enum Response {
    Json {
        status: u16,
        body: serde_json::Value,
    },
    /// Plain text; the connection closes after it.
    Text(String),
    /// A complete event stream, sent at once, then the connection closes.
    EventStream(String),
    /// A body read from `body` as it is sent (a download). With a
    /// `length` the connection can serve another request; without one it
    /// closes after the body. A body that fails or ends early closes it.
    Stream {
        status: u16,
        content_type: String,
        length: Option<u64>,
        body: Box<dyn Read + Send>,
    },
}

/// Writes `response` in one piece; false when the connection must close
/// afterwards (`keep_alive` false, or an answer that ends with it).
pub fn write_response(stream: &mut impl Write, response: Response, keep_alive: bool) -> io::Result<bool> {
    let (bytes, keep) = match response {
        Response::Stream { status, content_type, length, body } => {
            return write_stream(stream, status, &content_type, length, body, keep_alive)
        }
        Response::Json { status, body } => {
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n",
                reason(status),
                body.len(),
                if keep_alive { "keep-alive" } else { "close" },
            );
            (head + &body, keep_alive)
        }
        Response::Text(text) => (
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            ),
            false,
        ),
        Response::EventStream(events) => (
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n{events}"
            ),
            false,
        ),
    };
    stream.write_all(bytes.as_bytes())?;
    stream.flush()?;
    Ok(keep)
}

fn write_stream(
    stream: &mut impl Write,
    status: u16,
    content_type: &str,
    length: Option<u64>,
    mut body: Box<dyn Read + Send>,
    keep_alive: bool,
) -> io::Result<bool> {
    let keep = keep_alive && length.is_some();
    let length = length.map_or(String::new(), |len| format!("content-length: {len}\r\n"));
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\n{length}connection: {}\r\n\r\n",
        reason(status),
        if keep { "keep-alive" } else { "close" },
    );
    stream.write_all(head.as_bytes())?;
    io::copy(&mut body, stream)?;
    stream.flush()?;
    Ok(keep)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        304 => "Not Modified",
        403 => "Forbidden",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
