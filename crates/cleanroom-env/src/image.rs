//! Base images for the `sandbox` backend, built here from Debian's own
//! packages with debootstrap (never pulled from a container registry).
//!
//! Layout under the cleanroom home ([`cleanroom_home`]):
//!
//! ```text
//! images/<name>.lock          flock: one builder per image at a time
//! images/<name>/image.json    ImageInfo (read-only)
//! images/<name>/rootfs/       the root file system (top directory read-only)
//! images/.<name>.tmp-<pid>/   a build in progress, renamed into place when done
//! ```
//!
//! A build happens under an exclusive lock on `<name>.lock`: a second builder
//! waits, then finds the first one's image and returns it. The image is
//! made in a temporary directory beside its final place and renamed there in
//! one step, so a reader sees either no image or a complete one. Leftovers of
//! builders that died are swept by the next build of the same image.
//!
//! Images are cached read-only: the rootfs's top directory and image.json
//! lose their write bits after the build. The sandbox backend uses the rootfs
//! only as an overlayfs *lower* layer, which overlayfs never writes (all
//! changes go to the environment's upper directory), so one image serves any
//! number of concurrent environments unchanged; its digest (recorded in every
//! run) stays true. Rebuilding with `force` replaces the image and deletes
//! the old tree: do not force a rebuild while trials use the image.

mod archive;
mod bootstrap;
mod digest;

use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::EnvError;

pub use archive::{export, import};
pub use digest::tree_digest;

/// The image used when none is named.
pub const DEFAULT_IMAGE: &str = "debian-12-minimal";

/// How to make one named image.
#[derive(Debug)]
pub struct ImageSpec {
    pub name: &'static str,
    /// The Debian suite (code name) debootstrap installs; apt in the image
    /// also gets `<suite>-updates` and `<suite>-security`.
    pub suite: &'static str,
    /// debootstrap's `--variant`.
    pub variant: &'static str,
    /// Packages added to the variant's set (`--include`).
    pub include: &'static [&'static str],
    pub components: &'static [&'static str],
}

/// What an image is made for: a root file system for the sandbox's
/// overlay, or a bootable machine for the vm backend (the same packages,
/// with a kernel and systemd, and a disk made of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    Sandbox,
    Machine,
}

impl Flavour {
    /// The images that backend `name` boots or mounts.
    pub fn of_backend(name: &str) -> Result<Flavour, EnvError> {
        match name {
            "sandbox" => Ok(Flavour::Sandbox),
            "vm" => Ok(Flavour::Machine),
            other => Err(EnvError::UnknownBackend {
                name: other.to_string(),
                available: crate::BACKENDS.join(", "),
            }),
        }
    }

    /// The image's directory under `images/`.
    pub fn dir_name(self, name: &str) -> String {
        match self {
            Flavour::Sandbox => name.to_string(),
            Flavour::Machine => format!("{name}.vm"),
        }
    }

    /// Names what this flavour adds to a recipe, changed whenever that
    /// changes (the sandbox adds nothing).
    pub fn recipe(self) -> &'static str {
        match self {
            Flavour::Sandbox => "",
            Flavour::Machine => crate::vm::image::RECIPE,
        }
    }

    /// Packages added to the recipe's.
    fn packages(self) -> &'static [&'static str] {
        match self {
            Flavour::Sandbox => &[],
            Flavour::Machine => crate::vm::image::PACKAGES,
        }
    }
}

/// Every image cleanroom knows how to build. Add a row to add an image.
pub const IMAGES: &[ImageSpec] = &[ImageSpec {
    name: DEFAULT_IMAGE,
    suite: "bookworm",
    variant: "minbase",
    include: &["ca-certificates"],
    components: &["main"],
}];

/// The recipe for `name`, or an error that lists the known names.
pub fn spec(name: &str) -> Result<&'static ImageSpec, EnvError> {
    IMAGES.iter().find(|s| s.name == name).ok_or_else(|| EnvError::UnknownImage {
        name: name.to_owned(),
        known: IMAGES.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
    })
}

/// What `images/<name>/image.json` records about a built image.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ImageInfo {
    pub name: String,
    pub suite: String,
    pub variant: String,
    pub mirror: String,
    /// `sha256:<hex>` over the manifest of the rootfs (see [`tree_digest`]).
    pub digest: String,
    /// When the build finished, RFC 3339 in UTC.
    pub created: String,
    /// The version of cleanroom that built it.
    pub tool_version: String,
    /// What was built beyond the recipe's packages ([`Flavour::recipe`]):
    /// an image of another recipe is rebuilt on its next use.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub flavour_recipe: String,
}

/// A built base image.
#[derive(Debug, Clone)]
pub struct Image {
    pub name: String,
    /// The root file system (read-only: an overlay's lower layer).
    pub root: PathBuf,
    pub digest: String,
    pub info: ImageInfo,
}

/// Where cleanroom keeps images, environments and caches:
/// `$CLEANROOM_HOME`; else `/var/lib/cleanroom` for the host's root, and
/// `$XDG_DATA_HOME/cleanroom` (`~/.local/share/cleanroom`) for anyone else,
/// the rootless sandbox's user namespace included.
pub fn cleanroom_home() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(home) = var("CLEANROOM_HOME") {
        return home;
    }
    if crate::privilege::current() == crate::privilege::Privilege::HostRoot {
        return PathBuf::from("/var/lib/cleanroom");
    }
    var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|home| home.join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("/var/lib"))
        .join("cleanroom")
}

/// The image `name` if it has been built (in [`cleanroom_home`]).
pub fn lookup(name: &str, flavour: Flavour) -> Result<Option<Image>, EnvError> {
    lookup_in(&cleanroom_home(), name, flavour)
}

/// Builds the image `name` from `mirror` (else the host's configured Debian
/// mirror). Without `force`, an image that is already built is returned as
/// it is. `progress` receives short lines about each step.
pub fn build(
    name: &str,
    flavour: Flavour,
    mirror: Option<&str>,
    force: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Image, EnvError> {
    build_in(
        &cleanroom_home(),
        name,
        flavour,
        mirror,
        force,
        &Host::system(),
        &mut bootstrap::populate,
        progress,
    )
}

/// The image `name`, built first if it is not yet (a run's first use builds
/// it).
pub fn ensure(
    name: &str,
    flavour: Flavour,
    mirror: Option<&str>,
    progress: &mut dyn FnMut(&str),
) -> Result<Image, EnvError> {
    ensure_in(&cleanroom_home(), name, flavour, mirror, &Host::system(), &mut bootstrap::populate, progress)
}

/// The host files a build reads (a parameter so tests can substitute them).
struct Host {
    /// Holds `sources.list` and `sources.list.d/`.
    apt_dir: PathBuf,
    /// Extra CA certificates (`**/*.crt`) to trust inside the image.
    ca_dir: PathBuf,
}

impl Host {
    fn system() -> Self {
        Host { apt_dir: PathBuf::from("/etc/apt"), ca_dir: PathBuf::from(bootstrap::HOST_CA_DIR) }
    }
}

/// Makes a configured rootfs at its first argument (the real one is
/// [`bootstrap::populate`]; tests use fast fakes).
type Populate<'a> =
    dyn FnMut(&Path, &bootstrap::Plan, &Path, &mut dyn FnMut(&str)) -> Result<(), EnvError> + 'a;

fn lookup_in(home: &Path, name: &str, flavour: Flavour) -> Result<Option<Image>, EnvError> {
    spec(name)?;
    let dir = images_dir(home)?.join(flavour.dir_name(name));
    let json = dir.join("image.json");
    let text = match std::fs::read_to_string(&json) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EnvError::io(format!("reading {}", json.display()), e)),
    };
    let damaged = |why: String| {
        EnvError::Image(format!(
            "{}: {why}; rebuild the image with `cleanroom image build --image {name}`",
            json.display()
        ))
    };
    let info: ImageInfo = serde_json::from_str(&text).map_err(|e| damaged(e.to_string()))?;
    if info.name != name {
        return Err(damaged(format!("it describes image `{}`", info.name)));
    }
    if info.flavour_recipe != flavour.recipe() {
        return Ok(None);
    }
    let root = dir.join("rootfs");
    if !root.is_dir() {
        return Err(EnvError::NoImage(root));
    }
    Ok(Some(Image { name: name.to_owned(), root, digest: info.digest.clone(), info }))
}

fn ensure_in(
    home: &Path,
    name: &str,
    flavour: Flavour,
    mirror: Option<&str>,
    host: &Host,
    populate: &mut Populate<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Image, EnvError> {
    let image = match lookup_in(home, name, flavour)? {
        Some(image) => image,
        None => build_in(home, name, flavour, mirror, false, host, populate, progress)?,
    };
    make_private(&images_dir(home)?)?;
    Ok(image)
}

/// No other user may run an image's set-user-ID programs (in the rootless
/// sandbox they are the user's own).
fn make_private(images: &Path) -> Result<(), EnvError> {
    std::fs::set_permissions(images, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| EnvError::io(format!("making {} private", images.display()), e))
}

#[allow(clippy::too_many_arguments)]
fn build_in(
    home: &Path,
    name: &str,
    flavour: Flavour,
    mirror: Option<&str>,
    force: bool,
    host: &Host,
    populate: &mut Populate<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Image, EnvError> {
    let spec = spec(name)?;
    let images = images_dir(home)?;
    std::fs::create_dir_all(&images)
        .map_err(|e| EnvError::io(format!("creating {}", images.display()), e))?;
    let dir_name = flavour.dir_name(name);
    let _lock = lock(&images.join(format!("{dir_name}.lock")), &format!("image {name}"), progress)?;
    if !force {
        // Another builder may have finished while this one waited.
        if let Ok(Some(image)) = lookup_in(home, name, flavour) {
            progress(&format!("image {name} is already built ({})", image.digest));
            return Ok(image);
        }
    }
    sweep(&images, &dir_name)?;
    let mut plan = plan(spec, mirror, host)?;
    plan.extra = flavour.packages();

    let tmp = images.join(format!(".{dir_name}.tmp-{}", std::process::id()));
    std::fs::create_dir(&tmp).map_err(|e| EnvError::io(format!("creating {}", tmp.display()), e))?;
    let mut cleanup = RemoveOnDrop(Some(tmp.clone()));
    let rootfs = tmp.join("rootfs");
    populate(&rootfs, &plan, &host.ca_dir, progress)?;
    let left = mounts_under(&tmp)?;
    if !left.is_empty() {
        return Err(EnvError::Image(format!(
            "mounts left under {} after the build: {left:?}",
            tmp.display()
        )));
    }

    if flavour == Flavour::Machine {
        crate::vm::image::finish(&tmp, &rootfs, progress)?;
    }
    progress("computing the image digest");
    let digest = tree_digest(&rootfs)?;
    let info = ImageInfo {
        name: name.to_owned(),
        suite: spec.suite.to_owned(),
        variant: spec.variant.to_owned(),
        mirror: plan.mirror.clone(),
        digest: digest.clone(),
        created: crate::time::rfc3339_utc_now(),
        tool_version: env!("CARGO_PKG_VERSION").to_owned(),
        flavour_recipe: flavour.recipe().to_owned(),
    };
    let json = tmp.join("image.json");
    let mut text = serde_json::to_string_pretty(&info).expect("ImageInfo serializes");
    text.push('\n');
    write_synced(&json, text.as_bytes())?;
    remove_write_bits(&json)?;
    remove_write_bits(&rootfs)?;

    install(&images, &dir_name, &tmp)?;
    cleanup.0 = None;
    progress(&format!("image {name} ready ({digest})"));
    let root = images.join(&dir_name).join("rootfs");
    Ok(Image { name: name.to_owned(), root, digest, info })
}

/// Moves the finished image at `tmp` to `images/<dir_name>` in one step,
/// replacing the one there (the caller holds the image's lock).
fn install(images: &Path, dir_name: &str, tmp: &Path) -> Result<(), EnvError> {
    let dest = images.join(dir_name);
    let old = images.join(format!(".{dir_name}.old-{}", std::process::id()));
    let replacing = std::fs::symlink_metadata(&dest).is_ok();
    if replacing {
        rename(&dest, &old)?;
    }
    if let Err(e) = rename(tmp, &dest) {
        if replacing {
            let _ = std::fs::rename(&old, &dest);
        }
        return Err(e);
    }
    sync_dir(images);
    if replacing {
        remove_tree(&old)?;
    }
    Ok(())
}

/// `<home>/images`, as an absolute path.
fn images_dir(home: &Path) -> Result<PathBuf, EnvError> {
    std::path::absolute(home.join("images"))
        .map_err(|e| EnvError::io(format!("resolving {}", home.display()), e))
}

/// The mirror (given, else the host's) and the host's security archive.
fn plan(spec: &'static ImageSpec, mirror: Option<&str>, host: &Host) -> Result<bootstrap::Plan, EnvError> {
    let entries = cleanroom_apt::host_sources(&host.apt_dir);
    let mirror = match mirror {
        Some(given) => cleanroom_apt::normalize_http_uri(given).ok_or_else(|| {
            EnvError::Image(format!("--mirror {given:?} is not an http:// or https:// URL"))
        })?,
        None => cleanroom_apt::pick_mirror(&entries, spec.suite).ok_or_else(|| {
            EnvError::Image(format!(
                "no Debian mirror is configured in {0}/sources.list or {0}/sources.list.d/ \
                 (a `deb` source over http(s) whose path ends in /debian): pass --mirror URL",
                host.apt_dir.display()
            ))
        })?,
    };
    let security = cleanroom_apt::pick_security(&entries, spec.suite);
    Ok(bootstrap::Plan { spec, mirror, security, extra: &[] })
}

/// The exclusive lock at `path`, taken or held by another process (the
/// file, to wait on).
pub(crate) enum Locked {
    Mine(std::fs::File),
    Elsewhere(std::fs::File),
}

/// Takes the exclusive lock at `path` if no other process holds it.
pub(crate) fn try_lock(path: &Path) -> Result<Locked, EnvError> {
    let err = |e| EnvError::io(format!("locking {}", path.display()), e);
    let file = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(err)?;
    // SAFETY: flock on a descriptor that `file` owns for the whole call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(Locked::Mine(file));
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
        return Err(err(e));
    }
    Ok(Locked::Elsewhere(file))
}

/// Takes the exclusive lock at `path`, saying so when it has to wait for
/// another builder of `what`.
pub(crate) fn lock(
    path: &Path,
    what: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<std::fs::File, EnvError> {
    let err = |e| EnvError::io(format!("locking {}", path.display()), e);
    let file = match try_lock(path)? {
        Locked::Mine(file) => return Ok(file),
        Locked::Elsewhere(file) => file,
    };
    progress(&format!("waiting for another build of {what}"));
    loop {
        // SAFETY: as above.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(err(e));
        }
    }
}

/// Removes what builders of `name` that died left behind (the caller holds
/// the lock, so no live builder owns them).
fn sweep(images: &Path, name: &str) -> Result<(), EnvError> {
    let tmp = format!(".{name}.tmp-");
    let old = format!(".{name}.old-");
    let read =
        std::fs::read_dir(images).map_err(|e| EnvError::io(format!("reading {}", images.display()), e))?;
    for entry in read.filter_map(|e| e.ok()) {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if file_name.starts_with(&tmp) || file_name.starts_with(&old) {
            remove_tree(&entry.path())?;
        }
    }
    Ok(())
}

/// Removes the directory tree at `path`, refusing if anything is mounted
/// inside it (deleting through a bind mount of /dev would be a disaster).
fn remove_tree(path: &Path) -> Result<(), EnvError> {
    let left = mounts_under(path)?;
    if !left.is_empty() {
        return Err(EnvError::Image(format!(
            "refusing to remove {}: mounted inside: {left:?}",
            path.display()
        )));
    }
    for dir in [path.to_path_buf(), path.join("rootfs")] {
        if let Ok(meta) = std::fs::symlink_metadata(&dir) {
            if meta.is_dir() {
                let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(meta.mode() | 0o700));
            }
        }
    }
    crate::removal::remove_dir_all_if_present(path)
}

/// Mount points of this process's mount namespace at or below `path`.
fn mounts_under(path: &Path) -> Result<Vec<PathBuf>, EnvError> {
    let path = match std::fs::canonicalize(path) {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(EnvError::io(format!("resolving {}", path.display()), e)),
    };
    let text = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| EnvError::io("reading /proc/self/mountinfo", e))?;
    Ok(parse_mount_points(&text).into_iter().filter(|m| m.starts_with(&path)).collect())
}

/// The mount points (fifth field, octal escapes undone) of mountinfo text.
fn parse_mount_points(text: &str) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    text.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| {
            let bytes = field.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                let octal = bytes
                    .get(i + 1..i + 4)
                    .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
                if let Some(d) = octal {
                    out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                    i += 4;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            PathBuf::from(std::ffi::OsString::from_vec(out))
        })
        .collect()
}

struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = remove_tree(&path);
        }
    }
}

fn rename(from: &Path, to: &Path) -> Result<(), EnvError> {
    std::fs::rename(from, to)
        .map_err(|e| EnvError::io(format!("renaming {} to {}", from.display(), to.display()), e))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), EnvError> {
    let err = |e| EnvError::io(format!("writing {}", path.display()), e);
    let mut file = std::fs::File::create(path).map_err(err)?;
    file.write_all(bytes).map_err(err)?;
    file.sync_all().map_err(err)
}

fn remove_write_bits(path: &Path) -> Result<(), EnvError> {
    let meta = std::fs::metadata(path).map_err(|e| EnvError::io(format!("reading {}", path.display()), e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(meta.mode() & 0o7777 & !0o222))
        .map_err(|e| EnvError::io(format!("making {} read-only", path.display()), e))
}

/// Best effort: makes a rename in `dir` durable.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests;
