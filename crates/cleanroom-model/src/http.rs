//! Just enough HTTP/1.1 for the forwarder: one request at a time per
//! connection, bodies by Content-Length or chunked, answers with a length
//! or as a server-sent event stream that ends with the connection.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

const HEAD_LIMIT: usize = 64 << 10;
const BODY_LIMIT: usize = 64 << 20;

#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The path without its query string.
    pub path: String,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// Stands in for a request that could not be read.
    pub fn empty() -> Request {
        Request { method: String::new(), path: String::new(), headers: Vec::new(), body: Vec::new() }
    }

    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn wants_close(&self) -> bool {
        self.header("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"))
    }
}

/// Reads the next request; Ok(None) when the peer closed the connection.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(bad("malformed request line"));
    };
    let path = target.split('?').next().unwrap_or_default().to_string();
    let method = method.to_string();
    let mut headers = Vec::new();
    let mut head_size = line.len();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            return Err(bad("connection closed inside the headers"));
        }
        head_size += h.len();
        if head_size > HEAD_LIMIT {
            return Err(bad("headers too large"));
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').ok_or_else(|| bad("malformed header"))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut req = Request { method, path, headers, body: Vec::new() };
    if req.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        reader.get_mut().write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    if req.header("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        req.body = read_chunked(reader)?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len.parse().map_err(|_| bad("bad content-length"))?;
        if len > BODY_LIMIT {
            return Err(bad("body too large"));
        }
        req.body = vec![0; len];
        reader.read_exact(&mut req.body)?;
    }
    Ok(Some(req))
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
            .map_err(|_| bad("bad chunk size"))?;
        if body.len() + size > BODY_LIMIT {
            return Err(bad("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = String::new();
        reader.read_line(&mut crlf)?;
        if size == 0 {
            return Ok(body);
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
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
}

/// Writes `response`; false when the connection must close afterwards.
pub fn write_response(stream: &mut TcpStream, request: &Request, response: Response) -> io::Result<bool> {
    match response {
        Response::Json { status, body } => {
            let body = body.to_string();
            let keep = !request.wants_close();
            write!(
                stream,
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n{body}",
                reason(status),
                body.len(),
                if keep { "keep-alive" } else { "close" },
            )?;
            stream.flush()?;
            Ok(keep)
        }
        Response::Text(text) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            )?;
            stream.flush()?;
            Ok(false)
        }
        Response::EventStream(events) => {
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n{events}"
            )?;
            stream.flush()?;
            Ok(false)
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}
