//! Making an image's root file system: debootstrap (mmdebstrap in the
//! rootless sandbox's user namespace), then configuration inside a chroot.
//!
//! Design note (what can go wrong, and why it cannot reach the host):
//!
//! - debootstrap mounts /proc and /sys inside its target while it installs,
//!   and the chroot step mounts /proc, a recursive bind of /dev and a bind of
//!   the host's /etc/resolv.conf so that apt can run. Every child that mounts
//!   is started in a fresh mount namespace whose mounts were all made private
//!   (`unshare(CLONE_NEWNS)` + `MS_REC|MS_PRIVATE` on `/`, in `pre_exec`), so
//!   no mount it makes ever propagates to the host's namespace, and the
//!   kernel drops them all when the namespace's last process exits, even if
//!   that process is killed. The chroot script also unmounts explicitly, in
//!   an EXIT trap, so that nothing under the target is mounted when apt's
//!   work is done on any path.
//! - Children get `PR_SET_PDEATHSIG(SIGKILL)`: if the builder dies, the
//!   build stops with it; the half-built temporary directory is swept by the
//!   next build of that image.
//! - Children see a clean environment: PATH, locale, `DEBIAN_FRONTEND` and
//!   the host's proxy variables only.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::EnvError;

use super::ImageSpec;

/// What to build and from where.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub spec: &'static ImageSpec,
    pub mirror: String,
    pub security: Option<String>,
    /// Packages installed besides the recipe's (a machine's kernel).
    pub extra: &'static [&'static str],
}

/// Where the host's extra CA certificates are.
pub(crate) const HOST_CA_DIR: &str = "/usr/local/share/ca-certificates";

const DEBOOTSTRAP: &str = "/usr/sbin/debootstrap";
const MMDEBSTRAP: &str = "/usr/bin/mmdebstrap";
const UNSHARE: &str = "/usr/bin/unshare";
const KEYRING: &str = "usr/share/keyrings/debian-archive-keyring.gpg";
/// The DNS server of the user-mode NAT (slirp4netns and pasta) that sandboxes
/// reach the network through.
const SANDBOX_NAMESERVER: &str = "10.0.2.3";
const HOSTNAME: &str = "cleanroom";

/// Fills `rootfs` (which must not exist yet) with a configured image.
pub(crate) fn populate(
    rootfs: &Path,
    plan: &Plan,
    ca_dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(), EnvError> {
    let spec = plan.spec;
    let rootless = crate::privilege::in_user_namespace();
    let installer = if rootless { "mmdebstrap" } else { "debootstrap" };
    progress(&format!("{installer} {} from {}", spec.suite, plan.mirror));
    let mut cmd = if rootless {
        // debootstrap makes device nodes, which a user namespace may not;
        // mmdebstrap leaves /dev empty there (bubblewrap makes each
        // phase's /dev), and mounts /proc in a PID namespace of its own.
        let mut cmd = in_own_pid_namespace();
        cmd.args([MMDEBSTRAP, "--mode=root", "--quiet"]);
        cmd
    } else {
        Command::new(DEBOOTSTRAP)
    };
    cmd.arg(format!("--variant={}", spec.variant));
    let include: Vec<&str> = spec.include.iter().chain(plan.extra).copied().collect();
    if !include.is_empty() {
        cmd.arg(format!("--include={}", include.join(",")));
    }
    cmd.arg(format!("--components={}", spec.components.join(",")));
    cmd.arg(spec.suite).arg(rootfs).arg(&plan.mirror);
    run(cmd, installer, Some(&rootfs.join("debootstrap/debootstrap.log")))?;

    let certs = copy_host_cas(ca_dir, &rootfs.join("usr/local/share/ca-certificates"))?;
    progress(&format!("added {certs} host CA certificate(s)"));

    write_apt_sources(rootfs, plan)?;
    let mut suites = format!("{0} {0}-updates", spec.suite);
    if plan.security.is_some() {
        suites.push_str(&format!(" {}-security", spec.suite));
    }
    progress(&format!("apt-get update ({suites}) in chroot"));
    // The bind mount's target must be a plain file of the image, never a
    // link that would lead the mount elsewhere.
    replace_with_file(&rootfs.join("etc/resolv.conf"), b"")?;
    let mut cmd = if rootless { in_own_pid_namespace() } else { Command::new("/bin/sh") };
    if rootless {
        cmd.arg("/bin/sh");
    }
    cmd.arg("-c").arg(CHROOT_SCRIPT).arg("cleanroom-image-chroot").arg(rootfs);
    cmd.arg(if rootless { "nodes" } else { "rbind" });
    run(cmd, "configuring the image in a chroot", None)?;

    replace_with_file(
        &rootfs.join("etc/resolv.conf"),
        format!("nameserver {SANDBOX_NAMESERVER}\n").as_bytes(),
    )?;
    replace_with_file(&rootfs.join("etc/hostname"), format!("{HOSTNAME}\n").as_bytes())?;
    replace_with_file(
        &rootfs.join("etc/hosts"),
        format!("127.0.0.1\tlocalhost\n127.0.1.1\t{HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n")
            .as_bytes(),
    )?;
    let workspace = rootfs.join("workspace");
    std::fs::create_dir_all(&workspace)
        .map_err(|e| EnvError::io(format!("creating {}", workspace.display()), e))?;
    Ok(())
}

/// A command that runs its arguments as PID 1 of a new PID namespace with
/// its own /proc: root of a user namespace may mount a /proc only there.
fn in_own_pid_namespace() -> Command {
    let mut cmd = Command::new(UNSHARE);
    cmd.args(["--pid", "--fork", "--kill-child", "--mount-proc", "--"]);
    cmd
}

/// Runs as `/bin/sh -c SCRIPT NAME ROOTFS DEV` in a private mount namespace,
/// DEV saying how /dev is shown (`rbind`, or `nodes` in a user namespace).
/// The root file system is only ever a positional parameter, never spliced
/// into the script text.
const CHROOT_SCRIPT: &str = r#"set -eu
root="$1"
on_proc="" on_dev="" on_resolv=""
cleanup() {
    rc=$?
    if [ -n "$on_resolv" ]; then umount "$root/etc/resolv.conf" || rc=1; fi
    if [ -n "$on_dev" ]; then umount -R "$root/dev" || rc=1; fi
    if [ -n "$on_proc" ]; then umount "$root/proc" || rc=1; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
mount -t proc proc "$root/proc"
on_proc=1
if [ "$2" = nodes ]; then
    # A user namespace may not unmount the host's /dev submounts that a
    # recursive bind would bring: a tmpfs with the few nodes apt uses.
    mount -t tmpfs -o mode=755,nosuid tmpfs "$root/dev"
    on_dev=1
    for node in null zero full random urandom; do
        : >"$root/dev/$node"
        mount --bind "/dev/$node" "$root/dev/$node"
    done
else
    mount --rbind /dev "$root/dev"
    on_dev=1
fi
mount --bind /etc/resolv.conf "$root/etc/resolv.conf"
on_resolv=1
chroot "$root" /usr/sbin/update-ca-certificates
chroot "$root" /usr/bin/apt-get -q update
chroot "$root" /usr/bin/apt-get clean
"#;

/// Copies every `*.crt` under `from` (recursively; links followed) to the same
/// relative path under `to`. Returns how many were copied.
fn copy_host_cas(from: &Path, to: &Path) -> Result<usize, EnvError> {
    let mut count = 0;
    let read = match std::fs::read_dir(from) {
        Ok(read) => read,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(EnvError::io(format!("reading {}", from.display()), e)),
    };
    let mut entries: Vec<PathBuf> = read.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().expect("read_dir entries have names");
        let meta =
            std::fs::metadata(&path).map_err(|e| EnvError::io(format!("reading {}", path.display()), e))?;
        if meta.is_dir() {
            count += copy_host_cas(&path, &to.join(name))?;
        } else if meta.is_file() && path.extension().is_some_and(|e| e == "crt") {
            let dest = to.join(name);
            std::fs::create_dir_all(to).map_err(|e| EnvError::io(format!("creating {}", to.display()), e))?;
            let bytes =
                std::fs::read(&path).map_err(|e| EnvError::io(format!("reading {}", path.display()), e))?;
            replace_with_file(&dest, &bytes)?;
            count += 1;
        }
    }
    Ok(count)
}

/// The image's apt sources: the mirror for the suite and `<suite>-updates`,
/// and the security archive when the host has one, in deb822 form as
/// Debian 12 ships them; debootstrap's one-line sources.list goes.
fn write_apt_sources(rootfs: &Path, plan: &Plan) -> Result<(), EnvError> {
    let spec = plan.spec;
    let signed_by =
        if rootfs.join(KEYRING).is_file() { format!("Signed-By: /{KEYRING}\n") } else { String::new() };
    let components = spec.components.join(" ");
    let mut text = format!(
        "Types: deb\nURIs: {}\nSuites: {suite} {suite}-updates\nComponents: {components}\n{signed_by}",
        plan.mirror,
        suite = spec.suite,
    );
    if let Some(security) = &plan.security {
        text.push_str(&format!(
            "\nTypes: deb\nURIs: {security}\nSuites: {}-security\nComponents: {components}\n{signed_by}",
            spec.suite
        ));
    }
    let list = rootfs.join("etc/apt/sources.list");
    match std::fs::remove_file(&list) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(EnvError::io(format!("removing {}", list.display()), e)),
    }
    let dir = rootfs.join("etc/apt/sources.list.d");
    std::fs::create_dir_all(&dir).map_err(|e| EnvError::io(format!("creating {}", dir.display()), e))?;
    replace_with_file(&dir.join("debian.sources"), text.as_bytes())
}

/// Writes `bytes` to `path` as a new regular file (mode 0644), replacing
/// whatever was there, a symlink included (which is removed, not followed).
fn replace_with_file(path: &Path, bytes: &[u8]) -> Result<(), EnvError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => {
            std::fs::remove_file(path).map_err(|e| EnvError::io(format!("removing {}", path.display()), e))?
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(EnvError::io(format!("reading {}", path.display()), e)),
    }
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
        .map_err(|e| EnvError::io(format!("writing {}", path.display()), e))?;
    io::Write::write_all(&mut file, bytes).map_err(|e| EnvError::io(format!("writing {}", path.display()), e))
}

/// Runs `cmd` in a private mount namespace with a clean environment and
/// waits for it. On failure the error carries the tail of its output and of
/// `log` (a log file the program keeps), if any.
fn run(mut cmd: Command, what: &str, log: Option<&Path>) -> Result<(), EnvError> {
    cmd.env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LC_ALL", "C")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .env("HOME", "/root")
        .stdin(Stdio::null());
    for var in ["http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"] {
        if let Some(value) = std::env::var_os(var) {
            cmd.env(var, value);
        }
    }
    // SAFETY: the closure runs between fork and exec and makes only
    // async-signal-safe system calls on data that lives in static memory.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(io::Error::last_os_error());
            }
            let none = std::ptr::null();
            if libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = cmd.output().map_err(|e| EnvError::io(format!("starting {what}"), e))?;
    if output.status.success() {
        return Ok(());
    }
    let mut detail = format!("{}", output.status);
    let mut combined = String::from_utf8_lossy(&output.stdout).into_owned();
    combined.push_str(&String::from_utf8_lossy(&output.stderr));
    if let Some(log) = log {
        if let Ok(text) = std::fs::read_to_string(log) {
            combined.push_str(&format!("\n--- {} ---\n{text}", log.display()));
        }
    }
    let lines: Vec<&str> = combined.lines().filter(|l| !l.trim().is_empty()).collect();
    for line in &lines[lines.len().saturating_sub(20)..] {
        detail.push_str("\n  ");
        detail.push_str(line);
    }
    Err(EnvError::Command { program: what.to_owned(), detail })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_host_cas_recursively() {
        let base = std::env::temp_dir().join(format!("cleanroom-cas-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let from = base.join("from");
        std::fs::create_dir_all(from.join("corp/inner")).unwrap();
        std::fs::write(from.join("a.crt"), "A").unwrap();
        std::fs::write(from.join("notes.txt"), "no").unwrap();
        std::fs::write(from.join("corp/inner/b.crt"), "B").unwrap();
        let to = base.join("to");
        assert_eq!(copy_host_cas(&from, &to).unwrap(), 2);
        assert_eq!(std::fs::read_to_string(to.join("a.crt")).unwrap(), "A");
        assert_eq!(std::fs::read_to_string(to.join("corp/inner/b.crt")).unwrap(), "B");
        assert!(!to.join("notes.txt").exists());
        assert_eq!(copy_host_cas(&base.join("missing"), &to).unwrap(), 0);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn apt_sources_name_updates_and_security() {
        let root = std::env::temp_dir().join(format!("cleanroom-aptsrc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("etc/apt")).unwrap();
        std::fs::write(root.join("etc/apt/sources.list"), "deb http://x/debian bookworm main\n").unwrap();
        let plan = Plan {
            extra: &[],
            spec: &super::super::IMAGES[0],
            mirror: "http://m.example/debian".into(),
            security: Some("http://m.example/debian-security".into()),
        };
        write_apt_sources(&root, &plan).unwrap();
        assert!(!root.join("etc/apt/sources.list").exists());
        let text = std::fs::read_to_string(root.join("etc/apt/sources.list.d/debian.sources")).unwrap();
        let entries = cleanroom_apt::parse_deb822(&text);
        assert_eq!(entries.len(), 2, "{text}");
        assert_eq!(entries[0].uris, ["http://m.example/debian"]);
        assert_eq!(entries[0].suites, ["bookworm", "bookworm-updates"]);
        assert_eq!(entries[1].suites, ["bookworm-security"]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
