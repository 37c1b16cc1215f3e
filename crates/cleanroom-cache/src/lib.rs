//! The package cache environments download through: PyPI, Debian's
//! archive, npm and crates.io, so that a study's thousands of trials fetch
//! each wheel, .deb, tarball and crate from its registry once.
//!
//! It is a registry mirror, not a transparent proxy: each trial's agent
//! phase gets the cache on 127.0.0.1:[`PORT`] of its own network (the way
//! the model forwarder is reached, on every backend), and configuration
//! files that point the package managers at it ([`guest_files`]). Plain
//! HTTPS clients (curl, a get-pip.py) are untouched and go upstream.
//!
//! What an environment can do to it: ask. The store lives on the host
//! under cleanroom's home, never mounted into an environment; a file is
//! fetched only from its registry's fixed address, and stored only under
//! the hash the registry's own metadata gave for it (a sha256 from pip's
//! index, apt's signed InRelease and Packages, and crates.io's index; the
//! sha512 of npm's packument), after its content was found to have it. A
//! poisoned answer from anywhere else never lands; what one trial caused
//! to be stored is what any trial would have received from the registry.

mod apt;
mod crates;
mod fetch;
mod guest;
mod npm;
mod path;
mod pypi;
mod store;
mod upstream;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cleanroom_model::http::{Request, Response};
use cleanroom_model::server::{Handler, Limits, Server};

pub use apt::AptSources;
pub use guest::guest_files;

use crate::apt::AptIndex;
use crate::fetch::{failure, Fetcher, Traffic};
use crate::store::Store;
use crate::upstream::Upstream;

/// The port the cache listens on inside each environment's network.
pub const PORT: u16 = 3142;
/// The store's size when none is given: 20 GiB.
pub const DEFAULT_LIMIT: u64 = 20 << 30;

/// Where the cache lives under cleanroom's home.
pub fn dir_under(home: &Path) -> PathBuf {
    home.join("cache").join("packages")
}

/// The cache of one run: its store and its way to the registries, shared
/// by every trial's session.
pub struct Cache {
    store: Arc<Store>,
    upstream: Arc<Upstream>,
    apt: Arc<AptIndex>,
}

/// Bytes one session moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheTraffic {
    /// Read from the registries on this session's behalf.
    pub bytes_upstream: u64,
    /// Served from the store without asking upstream.
    pub bytes_from_cache: u64,
}

impl Cache {
    /// Opens the cache in `dir`, holding at most `limit` bytes.
    pub fn open(dir: &Path, limit: u64) -> Result<Cache, String> {
        let store =
            Store::open(dir, limit).map_err(|e| format!("the package cache {}: {e}", dir.display()))?;
        Ok(Cache {
            store: Arc::new(store),
            upstream: Arc::new(Upstream::new()?),
            apt: Arc::new(AptIndex::new()),
        })
    }

    /// Bytes the store holds now.
    pub fn size(&self) -> u64 {
        self.store.size()
    }

    /// Why Debian's packages are not kept, where they are not.
    pub fn apt_unverifiable(&self) -> Option<String> {
        self.apt.unverifiable()
    }

    /// Serves the cache on `listener` (an environment's 127.0.0.1:PORT)
    /// for one trial, whose apt uses `apt`.
    pub fn serve(&self, listener: TcpListener, apt: AptSources) -> std::io::Result<Session> {
        let traffic = Arc::new(Traffic::default());
        let fetcher =
            Fetcher { store: self.store.clone(), upstream: self.upstream.clone(), traffic: traffic.clone() };
        let handler = Arc::new(Routes { fetcher, apt_index: self.apt.clone(), apt });
        let server = Server::start("cache", listener, handler, Limits::default())?;
        Ok(Session { server, traffic })
    }
}

/// The cache served to one trial.
pub struct Session {
    server: Server,
    traffic: Arc<Traffic>,
}

impl Session {
    /// Stops serving; what the session moved.
    pub fn stop(mut self) -> CacheTraffic {
        self.server.stop();
        CacheTraffic {
            bytes_upstream: self.traffic.upstream.load(Ordering::SeqCst),
            bytes_from_cache: self.traffic.cached.load(Ordering::SeqCst),
        }
    }
}

struct Routes {
    fetcher: Fetcher,
    apt_index: Arc<AptIndex>,
    apt: AptSources,
}

impl Handler for Routes {
    fn screen(&self, head: &Request) -> Option<Response> {
        (head.method != "GET").then(|| failure(405, "the cache answers GET only"))
    }

    fn respond(&self, request: &Request) -> Response {
        let target = request.path.as_str();
        let accept = request.header("accept");
        if target.starts_with("http://") {
            return apt::answer(&self.fetcher, &self.apt_index, &self.apt, target);
        }
        if let Some(rest) = target.strip_prefix("/pypi/") {
            return pypi::answer(&self.fetcher, rest, accept);
        }
        // Links the client must follow as given are made absolute with
        // the address it reached the cache by.
        let base = path::base_url(request.header("host"));
        if let Some(rest) = target.strip_prefix("/npm/") {
            return npm::answer(&self.fetcher, rest, accept, &base);
        }
        if let Some(rest) = target.strip_prefix("/crates/") {
            return crates::answer(&self.fetcher, rest, &base);
        }
        failure(404, "this is cleanroom's package cache: /pypi/simple/, /npm/, /crates/, and apt's proxy")
    }

    fn error(&self, _path: &str, status: u16, message: &str) -> Response {
        failure(status, message)
    }
}
