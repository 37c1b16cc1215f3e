//! Starting a program as root of a new user namespace, as the rootless
//! sandbox does (docs/rootless.md).
//!
//! The namespace maps root inside to a user outside, and ids 1 to 65535
//! to that user's subordinate ids (/etc/subuid, /etc/subgid), so that
//! files of other owners (`_apt`, `nobody`) exist inside and package
//! managers work as on a fresh machine. An ordinary user has the setuid
//! helpers newuidmap and newgidmap write the maps; the host's root writes
//! them itself (a test starting a user's namespace).

use std::ffi::CStr;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use crate::error::EnvError;

const NEWUIDMAP: &str = "/usr/bin/newuidmap";
const NEWGIDMAP: &str = "/usr/bin/newgidmap";

/// At least this many subordinate ids, so that `nobody` (65534) exists.
const MIN_COUNT: u64 = 65535;

/// A range of subordinate ids: `start` outside, `count` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    start: u64,
    count: u64,
}

/// The maps of a namespace for one user.
#[derive(Debug, Clone)]
pub struct IdMaps {
    uid: u32,
    gid: u32,
    subuid: Range,
    subgid: Range,
}

impl IdMaps {
    /// The maps for the user `uid` (primary group `gid`), from the host's
    /// /etc/subuid and /etc/subgid.
    pub fn for_user(uid: u32, gid: u32) -> Result<IdMaps, EnvError> {
        let name =
            user_name(uid).ok_or_else(|| error(format!("uid {uid} has no name in the user database")))?;
        Ok(IdMaps {
            uid,
            gid,
            subuid: subordinate("/etc/subuid", &name, uid)?,
            subgid: subordinate("/etc/subgid", &name, uid)?,
        })
    }

    /// The maps for the user running this process.
    pub fn for_this_user() -> Result<IdMaps, EnvError> {
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        IdMaps::for_user(uid, gid)
    }

    /// Writes the maps of the namespace of `pid`.
    fn write(&self, pid: u32) -> Result<(), EnvError> {
        let line = |id: u32, sub: Range| format!("0 {id} 1\n1 {} {}\n", sub.start, sub.count);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            for (file, map) in
                [("uid_map", line(self.uid, self.subuid)), ("gid_map", line(self.gid, self.subgid))]
            {
                let path = format!("/proc/{pid}/{file}");
                std::fs::write(&path, map).map_err(|e| error(format!("writing {path}: {e}")))?;
            }
            return Ok(());
        }
        for (helper, id, sub) in [(NEWUIDMAP, self.uid, self.subuid), (NEWGIDMAP, self.gid, self.subgid)] {
            let out = Command::new(helper)
                .arg(pid.to_string())
                .args(["0", &id.to_string(), "1", "1", &sub.start.to_string(), &sub.count.to_string()])
                .env_clear()
                .output()
                .map_err(|e| error(format!("running {helper} (Debian's package uidmap has it): {e}")))?;
            if !out.status.success() {
                return Err(error(format!(
                    "{helper} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        Ok(())
    }
}

/// Starts `cmd` as root of a new user namespace with `maps`. The command
/// starts only once its maps are written; what `cmd` sets up before its
/// exec (a uid, pre_exec closures) happens before the namespace is made.
pub fn spawn(cmd: &mut Command, maps: &IdMaps) -> Result<Child, EnvError> {
    let (ready_r, ready_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    let (ready_fd, go_fd) = (ready_w.as_raw_fd(), go_r.as_raw_fd());
    // SAFETY: raw system calls only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUSER) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let pid = libc::getpid().to_ne_bytes();
            let mut byte = [0u8];
            if libc::write(ready_fd, pid.as_ptr().cast(), pid.len()) != pid.len() as isize
                || libc::read(go_fd, byte.as_mut_ptr().cast(), 1) != 1
            {
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
            Ok(())
        });
    }
    // spawn() returns only once the child has exec'd, which it does once
    // its maps are written: they are written aside.
    let maps = maps.clone();
    let mapper = std::thread::spawn(move || -> Result<(), EnvError> {
        let mut pid = [0u8; 4];
        std::fs::File::from(ready_r)
            .read_exact(&mut pid)
            .map_err(|e| error(format!("the new user namespace did not report: {e}")))?;
        maps.write(i32::from_ne_bytes(pid) as u32)?;
        std::fs::File::from(go_w).write_all(&[1]).map_err(|e| error(format!("starting its command: {e}")))
    });
    let spawned = cmd.spawn();
    // The child's copies are closed with its exec; ours now, so that the
    // mapper never waits on a child that failed before reporting.
    drop((ready_w, go_r));
    let mapped = mapper.join().unwrap_or_else(|_| Err(error("the id mapper panicked".into())));
    match (spawned, mapped) {
        (Ok(child), Ok(())) => Ok(child),
        (Ok(mut child), Err(e)) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(e)
        }
        // A map that could not be written is why the child gave up.
        (Err(_), Err(e)) => Err(e),
        (Err(e), Ok(())) => Err(error(format!("starting a user namespace: {e}"))),
    }
}

/// The first range of `file` for the user `name` (or its numeric `id`).
fn subordinate(file: &str, name: &str, id: u32) -> Result<Range, EnvError> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    find_range(&text, name, id).ok_or_else(|| {
        error(format!(
            "{file} gives {name} no {MIN_COUNT} subordinate ids, which the rootless sandbox maps so that files \
             of other owners exist inside: as root, `usermod --add-subuids 100000-165535 --add-subgids \
             100000-165535 {name}`"
        ))
    })
}

fn find_range(text: &str, name: &str, id: u32) -> Option<Range> {
    text.lines().find_map(|line| {
        let mut fields = line.trim().split(':');
        let (owner, start, count) = (fields.next()?, fields.next()?, fields.next()?);
        if owner != name && owner != id.to_string() {
            return None;
        }
        let range = Range { start: start.parse().ok()?, count: count.parse().ok()? };
        (range.count >= MIN_COUNT).then_some(Range { count: MIN_COUNT, ..range })
    })
}

fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: passwd is plain data that getpwuid_r fills from buf.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found = std::ptr::null_mut();
    // SAFETY: the buffers are valid for their lengths.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r set pw_name to a NUL-terminated string in buf.
    Some(unsafe { CStr::from_ptr(pwd.pw_name) }.to_string_lossy().into_owned())
}

fn pipe() -> Result<(OwnedFd, OwnedFd), EnvError> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(error(format!("pipe: {}", std::io::Error::last_os_error())));
    }
    // SAFETY: pipe2 succeeded; both fds are new and owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn error(message: String) -> EnvError {
    EnvError::Phase(format!("rootless sandbox: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_subordinate_range_is_found_by_name_or_id() {
        let text = "alice:100000:65536\nbob:165536:65536\n1003:231072:70000\nshort:300000:1000\n";
        assert_eq!(find_range(text, "bob", 1002), Some(Range { start: 165536, count: 65535 }));
        assert_eq!(find_range(text, "carol", 1003), Some(Range { start: 231072, count: 65535 }));
        assert_eq!(find_range(text, "dave", 1004), None);
        assert_eq!(find_range(text, "short", 1005), None, "too few ids for nobody");
    }
}
