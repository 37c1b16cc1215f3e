//! `source = "git"`: fetch one commit into a bare cache repository with the
//! host's `git`, then write the commit's tree from the object database.
//!
//! Nothing of the repository runs: the cache is a bare repository that we
//! created (no hooks of its own, and `core.hooksPath` points nowhere), and
//! the tree is written from `git ls-tree` and `git cat-file --batch`, so no
//! checkout filters, attributes or line-ending conversions apply: the bytes
//! are those of the commit. Submodules become empty directories.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::error::FetchError;
use super::tree::{hex, normalize, TreeWriter};

fn git(cache: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("--git-dir")
        .arg(cache)
        .args(["-c", "core.hooksPath=/dev/null", "-c", "protocol.version=2"])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_ASKPASS", "/bin/true")
        .env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        .stdin(Stdio::null());
    c
}

fn run(mut cmd: Command, url: &str, what: &str) -> Result<Vec<u8>, FetchError> {
    let out = cmd.output().map_err(|e| FetchError::Git {
        url: url.to_owned(),
        message: format!("cannot run git ({e}); install git"),
    })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        Err(FetchError::Git { url: url.to_owned(), message: format!("{what} failed: {}", stderr.join("; ")) })
    }
}

fn has_commit(cache: &Path, rev: &str) -> bool {
    git(cache)
        .args(["cat-file", "-e", &format!("{rev}^{{commit}}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The bare cache repository for `url`, created when new.
fn cache_repo(cache_dir: &Path, url: &str) -> Result<PathBuf, FetchError> {
    let key = hex(&Sha256::digest(url.as_bytes()));
    let dir = cache_dir.join("git").join(format!("{}.git", &key[..24]));
    if dir.join("HEAD").exists() {
        return Ok(dir);
    }
    let parent = cache_dir.join("git");
    std::fs::create_dir_all(&parent).map_err(FetchError::io(&parent, "cannot create directory"))?;
    let tmp = super::http::temp_name(&dir);
    let mut init = Command::new("git");
    init.args(["init", "--bare", "--quiet"]).arg(&tmp).stdin(Stdio::null());
    run(init, url, "git init")?;
    // Another process may have won the race; its repository is as good.
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(dir)
}

/// Fetches `rev` of `url` into the cache and writes its tree into `out`.
pub(crate) fn fetch(cache_dir: &Path, url: &str, rev: &str, out: &Path) -> Result<(), FetchError> {
    let cache = cache_repo(cache_dir, url)?;
    // One fetch at a time per cache repository (git's ref locks would make
    // a concurrent one fail); reading objects afterwards needs no lock.
    let lock_path = cache.with_extension("lock");
    let lock = std::fs::File::create(&lock_path).map_err(FetchError::io(&lock_path, "cannot create lock"))?;
    lock.lock().map_err(FetchError::io(&lock_path, "cannot lock"))?;
    if !has_commit(&cache, rev) {
        // Most servers give a commit by id; some only give their refs.
        let mut by_id = git(&cache);
        by_id.args(["fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--", url, rev]);
        let first = run(by_id, url, "git fetch");
        if !has_commit(&cache, rev) {
            let mut all = git(&cache);
            all.args([
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--",
                url,
                "+refs/heads/*:refs/cleanroom/heads/*",
                "+refs/tags/*:refs/cleanroom/tags/*",
            ]);
            let second = run(all, url, "git fetch");
            if !has_commit(&cache, rev) {
                let why = match (first, second) {
                    (_, Err(e)) | (Err(e), _) => format!(" ({e})"),
                    _ => String::new(),
                };
                return Err(FetchError::Git {
                    url: url.to_owned(),
                    message: format!("commit {rev} not found in the repository{why}"),
                });
            }
        }
        // Keep the commit from garbage collection.
        let mut pin = git(&cache);
        pin.args(["update-ref", &format!("refs/cleanroom/pin/{rev}"), rev]);
        run(pin, url, "git update-ref")?;
    }
    drop(lock);
    write_tree(&cache, url, rev, out)
}

struct Blob {
    rel: Vec<OsString>,
    mode: u32,
    link: bool,
}

fn write_tree(cache: &Path, url: &str, rev: &str, out: &Path) -> Result<(), FetchError> {
    let mut ls = git(cache);
    ls.args(["ls-tree", "-r", "-z", "--full-tree", rev]);
    let listing = run(ls, url, "git ls-tree")?;
    let origin = format!("{url}@{rev}");
    let mut w = TreeWriter::fetched(out, &origin);
    let mut blobs: Vec<(String, Blob)> = Vec::new();
    for rec in listing.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        // "<mode> <type> <object>\t<path>"
        let bad = || FetchError::Git {
            url: url.to_owned(),
            message: "unexpected output of git ls-tree".to_owned(),
        };
        let tab = rec.iter().position(|b| *b == b'\t').ok_or_else(bad)?;
        let meta = std::str::from_utf8(&rec[..tab]).map_err(|_| bad())?;
        let mut parts = meta.split(' ');
        let (mode, kind, oid) = (parts.next(), parts.next(), parts.next());
        let (Some(mode), Some(kind), Some(oid)) = (mode, kind, oid) else {
            return Err(bad());
        };
        let name = &rec[tab + 1..];
        let rel = normalize(name)
            .map_err(|r| FetchError::Unsafe {
                origin: origin.clone(),
                entry: String::from_utf8_lossy(name).into_owned(),
                reason: r.to_owned(),
            })?
            .ok_or_else(bad)?;
        match (kind, mode) {
            ("commit", _) => w.dir(&rel, 0o755, None)?,
            ("blob", "120000") => blobs.push((oid.to_owned(), Blob { rel, mode: 0, link: true })),
            ("blob", m) => {
                let mode = if m == "100755" { 0o755 } else { 0o644 };
                blobs.push((oid.to_owned(), Blob { rel, mode, link: false }));
            }
            _ => return Err(bad()),
        }
    }

    // One cat-file process streams every blob, in listing order.
    let mut cat = git(cache);
    cat.args(["cat-file", "--batch"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cat
        .spawn()
        .map_err(|e| FetchError::Git { url: url.to_owned(), message: format!("cannot run git ({e})") })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let ids: Vec<String> = blobs.iter().map(|(oid, _)| oid.clone()).collect();
    let feeder = std::thread::spawn(move || {
        for id in ids {
            if writeln!(stdin, "{id}").is_err() {
                break;
            }
        }
    });
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let result = (|| {
        for (oid, blob) in &blobs {
            let mut header = String::new();
            stdout.read_line(&mut header).map_err(FetchError::io(cache, "cannot read git output"))?;
            let size: u64 = header
                .trim_end()
                .strip_prefix(oid.as_str())
                .and_then(|rest| rest.strip_prefix(" blob "))
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| FetchError::Git {
                    url: url.to_owned(),
                    message: format!("git cat-file: unexpected answer {:?} for {oid}", header.trim_end()),
                })?;
            let mut content = (&mut stdout).take(size);
            if blob.link {
                let mut target = Vec::new();
                content.read_to_end(&mut target).map_err(FetchError::io(cache, "cannot read git output"))?;
                w.symlink(&blob.rel, &target, None)?;
            } else {
                w.file(&blob.rel, blob.mode, None, &mut content)?;
            }
            let mut nl = [0u8; 1];
            stdout.read_exact(&mut nl).map_err(FetchError::io(cache, "cannot read git output"))?;
        }
        Ok(())
    })();
    drop(stdout);
    let _ = feeder.join();
    let _ = child.wait();
    result?;
    w.finish()
}
