//! The three ways the cache answers, whatever the registry:
//! - a **blob**, a package file whose hash the registry's index gave (a
//!   sha256, or npm's sha512): served from the store, or streamed from
//!   upstream to the client while it is written to the store, where it
//!   lands only if it has that hash;
//! - a **document**, an index page that changes (a project's file list, an
//!   apt InRelease): kept with its validators, served as stored while
//!   fresh, then revalidated upstream (an unchanged one costs a 304);
//! - a **pass-through**, anything else of a registry: streamed, not kept.
//!
//! Every byte read from upstream and every byte served from the store is
//! counted for the session (the trial) that asked.

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cleanroom_model::http::Response;

use crate::store::{Digest, Pending, Store};
use crate::upstream::{self, Answer, Upstream};

/// How long a document is served without asking upstream whether it
/// changed: a package published since may stay unseen this long (devpi's
/// default too). Long enough that a study's trials share one index: PyPI's
/// pages often come without validators, and numpy's alone is 1.8 MB.
pub const FRESH_FOR: Duration = Duration::from_secs(30 * 60);
/// The largest document kept in memory (npm's biggest packuments are tens
/// of megabytes; a Packages index of Debian's main is 45 MB).
const DOC_LIMIT: u64 = 128 << 20;

/// Bytes moved for one session.
#[derive(Debug, Default)]
pub struct Traffic {
    pub upstream: AtomicU64,
    pub cached: AtomicU64,
}

impl Traffic {
    fn count_upstream(&self, n: usize) {
        self.upstream.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn count_cached(&self, n: usize) {
        self.cached.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// What every answer needs: the store, the way upstream, and whom to count for.
#[derive(Clone)]
pub struct Fetcher {
    pub store: Arc<Store>,
    pub upstream: Arc<Upstream>,
    pub traffic: Arc<Traffic>,
}

/// A document as served: its body and type, or an upstream status other
/// than 200 to pass on.
pub struct Doc {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Fetcher {
    /// The blob `digest`, whose upstream is `url`.
    pub fn blob(&self, digest: &Digest, url: &str, content_type: &str) -> Response {
        if let Some((file, len)) = self.store.blob(digest) {
            let body = Counted { inner: file, traffic: self.traffic.clone(), upstream: false };
            return stream(200, content_type, Some(len), Box::new(body));
        }
        let answer = match self.upstream.get(url, &[]) {
            Ok(answer) => answer,
            Err(e) => return failure(502, &e),
        };
        if answer.status() != 200 {
            return self.relay(answer, content_type);
        }
        let expected = upstream::length(&answer);
        let pending = match self.store.new_blob(digest) {
            Ok(pending) => pending,
            Err(e) => return failure(500, &format!("the cache cannot store a download: {e}")),
        };
        let body = Tee {
            inner: answer.into_body().into_reader(),
            pending: Some(pending),
            expected,
            seen: 0,
            traffic: self.traffic.clone(),
        };
        stream(200, content_type, expected, Box::new(body))
    }

    /// The blob `digest` whole, for the cache's own reading (an apt index
    /// named by hash); None when it cannot be had with that hash. Read
    /// from the store, it is not counted: nothing was served.
    pub fn blob_bytes(&self, digest: &Digest, url: &str) -> Option<Vec<u8>> {
        let mut bytes = Vec::new();
        if let Some((mut file, _)) = self.store.blob(digest) {
            file.read_to_end(&mut bytes).ok()?;
            return Some(bytes);
        }
        let Response::Stream { status: 200, mut body, .. } = self.blob(digest, url, "") else {
            return None;
        };
        body.read_to_end(&mut bytes).ok()?;
        // Read to its end, the download was committed if it had its hash.
        self.store.blob(digest)?;
        Some(bytes)
    }

    /// `url` passed through, kept nowhere.
    pub fn pass(&self, url: &str, accept: Option<&str>) -> Response {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
        match self.upstream.get(url, &headers) {
            Ok(answer) => {
                let content_type = upstream::header(&answer, "content-type")
                    .unwrap_or("application/octet-stream")
                    .to_string();
                self.relay(answer, &content_type)
            }
            Err(e) => failure(502, &e),
        }
    }

    /// The document `url` as requested with `accept` (each variant stored
    /// apart).
    pub fn doc(&self, url: &str, accept: &str) -> Result<Doc, String> {
        let key = &format!("{url} {accept}");
        let stored = self.store.doc(key).and_then(|(body, meta)| Some((body, Meta::parse(&meta)?)));
        if let Some((body, meta)) = &stored {
            if meta.fresh() {
                self.traffic.count_cached(body.len());
                return Ok(Doc { status: 200, content_type: meta.content_type.clone(), body: body.clone() });
            }
        }
        let mut headers = vec![("accept", accept)];
        if let Some((_, meta)) = &stored {
            if let Some(etag) = &meta.etag {
                headers.push(("if-none-match", etag));
            }
            if let Some(modified) = &meta.last_modified {
                headers.push(("if-modified-since", modified));
            }
        }
        let answer = self.upstream.get(url, &headers)?;
        if let (304, Some((body, meta))) = (answer.status().as_u16(), stored) {
            let renewed = Meta { fetched: SystemTime::now(), ..meta };
            let _ = self.store.put_doc_meta(key, &renewed.render());
            self.traffic.count_cached(body.len());
            return Ok(Doc { status: 200, content_type: renewed.content_type, body });
        }
        let status = answer.status().as_u16();
        let meta = Meta {
            fetched: SystemTime::now(),
            content_type: upstream::header(&answer, "content-type").unwrap_or("text/html").to_string(),
            etag: upstream::header(&answer, "etag").map(str::to_string),
            last_modified: upstream::header(&answer, "last-modified").map(str::to_string),
        };
        let mut body = Vec::new();
        answer
            .into_body()
            .into_reader()
            .take(DOC_LIMIT + 1)
            .read_to_end(&mut body)
            .map_err(|e| format!("{url}: {e}"))?;
        self.traffic.count_upstream(body.len());
        if body.len() as u64 > DOC_LIMIT {
            return Err(format!("{url}: the document is larger than {DOC_LIMIT} bytes"));
        }
        if status == 200 {
            // Not kept is only slower next time.
            let _ = self.store.put_doc(key, &body, &meta.render());
        }
        Ok(Doc { status, content_type: meta.content_type, body })
    }

    /// The document `url` as requested with `accept`, its body rewritten
    /// before it is served: what is stored is the registry's own.
    pub fn serve_doc(&self, url: &str, accept: &str, rewrite: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Response {
        match self.doc(url, accept) {
            Ok(doc) => {
                let body = if doc.status == 200 { rewrite(doc.body) } else { doc.body };
                let length = body.len() as u64;
                stream(doc.status, &doc.content_type, Some(length), Box::new(io::Cursor::new(body)))
            }
            Err(e) => failure(502, &e),
        }
    }

    /// An upstream answer streamed to the client, kept nowhere.
    fn relay(&self, answer: Answer, content_type: &str) -> Response {
        let status = answer.status().as_u16();
        let length = upstream::length(&answer);
        let body = Counted {
            inner: answer.into_body().into_reader(),
            traffic: self.traffic.clone(),
            upstream: true,
        };
        stream(status, content_type, length, Box::new(body))
    }
}

pub fn stream(status: u16, content_type: &str, length: Option<u64>, body: Box<dyn Read + Send>) -> Response {
    Response::Stream { status, content_type: content_type.to_string(), length, body }
}

/// A short text answer for an error, closing the connection.
pub fn failure(status: u16, message: &str) -> Response {
    let body = format!("cleanroom cache: {message}\n").into_bytes();
    stream(status, "text/plain; charset=utf-8", None, Box::new(io::Cursor::new(body)))
}

/// A reader that counts what passes for the session.
struct Counted<R> {
    inner: R,
    traffic: Arc<Traffic>,
    upstream: bool,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.upstream {
            self.traffic.count_upstream(n);
        } else {
            self.traffic.count_cached(n);
        }
        Ok(n)
    }
}

/// An upstream download read by the client and written to the store as it
/// goes. At its end the stored copy is committed, which checks its hash:
/// with the last of its announced length, before the client has it, so
/// that a client that has a whole download finds it stored; else at the
/// end of the stream. A download that ends before its announced length is
/// an error to the client (which then closes), and nothing is stored.
struct Tee<R> {
    inner: R,
    pending: Option<Pending>,
    expected: Option<u64>,
    seen: u64,
    traffic: Arc<Traffic>,
}

impl<R> Tee<R> {
    /// A download that does not have its hash is still given to the
    /// client, whose package manager checks it too and refuses it; it is
    /// only never stored.
    fn commit(&mut self) {
        if let Some(pending) = self.pending.take() {
            let _ = pending.commit();
        }
    }
}

impl<R: Read> Read for Tee<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.traffic.count_upstream(n);
        self.seen += n as u64;
        if n == 0 {
            if self.expected.is_some_and(|len| len != self.seen) {
                self.pending = None;
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the download ended early"));
            }
            self.commit();
            return Ok(0);
        }
        if let Some(pending) = self.pending.as_mut() {
            if pending.write_all(&buf[..n]).is_err() {
                // A full disk: the client is served all the same.
                self.pending = None;
            }
        }
        if self.expected == Some(self.seen) {
            self.commit();
        }
        Ok(n)
    }
}

/// What is kept beside a document.
struct Meta {
    fetched: SystemTime,
    content_type: String,
    etag: Option<String>,
    last_modified: Option<String>,
}

impl Meta {
    fn fresh(&self) -> bool {
        self.fetched.elapsed().is_ok_and(|age| age < FRESH_FOR)
    }

    fn render(&self) -> String {
        let secs = self.fetched.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
        let mut text = format!("fetched: {secs}\ncontent-type: {}\n", self.content_type);
        if let Some(etag) = &self.etag {
            text.push_str(&format!("etag: {etag}\n"));
        }
        if let Some(modified) = &self.last_modified {
            text.push_str(&format!("last-modified: {modified}\n"));
        }
        text
    }

    fn parse(text: &str) -> Option<Meta> {
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(": ")))
                .map(str::to_string)
        };
        let secs: u64 = field("fetched")?.parse().ok()?;
        Some(Meta {
            fetched: SystemTime::UNIX_EPOCH + Duration::from_secs(secs),
            content_type: field("content-type")?,
            etag: field("etag"),
            last_modified: field("last-modified"),
        })
    }
}
