//! The rootless sandbox where the host delegates cgroup v2 to its users
//! (docs/rootless.md): an ordinary user's `cleanroom` asks the user's
//! systemd for a delegated scope and enforces the memory and process
//! limits there. This machine has cgroup v1, so the host is one of
//! scripts/test-hosts.sh's: a virtual machine booting Debian 12 the
//! standard way (systemd, cgroup v2, logins through sshd), made for this
//! test and destroyed after, where the test installs what a user's host
//! would have: systemd's user sessions and the rootless sandbox's tools. The user there gets cleanroom's image from
//! this machine's root (`image export`, `image import`), as a cluster's
//! users would get it from an administrator.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{repo, temp_out, text};
use serde_json::Value;

/// Where test-hosts.sh keeps its hosts' state and ssh configuration.
const STATE: &str = "/var/lib/cleanroom-test-hosts";
const USER: &str = "cleanroom-test";

/// A host made by `test-hosts.sh create`, destroyed when dropped.
struct MadeHost {
    name: String,
    address: String,
}

impl MadeHost {
    fn create() -> MadeHost {
        let out = Command::new("bash").arg(script()).arg("create").output().unwrap();
        assert!(out.status.success(), "test-hosts.sh create: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let field = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .unwrap_or_else(|| panic!("{key} in {stdout}"))
                .to_string()
        };
        MadeHost { name: field("name="), address: field("address=") }
    }

    /// `ssh` to the host as `login`, running `command` there.
    fn ssh(&self, login: &str, command: &str) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.arg("-F").arg(Path::new(STATE).join("ssh_config")).args(["-l", login, &self.address, command]);
        cmd
    }

    /// `command` run as `login`, its standard input the file at `input`.
    fn run(&self, login: &str, command: &str, input: Option<&Path>) -> Output {
        let stdin = match input {
            Some(path) => Stdio::from(std::fs::File::open(path).unwrap()),
            None => Stdio::null(),
        };
        self.ssh(login, command).stdin(stdin).output().unwrap()
    }

    fn ok(&self, login: &str, command: &str, input: Option<&Path>) -> String {
        let out = self.run(login, command, input);
        assert!(out.status.success(), "{login}@{}: {command}: {}", self.name, text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for MadeHost {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).args(["destroy", &self.name]).status();
    }
}

fn script() -> PathBuf {
    repo().join("scripts/test-hosts.sh")
}

/// A tar archive of `dirs` (each under `base`), written to a file.
fn tar_of(base: &Path, dirs: &[&str], dest: &Path) {
    let ok = Command::new("tar").arg("-C").arg(base).arg("-cf").arg(dest).args(dirs).status().unwrap();
    assert!(ok.success(), "tar of {dirs:?}");
}

#[test]
fn the_rootless_sandbox_enforces_limits_in_the_scope_systemd_delegates() {
    let local = temp_out("cgroup-v2");
    // The image as root built it here, and this build's binary.
    let image = local.join("image.tar");
    let cleanroom = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_cleanroom")).args(args).output().unwrap();
        assert!(out.status.success(), "cleanroom {args:?}: {}", text(&out));
    };
    cleanroom(&["image", "build"]);
    cleanroom(&["image", "export", "-o", &image.display().to_string()]);
    let binary = local.join("cleanroom");
    let strip =
        Command::new("strip").arg("-o").arg(&binary).arg(env!("CARGO_BIN_EXE_cleanroom")).status().unwrap();
    assert!(strip.success());
    let fixtures = local.join("fixtures.tar");
    tar_of(&repo().join("tests/fixtures"), &["tasks-adversarial", "agents"], &fixtures);

    let host = MadeHost::create();
    // What the rootless sandbox needs, and user sessions of systemd (whose
    // logind, with its private /tmp, the other tests' hosts go without;
    // the package leaves the system bus it needs stopped).
    host.ok(
        "root",
        "export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q --no-install-recommends \
         dbus libpam-systemd bubblewrap slirp4netns uidmap && systemctl start dbus",
        None,
    );
    host.ok("root", "bash -s cleanroom-test", Some(&repo().join("scripts/rootless-user.sh")));
    host.ok(
        "root",
        &format!("install -d -o {USER} -g {USER} -m 0700 ~{USER}/.ssh && install -o {USER} -g {USER} -m 0600 /root/.ssh/authorized_keys ~{USER}/.ssh/"),
        None,
    );
    host.ok("root", "cat >/usr/local/bin/cleanroom && chmod 0755 /usr/local/bin/cleanroom", Some(&binary));
    // The host has cgroup v2, the user a session of systemd's.
    host.ok(USER, "test -f /sys/fs/cgroup/cgroup.controllers && test -n \"$XDG_RUNTIME_DIR\"", None);
    let imported = host.ok(USER, "cleanroom image import", Some(&image));
    assert!(imported.starts_with("debian-12-minimal sha256:"), "{imported}");
    host.ok(USER, "mkdir -p fixtures && tar -C fixtures -xf -", Some(&fixtures));

    // Told not to ask systemd, the command finds no delegated cgroup and
    // refuses to run unlimited.
    let run = "cleanroom run --tasks fixtures/tasks-adversarial/target --agent oracle --agent nop \
               --agent script:fixtures/agents/over-memory.sh --jobs 2";
    let refused = host.run(USER, &format!("CLEANROOM_IN_USER_SCOPE=1 {run} --out refused"), None);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("no cgroup v2 subtree is delegated"), "{}", text(&refused));

    let ran = host.run(USER, &format!("{run} --out runs"), None);
    assert!(ran.status.success(), "{}", text(&ran));
    let mut archive = host.ssh(USER, "tar -C runs -cf - .").stdout(Stdio::piped()).spawn().unwrap();
    let unpacked = Command::new("tar")
        .arg("-C")
        .arg(&local)
        .arg("-xf")
        .arg("-")
        .stdin(archive.stdout.take().unwrap())
        .status()
        .unwrap();
    assert!(archive.wait().unwrap().success() && unpacked.success());
    let results: Vec<Value> = common::files_under(&local)
        .into_iter()
        .filter(|p| p.ends_with("result.json"))
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    assert_eq!(results.len(), 3, "{}", text(&ran));
    for r in &results {
        let expected = if r["agent_id"] == "nop" { "failed" } else { "passed" };
        assert_eq!(r["outcome"], expected, "{}: {r}", r["agent_id"]);
        assert_eq!(r["limits"]["memory"], "enforced", "{r}");
        assert_eq!(r["limits"]["pids"], "enforced", "{r}");
    }
    // The environments' cgroups were under the user's own scope, and are gone.
    let left = host.ok(USER, "find /sys/fs/cgroup/user.slice -path '*/cleanroom/*' -type d | wc -l", None);
    assert_eq!(left.trim(), "0", "environment cgroups left behind");
}
