//! What changed in an environment since it was made, read from the
//! overlay's upper layer, which holds exactly that: every new or changed
//! file, and a whiteout (a 0/0 character device) for every deleted one.
//!
//! The image is one directory (the sandbox's root) or a container engine's
//! stack of overlay layers, top first, in which a whiteout or an opaque
//! directory hides what the layers below hold at its path.
//!
//! Every layer is written by others (the upper by the agent, the image's
//! links point at host paths: `/var/run -> /run`), so none is ever resolved
//! through the host's root: the walk goes one name at a time from directory
//! fds of the layers, never follows a link (an image directory that is a
//! link has nothing below it here), works at any depth, and stops at its
//! bounds (`bounds.rs`) with the reason recorded. Only the entries the
//! harness itself made are left out, by exact path and kind.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::backend::{EnvDiff, PathChange, PathChangeKind};
use crate::bounds::{Budget, Stop, WalkLimits};
use crate::cancel::CancelToken;
use crate::error::EnvError;
use crate::rootfs::{fstatat_nofollow, incomplete, is_absent, open_host_dir, openat, Frame, DIR_FLAGS};
use crate::EntryKind;

/// The changes in `upper` over the image whose layers are `lowers` (top
/// first), less the paths in `made` (absolute, with the kind the harness
/// made there).
pub(crate) fn upper_changes(
    upper: &Path,
    lowers: &[PathBuf],
    made: &BTreeMap<String, EntryKind>,
    limits: WalkLimits,
    cancel: &CancelToken,
) -> Result<EnvDiff, EnvError> {
    let open = |p: &Path| open_host_dir(p).map_err(|e| EnvError::io(format!("open {}", p.display()), e));
    let upper = open(upper)?;
    let lower = Lower(lowers.iter().map(|p| open(p)).collect::<Result<_, _>>()?);
    let mut budget = Budget::new(limits, Some(cancel));
    let mut diff = EnvDiff::default();
    match walk(upper, lower, made, &mut budget, &mut diff) {
        Ok(()) => {}
        Err(Stop::Cancelled) => {
            return Err(EnvError::Phase("listing the environment's changes: cancelled".into()))
        }
        Err(Stop::Incomplete(why)) => {
            diff.incomplete.get_or_insert(why);
        }
    }
    diff.changes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(diff)
}

/// One directory of the upper layer being walked, and the image's
/// directories at the same path (none where the image has no real one).
struct Level {
    upper: Frame,
    lower: Lower,
}

/// The image's directories at one path, top layer first.
struct Lower(Vec<OwnedFd>);

impl Lower {
    /// The image's entry `name` here: the top layer's that has it, none if
    /// that is a whiteout.
    fn entry(&self, name: &CStr) -> Option<libc::stat> {
        for layer in &self.0 {
            if let Ok(st) = fstatat_nofollow(layer.as_fd(), name) {
                return (!is_whiteout(&st)).then_some(st);
            }
        }
        None
    }

    /// The image's directories at `name` here: each layer's from the top
    /// down to the first that holds something else there (which hides
    /// the layers below), or whose directory is opaque.
    fn child(&self, name: &CStr) -> Lower {
        let mut dirs = Vec::new();
        for layer in &self.0 {
            let Ok(st) = fstatat_nofollow(layer.as_fd(), name) else { continue };
            if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
                break;
            }
            // A link in the image (ELOOP) has nothing below it here.
            let Ok(dir) = openat(layer.as_fd(), name, DIR_FLAGS, 0) else { break };
            let opaque = is_opaque(&dir);
            dirs.push(dir);
            if opaque {
                break;
            }
        }
        Lower(dirs)
    }
}

fn is_whiteout(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == 0
}

/// An overlay directory that hides what the layers below hold at its path.
fn is_opaque(dir: &OwnedFd) -> bool {
    let mut value = [0u8; 1];
    // SAFETY: a valid fd, a NUL-terminated name and a buffer of the size given.
    let n = unsafe {
        libc::fgetxattr(
            dir.as_raw_fd(),
            c"trusted.overlay.opaque".as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    };
    n == 1 && value[0] == b'y'
}

fn walk(
    upper: OwnedFd,
    lower: Lower,
    made: &BTreeMap<String, EntryKind>,
    budget: &mut Budget<'_>,
    diff: &mut EnvDiff,
) -> Result<(), Stop> {
    let mut stack = vec![Level { upper: Frame::new(upper, String::new(), budget)?, lower }];
    loop {
        let depth = stack.len();
        let Some(level) = stack.last_mut() else { break };
        let Some(name) = level.upper.next_name() else {
            stack.pop();
            continue;
        };
        budget.visit()?;
        let rel = level.upper.child_rel(&name);
        let st = match fstatat_nofollow(level.upper.fd.as_fd(), &name) {
            Ok(st) => st,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(incomplete(e, &rel)),
        };
        let in_lower = level.lower.entry(&name);
        let path = format!("/{rel}");
        let by_harness = made.get(&path) == Some(&EntryKind::of_mode(st.st_mode));
        let mut change = |kind| {
            budget.keep(path.len())?;
            diff.changes.push(PathChange { path: path.clone(), kind });
            Ok::<(), Stop>(())
        };
        match st.st_mode & libc::S_IFMT {
            _ if is_whiteout(&st) => change(PathChangeKind::Deleted)?,
            libc::S_IFDIR => {
                let lower_is_dir = in_lower.is_some_and(|l| l.st_mode & libc::S_IFMT == libc::S_IFDIR);
                // A directory that only holds changes below it is no change.
                if !lower_is_dir && !by_harness {
                    change(PathChangeKind::Added)?;
                }
                if depth > budget.max_depth() {
                    diff.incomplete.get_or_insert_with(|| budget.too_deep().to_string());
                    continue;
                }
                let upper = match openat(level.upper.fd.as_fd(), &name, DIR_FLAGS, 0) {
                    Ok(fd) => fd,
                    Err(e) if is_absent(&e) => continue,
                    Err(e) => return Err(incomplete(e, &rel)),
                };
                let lower = if lower_is_dir { level.lower.child(&name) } else { Lower(Vec::new()) };
                stack.push(Level { upper: Frame::new(upper, rel, budget)?, lower });
            }
            _ if by_harness => {}
            _ if in_lower.is_some() => change(PathChangeKind::Modified)?,
            _ => change(PathChangeKind::Added)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn listed(diff: &EnvDiff) -> Vec<String> {
        diff.changes.iter().map(|c| format!("{} {}", c.kind.letter(), c.path)).collect()
    }

    struct Layers(std::path::PathBuf);

    impl Layers {
        fn new(name: &str) -> Layers {
            let base = std::env::temp_dir().join(format!("cleanroom-diff-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&base);
            std::fs::create_dir_all(base.join("upper")).unwrap();
            std::fs::create_dir_all(base.join("lower")).unwrap();
            Layers(base)
        }

        fn upper(&self) -> std::path::PathBuf {
            self.0.join("upper")
        }

        fn lower(&self) -> std::path::PathBuf {
            self.0.join("lower")
        }

        fn changes(&self, made: &BTreeMap<String, EntryKind>, limits: WalkLimits) -> EnvDiff {
            let lowers = [self.lower()];
            upper_changes(&self.upper(), &lowers, made, limits, &CancelToken::new().unwrap()).unwrap()
        }
    }

    impl Drop for Layers {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn lists_the_upper_layer_only_and_never_follows_links() {
        let t = Layers::new("links");
        let (upper, lower) = (t.upper(), t.lower());
        std::fs::create_dir_all(upper.join("etc/profile.d")).unwrap();
        std::fs::create_dir_all(upper.join("opt/new")).unwrap();
        std::fs::create_dir_all(lower.join("etc/profile.d")).unwrap();
        std::fs::write(lower.join("etc/hosts"), "").unwrap();
        std::fs::write(upper.join("etc/hosts"), "changed").unwrap();
        std::fs::write(upper.join("etc/profile.d/venv.sh"), "").unwrap();
        std::fs::write(upper.join("opt/new/tool"), "").unwrap();
        symlink("/etc", upper.join("hostetc")).unwrap();
        let diff = t.changes(&BTreeMap::new(), WalkLimits::default());
        assert_eq!(
            listed(&diff),
            [
                "M /etc/hosts",
                "A /etc/profile.d/venv.sh",
                "A /hostetc",
                "A /opt",
                "A /opt/new",
                "A /opt/new/tool"
            ]
        );
        assert_eq!(diff.incomplete, None);
    }

    /// A container engine's image is a stack of layers: a path's entry is
    /// the top layer's that has it; a whiteout or an opaque directory
    /// hides the layers below. (Needs root: a 0/0 device, a trusted xattr.)
    #[test]
    fn an_image_of_layers_is_read_top_down() {
        let t = Layers::new("stack");
        let (upper, top, bottom) = (t.upper(), t.0.join("top"), t.lower());
        for dir in ["d", "o"] {
            std::fs::create_dir_all(bottom.join(dir)).unwrap();
            std::fs::create_dir_all(top.join(dir)).unwrap();
            std::fs::create_dir_all(upper.join(dir)).unwrap();
        }
        for file in ["a", "w", "d/x", "o/y"] {
            std::fs::write(bottom.join(file), "image").unwrap();
        }
        std::fs::write(top.join("d/z"), "image").unwrap();
        let whiteout = std::ffi::CString::new(top.join("w").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mknod(whiteout.as_ptr(), libc::S_IFCHR | 0o600, 0) }, 0, "mknod (root?)");
        let opaque = std::ffi::CString::new(top.join("o").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: NUL-terminated path and name, a buffer of the size given.
        let set = unsafe {
            libc::setxattr(opaque.as_ptr(), c"trusted.overlay.opaque".as_ptr(), b"y".as_ptr().cast(), 1, 0)
        };
        assert_eq!(set, 0, "setxattr (root?)");
        for file in ["a", "w", "d/x", "d/z", "o/y", "new"] {
            std::fs::write(upper.join(file), "agent").unwrap();
        }
        let diff = upper_changes(
            &upper,
            &[top, bottom],
            &BTreeMap::new(),
            WalkLimits::default(),
            &CancelToken::new().unwrap(),
        )
        .unwrap();
        assert_eq!(listed(&diff), ["M /a", "M /d/x", "M /d/z", "A /new", "A /o/y", "A /w"]);
    }

    #[test]
    fn the_images_links_are_not_followed_on_the_host() {
        // The image's /var/run is a link to /run: on the host that is the
        // host's /run. A directory the agent put in its place holds only
        // new files, whatever the host has at the same paths.
        let t = Layers::new("image-links");
        let (upper, lower) = (t.upper(), t.lower());
        std::fs::create_dir_all(lower.join("var")).unwrap();
        let host_dir = t.0.join("host-run");
        std::fs::create_dir_all(&host_dir).unwrap();
        std::fs::write(host_dir.join("probe"), "").unwrap();
        symlink(&host_dir, lower.join("var/run")).unwrap();
        std::fs::create_dir_all(upper.join("var/run")).unwrap();
        std::fs::write(upper.join("var/run/probe"), "").unwrap();
        std::fs::write(upper.join("var/run/absent"), "").unwrap();
        let diff = t.changes(&BTreeMap::new(), WalkLimits::default());
        assert_eq!(listed(&diff), ["A /var/run", "A /var/run/absent", "A /var/run/probe"]);
    }

    #[test]
    fn leaves_out_exactly_what_the_harness_made() {
        let t = Layers::new("made");
        let upper = t.upper();
        std::fs::create_dir_all(upper.join("tmp/.cleanroom-agent-1")).unwrap();
        std::fs::write(upper.join("tmp/.cleanroom-agent-1/agent.sh"), "").unwrap();
        std::fs::write(upper.join("tmp/.cleanroom-agent-1/planted"), "").unwrap();
        std::fs::create_dir_all(upper.join("tmp/.cleanroom-whatever")).unwrap();
        std::fs::write(upper.join("tmp/.cleanroom-whatever/hidden"), "").unwrap();
        // A path the harness made as a file, now a link.
        symlink("/etc/shadow", upper.join("tmp/.cleanroom-agent-1/cmd")).unwrap();
        let made: BTreeMap<String, EntryKind> = [
            ("/tmp/.cleanroom-agent-1", EntryKind::Dir),
            ("/tmp/.cleanroom-agent-1/agent.sh", EntryKind::File),
            ("/tmp/.cleanroom-agent-1/cmd", EntryKind::File),
        ]
        .into_iter()
        .map(|(p, k)| (p.to_string(), k))
        .collect();
        let diff = t.changes(&made, WalkLimits::default());
        assert_eq!(
            listed(&diff),
            [
                "A /tmp",
                "A /tmp/.cleanroom-agent-1/cmd",
                "A /tmp/.cleanroom-agent-1/planted",
                "A /tmp/.cleanroom-whatever",
                "A /tmp/.cleanroom-whatever/hidden"
            ]
        );
    }

    #[test]
    fn a_chain_deeper_than_path_max_is_listed_to_the_depth_bound() {
        let t = Layers::new("deep");
        // 3000 levels: about 6000 bytes of path, past PATH_MAX (4096).
        let mut dir = open_host_dir(&t.upper()).unwrap();
        for _ in 0..3000 {
            let name = c"d";
            // SAFETY: a valid directory fd and a NUL-terminated name.
            assert_eq!(
                unsafe { libc::mkdirat(std::os::fd::AsRawFd::as_raw_fd(&dir), name.as_ptr(), 0o755) },
                0
            );
            dir = openat(dir.as_fd(), name, DIR_FLAGS, 0).unwrap();
        }
        let limits = WalkLimits { depth: 40, ..WalkLimits::default() };
        let diff = t.changes(&BTreeMap::new(), limits);
        assert_eq!(diff.incomplete.as_deref(), Some("more than 40 directory levels"));
        assert_eq!(diff.changes.len(), 41);
        let deepest = diff.changes.iter().map(|c| c.path.len()).max().unwrap();
        assert_eq!(deepest, 41 * 2);
    }

    #[test]
    fn every_bound_ends_the_listing_with_its_reason() {
        let t = Layers::new("bounds");
        for i in 0..50 {
            std::fs::write(t.upper().join(format!("f{i:02}")), "").unwrap();
        }
        let diff = t.changes(&BTreeMap::new(), WalkLimits { entries: 10, ..WalkLimits::default() });
        assert_eq!(diff.incomplete.as_deref(), Some("more than 10 entries or 33554432 bytes of names"));
        assert!(diff.changes.is_empty(), "the top directory alone is too large to list");
        // The listing of 150 bytes of names fits, the 46th path of 4 bytes not.
        let diff = t.changes(&BTreeMap::new(), WalkLimits { name_bytes: 180, ..WalkLimits::default() });
        assert_eq!(diff.incomplete.as_deref(), Some("more than 180 bytes of names"));
        assert_eq!(diff.changes.len(), 45);

        let cancel = CancelToken::new().unwrap();
        cancel.cancel();
        let err = upper_changes(&t.upper(), &[t.lower()], &BTreeMap::new(), WalkLimits::default(), &cancel);
        assert!(err.unwrap_err().to_string().contains("cancelled"));
    }
}
