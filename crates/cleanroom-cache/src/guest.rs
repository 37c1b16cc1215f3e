//! The files that point an environment's package managers at the cache,
//! written before the agent starts (and listed in docs/cache.md, since the
//! agent can read them): each names `http://127.0.0.1:PORT/...`, which
//! answers only during the agent's phase.

use crate::apt::AptSources;
use crate::PORT;

/// (absolute path inside the environment, content) of each file.
pub fn guest_files(apt: &AptSources) -> Vec<(&'static str, String)> {
    let base = format!("http://127.0.0.1:{PORT}");
    let mut files = vec![
        // pip's site-wide configuration, read by every pip, a venv's too.
        ("/etc/pip.conf", format!("[global]\nindex-url = {base}/pypi/simple/\n")),
        ("/etc/uv/uv.toml", format!("[[index]]\nurl = \"{base}/pypi/simple/\"\ndefault = true\n")),
        // npm's user configuration of root (its global one moves with
        // the prefix, which depends on how node was installed).
        ("/root/.npmrc", format!("registry={base}/npm/\n")),
        (
            "/root/.cargo/config.toml",
            format!(
                "[source.crates-io]\nreplace-with = \"cleanroom-cache\"\n\n\
                 [source.cleanroom-cache]\nregistry = \"sparse+{base}/crates/index/\"\n"
            ),
        ),
    ];
    let hosts = apt.hosts();
    if !hosts.is_empty() {
        let lines: String =
            hosts.iter().map(|host| format!("Acquire::http::Proxy::{host} \"{base}/\";\n")).collect();
        files.push(("/etc/apt/apt.conf.d/00cleanroom-cache", lines));
    }
    files
}
