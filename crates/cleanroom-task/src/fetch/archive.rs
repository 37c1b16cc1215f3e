//! Unpacking archives: tar, tar.gz (tgz), tar.bz2, tar.xz and zip (stored
//! or deflate entries). zstd, lzma and other zip compressions are refused
//! with a message. The format is told by the file's first bytes, not its
//! name. xz is decoded by `lzma-rs` (pure Rust) on a thread of its own.
//!
//! Entries that share one top-level directory are unpacked without it
//! (unless a `Placement` says otherwise).
//! Absolute names, `..`, links pointing outside, and entries below a link
//! are refused (see `tree.rs`). Fifos and devices are skipped.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use filetime::FileTime;

use super::error::FetchError;
use super::tree::{normalize, TreeWriter};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Tar,
    TarGz,
    TarBz2,
    TarXz,
    Zip,
}

/// Where an archive's entries land in `out`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Placement {
    /// Keep a top-level directory that every entry shares (by default it is
    /// stripped).
    pub keep_top: bool,
    /// Put every entry under this directory of `out`.
    pub prefix: Vec<OsString>,
    /// Every entry must lie under this top-level directory.
    pub require_top: Option<&'static str>,
}

fn detect(path: &Path, origin: &str) -> Result<Format, FetchError> {
    let mut head = Vec::with_capacity(512);
    File::open(path)
        .and_then(|f| f.take(512).read_to_end(&mut head))
        .map_err(FetchError::io(path, "cannot read"))?;
    let fail = |what: &str| FetchError::Archive {
        origin: origin.to_owned(),
        message: format!("{what}; supported formats: tar, tar.gz, tar.bz2, tar.xz, zip"),
    };
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Format::TarGz)
    } else if head.starts_with(b"BZh") {
        Ok(Format::TarBz2)
    } else if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Ok(Format::Zip)
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Ok(Format::TarXz)
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Err(fail("zstd-compressed archives are not supported"))
    } else if head.get(257..262) == Some(b"ustar") || origin.ends_with(".tar") {
        Ok(Format::Tar)
    } else if head.starts_with(&[0x5d, 0, 0]) {
        Err(fail("lzma-compressed (not xz) archives are not supported"))
    } else {
        Err(fail("not a recognized archive"))
    }
}

/// Unpacks the archive at `path` into `out`. `origin` names it in errors
/// (a url or a file name).
pub(crate) fn unpack(path: &Path, origin: &str, out: &Path) -> Result<(), FetchError> {
    unpack_with(path, origin, out, &Placement::default())
}

/// Unpacks the archive at `path` into `out` (which may already hold files:
/// entries are laid over them) as `placement` says.
pub(crate) fn unpack_with(
    path: &Path,
    origin: &str,
    out: &Path,
    placement: &Placement,
) -> Result<(), FetchError> {
    match detect(path, origin)? {
        Format::Zip => unpack_zip(path, origin, out, placement),
        f => unpack_tar(path, f, origin, out, placement),
    }
}

fn archive_err(origin: &str) -> impl Fn(io::Error) -> FetchError + '_ {
    move |e| FetchError::Archive {
        origin: origin.to_owned(),
        message: format!("cannot read the archive: {e}"),
    }
}

fn unsafe_name(origin: &str, name: &[u8], reason: &str) -> FetchError {
    FetchError::Unsafe {
        origin: origin.to_owned(),
        entry: String::from_utf8_lossy(name).into_owned(),
        reason: reason.to_owned(),
    }
}

/// What the first pass learns: each entry's components and whether it is a
/// directory.
type Listing = Vec<(Vec<OsString>, bool)>;

/// Whether every entry lies under one top-level directory.
fn common_top(listing: &Listing) -> bool {
    let Some((first, _)) = listing.first() else {
        return false;
    };
    let top = &first[0];
    listing.iter().all(|(comps, is_dir)| &comps[0] == top && (comps.len() > 1 || *is_dir))
}

/// Whether to strip the common top, after checking `require_top`.
fn decide_strip(listing: &Listing, placement: &Placement, origin: &str) -> Result<bool, FetchError> {
    if let Some(top) = placement.require_top {
        if let Some((comps, _)) = listing.iter().find(|(comps, _)| comps[0] != top) {
            let names: Vec<String> = comps.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            return Err(FetchError::Archive {
                origin: origin.to_owned(),
                message: format!("{}: every entry must lie under {top}/", names.join("/")),
            });
        }
    }
    Ok(!placement.keep_top && common_top(listing))
}

/// The entry's place after stripping the common top and adding the
/// prefix; None for the top itself.
fn place(comps: Vec<OsString>, strip: bool, prefix: &[OsString]) -> Option<Vec<OsString>> {
    let rest = if strip {
        if comps.len() <= 1 {
            return None;
        }
        &comps[1..]
    } else {
        &comps[..]
    };
    Some(prefix.iter().chain(rest).cloned().collect())
}

fn tar_reader(path: &Path, format: Format) -> Result<Box<dyn Read>, FetchError> {
    let f = BufReader::new(File::open(path).map_err(FetchError::io(path, "cannot open"))?);
    Ok(match format {
        Format::TarGz => Box::new(flate2::read::MultiGzDecoder::new(f)),
        Format::TarBz2 => Box::new(bzip2::read::MultiBzDecoder::new(f)),
        Format::TarXz => {
            Box::new(XzReader::new(f).map_err(FetchError::io(path, "cannot start the xz decoder"))?)
        }
        _ => Box::new(f),
    })
}

/// An xz stream as a reader: `lzma-rs` decodes into a writer, so it runs
/// on a thread that writes into a pipe. A decoding error shows at the end
/// of the stream; dropping the reader early ends the thread (its next
/// write fails).
struct XzReader {
    pipe: Option<io::PipeReader>,
    decoder: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl XzReader {
    fn new(mut input: BufReader<File>) -> io::Result<XzReader> {
        let (pipe, writer) = io::pipe()?;
        let decoder = std::thread::Builder::new().name("xz-decoder".to_owned()).spawn(move || {
            let mut out = io::BufWriter::with_capacity(1 << 16, writer);
            lzma_rs::xz_decompress(&mut input, &mut out).map_err(|e| e.to_string())?;
            io::Write::flush(&mut out).map_err(|e| e.to_string())
        })?;
        Ok(XzReader { pipe: Some(pipe), decoder: Some(decoder) })
    }
}

impl Read for XzReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.pipe.as_mut() {
            Some(p) => p.read(buf)?,
            None => 0,
        };
        if n == 0 && !buf.is_empty() {
            if let Some(decoder) = self.decoder.take() {
                match decoder.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(io::Error::new(io::ErrorKind::InvalidData, format!("xz: {e}"))),
                    Err(_) => return Err(io::Error::other("xz: the decoder failed")),
                }
            }
        }
        Ok(n)
    }
}

impl Drop for XzReader {
    fn drop(&mut self) {
        self.pipe.take();
        if let Some(decoder) = self.decoder.take() {
            let _ = decoder.join();
        }
    }
}

fn is_skipped(t: tar::EntryType) -> bool {
    t.is_pax_global_extensions()
        || t.is_pax_local_extensions()
        || t.is_gnu_longname()
        || t.is_gnu_longlink()
        || t.is_character_special()
        || t.is_block_special()
        || t.is_fifo()
}

fn unpack_tar(
    path: &Path,
    format: Format,
    origin: &str,
    out: &Path,
    placement: &Placement,
) -> Result<(), FetchError> {
    let rerr = archive_err(origin);

    // Pass 1: names only, to find a common top-level directory.
    let mut listing = Listing::new();
    let mut ar = tar::Archive::new(tar_reader(path, format)?);
    for entry in ar.entries().map_err(&rerr)? {
        let entry = entry.map_err(&rerr)?;
        let t = entry.header().entry_type();
        if is_skipped(t) {
            continue;
        }
        let name = entry.path_bytes();
        match normalize(&name) {
            Ok(Some(comps)) => listing.push((comps, t.is_dir())),
            Ok(None) => {}
            Err(reason) => return Err(unsafe_name(origin, &name, reason)),
        }
    }
    let strip = decide_strip(&listing, placement, origin)?;

    // Pass 2: write.
    let mut w = TreeWriter::fetched(out, origin);
    let mut ar = tar::Archive::new(tar_reader(path, format)?);
    for entry in ar.entries().map_err(&rerr)? {
        let mut entry = entry.map_err(&rerr)?;
        let h = entry.header();
        let t = h.entry_type();
        if is_skipped(t) {
            continue;
        }
        let name = entry.path_bytes().into_owned();
        let Some(comps) = normalize(&name).map_err(|r| unsafe_name(origin, &name, r))? else {
            continue;
        };
        let Some(rel) = place(comps, strip, &placement.prefix) else {
            continue;
        };
        let mode = h.mode().unwrap_or(0o644);
        let mtime = h.mtime().ok().map(|s| FileTime::from_unix_time(s as i64, 0));
        if t.is_dir() {
            w.dir(&rel, mode, mtime)?;
        } else if t.is_symlink() {
            let target = entry.link_name_bytes().map(|c| c.into_owned()).unwrap_or_default();
            w.symlink(&rel, &target, mtime)?;
        } else if t.is_hard_link() {
            let target = entry.link_name_bytes().map(|c| c.into_owned()).unwrap_or_default();
            let tcomps = normalize(&target)
                .map_err(|r| unsafe_name(origin, &name, r))?
                .and_then(|c| place(c, strip, &placement.prefix))
                .ok_or_else(|| unsafe_name(origin, &name, "hard link to the root"))?;
            w.hardlink(&rel, &tcomps)?;
        } else if t.is_file() || t.is_contiguous() {
            w.file(&rel, mode, mtime, &mut entry)?;
        } else {
            return Err(unsafe_name(
                origin,
                &name,
                &format!("unsupported tar entry type {:?}", t.as_byte() as char),
            ));
        }
    }
    w.finish()
}

fn unpack_zip(path: &Path, origin: &str, out: &Path, placement: &Placement) -> Result<(), FetchError> {
    let zerr = |e: zip::result::ZipError| FetchError::Archive {
        origin: origin.to_owned(),
        message: format!("cannot read the zip archive: {e}"),
    };
    let f = File::open(path).map_err(FetchError::io(path, "cannot open"))?;
    let mut ar = zip::ZipArchive::new(BufReader::new(f)).map_err(zerr)?;

    let mut listing = Listing::new();
    for i in 0..ar.len() {
        let e = ar.by_index_raw(i).map_err(zerr)?;
        match normalize(e.name_raw()) {
            Ok(Some(comps)) => listing.push((comps, e.is_dir())),
            Ok(None) => {}
            Err(reason) => return Err(unsafe_name(origin, e.name_raw(), reason)),
        }
    }
    let strip = decide_strip(&listing, placement, origin)?;

    let mut w = TreeWriter::fetched(out, origin);
    for i in 0..ar.len() {
        let mut e = ar.by_index(i).map_err(zerr)?;
        let name = e.name_raw().to_vec();
        if e.encrypted() {
            return Err(unsafe_name(origin, &name, "encrypted entries are not supported"));
        }
        let Some(comps) = normalize(&name).map_err(|r| unsafe_name(origin, &name, r))? else {
            continue;
        };
        let Some(rel) = place(comps, strip, &placement.prefix) else {
            continue;
        };
        let mtime = e.last_modified().map(zip_time);
        if e.is_dir() {
            w.dir(&rel, e.unix_mode().unwrap_or(0o755), mtime)?;
        } else if e.is_symlink() {
            let mut target = Vec::new();
            e.read_to_end(&mut target).map_err(archive_err(origin))?;
            w.symlink(&rel, &target, mtime)?;
        } else {
            let mode = e.unix_mode().unwrap_or(0o644);
            w.file(&rel, mode, mtime, &mut e).map_err(|err| match err {
                // The zip reader reports bad data and unsupported
                // compression as read errors.
                FetchError::Io { source, .. } => archive_err(origin)(source),
                other => other,
            })?;
        }
    }
    w.finish()
}

/// A zip time (no zone; taken as UTC) as a file time.
fn zip_time(t: zip::DateTime) -> FileTime {
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m, d) = (t.year() as i64, t.month() as i64, t.day() as i64);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    let secs = days * 86400 + t.hour() as i64 * 3600 + t.minute() as i64 * 60 + t.second() as i64;
    FileTime::from_unix_time(secs, 0)
}
