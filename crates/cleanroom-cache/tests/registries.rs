//! npm and crates.io through the cache, against the real registries
//! (registry.npmjs.org, index.crates.io, static.crates.io): each trial is
//! a session of one cache, served on a port of its own as an environment's
//! 127.0.0.1:3142 would be; what a session moved tells where each byte
//! came from.

use std::net::TcpListener;

use cleanroom_cache::{AptSources, Cache, CacheTraffic, Session};
use serde_json::Value;
use sha2::{Digest, Sha256, Sha512};

const ABBREVIATED: &str = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

/// One trial's session, and the address its links are made with.
fn session(cache: &Cache) -> (Session, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (cache.serve(listener, AptSources::default()).unwrap(), base)
}

/// GET `url`: its status and body.
fn get(url: &str, accept: Option<&str>) -> (u16, Vec<u8>) {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().into();
    let mut request = agent.get(url);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let mut answer = request.call().unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = answer.status().as_u16();
    let body = answer.body_mut().with_config().limit(64 << 20).read_to_vec().unwrap();
    (status, body)
}

fn ok(url: &str, accept: Option<&str>) -> Vec<u8> {
    let (status, body) = get(url, accept);
    assert_eq!(status, 200, "{url}: {}", String::from_utf8_lossy(&body));
    body
}

/// Waits for the store to hold more than `size` bytes: a download is
/// committed just after its last byte went to the client.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn npm_tarballs_come_from_the_registry_once_and_only_with_their_sha512() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path(), 1 << 30).unwrap();

    // A first trial: the packument, then a tarball it links.
    let (trial, base) = session(&cache);
    let packument = ok(&format!("{base}/npm/is-number"), Some(ABBREVIATED));
    let packument: Value = serde_json::from_slice(&packument).unwrap();
    let dist = &packument["versions"]["7.0.0"]["dist"];
    let tarball = dist["tarball"].as_str().unwrap();
    let path = tarball.strip_prefix(&base).unwrap_or_else(|| panic!("not the cache's: {tarball}"));
    assert!(
        path.starts_with("/npm/-/sha512/") && path.ends_with("/is-number/-/is-number-7.0.0.tgz"),
        "{path}"
    );
    let stored = cache.size();
    let first = ok(tarball, None);
    let integrity = dist["integrity"].as_str().unwrap();
    let sha512 = hex(&Sha512::digest(&first));
    assert!(path.contains(&sha512), "the link carries the integrity's sha512 ({integrity})");
    assert!(cache.size() > stored, "a whole download is stored before the client has its last byte");
    let one = trial.stop();
    eprintln!("npm, first trial (packument and tarball of {} bytes): {one:?}", first.len());
    assert!(one.bytes_upstream >= first.len() as u64, "{one:?}");

    // A second trial: the tarball from the store, nothing upstream.
    let (trial, base) = session(&cache);
    let second = ok(&format!("{base}{path}"), None);
    assert_eq!(second, first);
    let two = trial.stop();
    eprintln!("npm, second trial (the tarball again): {two:?}");
    assert_eq!(two, CacheTraffic { bytes_upstream: 0, bytes_from_cache: first.len() as u64 });

    // A link whose sha512 the file does not have: served (npm refuses it
    // by its integrity), never stored, so asked upstream each time.
    let (trial, base) = session(&cache);
    let wrong = path.replace(&sha512, &hex(&Sha512::digest(b"another tarball")));
    let size = cache.size();
    for _ in 0..2 {
        assert_eq!(ok(&format!("{base}{wrong}"), None), first);
    }
    assert_eq!(cache.size(), size, "nothing was stored");
    let poisoned = trial.stop();
    eprintln!("npm, a link with the wrong sha512 twice: {poisoned:?}");
    assert_eq!(poisoned, CacheTraffic { bytes_upstream: 2 * first.len() as u64, bytes_from_cache: 0 });

    // An unrewritten link (npm's replace-registry-host makes one of a
    // registry URL) passes through; a scoped package's packument and
    // tarball work the same way.
    let (trial, base) = session(&cache);
    assert_eq!(ok(&format!("{base}/npm/is-number/-/is-number-7.0.0.tgz"), None), first);
    let scoped = ok(&format!("{base}/npm/@isaacs%2fstring-locale-compare"), Some(ABBREVIATED));
    let scoped: Value = serde_json::from_slice(&scoped).unwrap();
    let tarball = scoped["versions"]["1.1.0"]["dist"]["tarball"].as_str().unwrap();
    let expected = format!("{base}/npm/-/sha512/");
    assert!(
        tarball.starts_with(&expected)
            && tarball.ends_with("/@isaacs/string-locale-compare/-/string-locale-compare-1.1.0.tgz")
    );
    ok(tarball, None);
    assert_eq!(get(&format!("{base}/npm/is-number/../../x"), None).0, 404);
    assert_eq!(get(&format!("{base}/npm/-/sha512/abc/is-number/-/is-number-7.0.0.tgz"), None).0, 404);
    trial.stop();
}

#[test]
fn crates_come_from_static_crates_io_once_and_only_with_their_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path(), 1 << 30).unwrap();

    // A first trial: the registry's configuration, the crate's index file,
    // then the download its template and checksum make.
    let (trial, base) = session(&cache);
    let config: Value =
        serde_json::from_slice(&ok(&format!("{base}/crates/index/config.json"), None)).unwrap();
    let template = config["dl"].as_str().unwrap();
    assert_eq!(template, format!("{base}/crates/dl/{{crate}}/{{version}}/{{sha256-checksum}}"));
    let index = String::from_utf8(ok(&format!("{base}/crates/index/it/oa/itoa"), None)).unwrap();
    let entry: Value = index
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["vers"] == "1.0.11")
        .expect("itoa 1.0.11 in the index");
    let cksum = entry["cksum"].as_str().unwrap();
    let url = template
        .replace("{crate}", "itoa")
        .replace("{version}", "1.0.11")
        .replace("{sha256-checksum}", cksum);
    let stored = cache.size();
    let first = ok(&url, None);
    assert_eq!(hex(&Sha256::digest(&first)), cksum);
    assert!(cache.size() > stored, "a whole download is stored before the client has its last byte");
    let one = trial.stop();
    eprintln!(
        "crates, first trial (config, index {} bytes, crate {} bytes): {one:?}",
        index.len(),
        first.len()
    );
    assert_eq!(one.bytes_upstream, (index.len() + first.len()) as u64, "{one:?}");

    // A second trial: the index file (fresh) and the crate from the store.
    let (trial, base) = session(&cache);
    let path = url.strip_prefix(template.split("/crates/").next().unwrap()).unwrap();
    assert_eq!(ok(&format!("{base}/crates/index/it/oa/itoa"), None), index.as_bytes());
    assert_eq!(ok(&format!("{base}{path}"), None), first);
    let two = trial.stop();
    eprintln!("crates, second trial (index and crate again): {two:?}");
    assert_eq!(two, CacheTraffic { bytes_upstream: 0, bytes_from_cache: (index.len() + first.len()) as u64 });

    // A checksum the crate does not have: served, never stored.
    let (trial, base) = session(&cache);
    let wrong = path.replace(cksum, &hex(&Sha256::digest(b"another crate")));
    let size = cache.size();
    for _ in 0..2 {
        assert_eq!(ok(&format!("{base}{wrong}"), None), first);
    }
    assert_eq!(cache.size(), size, "nothing was stored");
    let poisoned = trial.stop();
    eprintln!("crates, a link with the wrong checksum twice: {poisoned:?}");
    assert_eq!(poisoned, CacheTraffic { bytes_upstream: 2 * first.len() as u64, bytes_from_cache: 0 });

    let (trial, base) = session(&cache);
    for bad in [
        "/crates/index/it/oa/itob",
        "/crates/index/../x",
        "/crates/dl/itoa/1.0.11/abc",
        "/crates/dl/../x/1/a",
    ] {
        assert_eq!(get(&format!("{base}{bad}"), None).0, 404, "{bad}");
    }
    trial.stop();
}
