//! A machine image: the sandbox's recipe with a kernel and systemd, made
//! into a disk. Next to the usual `rootfs/` and `image.json` its directory
//! holds
//!
//! ```text
//! vmlinuz           Debian's kernel, booted directly (no boot loader)
//! modules/          the virtio modules the initramfs loads, and their order
//! disk.raw          an ext4 file system of rootfs/ (read-only: every
//!                   trial's disk is a qcow2 overlay backed by it)
//! listing.json      every entry of the disk, for the env-diff
//! ```
//!
//! The initramfs is not part of the image: it holds the guest agent of the
//! cleanroom that boots the machine (initramfs.rs).

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::EnvError;
use crate::rootfs::EntryKind;
use crate::vm::protocol::{Listed, Listing};

/// Changed with every change to what a machine image holds (PACKAGES,
/// configure): an image of another recipe is rebuilt on its next use.
pub const RECIPE: &str = "machine-5";

/// What a machine has beyond the sandbox's packages.
pub const PACKAGES: &[&str] = &["linux-image-cloud-amd64", "systemd-sysv", "kmod", "e2fsprogs", "iproute2"];

/// The modules the initramfs loads (with what they depend on): the disk,
/// the agent's port and the network, on PCI and on MMIO machines.
const MODULES: &[&str] = &["virtio_pci", "virtio_mmio", "virtio_blk", "virtio_console", "virtio_net"];

/// Room for mkfs to work in; the file system is shrunk to its minimum
/// afterwards, so that a trial's free space is its `disk_mb`.
const SLACK_MB: u64 = 256;

/// The user-mode network every machine sees (QEMU's): the address is fixed,
/// so no DHCP wait at boot.
const NETWORK_CONFIG: &str = "[Match]\nType=ether\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\nDNS=10.0.2.3\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n";

pub(crate) fn finish(dir: &Path, rootfs: &Path, progress: &mut dyn FnMut(&str)) -> Result<(), EnvError> {
    configure(rootfs)?;
    let version = kernel_version(rootfs)?;
    progress(&format!("kernel {version}"));
    copy(&rootfs.join(format!("boot/vmlinuz-{version}")), &dir.join("vmlinuz"))?;
    copy_modules(rootfs, &version, &dir.join("modules"))?;
    // One walk of the configured tree sizes the disk and lists it.
    let tree = walk(rootfs)?;
    let used_mb = tree_bytes(&tree) >> 20;
    let size_mb = used_mb + used_mb / 4 + SLACK_MB;
    progress(&format!("making the disk ({size_mb} MB for {used_mb} MB of files)"));
    let disk = dir.join("disk.raw");
    let mut mkfs = Command::new(crate::sandbox::tool("mkfs.ext4"));
    mkfs.args(["-q", "-F", "-m", "0", "-L", "cleanroom", "-E", "root_owner=0:0", "-d"])
        .arg(rootfs)
        .arg(&disk)
        .arg(format!("{size_mb}M"));
    run(mkfs, &[0])?;
    // resize2fs wants a checked file system (e2fsck exits 1 when it fixed
    // something, as after mkfs it may).
    let mut check = Command::new(crate::sandbox::tool("e2fsck"));
    check.arg("-fy").arg(&disk);
    run(check, &[0, 1])?;
    let mut shrink = Command::new(crate::sandbox::tool("resize2fs"));
    shrink.arg("-M").arg(&disk);
    run(shrink, &[0])?;
    let bytes = fs_bytes(&disk)?;
    std::fs::File::options()
        .write(true)
        .open(&disk)
        .and_then(|f| f.set_len(bytes))
        .map_err(|e| EnvError::io(disk.display().to_string(), e))?;
    progress(&format!("the disk holds {} MB", bytes >> 20));
    let built_at =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    std::fs::set_permissions(&disk, std::fs::Permissions::from_mode(0o444))
        .map_err(|e| EnvError::io(disk.display().to_string(), e))?;
    let listing = listing(rootfs, &tree, built_at);
    let json = serde_json::to_vec(&listing).expect("a listing serializes");
    std::fs::write(dir.join("listing.json"), json).map_err(|e| EnvError::io("writing listing.json", e))?;
    Ok(())
}

/// Runs a host tool on our own image; `ok` are the exit codes that mean it
/// worked.
pub(crate) fn run(mut cmd: Command, ok: &[i32]) -> Result<(), EnvError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.env_clear().output().map_err(|e| EnvError::io(format!("run {program}"), e))?;
    if !out.status.code().is_some_and(|c| ok.contains(&c)) {
        return Err(EnvError::Command {
            program,
            detail: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    Ok(())
}

/// The size of the ext4 file system in `disk`, from its superblock.
fn fs_bytes(disk: &Path) -> Result<u64, EnvError> {
    let out = Command::new(crate::sandbox::tool("dumpe2fs"))
        .arg("-h")
        .arg(disk)
        .env_clear()
        .output()
        .map_err(|e| EnvError::io("run dumpe2fs", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse::<u64>().ok())
    };
    match (field("Block count:"), field("Block size:")) {
        (Some(count), Some(size)) => Ok(count * size),
        _ => Err(EnvError::Image(format!("dumpe2fs -h {}: no block count and size", disk.display()))),
    }
}

/// Units masked in a machine image: each writes to the disk on every boot,
/// or works for nothing on every boot.
const MASKED_UNITS: &[&str] = &[
    "systemd-random-seed.service",
    "systemd-update-utmp.service",
    "systemd-update-utmp-runlevel.service",
    // Logins on virtual consoles that nobody sees (login records too).
    "getty@.service",
    "autovt@.service",
    "getty-static.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "e2scrub_all.timer",
    "fstrim.timer",
    // Looks for scrub snapshots of LVM volumes that a trial's disk never
    // has: seconds of a machine's only CPU thread under TCG, every boot.
    "e2scrub_reap.service",
];

/// What a machine needs that a sandbox's root does not: its network set
/// up by systemd-networkd at boot, with the address QEMU gives, /tmp kept
/// across boots, and boots that leave no trace of their own.
fn configure(rootfs: &Path) -> Result<(), EnvError> {
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e| EnvError::io(what, e)
    };
    let network = rootfs.join("etc/systemd/network");
    std::fs::create_dir_all(&network).map_err(io(&network))?;
    let file = network.join("80-cleanroom.network");
    std::fs::write(&file, NETWORK_CONFIG).map_err(io(&file))?;
    // Debian empties /tmp at every boot; a phase's power-off is not the
    // end of the trial's machine, so /tmp lasts as the disk does.
    let tmpfiles = rootfs.join("etc/tmpfiles.d");
    std::fs::create_dir_all(&tmpfiles).map_err(io(&tmpfiles))?;
    let file = tmpfiles.join("tmp.conf");
    std::fs::write(&file, "d /tmp 1777 root root -\n").map_err(io(&file))?;
    // What systemd-tmpfiles makes in /tmp at every boot is there already,
    // so that the env-diff shows only what the machine's users made.
    for dir in [".X11-unix", ".ICE-unix", ".XIM-unix", ".font-unix"] {
        let dir = rootfs.join("tmp").join(dir);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).map_err(io(&dir))?;
    }
    // A boot writes nothing of the machine's own to the disk, so that the
    // env-diff shows only what its users did: the journal kept in memory,
    // no random seed saved (the harness seeds every boot), no logins on
    // consoles nobody sees and no login records, no periodic jobs whose stamps last (apt's daily runs, which
    // would also hold apt's lock while an agent installs).
    let journald = rootfs.join("etc/systemd/journald.conf.d");
    std::fs::create_dir_all(&journald).map_err(io(&journald))?;
    let file = journald.join("cleanroom.conf");
    std::fs::write(&file, "[Journal]\nStorage=volatile\n").map_err(io(&file))?;
    for unit in MASKED_UNITS {
        let link = rootfs.join("etc/systemd/system").join(unit);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink("/dev/null", &link).map_err(io(&link))?;
        }
    }
    // A phase without network has no network card, and nothing for
    // networkd to set up: its boot does not wait for it (~3 s under TCG).
    let dropin = rootfs.join("etc/systemd/system/systemd-networkd.service.d");
    std::fs::create_dir_all(&dropin).map_err(io(&dropin))?;
    let file = dropin.join("cleanroom.conf");
    std::fs::write(&file, "[Unit]\nConditionPathExistsGlob=/sys/class/net/e*\n").map_err(io(&file))?;
    let wants = rootfs.join("etc/systemd/system/multi-user.target.wants");
    std::fs::create_dir_all(&wants).map_err(io(&wants))?;
    let link = wants.join("systemd-networkd.service");
    if std::fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("/lib/systemd/system/systemd-networkd.service", &link)
            .map_err(io(&link))?;
    }
    Ok(())
}

fn kernel_version(rootfs: &Path) -> Result<String, EnvError> {
    let boot = rootfs.join("boot");
    let mut versions: Vec<String> = std::fs::read_dir(&boot)
        .map_err(|e| EnvError::io(boot.display().to_string(), e))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("vmlinuz-").map(str::to_string))
        .collect();
    versions.sort();
    versions.pop().ok_or_else(|| EnvError::Image(format!("no kernel in {}", boot.display())))
}

/// The modules of [`MODULES`] and their dependencies, dependencies first,
/// copied to `to` with `to/order` naming them in load order.
fn copy_modules(rootfs: &Path, version: &str, to: &Path) -> Result<(), EnvError> {
    let base = rootfs.join("lib/modules").join(version);
    let dep_file = base.join("modules.dep");
    let text =
        std::fs::read_to_string(&dep_file).map_err(|e| EnvError::io(dep_file.display().to_string(), e))?;
    let deps: BTreeMap<String, Vec<String>> = text
        .lines()
        .filter_map(|line| {
            let (module, rest) = line.split_once(':')?;
            Some((module.to_string(), rest.split_whitespace().map(str::to_string).collect()))
        })
        .collect();
    let by_name = |name: &str| {
        deps.keys().find(|path| {
            Path::new(path).file_stem().and_then(|s| s.to_str()).is_some_and(|s| s.replace('-', "_") == name)
        })
    };
    let mut order: Vec<String> = Vec::new();
    fn visit(path: &str, deps: &BTreeMap<String, Vec<String>>, order: &mut Vec<String>) {
        if order.iter().any(|p| p == path) {
            return;
        }
        for dep in deps.get(path).into_iter().flatten() {
            visit(dep, deps, order);
        }
        order.push(path.to_string());
    }
    for name in MODULES {
        match by_name(name) {
            Some(path) => visit(path, &deps, &mut order),
            // Built into this kernel: nothing to load.
            None => continue,
        }
    }
    std::fs::create_dir_all(to).map_err(|e| EnvError::io(to.display().to_string(), e))?;
    let mut list = String::new();
    for path in &order {
        let name = Path::new(path).file_name().expect("a module file").to_string_lossy().into_owned();
        copy(&base.join(path), &to.join(&name))?;
        list.push_str(&name);
        list.push('\n');
    }
    std::fs::write(to.join("order"), list).map_err(|e| EnvError::io("writing modules/order", e))
}

fn copy(from: &Path, to: &Path) -> Result<(), EnvError> {
    std::fs::copy(from, to).map(drop).map_err(|e| EnvError::io(format!("copying {}", from.display()), e))
}

/// Bytes the files of a tree take (our own image: links not followed).
pub(crate) fn tree_bytes(tree: &[(PathBuf, std::fs::Metadata)]) -> u64 {
    tree.iter().map(|(_, meta)| meta.blocks() * 512 + 4096).sum()
}

/// Every entry of the image as the guest lists its disk.
fn listing(rootfs: &Path, tree: &[(PathBuf, std::fs::Metadata)], built_at: i64) -> Listing {
    let mut entries = vec![Listed {
        path: "/lost+found".into(),
        kind: EntryKind::Dir,
        mode: 0o700,
        size: 0,
        link_target: None,
    }];
    for (path, meta) in tree {
        let rel = path.strip_prefix(rootfs).expect("under the root");
        let kind = EntryKind::of(meta.file_type());
        let link_target = (kind == EntryKind::Symlink)
            .then(|| std::fs::read_link(path).ok().map(|t| t.to_string_lossy().into_owned()))
            .flatten();
        entries.push(Listed {
            path: format!("/{}", rel.display()),
            kind,
            mode: meta.mode() & 0o7777,
            size: if matches!(kind, EntryKind::File | EntryKind::Symlink) { meta.len() } else { 0 },
            link_target,
        });
    }
    Listing { entries, built_at }
}

/// Every entry below `root`, without following links.
pub(crate) fn walk(root: &Path) -> Result<Vec<(PathBuf, std::fs::Metadata)>, EnvError> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let read = std::fs::read_dir(&dir).map_err(|e| EnvError::io(dir.display().to_string(), e))?;
        for entry in read.flatten() {
            let path = entry.path();
            let meta =
                std::fs::symlink_metadata(&path).map_err(|e| EnvError::io(path.display().to_string(), e))?;
            if meta.is_dir() {
                stack.push(path.clone());
            }
            out.push((path, meta));
        }
    }
    Ok(out)
}
