//! Each artifact source for real: dir, archive (path and url; tar.gz,
//! tar.bz2, tar, zip), git (a local repository), pypi-sdist (the real PyPI).

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cleanroom_task::{load_task, materialize_artifact, FetchError, Task};
use common::{bz2, fixtures, git, gz, write_task, xz, BASE, CHECK};
use sha2::{Digest, Sha256};

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn sha256_hex(p: &Path) -> String {
    Sha256::digest(fs::read(p).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A task whose task.toml has `artifact` as its [artifact] table body.
fn task_with_artifact(parent: &Path, name: &str, artifact: &str) -> PathBuf {
    write_task(parent, name, &format!("{BASE}[artifact]\n{artifact}"), CHECK)
}

fn load(dir: &Path) -> Task {
    load_task(dir).unwrap_or_else(|e| panic!("{e}"))
}

// ---- dir ----

#[test]
fn dir_source_copies_modes_links_and_overlay() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_task(tmp.path(), "d", BASE, CHECK);
    let art = dir.join("artifact");
    fs::create_dir_all(art.join("bin")).unwrap();
    fs::write(art.join("bin/run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(art.join("bin/run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    std::os::unix::fs::symlink("bin/run.sh", art.join("run")).unwrap();
    std::os::unix::fs::symlink("/usr/share/dict", art.join("dict")).unwrap();
    fs::write(art.join("README"), "original\n").unwrap();
    fs::create_dir_all(dir.join("overlay/bin")).unwrap();
    fs::write(dir.join("overlay/README"), "from overlay\n").unwrap();
    fs::write(dir.join("overlay/bin/extra.sh"), "echo\n").unwrap();

    let task = load(&dir);
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&task, &tmp.path().join("cache"), &out).unwrap();
    assert_eq!(rec.kind, "dir");
    assert_eq!(rec.location, art.display().to_string());
    assert_eq!(rec.sha256.as_ref().map(String::len), Some(64));
    assert_eq!(rec.revision, None);
    assert_eq!(fs::read_to_string(out.join("main.py")).unwrap(), "print(1)\n");
    assert_eq!(mode(&out.join("bin/run.sh")), 0o750);
    assert_eq!(fs::read_link(out.join("run")).unwrap(), Path::new("bin/run.sh"));
    assert_eq!(fs::read_link(out.join("dict")).unwrap(), Path::new("/usr/share/dict"));
    assert_eq!(fs::read_to_string(out.join("README")).unwrap(), "from overlay\n");
    assert_eq!(fs::read_to_string(out.join("bin/extra.sh")).unwrap(), "echo\n");

    // The same tree gives the same digest; a change gives another.
    let out2 = tmp.path().join("out2");
    let rec2 = materialize_artifact(&task, &tmp.path().join("cache"), &out2).unwrap();
    assert_eq!(rec.sha256, rec2.sha256);
    fs::write(art.join("README"), "changed\n").unwrap();
    let rec3 = materialize_artifact(&task, &tmp.path().join("cache"), &tmp.path().join("out3")).unwrap();
    assert_ne!(rec.sha256, rec3.sha256);

    // out_dir must be new or empty.
    let err = materialize_artifact(&task, &tmp.path().join("cache"), &out).unwrap_err();
    assert!(matches!(err, FetchError::OutDirNotEmpty { .. }), "{err}");
}

#[test]
fn fixture_task_materializes() {
    let tmp = tempfile::tempdir().unwrap();
    let task = load(&fixtures().join("heat-2d"));
    let out = tmp.path().join("out");
    materialize_artifact(&task, tmp.path(), &out).unwrap();
    assert!(out.join("src/heat.f90").is_file());
    assert_eq!(mode(&out.join("run_table2.sh")) & 0o111, 0o111);
    assert!(out.join("README.cleanroom").is_file());
}

#[test]
fn overlay_never_writes_through_an_artifact_link() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let dir = write_task(tmp.path(), "d", BASE, CHECK);
    std::os::unix::fs::symlink(&outside, dir.join("artifact/lib")).unwrap();
    fs::create_dir_all(dir.join("overlay/lib")).unwrap();
    fs::write(dir.join("overlay/lib/evil"), "x").unwrap();
    let task = load(&dir);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("out")).unwrap_err();
    assert!(err.to_string().contains("lib"), "{err}");
    assert!(!outside.join("evil").exists());
}

// ---- archives ----

struct Entry {
    name: &'static [u8],
    kind: tar::EntryType,
    mode: u32,
    data: &'static [u8],
    link: &'static [u8],
}

fn file(name: &'static [u8], mode: u32, data: &'static [u8]) -> Entry {
    Entry { name, kind: tar::EntryType::Regular, mode, data, link: b"" }
}
fn dir(name: &'static [u8]) -> Entry {
    Entry { name, kind: tar::EntryType::Directory, mode: 0o755, data: b"", link: b"" }
}
fn symlink(name: &'static [u8], target: &'static [u8]) -> Entry {
    Entry { name, kind: tar::EntryType::Symlink, mode: 0o777, data: b"", link: target }
}
fn hardlink(name: &'static [u8], target: &'static [u8]) -> Entry {
    Entry { name, kind: tar::EntryType::Link, mode: 0o644, data: b"", link: target }
}

/// A tar stream with names written verbatim (even unsafe ones).
fn tar_bytes(entries: &[Entry]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..e.name.len()].copy_from_slice(e.name);
        h.set_entry_type(e.kind);
        h.set_mode(e.mode);
        h.set_mtime(1_000_000_000);
        h.set_size(e.data.len() as u64);
        if !e.link.is_empty() {
            h.as_old_mut().linkname[..e.link.len()].copy_from_slice(e.link);
        }
        h.set_cksum();
        b.append(&h, e.data).unwrap();
    }
    b.into_inner().unwrap()
}

fn package_entries() -> Vec<Entry> {
    vec![
        dir(b"pkg-1.0/"),
        dir(b"pkg-1.0/bin/"),
        file(b"pkg-1.0/bin/run.sh", 0o755, b"#!/bin/sh\necho run\n"),
        file(b"pkg-1.0/setup.py", 0o644, b"print('setup')\n"),
        symlink(b"pkg-1.0/run", b"bin/run.sh"),
        hardlink(b"pkg-1.0/setup-copy.py", b"pkg-1.0/setup.py"),
    ]
}

fn assert_package(out: &Path) {
    assert_eq!(fs::read_to_string(out.join("setup.py")).unwrap(), "print('setup')\n");
    assert_eq!(fs::read_to_string(out.join("setup-copy.py")).unwrap(), "print('setup')\n");
    assert_eq!(mode(&out.join("bin/run.sh")), 0o755);
    assert_eq!(fs::read_link(out.join("run")).unwrap(), Path::new("bin/run.sh"));
    let mtime = fs::metadata(out.join("setup.py")).unwrap().modified().unwrap();
    assert_eq!(mtime.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(), 1_000_000_000);
    assert!(!out.join("pkg-1.0").exists(), "the common top-level directory is stripped");
}

fn archive_task(tmp: &Path, name: &str, file_name: &str, bytes: &[u8], sha: Option<&str>) -> Task {
    let dir = write_task(tmp, name, BASE, CHECK);
    fs::write(dir.join(file_name), bytes).unwrap();
    let sha = sha.map(|s| format!("sha256 = \"{s}\"\n")).unwrap_or_default();
    let toml = format!("{BASE}[artifact]\nsource = \"archive\"\npath = \"{file_name}\"\n{sha}");
    fs::write(dir.join("task.toml"), toml).unwrap();
    load(&dir)
}

#[test]
fn archive_path_tar_gz_bz2_xz_and_plain_tar() {
    let tmp = tempfile::tempdir().unwrap();
    let tar = tar_bytes(&package_entries());
    for (i, (file_name, bytes)) in
        [("a.tar.gz", gz(&tar)), ("a.tar.bz2", bz2(&tar)), ("a.tar.xz", xz(&tar)), ("a.tar", tar.clone())]
            .into_iter()
            .enumerate()
    {
        let task = archive_task(tmp.path(), &format!("t{i}"), file_name, &bytes, None);
        let out = tmp.path().join(format!("out{i}"));
        let rec = materialize_artifact(&task, &tmp.path().join("cache"), &out).unwrap();
        assert_package(&out);
        assert_eq!(rec.kind, "archive");
        assert_eq!(rec.sha256.as_deref(), Some(sha256_hex(&task.dir.join(file_name)).as_str()));
        assert!(rec.location.ends_with(file_name));
    }
}

#[test]
fn archive_digest_is_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = gz(&tar_bytes(&package_entries()));
    let good = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
    let task = archive_task(tmp.path(), "ok", "a.tgz", &bytes, Some(&good));
    materialize_artifact(&task, tmp.path(), &tmp.path().join("out")).unwrap();
    let task = archive_task(tmp.path(), "bad", "a.tgz", &bytes, Some(&"0".repeat(64)));
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("out2")).unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    assert!(err.to_string().contains("sha256 mismatch"), "{err}");
}

#[test]
fn archive_without_common_top_is_kept_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = gz(&tar_bytes(&[file(b"a.txt", 0o644, b"a"), file(b"./b/c.txt", 0o600, b"c")]));
    let task = archive_task(tmp.path(), "t", "a.tar.gz", &bytes, None);
    let out = tmp.path().join("out");
    materialize_artifact(&task, tmp.path(), &out).unwrap();
    assert_eq!(fs::read_to_string(out.join("a.txt")).unwrap(), "a");
    assert_eq!(mode(&out.join("b/c.txt")), 0o600);
    // One top-level file alone is not a directory to strip.
    let bytes = gz(&tar_bytes(&[file(b"only.txt", 0o644, b"x")]));
    let task = archive_task(tmp.path(), "t2", "a.tar.gz", &bytes, None);
    let out = tmp.path().join("out2");
    materialize_artifact(&task, tmp.path(), &out).unwrap();
    assert!(out.join("only.txt").is_file());
}

#[test]
fn archive_url_is_downloaded_once_into_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = gz(&tar_bytes(&package_entries()));
    let src = tmp.path().join("served.tar.gz");
    fs::write(&src, &bytes).unwrap();
    let sha = sha256_hex(&src);
    let dir = task_with_artifact(
        tmp.path(),
        "u",
        &format!("source = \"archive\"\nurl = \"file://{}\"\nsha256 = \"{sha}\"\n", src.display()),
    );
    let task = load(&dir);
    let cache = tmp.path().join("cache");
    let rec = materialize_artifact(&task, &cache, &tmp.path().join("out")).unwrap();
    assert_eq!(rec.location, format!("file://{}", src.display()));
    assert_eq!(rec.sha256.as_deref(), Some(sha.as_str()));
    assert_package(&tmp.path().join("out"));
    assert!(cache.join(format!("downloads/sha256-{sha}")).is_file());
    // Served file gone: the cache answers.
    fs::remove_file(&src).unwrap();
    materialize_artifact(&task, &cache, &tmp.path().join("out2")).unwrap();
    assert_package(&tmp.path().join("out2"));

    // A wrong digest fails and leaves nothing in the cache.
    fs::write(&src, &bytes).unwrap();
    let dir = task_with_artifact(
        tmp.path(),
        "w",
        &format!(
            "source = \"archive\"\nurl = \"file://{}\"\nsha256 = \"{}\"\n",
            src.display(),
            "1".repeat(64)
        ),
    );
    let err = materialize_artifact(&load(&dir), &cache, &tmp.path().join("out3")).unwrap_err();
    assert!(matches!(err, FetchError::Digest { .. }), "{err}");
    let left: Vec<_> = fs::read_dir(cache.join("downloads")).unwrap().collect();
    assert_eq!(left.len(), 1, "only the good download stays");
}

#[test]
fn zip_archives() {
    use zip::write::SimpleFileOptions;
    let tmp = tempfile::tempdir().unwrap();
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    w.add_directory("proj-2/", stored).unwrap();
    w.start_file("proj-2/run.sh", deflated.unix_permissions(0o755)).unwrap();
    w.write_all(b"#!/bin/sh\n").unwrap();
    w.start_file("proj-2/data/table.csv", stored).unwrap();
    w.write_all(b"N,error\n64,0.001\n").unwrap();
    w.add_symlink("proj-2/link", "data/table.csv", stored).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let task = archive_task(tmp.path(), "z", "a.zip", &bytes, None);
    let out = tmp.path().join("out");
    materialize_artifact(&task, tmp.path(), &out).unwrap();
    assert_eq!(fs::read_to_string(out.join("data/table.csv")).unwrap(), "N,error\n64,0.001\n");
    assert_eq!(mode(&out.join("run.sh")), 0o755);
    assert_eq!(fs::read_link(out.join("link")).unwrap(), Path::new("data/table.csv"));

    // Unsafe zip entries are refused.
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    w.start_file("../escape.txt", stored).unwrap();
    w.write_all(b"x").unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let task = archive_task(tmp.path(), "z2", "b.zip", &bytes, None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("out2")).unwrap_err();
    assert!(matches!(err, FetchError::Unsafe { .. }), "{err}");
    assert!(!tmp.path().join("escape.txt").exists());
}

#[test]
fn unsafe_tar_entries_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<Entry>, &str)> = vec![
        ("dotdot", vec![file(b"../evil.txt", 0o644, b"x")], "`..`"),
        ("inner-dotdot", vec![file(b"pkg/../../evil.txt", 0o644, b"x")], "`..`"),
        ("absolute", vec![file(b"/tmp/evil.txt", 0o644, b"x")], "absolute"),
        ("link-out", vec![dir(b"pkg/"), symlink(b"pkg/l", b"../../outside")], "points outside"),
        ("link-abs", vec![symlink(b"l", b"/etc")], "points outside"),
        (
            "through-link",
            vec![dir(b"a/"), symlink(b"l", b"a"), file(b"l/x.txt", 0o644, b"x")],
            "symbolic link l",
        ),
        ("hardlink-out", vec![file(b"f", 0o644, b"x"), hardlink(b"h", b"/etc/passwd")], "absolute"),
        ("hardlink-missing", vec![hardlink(b"h", b"nothing")], "not a regular file"),
    ];
    for (name, entries, fragment) in cases {
        let task = archive_task(tmp.path(), name, "a.tar.gz", &gz(&tar_bytes(&entries)), None);
        let out = tmp.path().join(format!("out-{name}"));
        let err = materialize_artifact(&task, tmp.path(), &out).unwrap_err();
        assert!(matches!(err, FetchError::Unsafe { .. }), "{name}: {err}");
        assert!(err.to_string().contains(fragment), "{name}: {err}");
    }
    assert!(!tmp.path().join("evil.txt").exists());
}

#[test]
fn unsupported_and_corrupt_archives() {
    let tmp = tempfile::tempdir().unwrap();
    let task = archive_task(tmp.path(), "zst", "a.tar.zst", b"\x28\xb5\x2f\xfdrest", None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("o1")).unwrap_err();
    assert!(err.to_string().contains("zstd-compressed archives are not supported"), "{err}");
    let task = archive_task(tmp.path(), "xz", "a.tar.xz", b"\xfd7zXZ\0rest", None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("o1b")).unwrap_err();
    assert!(matches!(err, FetchError::Archive { .. }), "{err}");
    assert!(err.to_string().contains("xz"), "{err}");
    let task = archive_task(tmp.path(), "junk", "a.bin", b"hello world", None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("o2")).unwrap_err();
    assert!(err.to_string().contains("not a recognized archive"), "{err}");
    let mut bytes = gz(&tar_bytes(&package_entries()));
    bytes.truncate(bytes.len() / 2);
    let task = archive_task(tmp.path(), "cut", "a.tar.gz", &bytes, None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("o3")).unwrap_err();
    assert!(matches!(err, FetchError::Archive { .. } | FetchError::Io { .. }), "{err}");
    // A cut xz stream is an error, not a shorter tree.
    let mut bytes = xz(&tar_bytes(&package_entries()));
    bytes.truncate(bytes.len() / 2);
    let task = archive_task(tmp.path(), "cutxz", "a.tar.xz", &bytes, None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("o4")).unwrap_err();
    assert!(matches!(err, FetchError::Archive { .. } | FetchError::Io { .. }), "{err}");
    // A corrupt xz stream of full length too.
    let mut bytes = xz(&tar_bytes(&package_entries()));
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    bytes[mid + 1] ^= 0xff;
    let task = archive_task(tmp.path(), "badxz", "a.tar.xz", &bytes, None);
    let err = materialize_artifact(&task, tmp.path(), &tmp.path().join("o5")).unwrap_err();
    assert!(
        matches!(err, FetchError::Archive { .. } | FetchError::Io { .. } | FetchError::Unsafe { .. }),
        "{err}"
    );
}

// ---- git ----

#[test]
fn git_source_checks_out_one_commit_without_running_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    fs::create_dir(repo.join("src")).unwrap();
    fs::write(repo.join("src/main.c"), "int main(void) { return 0; }\n").unwrap();
    fs::write(repo.join("build.sh"), "#!/bin/sh\ncc src/main.c\n").unwrap();
    fs::set_permissions(repo.join("build.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/main.c", repo.join("main.c")).unwrap();
    // Attributes that a checkout would apply; the bytes must stay as committed.
    fs::write(repo.join(".gitattributes"), "*.c text eol=crlf\n").unwrap();
    // A hook in the source repository must never run.
    fs::write(repo.join(".git/hooks/post-checkout"), "#!/bin/sh\ntouch /tmp/cleanroom-hook-ran\n").unwrap();
    fs::set_permissions(repo.join(".git/hooks/post-checkout"), fs::Permissions::from_mode(0o755)).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    let first = git(&repo, &["rev-parse", "HEAD"]);
    fs::write(repo.join("src/main.c"), "int main(void) { return 1; }\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "second"]);
    let second = git(&repo, &["rev-parse", "HEAD"]);

    let url = format!("file://{}", repo.display());
    let cache = tmp.path().join("cache");
    let dir = task_with_artifact(
        tmp.path(),
        "g",
        &format!("source = \"git\"\nurl = \"{url}\"\nrev = \"{first}\"\n"),
    );
    let task = load(&dir);
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&task, &cache, &out).unwrap();
    assert_eq!(rec.kind, "git");
    assert_eq!(rec.location, url);
    assert_eq!(rec.revision.as_deref(), Some(first.as_str()));
    assert_eq!(fs::read(out.join("src/main.c")).unwrap(), b"int main(void) { return 0; }\n");
    assert_eq!(mode(&out.join("build.sh")), 0o755);
    assert_eq!(mode(&out.join("src/main.c")), 0o644);
    assert_eq!(fs::read_link(out.join("main.c")).unwrap(), Path::new("src/main.c"));
    assert!(!out.join(".git").exists());
    assert!(out.join(".gitattributes").is_file());
    assert!(!Path::new("/tmp/cleanroom-hook-ran").exists());

    // The tip commit, from the same cache.
    let dir = task_with_artifact(
        tmp.path(),
        "g2",
        &format!("source = \"git\"\nurl = \"{url}\"\nrev = \"{second}\"\n"),
    );
    let out2 = tmp.path().join("out2");
    materialize_artifact(&load(&dir), &cache, &out2).unwrap();
    assert_eq!(fs::read(out2.join("src/main.c")).unwrap(), b"int main(void) { return 1; }\n");

    // With the repository gone, the cache still has both commits.
    fs::remove_dir_all(&repo).unwrap();
    materialize_artifact(&task, &cache, &tmp.path().join("out3")).unwrap();
    assert_eq!(fs::read(tmp.path().join("out3/src/main.c")).unwrap(), b"int main(void) { return 0; }\n");

    // An unknown commit is a clear error.
    let missing = "0".repeat(40);
    let dir = task_with_artifact(
        tmp.path(),
        "g3",
        &format!("source = \"git\"\nurl = \"{url}\"\nrev = \"{missing}\"\n"),
    );
    let err = materialize_artifact(&load(&dir), &cache, &tmp.path().join("out4")).unwrap_err();
    assert!(matches!(err, FetchError::Git { .. }), "{err}");
    assert!(err.to_string().contains(&missing), "{err}");
}

// ---- pypi-sdist (the real package index) ----

fn pypi_task(tmp: &Path, name: &str, requirement: &str) -> Task {
    load(&task_with_artifact(
        tmp,
        name,
        &format!("source = \"pypi-sdist\"\nrequirement = \"{requirement}\"\n"),
    ))
}

#[test]
fn pypi_sdist_tar_gz_from_the_real_index() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let task = pypi_task(tmp.path(), "p", "sobol_seq==0.2.0");
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&task, &cache, &out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(rec.kind, "pypi-sdist");
    assert!(rec.location.starts_with("https://"), "{}", rec.location);
    assert!(rec.location.ends_with("sobol_seq-0.2.0.tar.gz"), "{}", rec.location);
    let sha = rec.sha256.clone().unwrap();
    assert_eq!(sha.len(), 64);
    assert_eq!(sha256_hex(&cache.join(format!("downloads/sha256-{sha}"))), sha);
    assert!(out.join("setup.py").is_file(), "unpacked without its top-level directory");
    assert!(out.join("sobol_seq").is_dir());
    assert!(!out.join("sobol_seq-0.2.0").exists());
}

#[test]
fn pypi_sdist_zip_and_errors_from_the_real_index() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    // sobol_seq 0.1.2 was published as a zip sdist only.
    let task = pypi_task(tmp.path(), "z", "sobol_seq==0.1.2");
    let out = tmp.path().join("out");
    let rec = materialize_artifact(&task, &cache, &out).unwrap_or_else(|e| panic!("{e}"));
    assert!(rec.location.ends_with(".zip"), "{}", rec.location);
    assert!(out.join("setup.py").is_file());

    let task = pypi_task(tmp.path(), "v", "sobol_seq==9.9.9");
    let err = materialize_artifact(&task, &cache, &tmp.path().join("o2")).unwrap_err();
    assert!(matches!(err, FetchError::Pypi { .. }), "{err}");
    assert!(err.to_string().contains("0.2.0"), "lists known versions: {err}");
}
