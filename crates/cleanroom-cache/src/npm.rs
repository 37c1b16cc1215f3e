//! npm through the cache: npm uses `/npm/` as its registry (written into
//! /root/.npmrc). A package's packument (`/npm/<name>`, a scoped one as
//! `/npm/@scope%2fname`) is a document fetched from registry.npmjs.org,
//! abbreviated or full as the client asked. Each version's
//! `dist.tarball` whose `dist.integrity` has a sha512 is rewritten to
//! `<cache>/npm/-/sha512/<hex>/<name>/-/<file>`, so that the tarball is a
//! blob the cache checks against that hash (npm checks it again: the
//! integrity is kept as it is). npm follows tarball links as given, so
//! they are absolute, made with the address the client reached the cache
//! by ([`base_url`](crate::path::base_url)).
//!
//! A version without a sha512 (only the sha1 `shasum` of old packages)
//! keeps its registry link; npm's `replace-registry-host` turns that into
//! `/npm/<name>/-/<file>` on the cache, which passes through, kept nowhere.

use cleanroom_model::http::Response;
use serde_json::Value;

use crate::fetch::{failure, Fetcher};
use crate::path::is_plain_segment;
use crate::store::{hex, Digest};

const REGISTRY: &str = "https://registry.npmjs.org/";
/// What npm itself asks for when it installs: the abbreviated packument.
const ABBREVIATED: &str = "application/vnd.npm.install-v1+json";
const ABBREVIATED_ACCEPT: &str = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

/// Answers `rest`, the part of the path after `/npm/`, for a client that
/// sent `accept` and reached the cache at `base`.
pub fn answer(fetcher: &Fetcher, rest: &str, accept: Option<&str>, base: &str) -> Response {
    if let Some(named) = rest.strip_prefix("-/sha512/") {
        let Some((sha512, path)) = named.split_once('/') else {
            return failure(404, "not a tarball of the registry");
        };
        let (Some(digest), Some(_)) = (Digest::sha512(sha512), tarball_package(path)) else {
            return failure(404, "not a tarball of the registry");
        };
        return fetcher.blob(&digest, &format!("{REGISTRY}{path}"), "application/octet-stream");
    }
    if tarball_package(rest).is_some() {
        return fetcher.pass(&format!("{REGISTRY}{rest}"), None);
    }
    let Some(name) = package_name(rest) else {
        return failure(
            404,
            "the cache serves packages' documents and tarballs, not the rest of the registry",
        );
    };
    // The registry's own escaping of a scoped name, as npm sends it.
    let url = format!("{REGISTRY}{}", name.replacen('/', "%2f", 1));
    let accept =
        if accept.is_some_and(|a| a.contains(ABBREVIATED)) { ABBREVIATED_ACCEPT } else { "application/json" };
    fetcher.serve_doc(&url, accept, |body| rewrite(body, base))
}

/// The package named by a packument's path: `name`, `@scope/name`, or
/// `@scope%2fname`; None for anything else.
fn package_name(path: &str) -> Option<String> {
    let name = path.replacen("%2f", "/", 1).replacen("%2F", "/", 1);
    is_package_name(&name).then_some(name)
}

fn is_package_name(name: &str) -> bool {
    match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, name)| is_plain_segment(scope) && is_plain_segment(name)),
        None => is_plain_segment(name),
    }
}

/// The package of a tarball's path on the registry, `<name>/-/<file>`.
fn tarball_package(path: &str) -> Option<&str> {
    let (name, file) = path.split_once("/-/")?;
    (is_package_name(name) && is_plain_segment(file)).then_some(name)
}

/// The tarball links of a packument, each pointed at the cache where its
/// version's integrity has a sha512.
fn rewrite(body: Vec<u8>, base: &str) -> Vec<u8> {
    let Ok(mut packument) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    let Some(versions) = packument.get_mut("versions").and_then(Value::as_object_mut) else {
        return body;
    };
    for dist in versions.values_mut().filter_map(|v| v.get_mut("dist")) {
        let sha512 = dist.get("integrity").and_then(Value::as_str).and_then(sha512_of);
        let path = dist.get("tarball").and_then(Value::as_str).and_then(registry_path);
        if let (Some(sha512), Some(path)) = (sha512, path) {
            dist["tarball"] = format!("{base}/npm/-/sha512/{sha512}/{path}").into();
        }
    }
    serde_json::to_vec(&packument).unwrap_or(body)
}

/// The path of a tarball link on the registry (old packuments link it
/// over plain http; the cache fetches it over https all the same).
fn registry_path(url: &str) -> Option<String> {
    let path = url.strip_prefix(REGISTRY).or_else(|| url.strip_prefix("http://registry.npmjs.org/"))?;
    tarball_package(path).map(|_| path.to_string())
}

/// The sha512 (hex) of a Subresource Integrity string such as npm's
/// `dist.integrity`: `sha512-<base64>`, possibly among other hashes.
fn sha512_of(integrity: &str) -> Option<String> {
    integrity.split_whitespace().find_map(|hash| {
        let digest = base64(hash.strip_prefix("sha512-")?)?;
        (digest.len() == 64).then(|| hex(&digest))
    })
}

/// Standard base64, padded or not; None for anything else.
fn base64(text: &str) -> Option<Vec<u8>> {
    let text = text.strip_suffix("==").or_else(|| text.strip_suffix('=')).unwrap_or(text);
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut bits, mut count) = (0u32, 0);
    for b in text.bytes() {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        bits = (bits << 6 | u32::from(value)) & 0xffff;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sha512 of the empty string, as npm's integrity and as hex.
    const INTEGRITY: &str =
        "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==";
    const HEX: &str = "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce\
                       47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e";

    #[test]
    fn integrity_gives_its_sha512() {
        assert_eq!(sha512_of(INTEGRITY).as_deref(), Some(HEX));
        assert_eq!(
            sha512_of(&format!("sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= {INTEGRITY}")).as_deref(),
            Some(HEX)
        );
        for none in ["sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=", "sha512-AAAA", "sha512-not*base64", ""] {
            assert_eq!(sha512_of(none), None, "{none}");
        }
        assert_eq!(base64("aGk=").unwrap(), b"hi");
        assert_eq!(base64("aGk").unwrap(), b"hi");
    }

    #[test]
    fn packages_are_named_plainly_scoped_or_not() {
        assert_eq!(package_name("is-number").as_deref(), Some("is-number"));
        assert_eq!(package_name("@types%2fnode").as_deref(), Some("@types/node"));
        assert_eq!(package_name("@types%2Fnode").as_deref(), Some("@types/node"));
        assert_eq!(package_name("@types/node").as_deref(), Some("@types/node"));
        for bad in
            ["", "..", "a/b", "@types", "@/node", "@types/node/x", "@types%2f..", "a%2fb", "x@1", "a?b"]
        {
            assert_eq!(package_name(bad), None, "{bad}");
        }
        assert_eq!(tarball_package("@types/node/-/node-20.1.0.tgz"), Some("@types/node"));
        assert_eq!(tarball_package("is-number/-/is-number-7.0.0.tgz"), Some("is-number"));
        for bad in ["is-number", "is-number/-/", "is-number/-/a/b.tgz", "../-/x.tgz", "a/-/..", "@a/-/x.tgz"]
        {
            assert_eq!(tarball_package(bad), None, "{bad}");
        }
    }

    #[test]
    fn tarballs_with_a_sha512_point_at_the_cache() {
        let packument = serde_json::json!({"name": "x", "versions": {
            "1.0.0": {"dist": {"integrity": INTEGRITY, "shasum": "da39a3ee5e6b4b0d3255bfef95601890afd80709",
                               "tarball": "https://registry.npmjs.org/@s/x/-/x-1.0.0.tgz"}},
            "0.1.0": {"dist": {"shasum": "da39a3ee5e6b4b0d3255bfef95601890afd80709",
                               "tarball": "https://registry.npmjs.org/@s/x/-/x-0.1.0.tgz"}},
            "0.0.1": {"dist": {"integrity": INTEGRITY, "tarball": "https://elsewhere.example/x-0.0.1.tgz"}},
        }});
        let out = rewrite(packument.to_string().into_bytes(), "http://127.0.0.1:3142");
        let out: Value = serde_json::from_slice(&out).unwrap();
        let dist = |v: &str| out["versions"][v]["dist"].clone();
        assert_eq!(
            dist("1.0.0")["tarball"],
            format!("http://127.0.0.1:3142/npm/-/sha512/{HEX}/@s/x/-/x-1.0.0.tgz")
        );
        assert_eq!(dist("1.0.0")["integrity"], INTEGRITY, "npm checks the tarball too");
        assert_eq!(
            dist("0.1.0")["tarball"],
            "https://registry.npmjs.org/@s/x/-/x-0.1.0.tgz",
            "no sha512: upstream"
        );
        assert_eq!(dist("0.0.1")["tarball"], "https://elsewhere.example/x-0.0.1.tgz", "not the registry's");
        assert_eq!(rewrite(b"not json".to_vec(), "http://h"), b"not json");
    }
}
