//! What the steps wrote to `$CLEANROOM_OUT`, copied out after the phase
//! ended, so that the author of a task reads the experiment's whole output
//! beside verify.log (the trial's `outputs/`). Only regular files, read
//! without following links, within bounds of files and bytes: what an
//! agent's deployment writes never makes the harness fail or grow without
//! end. Nothing here decides the verdict.

use std::time::Duration;

use cleanroom_env::{CancelToken, EntryKind, Files, Manifest, WalkLimits};

/// Most files kept of one verification.
pub const MAX_KEPT_FILES: usize = 1000;
/// Most bytes kept of one verification, all files together.
pub const MAX_KEPT_BYTES: u64 = 64 << 20;

/// One file the steps wrote, by its path relative to `$CLEANROOM_OUT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// The kept files, and each one left out with why (`big.bin (over 64 MiB
/// in all)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    pub files: Vec<Output>,
    pub left_out: Vec<String>,
}

/// The regular files under `out_dir` in the environment, in path order.
pub fn collect(root: &dyn Files, out_dir: &str, cancel: &CancelToken) -> Outputs {
    let mut outputs = Outputs::default();
    let limits = WalkLimits {
        entries: 4 * MAX_KEPT_FILES,
        depth: 32,
        name_bytes: 1 << 20,
        time: Duration::from_secs(30),
    };
    let Ok(listed) = root.manifest_against(out_dir, &Manifest::default(), limits, cancel) else {
        return outputs;
    };
    if let Some(why) = listed.incomplete {
        outputs.left_out.push(format!("the rest ({why})"));
    }
    let mut bytes = 0u64;
    for (path, entry) in listed.entries {
        if entry.kind != EntryKind::File {
            continue;
        }
        let why = if !keepable(&path) {
            Some("a name the run directory does not take".to_string())
        } else if outputs.files.len() >= MAX_KEPT_FILES {
            Some(format!("over {MAX_KEPT_FILES} files"))
        } else if bytes + entry.size > MAX_KEPT_BYTES {
            Some(format!("over {} MiB in all", MAX_KEPT_BYTES >> 20))
        } else {
            None
        };
        if let Some(why) = why {
            outputs.left_out.push(format!("{path} ({why})"));
            continue;
        }
        match root.read_regular(&format!("{out_dir}/{path}"), MAX_KEPT_BYTES - bytes) {
            Ok(read) => {
                bytes += read.len() as u64;
                outputs.files.push(Output { path, bytes: read });
            }
            Err(e) => outputs.left_out.push(format!("{path} ({e})")),
        }
    }
    outputs
}

/// A relative path of plain components: none empty, `.`-led or holding
/// NUL (a name starting with `.` is the run directory's own).
fn keepable(path: &str) -> bool {
    path.split('/').all(|c| !c.is_empty() && !c.starts_with('.') && !c.contains('\0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_kept() {
        assert!(keepable("table2.csv") && keepable("plots/a b.png"));
        for path in ["", "/abs", "a//b", ".hidden", "a/../b", "a/.tmp"] {
            assert!(!keepable(path), "{path}");
        }
    }
}
