//! HTTP downloads with ureq over rustls (ring), trusting the system's
//! certificate store: registries here sit behind a TLS-intercepting proxy
//! whose CA is only in that store, so bundled web roots would fail.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sha2::{Digest, Sha256};
use ureq::tls::{Certificate, RootCerts, TlsConfig};

use super::error::FetchError;
use super::tree::hex;

/// JSON documents (package index answers) are small.
const JSON_LIMIT: u64 = 64 << 20;

pub(crate) struct Http {
    agent: ureq::Agent,
}

impl Http {
    pub fn new(timeout: Duration) -> Result<Http, FetchError> {
        let loaded = rustls_native_certs::load_native_certs();
        let certs: Vec<Certificate<'static>> =
            loaded.certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect();
        if certs.is_empty() {
            let why: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
            return Err(FetchError::Http {
                url: "https".to_owned(),
                message: format!(
                    "no certificates in the system store ({}); install ca-certificates",
                    why.join("; ")
                ),
            });
        }
        let tls = TlsConfig::builder().root_certs(RootCerts::new_with_certs(&certs)).build();
        let agent = ureq::Agent::config_builder()
            .tls_config(tls)
            .timeout_connect(Some(Duration::from_secs(30)))
            .timeout_recv_response(Some(Duration::from_secs(120)))
            .timeout_global(Some(timeout))
            .user_agent(concat!("cleanroom/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        Ok(Http { agent })
    }

    fn get(&self, url: &str) -> Result<Option<ureq::http::Response<ureq::Body>>, FetchError> {
        match self.agent.get(url).call() {
            Ok(r) => Ok(Some(r)),
            Err(ureq::Error::StatusCode(404)) => Ok(None),
            Err(ureq::Error::StatusCode(code)) => {
                Err(FetchError::Http { url: url.to_owned(), message: format!("http status {code}") })
            }
            Err(e) => Err(FetchError::Http { url: url.to_owned(), message: e.to_string().to_lowercase() }),
        }
    }

    /// A small document (an index answer, a .dsc) in memory, or None when
    /// the server answers 404 (for a `file://` url: when the file does not
    /// exist). More than `limit` bytes is an error.
    pub fn get_bytes(&self, url: &str, limit: u64) -> Result<Option<Vec<u8>>, FetchError> {
        let too_big = || FetchError::Http {
            url: url.to_owned(),
            message: format!("the answer is larger than {limit} bytes"),
        };
        let mut body = Vec::new();
        if let Some(path) = url.strip_prefix("file://") {
            let f = match File::open(path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(FetchError::io(path, "cannot open")(e)),
            };
            f.take(limit + 1).read_to_end(&mut body).map_err(FetchError::io(path, "cannot read"))?;
            if body.len() as u64 > limit {
                return Err(too_big());
            }
            return Ok(Some(body));
        }
        let Some(mut resp) = self.get(url)? else {
            return Ok(None);
        };
        resp.body_mut().with_config().limit(limit).reader().read_to_end(&mut body).map_err(|e| {
            FetchError::Http { url: url.to_owned(), message: format!("cannot read the answer: {e}") }
        })?;
        Ok(Some(body))
    }

    /// A JSON document, or None when the server answers 404.
    pub fn get_json(&self, url: &str) -> Result<Option<serde_json::Value>, FetchError> {
        let Some(body) = self.get_bytes(url, JSON_LIMIT)? else {
            return Ok(None);
        };
        serde_json::from_slice(&body).map(Some).map_err(|e| FetchError::Http {
            url: url.to_owned(),
            message: format!("the answer is not json: {e}"),
        })
    }

    /// Downloads `url` (or copies a `file://` url) into `dest` through a
    /// temporary file, checking the sha256 when `expected` is given.
    /// Returns the sha256.
    pub fn download(&self, url: &str, dest: &Path, expected: Option<&str>) -> Result<String, FetchError> {
        let parent = dest.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(parent).map_err(FetchError::io(parent, "cannot create directory"))?;
        let tmp = temp_name(dest);
        let result = self.download_to(url, &tmp);
        let actual = match result {
            Ok(d) => d,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        if let Some(expected) = expected {
            if !actual.eq_ignore_ascii_case(expected) {
                let _ = fs::remove_file(&tmp);
                return Err(FetchError::Digest {
                    location: url.to_owned(),
                    expected: expected.to_owned(),
                    actual,
                });
            }
        }
        fs::rename(&tmp, dest).map_err(FetchError::io(dest, "cannot move the download into place"))?;
        Ok(actual)
    }

    fn download_to(&self, url: &str, tmp: &Path) -> Result<String, FetchError> {
        let mut out = File::create(tmp).map_err(FetchError::io(tmp, "cannot create"))?;
        let read_err =
            |e: io::Error| FetchError::Http { url: url.to_owned(), message: format!("download failed: {e}") };
        let mut hasher = Sha256::new();
        let mut copy = |r: &mut dyn Read| -> Result<(), FetchError> {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = r.read(&mut buf).map_err(read_err)?;
                if n == 0 {
                    return Ok(());
                }
                hasher.update(&buf[..n]);
                out.write_all(&buf[..n]).map_err(FetchError::io(tmp, "cannot write"))?;
            }
        };
        if let Some(path) = url.strip_prefix("file://") {
            let mut f = File::open(path).map_err(FetchError::io(path, "cannot open"))?;
            copy(&mut f)?;
        } else {
            let Some(mut resp) = self.get(url)? else {
                return Err(FetchError::Http {
                    url: url.to_owned(),
                    message: "not found (http status 404)".to_owned(),
                });
            };
            let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
            copy(&mut reader)?;
        }
        out.sync_all().map_err(FetchError::io(tmp, "cannot write"))?;
        Ok(hex(&hasher.finalize()))
    }
}

/// A name next to `dest`, unique within this process and among processes.
pub(crate) fn temp_name(dest: &Path) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let name = dest.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    dest.with_file_name(format!(".{name}.partial-{}-{n}", std::process::id()))
}
