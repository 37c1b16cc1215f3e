//! The initramfs every machine boots: the guest agent as `/init`, the C
//! libraries it was linked with (so the agent of any host runs on any
//! image), and the image's virtio modules. Written as a newc cpio archive,
//! once per agent binary and image, under `<home>/vm/`; the [`KEEP`] used
//! last are kept.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::EnvError;
use crate::vm::recent;

const PREFIX: &str = "initramfs-";
/// How many initramfs archives a home keeps (~20 MB each): those of the
/// agent builds used last (a debug and a release one, an older one).
const KEEP: usize = 4;

/// The guest agent binary: `$CLEANROOM_GUEST_AGENT`, else `cleanroom-guest`
/// beside this program (or one directory up, as for test binaries in
/// `target/*/deps`).
pub fn guest_agent() -> Result<PathBuf, EnvError> {
    if let Some(path) = std::env::var_os("CLEANROOM_GUEST_AGENT").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| EnvError::io("finding this program", e))?;
    exe.ancestors().skip(1).take(2).map(|dir| dir.join("cleanroom-guest")).find(|p| p.is_file()).ok_or_else(
        || {
            EnvError::Phase(format!(
                "the vm backend needs the guest agent `cleanroom-guest` beside {} (it is built with the \
                 workspace: cargo build), or its path in CLEANROOM_GUEST_AGENT",
                exe.display()
            ))
        },
    )
}

/// The initramfs for the machine image in `image_dir`, made if needed.
pub fn ensure(home: &Path, image_dir: &Path) -> Result<PathBuf, EnvError> {
    let agent = guest_agent()?;
    let io = |what: &Path| {
        let what = what.display().to_string();
        move |e| EnvError::io(what, e)
    };
    let agent_bytes = std::fs::read(&agent).map_err(io(&agent))?;
    let modules = image_dir.join("modules");
    let order = std::fs::read_to_string(modules.join("order")).map_err(io(&modules))?;
    let mut hash = Sha256::new();
    hash.update(&agent_bytes);
    hash.update(image_dir.as_os_str().as_encoded_bytes());
    hash.update(order.as_bytes());
    let digest: String = hash.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let dir = home.join("vm");
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let path = dir.join(format!("{PREFIX}{digest}.cpio"));
    if recent::open(&path).is_some() {
        return Ok(path);
    }

    let mut archive = Cpio::default();
    for d in ["dev", "proc", "sys", "sysroot", "cleanroom", "cleanroom/mod"] {
        archive.dir(d);
    }
    archive.node("dev/console", libc::S_IFCHR | 0o600, (5, 1));
    archive.file("init", &agent_bytes, 0o755);
    for lib in libraries(&agent)? {
        let rel = lib.strip_prefix("/").unwrap_or(&lib).to_string_lossy().into_owned();
        let mut parent = String::new();
        for part in rel.split('/').collect::<Vec<_>>().split_last().map_or(&[][..], |(_, p)| p) {
            parent = if parent.is_empty() { part.to_string() } else { format!("{parent}/{part}") };
            archive.dir(&parent);
        }
        let bytes = std::fs::read(&lib).map_err(io(&lib))?;
        archive.file(&rel, &bytes, 0o755);
    }
    let mut list = String::new();
    for name in order.lines().filter(|l| !l.is_empty()) {
        let bytes = std::fs::read(modules.join(name)).map_err(io(&modules.join(name)))?;
        archive.file(&format!("cleanroom/mod/{name}"), &bytes, 0o644);
        list.push_str(&format!("/cleanroom/mod/{name}\n"));
    }
    archive.file("cleanroom/modules", list.as_bytes(), 0o644);

    // Two backends of one process may make the same one at once: each
    // writes a file of its own, the last rename wins, both are whole.
    static MADE: AtomicU64 = AtomicU64::new(0);
    let made = MADE.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".initramfs-{digest}.{}.{made}", std::process::id()));
    let mut file = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    file.write_all(&archive.finish()).map_err(io(&tmp))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o444)).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    let is_initramfs = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(PREFIX));
    recent::prune(&dir, is_initramfs, KEEP, &path);
    Ok(path)
}

/// The shared libraries and the loader `binary` needs, as `ldd` lists them.
pub(crate) fn libraries(binary: &Path) -> Result<Vec<PathBuf>, EnvError> {
    let out = Command::new(crate::sandbox::tool("ldd"))
        .arg(binary)
        .env_clear()
        .output()
        .map_err(|e| EnvError::io("run ldd", e))?;
    // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)`, and the loader
    // as `/lib64/ld-linux-x86-64.so.2 (0x...)`: each goes in at that path,
    // with the bytes of what it names.
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().find(|w| w.starts_with('/')).map(PathBuf::from))
        .collect())
}

/// A newc cpio archive in memory.
#[derive(Default)]
struct Cpio {
    bytes: Vec<u8>,
    ino: u32,
    dirs: Vec<String>,
}

impl Cpio {
    fn dir(&mut self, path: &str) {
        if !self.dirs.iter().any(|d| d == path) {
            self.dirs.push(path.to_string());
            self.entry(path, libc::S_IFDIR | 0o755, &[], (0, 0));
        }
    }

    fn file(&mut self, path: &str, data: &[u8], mode: u32) {
        self.entry(path, libc::S_IFREG | mode, data, (0, 0));
    }

    fn node(&mut self, path: &str, mode: u32, rdev: (u32, u32)) {
        self.entry(path, mode, &[], rdev);
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.ino += 1;
        let fields =
            [self.ino, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, rdev.0, rdev.1, name.len() as u32 + 1, 0];
        self.bytes.extend_from_slice(b"070701");
        for f in fields {
            self.bytes.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, &[], (0, 0));
        self.bytes
    }
}
