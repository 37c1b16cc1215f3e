//! Moving a sandbox image between machines and users: `cleanroom image
//! export` writes it as a tar archive (image.json and rootfs/, owners as
//! numbers), `cleanroom image import` installs one. So an administrator
//! can build the image once, as root, for users whose rootless sandbox
//! would otherwise build their own (docs/rootless.md).
//!
//! What /dev holds is left out (no environment sees it, and a user
//! namespace cannot make device nodes), and the archive's image.json has
//! the digest of what it holds: the import recomputes it over what it
//! unpacked and refuses an archive that does not match.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{
    images_dir, install, lock, lookup_in, remove_tree, remove_write_bits, spec, tree_digest, write_synced,
    Flavour, Image, ImageInfo, RemoveOnDrop,
};
use crate::error::EnvError;

/// Writes the sandbox image `name` of the cleanroom home as a tar archive
/// to `out`.
pub fn export(name: &str, out: Stdio) -> Result<(), EnvError> {
    let home = super::cleanroom_home();
    let image = lookup_in(&home, name, Flavour::Sandbox)?.ok_or_else(|| {
        EnvError::Image(format!(
            "image {name} is not built here: `cleanroom image build --image {name}` makes it"
        ))
    })?;
    let images = images_dir(&home)?;
    let staging = images.join(format!(".{name}.export-{}", std::process::id()));
    std::fs::create_dir(&staging).map_err(|e| EnvError::io(staging.display().to_string(), e))?;
    let _cleanup = RemoveOnDrop(Some(staging.clone()));
    let info = ImageInfo { digest: tree_digest(&image.root)?, ..image.info };
    let mut text = serde_json::to_string_pretty(&info).expect("ImageInfo serializes");
    text.push('\n');
    write_synced(&staging.join("image.json"), text.as_bytes())?;
    let image_dir = image.root.parent().expect("rootfs is in the image's directory");
    run_tar(
        Command::new(tar()?)
            .args(["--create", "--file=-", "--numeric-owner", "--exclude=rootfs/dev/*", "-C"])
            .arg(&staging)
            .arg("image.json")
            .arg("-C")
            .arg(image_dir)
            .arg("rootfs")
            .stdout(out),
    )
}

/// Installs the image in the tar archive read from `from` (as [`export`]
/// writes it) into the cleanroom home, replacing one of the same name.
pub fn import(from: Stdio, progress: &mut dyn FnMut(&str)) -> Result<Image, EnvError> {
    let home = super::cleanroom_home();
    let images = images_dir(&home)?;
    std::fs::create_dir_all(&images).map_err(|e| EnvError::io(images.display().to_string(), e))?;
    sweep_dead_imports(&images)?;
    let tmp = images.join(format!("{IMPORTING}{}", std::process::id()));
    std::fs::create_dir(&tmp).map_err(|e| EnvError::io(tmp.display().to_string(), e))?;
    let mut cleanup = RemoveOnDrop(Some(tmp.clone()));
    progress("unpacking the archive");
    run_tar(
        Command::new(tar()?)
            .args(["--extract", "--file=-", "--numeric-owner", "-C"])
            .arg(&tmp)
            .args(["image.json", "rootfs"])
            .stdin(from),
    )?;
    let json = tmp.join("image.json");
    let bad = |why: String| {
        EnvError::Image(format!("the archive is not an image `cleanroom image export` wrote: {why}"))
    };
    let text = std::fs::read_to_string(&json).map_err(|e| bad(format!("image.json: {e}")))?;
    let info: ImageInfo = serde_json::from_str(&text).map_err(|e| bad(format!("image.json: {e}")))?;
    spec(&info.name)?;
    if info.flavour_recipe != Flavour::Sandbox.recipe() {
        return Err(bad(format!("image.json: `{}` is not a sandbox image", info.name)));
    }
    let rootfs = tmp.join("rootfs");
    if !rootfs.is_dir() {
        return Err(bad("it has no rootfs/".into()));
    }
    progress("checking the image digest");
    let digest = tree_digest(&rootfs)?;
    if digest != info.digest {
        return Err(EnvError::Image(format!(
            "the archive's root file system has digest {digest}, its image.json says {}: damaged or changed on the way",
            info.digest
        )));
    }
    remove_write_bits(&json)?;
    remove_write_bits(&rootfs)?;
    let name = info.name.clone();
    let _lock = lock(&images.join(format!("{name}.lock")), &format!("image {name}"), progress)?;
    install(&images, &name, &tmp)?;
    cleanup.0 = None;
    super::make_private(&images)?;
    let dest = images.join(&name);
    progress(&format!("image {name} ready ({digest})"));
    Ok(Image { name, root: dest.join("rootfs"), digest, info })
}

/// The prefix of an import's directory under `images/`, before its pid.
const IMPORTING: &str = ".import.tmp-";

/// Removes what imports that died left.
fn sweep_dead_imports(images: &Path) -> Result<(), EnvError> {
    let read = std::fs::read_dir(images).map_err(|e| EnvError::io(images.display().to_string(), e))?;
    for entry in read.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(IMPORTING)) else { continue };
        if !PathBuf::from("/proc").join(pid).exists() {
            remove_tree(&entry.path())?;
        }
    }
    Ok(())
}

fn tar() -> Result<PathBuf, EnvError> {
    crate::sandbox::host_tool("tar").ok_or_else(|| EnvError::Image("`tar` not found".into()))
}

fn run_tar(cmd: &mut Command) -> Result<(), EnvError> {
    let out = cmd.stderr(Stdio::piped()).output().map_err(|e| EnvError::io("run tar", e))?;
    if !out.status.success() {
        return Err(EnvError::Command {
            program: "tar".into(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}
