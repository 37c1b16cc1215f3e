//! `source = "debian-source"` (a cleanroom addition): a Debian source
//! package, as `dpkg-source -x --skip-patches` would lay it out, without
//! running anything of it or any Debian tool on the host.
//!
//! The .dsc is fetched from `<mirror>/pool/main/<prefix>/<package>/`; its
//! `Checksums-Sha256` lists the other files, each downloaded into the cache
//! and checked against its digest. The .dsc's OpenPGP signature is NOT
//! verified: a `sha256` in task.toml pins the .dsc itself (and so, through
//! its digests, every file); with it, a fully cached package needs no
//! network at all.
//!
//! Formats: `3.0 (quilt)` (the .orig.tar.* with its common top directory
//! stripped, each .orig-COMPONENT.tar.* into COMPONENT/, then the
//! .debian.tar.* on top, which holds `debian/`; the quilt patches in
//! debian/patches are NOT applied), `3.0 (native)` and `1.0` native (the one
//! .tar.*). A `1.0` package with a .diff.gz is refused: applying a diff
//! means running a patch tool on untrusted input on the host. Tarballs may
//! be gz, xz or bz2 compressed.

use std::ffi::OsString;
use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::archive::{self, Placement};
use super::error::FetchError;
use super::http::Http;
use super::materialize::{cache_hit, cache_path, cached_download_with, FetchOptions};
use super::tree::hex;

/// A .dsc is a few kilobytes.
const DSC_LIMIT: u64 = 1 << 20;

/// One file that a .dsc lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DscFile {
    pub sha256: String,
    pub size: u64,
    pub name: String,
}

/// What cleanroom reads of a .dsc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dsc {
    pub format: String,
    pub source: String,
    pub version: String,
    pub files: Vec<DscFile>,
}

/// How the files of a package become a tree.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// `3.0 (quilt)`.
    Quilt { orig: DscFile, components: Vec<(String, DscFile)>, debian: DscFile },
    /// `3.0 (native)`, or `1.0` without a diff.
    Native { tarball: DscFile },
}

impl Plan {
    fn files(&self) -> Vec<&DscFile> {
        match self {
            Plan::Quilt { orig, components, debian } => {
                let mut v = vec![orig];
                v.extend(components.iter().map(|(_, f)| f));
                v.push(debian);
                v
            }
            Plan::Native { tarball } => vec![tarball],
        }
    }
}

/// The pool directory's prefix: `libX` for lib packages, else the first
/// letter.
pub(crate) fn pool_prefix(package: &str) -> &str {
    if package.starts_with("lib") && package.len() > 3 {
        &package[..4]
    } else {
        &package[..package.len().min(1)]
    }
}

/// The version without its epoch, as file names carry it.
pub(crate) fn without_epoch(version: &str) -> &str {
    version.split_once(':').map_or(version, |(_, v)| v)
}

/// The signed text of an OpenPGP clear-signed message (the armor and the
/// signature dropped, dash-escaping undone), or the text itself when it is
/// not signed. The signature is not checked.
fn clear_signed_text(text: &str) -> Result<String, String> {
    let mut lines = text.lines();
    let first = loop {
        match lines.next() {
            Some(l) if l.trim().is_empty() => continue,
            Some(l) => break l,
            None => return Ok(String::new()),
        }
    };
    if first.trim_end() != "-----BEGIN PGP SIGNED MESSAGE-----" {
        return Ok(text.to_owned());
    }
    // Armor headers (`Hash: SHA256`) up to an empty line.
    for l in lines.by_ref() {
        if l.trim().is_empty() {
            break;
        }
    }
    let mut out = String::new();
    for l in lines {
        if l.trim_end() == "-----BEGIN PGP SIGNATURE-----" {
            return Ok(out);
        }
        out.push_str(l.strip_prefix("- ").unwrap_or(l));
        out.push('\n');
    }
    Err("the clear-signed .dsc has no signature block (it is cut short)".to_owned())
}

/// Whether a file name from a .dsc is a plain name in the pool directory.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+~-".contains(&b))
}

/// Parses a .dsc: the first paragraph's `Format`, `Source`, `Version` and
/// `Checksums-Sha256`.
pub(crate) fn parse_dsc(text: &str) -> Result<Dsc, String> {
    let text = clear_signed_text(text)?;
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if fields.is_empty() {
                continue;
            }
            break;
        }
        if line.starts_with([' ', '\t']) {
            let Some((_, value)) = fields.last_mut() else {
                return Err(format!("continuation line before any field: {:?}", line.trim()));
            };
            value.push('\n');
            value.push_str(line.trim());
        } else if let Some((key, value)) = line.split_once(':') {
            fields.push((key.trim().to_owned(), value.trim().to_owned()));
        } else if !line.starts_with('#') {
            return Err(format!("not a field: {:?}", line.trim()));
        }
    }
    let field =
        |name: &str| fields.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let required =
        |name: &str| field(name).filter(|v| !v.trim().is_empty()).ok_or(format!("no {name} field"));
    let format = required("Format")?.to_owned();
    let source = required("Source")?.to_owned();
    let version = required("Version")?.to_owned();
    let sums = required("Checksums-Sha256")?;
    let mut files: Vec<DscFile> = Vec::new();
    for line in sums.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [sha256, size, name] = parts.as_slice() else {
            return Err(format!("Checksums-Sha256: {line:?} is not `sha256 size name`"));
        };
        if !crate::rules::is_hex(sha256, 64) {
            return Err(format!("Checksums-Sha256: {sha256:?} is not a sha256 digest"));
        }
        let size: u64 = size.parse().map_err(|_| format!("Checksums-Sha256: {size:?} is not a size"))?;
        if !is_plain_file_name(name) {
            return Err(format!("Checksums-Sha256: {name:?} is not a plain file name"));
        }
        if files.iter().any(|f| f.name == *name) {
            return Err(format!("Checksums-Sha256: {name} is listed twice"));
        }
        files.push(DscFile { sha256: sha256.to_ascii_lowercase(), size, name: (*name).to_owned() });
    }
    if files.is_empty() {
        return Err("Checksums-Sha256 lists no files".to_owned());
    }
    Ok(Dsc { format, source, version, files })
}

/// What a file of a source package is, by its name.
#[derive(Debug, PartialEq, Eq)]
enum Role {
    Orig,
    Component(String),
    Debian,
    Diff,
    Tarball,
    Signature,
}

fn role(name: &str) -> Result<Role, String> {
    if name.ends_with(".asc") {
        return Ok(Role::Signature);
    }
    if name.ends_with(".diff.gz") {
        return Ok(Role::Diff);
    }
    let Some(i) = name.rfind(".tar.") else {
        return Err(format!("{name}: not a tarball, a .diff.gz or a signature"));
    };
    let (stem, ext) = (&name[..i], &name[i + 5..]);
    if !["gz", "xz", "bz2"].contains(&ext) {
        return Err(format!("{name}: unsupported compression .{ext}; supported: gz, xz, bz2"));
    }
    if stem.ends_with(".orig") {
        return Ok(Role::Orig);
    }
    if stem.ends_with(".debian") {
        return Ok(Role::Debian);
    }
    if let Some(j) = stem.rfind(".orig-") {
        let component = &stem[j + 6..];
        let valid = component.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
            && component.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && component != "debian";
        if !valid {
            return Err(format!("{name}: {component:?} is not a valid upstream component name"));
        }
        return Ok(Role::Component(component.to_owned()));
    }
    Ok(Role::Tarball)
}

/// Decides how the package's files become a tree.
pub(crate) fn plan(dsc: &Dsc) -> Result<Plan, String> {
    let format = dsc.format.as_str();
    if !["3.0 (quilt)", "3.0 (native)", "1.0"].contains(&format) {
        return Err(format!(
            "source format {format:?} is not supported; supported: \"3.0 (quilt)\", \"3.0 (native)\", \"1.0\" without a diff"
        ));
    }
    let mut orig = Vec::new();
    let mut components = Vec::new();
    let mut debian = Vec::new();
    let mut diff = Vec::new();
    let mut tarballs = Vec::new();
    for f in &dsc.files {
        match role(&f.name)? {
            Role::Orig => orig.push(f.clone()),
            Role::Component(c) => components.push((c, f.clone())),
            Role::Debian => debian.push(f.clone()),
            Role::Diff => diff.push(f.clone()),
            Role::Tarball => tarballs.push(f.clone()),
            Role::Signature => {}
        }
    }
    let names = |v: &[DscFile]| v.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ");
    match format {
        "3.0 (quilt)" => {
            if orig.len() != 1 || debian.len() != 1 || !diff.is_empty() || !tarballs.is_empty() {
                return Err(format!(
                    "format 3.0 (quilt) needs one .orig.tar.* and one .debian.tar.*; the .dsc lists {}",
                    names(&dsc.files)
                ));
            }
            Ok(Plan::Quilt { orig: orig.remove(0), components, debian: debian.remove(0) })
        }
        "3.0 (native)" | "1.0" => {
            if !diff.is_empty() {
                return Err(format!(
                    "format 1.0 with a diff ({}) is not supported: cleanroom does not apply patches on the host; use a 3.0 package version, or an `archive` source",
                    names(&diff)
                ));
            }
            let mut all: Vec<DscFile> = tarballs.into_iter().chain(orig).collect();
            if all.len() != 1 || !debian.is_empty() || !components.is_empty() {
                return Err(format!(
                    "format {format} needs exactly one tarball; the .dsc lists {}",
                    names(&dsc.files)
                ));
            }
            Ok(Plan::Native { tarball: all.remove(0) })
        }
        _ => unreachable!("checked above"),
    }
}

/// What was fetched.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub dsc_url: String,
    pub dsc_sha256: String,
}

/// Where to fetch from, resolved once.
struct Source<'a> {
    package: &'a str,
    version: &'a str,
    pool_url: String,
}

impl Source<'_> {
    fn dsc_url(&self) -> String {
        format!("{}/{}_{}.dsc", self.pool_url, self.package, without_epoch(self.version))
    }

    fn err(&self, message: impl Into<String>) -> FetchError {
        FetchError::Debian {
            package: self.package.to_owned(),
            version: self.version.to_owned(),
            message: message.into(),
        }
    }
}

/// Fetches the package into `out` (a new, empty directory).
pub(crate) fn fetch(
    cache_dir: &Path,
    opts: &FetchOptions,
    package: &str,
    version: &str,
    mirror: Option<&str>,
    pinned: Option<&str>,
    out: &Path,
) -> Result<Fetched, FetchError> {
    let mirror = match mirror {
        Some(m) => m.trim_end_matches('/').to_owned(),
        None => cleanroom_apt::pick_mirror(&cleanroom_apt::host_sources(&opts.apt_dir), "").ok_or_else(|| FetchError::Debian {
            package: package.to_owned(),
            version: version.to_owned(),
            message: format!(
                "no Debian mirror: set `mirror` in [artifact], or configure one (an http(s) URI ending in /debian) in {}/sources.list or sources.list.d",
                opts.apt_dir.display()
            ),
        })?,
    };
    let src = Source {
        package,
        version,
        pool_url: format!("{mirror}/pool/main/{}/{package}", pool_prefix(package)),
    };
    let dsc_url = src.dsc_url();
    // The client is made only when something is not in the cache.
    let mut client: Option<Http> = None;

    // The .dsc: from the cache when pinned and there, else the mirror.
    let cached =
        pinned.map(|p| cache_path(cache_dir, p)).filter(|p| cache_hit(p, pinned.unwrap_or_default()));
    let (dsc_bytes, dsc_sha256) = match cached {
        Some(path) => {
            let bytes = fs::read(&path).map_err(FetchError::io(&path, "cannot read"))?;
            (bytes, pinned.unwrap_or_default().to_ascii_lowercase())
        }
        None => {
            let bytes = http(&mut client, opts)?.get_bytes(&dsc_url, DSC_LIMIT)?.ok_or_else(|| {
                src.err(format!(
                    "{dsc_url} not found; the mirror does not carry this version in the main component (a snapshot mirror serves only the versions of its date)"
                ))
            })?;
            let actual = hex(&Sha256::digest(&bytes));
            if let Some(expected) = pinned {
                if !actual.eq_ignore_ascii_case(expected) {
                    return Err(FetchError::Digest {
                        location: dsc_url,
                        expected: expected.to_owned(),
                        actual,
                    });
                }
            }
            store(cache_dir, &actual, &bytes)?;
            (bytes, actual)
        }
    };

    let text = String::from_utf8(dsc_bytes).map_err(|_| src.err(format!("{dsc_url}: not utf-8 text")))?;
    let dsc = parse_dsc(&text).map_err(|e| src.err(format!("{dsc_url}: {e}")))?;
    if dsc.source != package || dsc.version != version {
        return Err(
            src.err(format!("{dsc_url} describes {} {}, not the package asked for", dsc.source, dsc.version))
        );
    }
    let plan = plan(&dsc).map_err(|e| src.err(e))?;

    // Every file, checked against the .dsc, before anything is unpacked.
    let mut paths = Vec::new();
    for f in plan.files() {
        let path = cache_path(cache_dir, &f.sha256);
        let path = if cache_hit(&path, &f.sha256) {
            path
        } else {
            cached_download_with(
                http(&mut client, opts)?,
                cache_dir,
                &format!("{}/{}", src.pool_url, f.name),
                &f.sha256,
            )?
        };
        let size = fs::metadata(&path).map_err(FetchError::io(&path, "cannot inspect"))?.len();
        if size != f.size {
            return Err(src.err(format!("{}: {size} bytes, but the .dsc says {}", f.name, f.size)));
        }
        paths.push(path);
    }

    let origin = |f: &DscFile| format!("{}/{}", src.pool_url, f.name);
    match &plan {
        Plan::Native { tarball } => archive::unpack(&paths[0], &origin(tarball), out)?,
        Plan::Quilt { orig, components, debian } => {
            archive::unpack(&paths[0], &origin(orig), out)?;
            for (i, (component, f)) in components.iter().enumerate() {
                remove_entry(&out.join(component))?;
                let placement = Placement { prefix: vec![OsString::from(component)], ..Placement::default() };
                archive::unpack_with(&paths[1 + i], &origin(f), out, &placement)?;
            }
            // As dpkg-source does: the package's debian/ replaces upstream's.
            remove_entry(&out.join("debian"))?;
            let placement = Placement { keep_top: true, require_top: Some("debian"), ..Placement::default() };
            archive::unpack_with(&paths[paths.len() - 1], &origin(debian), out, &placement)?;
        }
    }
    Ok(Fetched { dsc_url, dsc_sha256 })
}

fn http<'a>(client: &'a mut Option<Http>, opts: &FetchOptions) -> Result<&'a Http, FetchError> {
    if client.is_none() {
        *client = Some(Http::new(opts.http_timeout)?);
    }
    Ok(client.as_ref().expect("just set"))
}

/// Stores a small download in the cache under its digest.
fn store(cache_dir: &Path, sha256: &str, bytes: &[u8]) -> Result<(), FetchError> {
    let path = cache_path(cache_dir, sha256);
    if cache_hit(&path, sha256) {
        return Ok(());
    }
    let parent = path.parent().unwrap_or(cache_dir);
    fs::create_dir_all(parent).map_err(FetchError::io(parent, "cannot create directory"))?;
    let tmp = super::http::temp_name(&path);
    fs::write(&tmp, bytes).map_err(FetchError::io(&tmp, "cannot write"))?;
    fs::rename(&tmp, &path).map_err(FetchError::io(&path, "cannot move into place"))
}

/// Removes a file, link or directory tree of the artifact (never following
/// a link), if there is one.
fn remove_entry(path: &Path) -> Result<(), FetchError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(FetchError::io(path, "cannot remove")),
        Ok(_) => fs::remove_file(path).map_err(FetchError::io(path, "cannot remove")),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BZIP2_DSC: &str = "-----BEGIN PGP SIGNED MESSAGE-----
Hash: SHA256

Format: 3.0 (quilt)
Source: bzip2
Binary: libbz2-1.0, libbz2-dev, bzip2, bzip2-doc
Architecture: any all
Version: 1.0.8-5
Package-List:
 bzip2 deb utils standard arch=any
 libbz2-dev deb libdevel optional arch=any
Checksums-Sha1:
 bf7badf7e248e0ecf465d33c2f5aeec774209227 810029 bzip2_1.0.8.orig.tar.gz
 a5cb36a3535f07f70a9143542ba918e8c032763e 26787 bzip2_1.0.8-5.debian.tar.bz2
Checksums-Sha256:
 ab5a03176ee106d3f0fa90e381da478ddae405918153cca248e682cd0c4a2269 810029 bzip2_1.0.8.orig.tar.gz
 d68c6eba11d70e14319e24ef1451880a03023b2b75364646adb117086db36039 26787 bzip2_1.0.8-5.debian.tar.bz2
Files:
 67e051268d0c475ea773822f7500d0e5 810029 bzip2_1.0.8.orig.tar.gz
 343ef1f61095c9c352d555642bd91196 26787 bzip2_1.0.8-5.debian.tar.bz2

-----BEGIN PGP SIGNATURE-----

iQJEBAEBCAAuFiEEFCQhsZrUqVmW+VBy6iUAtBLFms8FAmGp1u0QHGZva2FAZGVi
=j/7j
-----END PGP SIGNATURE-----
";

    fn file(name: &str) -> DscFile {
        DscFile { sha256: "a".repeat(64), size: 1, name: name.to_owned() }
    }

    fn dsc(format: &str, names: &[&str]) -> Dsc {
        Dsc {
            format: format.to_owned(),
            source: "p".to_owned(),
            version: "1.0-1".to_owned(),
            files: names.iter().map(|n| file(n)).collect(),
        }
    }

    #[test]
    fn prefixes_and_epochs() {
        assert_eq!(pool_prefix("bzip2"), "b");
        assert_eq!(pool_prefix("libpng1.6"), "libp");
        assert_eq!(pool_prefix("lib"), "l");
        assert_eq!(pool_prefix("sl"), "s");
        assert_eq!(without_epoch("1:2.3-4"), "2.3-4");
        assert_eq!(without_epoch("1.0.8-5"), "1.0.8-5");
    }

    #[test]
    fn parses_a_signed_dsc() {
        let d = parse_dsc(BZIP2_DSC).unwrap();
        assert_eq!(d.format, "3.0 (quilt)");
        assert_eq!(d.source, "bzip2");
        assert_eq!(d.version, "1.0.8-5");
        assert_eq!(d.files.len(), 2);
        assert_eq!(d.files[0].name, "bzip2_1.0.8.orig.tar.gz");
        assert_eq!(d.files[0].size, 810029);
        assert_eq!(d.files[1].sha256, "d68c6eba11d70e14319e24ef1451880a03023b2b75364646adb117086db36039");
        match plan(&d).unwrap() {
            Plan::Quilt { orig, components, debian } => {
                assert_eq!(orig.name, "bzip2_1.0.8.orig.tar.gz");
                assert!(components.is_empty());
                assert_eq!(debian.name, "bzip2_1.0.8-5.debian.tar.bz2");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_an_unsigned_dsc_and_undoes_dash_escapes() {
        let text = "Format: 3.0 (native)\nSource: p\nVersion: 2\nChecksums-Sha256:\n ".to_owned()
            + &"b".repeat(64)
            + " 10 p_2.tar.xz\n";
        let d = parse_dsc(&text).unwrap();
        assert_eq!(
            plan(&d).unwrap(),
            Plan::Native { tarball: DscFile { sha256: "b".repeat(64), size: 10, name: "p_2.tar.xz".into() } }
        );
        let signed = format!("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n{text}- -dashed: x\n-----BEGIN PGP SIGNATURE-----\n");
        assert_eq!(parse_dsc(&signed).unwrap().files.len(), 1);
        let cut = format!("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n{text}");
        assert!(parse_dsc(&cut).unwrap_err().contains("no signature block"));
    }

    #[test]
    fn malformed_dscs() {
        let sha = "c".repeat(64);
        let cases = [
            ("Source: p\nVersion: 1\nChecksums-Sha256:\n x 1 p.tar.gz\n".to_owned(), "no Format"),
            ("Format: 1.0\nSource: p\nVersion: 1\n".to_owned(), "no Checksums-Sha256"),
            ("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n xyz 1 p.tar.gz\n".to_owned(), "not a sha256"),
            (format!("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n {sha} 1\n"), "sha256 size name"),
            (format!("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n {sha} -1 p.tar.gz\n"), "not a size"),
            (format!("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n {sha} 1 ../p.tar.gz\n"), "plain file name"),
            (format!("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n {sha} 1 a/p.tar.gz\n"), "plain file name"),
            (
                format!("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n {sha} 1 p.tar.gz\n {sha} 1 p.tar.gz\n"),
                "listed twice",
            ),
            ("Format: 1.0\nSource: p\nVersion: 1\nChecksums-Sha256:\n".to_owned(), "no Checksums-Sha256"),
            (" Format: 1.0\n".to_owned(), "continuation line"),
            ("garbage\n".to_owned(), "not a field"),
        ];
        for (text, fragment) in cases {
            let err = parse_dsc(&text).unwrap_err();
            assert!(err.contains(fragment), "{text:?}: {err}");
        }
    }

    #[test]
    fn plans_by_format() {
        let p = plan(&dsc(
            "3.0 (quilt)",
            &[
                "p_1.0.orig.tar.xz",
                "p_1.0.orig.tar.xz.asc",
                "p_1.0.orig-docs.tar.gz",
                "p_1.0-1.debian.tar.xz",
            ],
        ))
        .unwrap();
        match p {
            Plan::Quilt { orig, components, debian } => {
                assert_eq!(orig.name, "p_1.0.orig.tar.xz");
                assert_eq!(components, vec![("docs".to_owned(), file("p_1.0.orig-docs.tar.gz"))]);
                assert_eq!(debian.name, "p_1.0-1.debian.tar.xz");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(plan(&dsc("1.0", &["p_1.0.tar.gz"])).unwrap(), Plan::Native { .. }));
        let err = plan(&dsc("1.0", &["p_1.0.orig.tar.gz", "p_1.0-1.diff.gz"])).unwrap_err();
        assert!(err.contains("1.0 with a diff") && err.contains("does not apply patches"), "{err}");
        let err = plan(&dsc("3.0 (git)", &["p_1.0.git"])).unwrap_err();
        assert!(err.contains("\"3.0 (git)\" is not supported"), "{err}");
        let err = plan(&dsc("3.0 (quilt)", &["p_1.0.orig.tar.gz"])).unwrap_err();
        assert!(err.contains("one .debian.tar.*"), "{err}");
        let err = plan(&dsc("3.0 (quilt)", &["p_1.0.orig.tar.zst", "p_1.0-1.debian.tar.xz"])).unwrap_err();
        assert!(err.contains("unsupported compression .zst"), "{err}");
        let err = plan(&dsc("3.0 (native)", &["p_1.0.tar.gz", "p_1.0.tar.xz"])).unwrap_err();
        assert!(err.contains("exactly one tarball"), "{err}");
        let err = plan(&dsc(
            "3.0 (quilt)",
            &["p_1.0.orig.tar.gz", "p_1.0.orig-debian.tar.gz", "p_1.0-1.debian.tar.xz"],
        ))
        .unwrap_err();
        assert!(err.contains("component"), "{err}");
    }
}
