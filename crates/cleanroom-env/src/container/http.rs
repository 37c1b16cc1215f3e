//! The little of HTTP/1.1 that the Docker Engine API needs, over the
//! engine's Unix socket: one request per connection, bodies by length,
//! chunked or to the end, and connections the engine hijacks for an
//! exec's streams. Blocking, as the backend around it is.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// The most bytes of a status line and headers together.
const HEAD_LIMIT: usize = 64 << 10;

/// What a request sends after its headers.
pub enum Body<'a> {
    Empty,
    Json(serde_json::Value),
    /// Sent chunked as it is read (an image's or a file's tar stream).
    Tar(&'a mut dyn Read),
}

/// A response whose head is read; its body is read from it.
pub struct Response {
    pub status: u16,
    body: BodyReader,
}

enum BodyReader {
    Length(io::Take<BufReader<UnixStream>>),
    Chunked {
        stream: BufReader<UnixStream>,
        left: u64,
        done: bool,
    },
    /// To the end of the connection: a hijacked stream, or a body without
    /// a length.
    ToEnd(BufReader<UnixStream>),
}

/// Sends one request and reads the response's head. `timeout` bounds each
/// read and write on the connection, not the whole exchange.
pub fn request(
    socket: &Path,
    method: &str,
    path: &str,
    body: Body,
    upgrade: bool,
    timeout: Option<Duration>,
) -> io::Result<Response> {
    let mut stream = UnixStream::connect(socket)?;
    stream.set_read_timeout(timeout)?;
    stream.set_write_timeout(timeout)?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: engine\r\n");
    if upgrade {
        head.push_str("Connection: Upgrade\r\nUpgrade: tcp\r\n");
    } else {
        head.push_str("Connection: close\r\n");
    }
    match body {
        Body::Empty => {
            head.push_str("Content-Length: 0\r\n\r\n");
            stream.write_all(head.as_bytes())?;
        }
        Body::Json(value) => {
            let bytes = serde_json::to_vec(&value).map_err(io::Error::other)?;
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                bytes.len()
            ));
            stream.write_all(head.as_bytes())?;
            stream.write_all(&bytes)?;
        }
        Body::Tar(reader) => {
            head.push_str("Content-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n\r\n");
            stream.write_all(head.as_bytes())?;
            let mut buf = vec![0u8; 256 << 10];
            loop {
                let n = reader.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                stream.write_all(format!("{n:x}\r\n").as_bytes())?;
                stream.write_all(&buf[..n])?;
                stream.write_all(b"\r\n")?;
            }
            stream.write_all(b"0\r\n\r\n")?;
        }
    }
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader)?;
    let header =
        |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let body = if status == 101 || upgrade && status == 200 && header("content-length").is_none() {
        BodyReader::ToEnd(reader)
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        BodyReader::Chunked { stream: reader, left: 0, done: false }
    } else if let Some(length) = header("content-length") {
        let length = length.trim().parse().map_err(|_| bad(format!("Content-Length `{length}`")))?;
        BodyReader::Length(reader.take(length))
    } else if status == 204 || status == 304 {
        BodyReader::Length(reader.take(0))
    } else {
        BodyReader::ToEnd(reader)
    };
    Ok(Response { status, body })
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the engine answered with a bad {what}"))
}

fn read_line(reader: &mut BufReader<UnixStream>, budget: &mut usize) -> io::Result<String> {
    let mut line = Vec::new();
    let n = reader.by_ref().take(*budget as u64).read_until(b'\n', &mut line)?;
    if n == 0 || !line.ends_with(b"\n") {
        return Err(bad("response head (cut short or too long)".into()));
    }
    *budget -= n;
    Ok(String::from_utf8_lossy(&line).trim_end().to_string())
}

fn read_head(reader: &mut BufReader<UnixStream>) -> io::Result<(u16, Vec<(String, String)>)> {
    let mut budget = HEAD_LIMIT;
    let status_line = read_line(reader, &mut budget)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad(format!("status line `{status_line}`")))?;
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader, &mut budget)?;
        if line.is_empty() {
            return Ok((status, headers));
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
}

impl Response {
    /// The whole body, at most `limit` bytes (more is an error).
    pub fn bytes(mut self, limit: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        (&mut self).take(limit as u64 + 1).read_to_end(&mut out)?;
        if out.len() > limit {
            return Err(bad(format!("body (more than {limit} bytes)")));
        }
        Ok(out)
    }

    /// The hijacked connection, for both directions of an exec's streams.
    pub fn into_stream(self) -> Option<BufReader<UnixStream>> {
        match self.body {
            BodyReader::ToEnd(stream) => Some(stream),
            _ => None,
        }
    }
}

impl Read for Response {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.body {
            BodyReader::Length(reader) => reader.read(buf),
            BodyReader::ToEnd(reader) => reader.read(buf),
            BodyReader::Chunked { stream, left, done } => {
                if *done {
                    return Ok(0);
                }
                if *left == 0 {
                    let mut budget = 1024;
                    let size_line = read_line(stream, &mut budget)?;
                    let size = size_line.split(';').next().unwrap_or("").trim();
                    *left = u64::from_str_radix(size, 16).map_err(|_| bad(format!("chunk size `{size}`")))?;
                    if *left == 0 {
                        *done = true;
                        return Ok(0);
                    }
                }
                let want = buf.len().min(*left as usize);
                let n = stream.read(&mut buf[..want])?;
                if n == 0 {
                    return Err(bad("chunk (cut short)".into()));
                }
                *left -= n as u64;
                if *left == 0 {
                    let mut budget = 4;
                    read_line(stream, &mut budget)?;
                }
                Ok(n)
            }
        }
    }
}
