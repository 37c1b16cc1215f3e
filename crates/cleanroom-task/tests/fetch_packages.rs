//! The cleanroom additions `source = "crate"` and `source = "debian-source"`:
//! against the real registries (crates.io's sparse index and static host,
//! the host's Debian mirror) and against local `file://` stand-ins for the
//! failure cases.

mod common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use cleanroom_task::{
    load_task, materialize_artifact, materialize_artifact_with, FetchError, FetchOptions, Task,
};
use common::{gz, write_task, xz, BASE, CHECK};
use sha2::{Digest, Sha256};

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn task(parent: &Path, name: &str, artifact: &str) -> Task {
    let dir = write_task(parent, name, &format!("{BASE}[artifact]\n{artifact}"), CHECK);
    load_task(&dir).unwrap_or_else(|e| panic!("{e}"))
}

/// Options whose registries are all unreachable local paths: whatever
/// succeeds with them came from the cache.
fn offline(tmp: &Path) -> FetchOptions {
    let none = format!("file://{}/no-such-registry", tmp.display());
    FetchOptions {
        pypi_url: none.clone(),
        crates_index_url: none.clone(),
        crates_download_url: none,
        apt_dir: tmp.join("no-apt"),
        ..FetchOptions::default()
    }
}

/// A tar stream of (name, bytes) regular files, mode 0644.
fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_path(name).unwrap();
        h.set_mode(0o644);
        h.set_mtime(1_000_000_000);
        h.set_size(data.len() as u64);
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap()
}

// ---- crate: the real registry ----

const ITOA_048_SHA256: &str = "b71991ff56294aa922b450139ee08b3bfc70982c6b2c7562771375cf73542dd4";

#[test]
fn crate_from_the_real_registry_then_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let t = task(tmp.path(), "c", "source = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.8\"\n");
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&t, &cache, &out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.kind, "crate");
    assert_eq!(rec.location, "https://static.crates.io/crates/itoa/itoa-0.4.8.crate");
    assert_eq!(rec.sha256.as_deref(), Some(ITOA_048_SHA256));
    assert_eq!(rec.revision, None);
    let cached = cache.join(format!("downloads/sha256-{ITOA_048_SHA256}"));
    assert_eq!(sha256_hex(&fs::read(&cached).unwrap()), ITOA_048_SHA256);
    assert!(out.join("Cargo.toml").is_file(), "unpacked without its top-level directory");
    assert!(out.join("src/lib.rs").is_file());
    assert!(!out.join("itoa-0.4.8").exists());
    let manifest = fs::read_to_string(out.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"itoa\"") && manifest.contains("version = \"0.4.8\""), "{manifest}");

    // Pinned and cached: no registry is asked.
    let pinned = task(
        tmp.path(),
        "p",
        &format!(
            "source = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.8\"\nsha256 = \"{ITOA_048_SHA256}\"\n"
        ),
    );
    let out2 = tmp.path().join("out2");
    let rec2 = materialize_artifact_with(&pinned, &cache, &out2, &offline(tmp.path())).unwrap();
    assert_eq!(rec2.sha256.as_deref(), Some(ITOA_048_SHA256));
    assert!(out2.join("src/lib.rs").is_file());
    // Not pinned: the index must be asked, and here it cannot be.
    let err =
        materialize_artifact_with(&t, &cache, &tmp.path().join("out3"), &offline(tmp.path())).unwrap_err();
    assert!(matches!(err, FetchError::Crate { .. }), "{err}");
}

#[test]
fn crate_errors_from_the_real_registry() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let t = task(tmp.path(), "v", "source = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.99\"\n");
    let err = materialize_artifact(&t, &cache, &tmp.path().join("o1")).unwrap_err();
    assert!(matches!(err, FetchError::Crate { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with("crate itoa 0.4.99: ") && msg.contains("not published"), "{msg}");
    let t = task(
        tmp.path(),
        "n",
        "source = \"crate\"\ncrate = \"no-such-crate-cleanroom-x\"\nversion = \"1.0.0\"\n",
    );
    let err = materialize_artifact(&t, &cache, &tmp.path().join("o2")).unwrap_err();
    assert!(err.to_string().contains("no crate named"), "{err}");
    // A pinned digest that the index contradicts.
    let wrong = "0".repeat(64);
    let t = task(
        tmp.path(),
        "w",
        &format!("source = \"crate\"\ncrate = \"itoa\"\nversion = \"0.4.8\"\nsha256 = \"{wrong}\"\n"),
    );
    let err = materialize_artifact(&t, &cache, &tmp.path().join("o3")).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&format!("pins sha256 {wrong}")) && msg.contains(ITOA_048_SHA256), "{msg}");
}

// ---- crate: a local stand-in registry ----

struct LocalRegistry {
    opts: FetchOptions,
    index: PathBuf,
    dl: PathBuf,
}

fn local_registry(tmp: &Path) -> LocalRegistry {
    let index = tmp.join("index");
    let dl = tmp.join("dl");
    fs::create_dir_all(&index).unwrap();
    fs::create_dir_all(&dl).unwrap();
    let opts = FetchOptions {
        crates_index_url: format!("file://{}", index.display()),
        crates_download_url: format!("file://{}", dl.display()),
        ..FetchOptions::default()
    };
    LocalRegistry { opts, index, dl }
}

impl LocalRegistry {
    /// Publishes `name` `version` with these bytes, listing `cksum` in the index.
    fn publish(&self, name: &str, version: &str, bytes: &[u8], cksum: &str, yanked: bool) {
        let path = self.index.join(cleanroom_index_path(name));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let line = serde_json::json!({"name": name, "vers": version, "deps": [], "cksum": cksum, "features": {}, "yanked": yanked});
        let mut f = fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
        writeln!(f, "{line}").unwrap();
        fs::create_dir_all(self.dl.join(name)).unwrap();
        fs::write(self.dl.join(format!("{name}/{name}-{version}.crate")), bytes).unwrap();
    }
}

/// The sparse index layout, written out independently of the crate's code.
fn cleanroom_index_path(name: &str) -> String {
    match name.len() {
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    }
}

#[test]
fn crate_digest_mismatch_yanked_and_short_names() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = local_registry(tmp.path());
    let cache = tmp.path().join("cache");
    let good =
        gz(&tar_of(&[("ab-1.0.0/Cargo.toml", b"[package]\nname = \"ab\"\n"), ("ab-1.0.0/src/lib.rs", b"")]));
    reg.publish("ab", "1.0.0", &good, &sha256_hex(&good), false);
    let t = task(tmp.path(), "ok", "source = \"crate\"\ncrate = \"ab\"\nversion = \"1.0.0\"\n");
    let out = tmp.path().join("out");
    let rec = materialize_artifact_with(&t, &cache, &out, &reg.opts).unwrap_or_else(|e| panic!("{e}"));
    assert!(rec.location.ends_with("/ab/ab-1.0.0.crate"), "{}", rec.location);
    assert!(out.join("Cargo.toml").is_file() && out.join("src/lib.rs").is_file());

    // The registry serves other bytes than its index lists.
    reg.publish("ab", "1.0.1", &good, &"e".repeat(64), false);
    let t = task(tmp.path(), "bad", "source = \"crate\"\ncrate = \"ab\"\nversion = \"1.0.1\"\n");
    let err = materialize_artifact_with(&t, &cache, &tmp.path().join("o2"), &reg.opts).unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    assert!(!cache.join(format!("downloads/sha256-{}", "e".repeat(64))).exists());

    // Yanked.
    reg.publish("ab", "1.0.2", &good, &sha256_hex(&good), true);
    let t = task(tmp.path(), "y", "source = \"crate\"\ncrate = \"ab\"\nversion = \"1.0.2\"\n");
    let err = materialize_artifact_with(&t, &cache, &tmp.path().join("o3"), &reg.opts).unwrap_err();
    assert!(err.to_string().contains("yanked"), "{err}");

    // One- and three-letter names use their own index directories.
    reg.publish("x", "0.1.0", &good, &sha256_hex(&good), false);
    reg.publish("xyz", "0.1.0", &good, &sha256_hex(&good), false);
    for name in ["x", "xyz"] {
        let t = task(
            tmp.path(),
            &format!("n{name}"),
            &format!("source = \"crate\"\ncrate = \"{name}\"\nversion = \"0.1.0\"\n"),
        );
        materialize_artifact_with(&t, &cache, &tmp.path().join(format!("o-{name}")), &reg.opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

// ---- debian-source: the real mirror ----

// In Debian 12 (bookworm): a tiny 3.0 (quilt) package whose debian tarball
// is xz-compressed, and one whose debian tarball is bz2-compressed.
const SL_DSC: &str = "http://deb.debian.org/debian/pool/main/s/sl/sl_5.02-1.dsc";

#[test]
fn debian_source_from_the_host_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let t = task(tmp.path(), "sl", "source = \"debian-source\"\npackage = \"sl\"\nversion = \"5.02-1\"\n");
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&t, &cache, &out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.kind, "debian-source");
    assert!(rec.location.ends_with("/pool/main/s/sl/sl_5.02-1.dsc"), "{}", rec.location);
    if Path::new("/etc/apt/sources.list.d/debian.sources").is_file() {
        assert_eq!(rec.location, SL_DSC);
    }
    let dsc_sha = rec.sha256.clone().unwrap();
    // The upstream tree without its top directory, and debian/ on top.
    assert!(out.join("sl.c").is_file(), "upstream source at the top");
    assert!(out.join("debian/control").is_file());
    assert!(out.join("debian/changelog").is_file());
    let changelog = fs::read_to_string(out.join("debian/changelog")).unwrap();
    assert!(changelog.starts_with("sl (5.02-1)"), "{changelog}");
    assert!(!out.join("sl-5.02").exists());
    // Every file is in the cache by digest: .dsc, orig, debian.
    let cached: Vec<_> = fs::read_dir(cache.join("downloads")).unwrap().collect();
    assert_eq!(cached.len(), 3);

    // Pinned by the .dsc's digest and cached: no mirror needed.
    let pinned = task(
        tmp.path(),
        "sl2",
        &format!("source = \"debian-source\"\npackage = \"sl\"\nversion = \"5.02-1\"\nmirror = \"file:///nonexistent/debian\"\nsha256 = \"{dsc_sha}\"\n"),
    );
    let out2 = tmp.path().join("out2");
    let rec2 = materialize_artifact_with(&pinned, &cache, &out2, &offline(tmp.path())).unwrap();
    assert_eq!(rec2.sha256.as_deref(), Some(dsc_sha.as_str()));
    assert_eq!(fs::read(out2.join("debian/control")).unwrap(), fs::read(out.join("debian/control")).unwrap());
}

#[test]
fn debian_source_bz2_and_missing_version_on_the_host_mirror() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let t = task(tmp.path(), "b", "source = \"debian-source\"\npackage = \"bzip2\"\nversion = \"1.0.8-5\"\n");
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&t, &cache, &out).unwrap_or_else(|e| panic!("{e}"));
    assert!(rec.location.ends_with("/pool/main/b/bzip2/bzip2_1.0.8-5.dsc"), "{}", rec.location);
    assert!(out.join("bzlib.c").is_file());
    assert!(out.join("debian/patches/series").is_file());
    assert!(out.join("debian/rules").is_file());

    let t = task(tmp.path(), "m", "source = \"debian-source\"\npackage = \"bzip2\"\nversion = \"0.9.9-1\"\n");
    let err = materialize_artifact(&t, &cache, &tmp.path().join("o2")).unwrap_err();
    assert!(matches!(err, FetchError::Debian { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with("debian-source bzip2 0.9.9-1: ") && msg.contains("not found"), "{msg}");
}

// ---- debian-source: a local stand-in mirror ----

struct Mirror {
    root: PathBuf,
    url: String,
}

fn mirror(tmp: &Path) -> Mirror {
    let root = tmp.join("mirror/debian");
    fs::create_dir_all(&root).unwrap();
    Mirror { url: format!("file://{}", root.display()), root }
}

impl Mirror {
    fn pool(&self, package: &str) -> PathBuf {
        let prefix = if package.starts_with("lib") { &package[..4] } else { &package[..1] };
        let p = self.root.join(format!("pool/main/{prefix}/{package}"));
        fs::create_dir_all(&p).unwrap();
        p
    }

    /// Publishes a package: each file with its bytes, and a .dsc listing
    /// them (with `listed` digests where given). Returns the .dsc's sha256.
    fn publish(
        &self,
        package: &str,
        version: &str,
        format: &str,
        files: &[(&str, Vec<u8>, Option<String>)],
    ) -> String {
        let pool = self.pool(package);
        let mut sums = String::new();
        for (name, bytes, listed) in files {
            fs::write(pool.join(name), bytes).unwrap();
            let sha = listed.clone().unwrap_or_else(|| sha256_hex(bytes));
            sums.push_str(&format!(" {sha} {} {name}\n", bytes.len()));
        }
        let dsc = format!(
            "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nFormat: {format}\nSource: {package}\nVersion: {version}\nChecksums-Sha256:\n{sums}\n-----BEGIN PGP SIGNATURE-----\n\nxx\n-----END PGP SIGNATURE-----\n"
        );
        let v = version.split_once(':').map_or(version, |(_, v)| v);
        fs::write(pool.join(format!("{package}_{v}.dsc")), &dsc).unwrap();
        sha256_hex(dsc.as_bytes())
    }
}

fn orig() -> Vec<u8> {
    gz(&tar_of(&[
        ("demo-1.0/main.c", b"int main(void) { return 0; }\n"),
        ("demo-1.0/debian/old", b"upstream's own debian dir\n"),
    ]))
}

fn debian_tar() -> Vec<u8> {
    xz(&tar_of(&[
        ("debian/control", b"Source: demo\n"),
        ("debian/patches/series", b"fix.patch\n"),
        ("debian/patches/fix.patch", b"--- a/main.c\n+++ b/main.c\n"),
    ]))
}

fn debian_task(tmp: &Path, name: &str, m: &Mirror, package: &str, version: &str, extra: &str) -> Task {
    task(
        tmp,
        name,
        &format!("source = \"debian-source\"\npackage = \"{package}\"\nversion = \"{version}\"\nmirror = \"{}\"\n{extra}", m.url),
    )
}

#[test]
fn debian_source_layout_components_and_epochs() {
    let tmp = tempfile::tempdir().unwrap();
    let m = mirror(tmp.path());
    let cache = tmp.path().join("cache");
    let docs = xz(&tar_of(&[("docs-1.0/guide.txt", b"guide\n")]));
    let dsc_sha = m.publish(
        "demo",
        "2:1.0-3",
        "3.0 (quilt)",
        &[
            ("demo_1.0.orig.tar.gz", orig(), None),
            ("demo_1.0.orig.tar.gz.asc", b"signature".to_vec(), None),
            ("demo_1.0.orig-docs.tar.xz", docs, None),
            ("demo_1.0-3.debian.tar.xz", debian_tar(), None),
        ],
    );
    let t = debian_task(tmp.path(), "d", &m, "demo", "2:1.0-3", "");
    let out = tmp.path().join("out");
    let rec =
        materialize_artifact_with(&t, &cache, &out, &offline(tmp.path())).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.location, format!("{}/pool/main/d/demo/demo_1.0-3.dsc", m.url));
    assert_eq!(rec.sha256.as_deref(), Some(dsc_sha.as_str()));
    assert!(out.join("main.c").is_file());
    assert_eq!(fs::read_to_string(out.join("docs/guide.txt")).unwrap(), "guide\n");
    assert!(!out.join("debian/old").exists(), "the package's debian/ replaces upstream's");
    assert_eq!(fs::read_to_string(out.join("debian/control")).unwrap(), "Source: demo\n");
    assert!(out.join("debian/patches/series").is_file(), "patches are shipped, not applied");
    assert!(!out.join("demo_1.0.orig.tar.gz.asc").exists());

    // A native package, lib prefix.
    let native = xz(&tar_of(&[("libfoo-2/foo.c", b"x\n")]));
    m.publish("libfoo", "2", "3.0 (native)", &[("libfoo_2.tar.xz", native, None)]);
    let t = debian_task(tmp.path(), "n", &m, "libfoo", "2", "");
    let out = tmp.path().join("out-native");
    let rec = materialize_artifact_with(&t, &cache, &out, &offline(tmp.path())).unwrap();
    assert!(rec.location.ends_with("/pool/main/libf/libfoo/libfoo_2.dsc"), "{}", rec.location);
    assert!(out.join("foo.c").is_file());
}

#[test]
fn debian_source_failures() {
    let tmp = tempfile::tempdir().unwrap();
    let m = mirror(tmp.path());
    let cache = tmp.path().join("cache");
    let opts = offline(tmp.path());
    let run = |t: &Task, out: &str| materialize_artifact_with(t, &cache, &tmp.path().join(out), &opts);

    // A file whose bytes differ from the .dsc's digest.
    m.publish(
        "demo",
        "1.0-1",
        "3.0 (quilt)",
        &[
            ("demo_1.0.orig.tar.gz", orig(), Some("d".repeat(64))),
            ("demo_1.0-1.debian.tar.xz", debian_tar(), None),
        ],
    );
    let err = run(&debian_task(tmp.path(), "a", &m, "demo", "1.0-1", ""), "o1").unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    assert!(err.to_string().contains("demo_1.0.orig.tar.gz: sha256 mismatch"), "{err}");

    // A version the mirror does not carry.
    let err = run(&debian_task(tmp.path(), "b", &m, "demo", "9.9-1", ""), "o2").unwrap_err();
    assert!(err.to_string().contains("demo_9.9-1.dsc not found"), "{err}");

    // A pinned .dsc digest that the mirror's .dsc does not have.
    let err = run(
        &debian_task(tmp.path(), "c", &m, "demo", "1.0-1", &format!("sha256 = \"{}\"\n", "f".repeat(64))),
        "o3",
    )
    .unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    assert!(err.to_string().contains("demo_1.0-1.dsc: sha256 mismatch"), "{err}");

    // Format 1.0 with a diff is refused, before anything is downloaded.
    m.publish(
        "old",
        "1.0-1",
        "1.0",
        &[("old_1.0.orig.tar.gz", orig(), None), ("old_1.0-1.diff.gz", gz(b"--- a\n+++ b\n"), None)],
    );
    let err = run(&debian_task(tmp.path(), "d", &m, "old", "1.0-1", ""), "o4").unwrap_err();
    assert!(err.to_string().contains("format 1.0 with a diff (old_1.0-1.diff.gz) is not supported"), "{err}");

    // A debian tarball with entries outside debian/.
    let evil = xz(&tar_of(&[("debian/control", b"x"), ("main.c", b"replaced")]));
    m.publish(
        "evil",
        "1.0-1",
        "3.0 (quilt)",
        &[("evil_1.0.orig.tar.gz", orig(), None), ("evil_1.0-1.debian.tar.xz", evil, None)],
    );
    let err = run(&debian_task(tmp.path(), "e", &m, "evil", "1.0-1", ""), "o5").unwrap_err();
    assert!(err.to_string().contains("every entry must lie under debian/"), "{err}");

    // A .dsc for another version than its name says.
    let pool = m.pool("demo");
    fs::copy(pool.join("demo_1.0-1.dsc"), pool.join("demo_1.0-2.dsc")).unwrap();
    let err = run(&debian_task(tmp.path(), "f", &m, "demo", "1.0-2", ""), "o6").unwrap_err();
    assert!(err.to_string().contains("describes demo 1.0-1"), "{err}");

    // No mirror key and no Debian mirror in the (empty) apt configuration.
    let t = task(tmp.path(), "g", "source = \"debian-source\"\npackage = \"demo\"\nversion = \"1.0-1\"\n");
    let err = run(&t, "o7").unwrap_err();
    assert!(err.to_string().contains("no Debian mirror"), "{err}");
}
