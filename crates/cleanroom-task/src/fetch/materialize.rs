//! Materializing a task's artifact into a host directory.
//!
//! `out_dir` receives the artifact tree, then overlay/ on top. Downloads
//! (archives, sdists, .crate files, Debian source files and .dsc files)
//! are cached in `cache_dir` by content (`downloads/sha256-<hex>`) and git
//! commits in bare repositories (`git/<hash of url>.git`), so the tenth
//! trial of a task fetches nothing. Every cached download is checked
//! against its digest before use.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::FetchError;
use super::http::Http;
use super::tree::{copy_tree, hex, sha256_file, TreeWriter};
use super::{archive, crates, debian, git, pypi};
use crate::load::Task;
use crate::spec::ArtifactSource;

/// What was fetched, recorded with every run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRecord {
    /// `dir`, `archive`, `git`, `pypi-sdist`, `crate` or `debian-source`.
    pub kind: String,
    /// The directory, archive path, or url fetched (for `debian-source`,
    /// the url of the .dsc).
    pub location: String,
    /// The archive's sha256 (for `crate`, the .crate file's; for
    /// `debian-source`, the .dsc's, whose digests fix every other file);
    /// for `dir`, the sha256 of a canonical listing of the tree (kinds,
    /// modes, paths, content digests, link targets).
    pub sha256: Option<String>,
    /// The git commit id.
    pub revision: Option<String>,
}

#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// The package index's JSON API root.
    pub pypi_url: String,
    /// The longest one download may take.
    pub http_timeout: Duration,
    /// The crates.io sparse index (`source = "crate"`).
    pub crates_index_url: String,
    /// Where .crate files are downloaded from:
    /// `<crates_download_url>/<name>/<name>-<version>.crate`.
    pub crates_download_url: String,
    /// The host's apt configuration directory, read for its Debian mirror
    /// when a `debian-source` artifact names no `mirror`.
    pub apt_dir: PathBuf,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            pypi_url: "https://pypi.org/pypi".to_owned(),
            http_timeout: Duration::from_secs(3600),
            crates_index_url: "https://index.crates.io".to_owned(),
            crates_download_url: "https://static.crates.io/crates".to_owned(),
            apt_dir: PathBuf::from("/etc/apt"),
        }
    }
}

/// Fills the new, empty directory `out_dir` with the task's artifact, then
/// lays overlay/ over it.
pub fn materialize_artifact(
    task: &Task,
    cache_dir: &Path,
    out_dir: &Path,
) -> Result<ArtifactRecord, FetchError> {
    materialize_artifact_with(task, cache_dir, out_dir, &FetchOptions::default())
}

pub fn materialize_artifact_with(
    task: &Task,
    cache_dir: &Path,
    out_dir: &Path,
    opts: &FetchOptions,
) -> Result<ArtifactRecord, FetchError> {
    prepare_out_dir(out_dir)?;
    let record = match &task.spec.artifact.source {
        ArtifactSource::Dir => {
            let src = task.artifact_dir();
            let mut h = Sha256::new();
            let mut w = TreeWriter::trusted(out_dir, &src.display().to_string());
            copy_tree(&src, &mut w, Some(&mut h))?;
            w.finish()?;
            ArtifactRecord {
                kind: "dir".to_owned(),
                location: src.display().to_string(),
                sha256: Some(hex(&h.finalize())),
                revision: None,
            }
        }
        ArtifactSource::Archive { path: Some(p), sha256, .. } => {
            let file = task.dir.join(p);
            let actual = sha256_file(&file)?;
            if let Some(expected) = sha256 {
                if !actual.eq_ignore_ascii_case(expected) {
                    return Err(FetchError::Digest {
                        location: file.display().to_string(),
                        expected: expected.clone(),
                        actual,
                    });
                }
            }
            archive::unpack(&file, &file.display().to_string(), out_dir)?;
            ArtifactRecord {
                kind: "archive".to_owned(),
                location: file.display().to_string(),
                sha256: Some(actual),
                revision: None,
            }
        }
        ArtifactSource::Archive { url: Some(url), sha256: Some(sha256), .. } => {
            let file = cached_download(cache_dir, url, sha256, opts)?;
            archive::unpack(&file, url, out_dir)?;
            ArtifactRecord {
                kind: "archive".to_owned(),
                location: url.clone(),
                sha256: Some(sha256.to_ascii_lowercase()),
                revision: None,
            }
        }
        ArtifactSource::Archive { .. } => {
            return Err(FetchError::Invalid {
                task: task.id.clone(),
                message: "an archive needs `path`, or `url` with `sha256`".to_owned(),
            })
        }
        ArtifactSource::Git { url, rev } => {
            git::fetch(cache_dir, url, rev, out_dir)?;
            ArtifactRecord {
                kind: "git".to_owned(),
                location: url.clone(),
                sha256: None,
                revision: Some(rev.clone()),
            }
        }
        ArtifactSource::PypiSdist { requirement } => {
            let http = Http::new(opts.http_timeout)?;
            let sdist = pypi::resolve(&http, &opts.pypi_url, requirement)?;
            let file = cached_download_with(&http, cache_dir, &sdist.url, &sdist.sha256)?;
            archive::unpack(&file, &sdist.filename, out_dir)?;
            ArtifactRecord {
                kind: "pypi-sdist".to_owned(),
                location: sdist.url,
                sha256: Some(sdist.sha256),
                revision: None,
            }
        }
        ArtifactSource::Crate { name, version, sha256 } => {
            let file = crates::fetch(cache_dir, opts, name, version, sha256.as_deref())?;
            archive::unpack(&file.path, &file.url, out_dir)?;
            ArtifactRecord {
                kind: "crate".to_owned(),
                location: file.url,
                sha256: Some(file.sha256),
                revision: None,
            }
        }
        ArtifactSource::DebianSource { package, version, mirror, sha256 } => {
            let fetched = debian::fetch(
                cache_dir,
                opts,
                package,
                version,
                mirror.as_deref(),
                sha256.as_deref(),
                out_dir,
            )?;
            ArtifactRecord {
                kind: "debian-source".to_owned(),
                location: fetched.dsc_url,
                sha256: Some(fetched.dsc_sha256),
                revision: None,
            }
        }
    };
    if let Some(overlay) = task.overlay_dir() {
        let mut w = TreeWriter::trusted(out_dir, &overlay.display().to_string());
        copy_tree(&overlay, &mut w, None)?;
        w.finish()?;
    }
    Ok(record)
}

fn prepare_out_dir(out_dir: &Path) -> Result<(), FetchError> {
    match fs::read_dir(out_dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(FetchError::OutDirNotEmpty { path: out_dir.to_path_buf() });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir_all(out_dir).map_err(FetchError::io(out_dir, "cannot create directory"))
        }
        Err(e) => Err(FetchError::io(out_dir, "cannot read directory")(e)),
    }
}

fn cached_download(
    cache_dir: &Path,
    url: &str,
    sha256: &str,
    opts: &FetchOptions,
) -> Result<PathBuf, FetchError> {
    let path = cache_path(cache_dir, sha256);
    if cache_hit(&path, sha256) {
        return Ok(path);
    }
    let http = Http::new(opts.http_timeout)?;
    cached_download_with(&http, cache_dir, url, sha256)
}

pub(crate) fn cached_download_with(
    http: &Http,
    cache_dir: &Path,
    url: &str,
    sha256: &str,
) -> Result<PathBuf, FetchError> {
    let path = cache_path(cache_dir, sha256);
    if !cache_hit(&path, sha256) {
        http.download(url, &path, Some(sha256))?;
    }
    Ok(path)
}

pub(crate) fn cache_path(cache_dir: &Path, sha256: &str) -> PathBuf {
    cache_dir.join("downloads").join(format!("sha256-{}", sha256.to_ascii_lowercase()))
}

/// A cached file is used only when its bytes still match; a damaged one is
/// removed and fetched again.
pub(crate) fn cache_hit(path: &Path, sha256: &str) -> bool {
    match sha256_file(path) {
        Ok(actual) if actual.eq_ignore_ascii_case(sha256) => true,
        Ok(_) => {
            let _ = fs::remove_file(path);
            false
        }
        Err(_) => false,
    }
}
