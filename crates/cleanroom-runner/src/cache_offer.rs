//! The run's package cache, offered to one trial's agent phase: served on
//! 127.0.0.1:PORT of the phase's network, with the files that point the
//! environment's package managers at it.

use cleanroom_apt::{parse_deb822, parse_one_line, SourceEntry};
use cleanroom_cache::{guest_files, AptSources, Cache, Session};
use cleanroom_env::{EnvError, Environment};
use cleanroom_store::CacheBytes;

/// apt's sources as a Debian image has them; read before the agent runs.
const SOURCES: [&str; 2] = ["/etc/apt/sources.list", "/etc/apt/sources.list.d/debian.sources"];
const SOURCES_LIMIT: u64 = 64 << 10;

/// Serves `cache` to the phase `env` has begun and writes its files.
pub(crate) fn offer(cache: &Cache, env: &dyn Environment) -> Result<Session, EnvError> {
    let apt = AptSources::new(&apt_sources(env));
    let listener = env.listen_loopback(cleanroom_cache::PORT)?;
    let session =
        cache.serve(listener, apt.clone()).map_err(|e| EnvError::io("start the package cache", e))?;
    for (path, text) in guest_files(&apt) {
        let dir = path.rsplit_once('/').map_or("/", |(dir, _)| dir);
        let wrote = env
            .files()
            .create_dir_all(dir, 0o755)
            .and_then(|()| env.files().write_file(path, text.as_bytes(), 0o644));
        wrote.map_err(|e| EnvError::io(format!("write {path} into the environment"), e))?;
    }
    Ok(session)
}

/// What the session moved, for result.json.
pub(crate) fn bytes(session: Session) -> CacheBytes {
    let moved = session.stop();
    CacheBytes { bytes_upstream: moved.bytes_upstream, bytes_from_cache: moved.bytes_from_cache }
}

fn apt_sources(env: &dyn Environment) -> Vec<SourceEntry> {
    let mut entries = Vec::new();
    for path in SOURCES {
        let Ok(bytes) = env.files().read_regular(path, SOURCES_LIMIT) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        entries.extend(if path.ends_with(".sources") { parse_deb822(&text) } else { parse_one_line(&text) });
    }
    entries
}
