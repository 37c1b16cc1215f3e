//! env-diff.txt: what the agent changed on the machine outside the artifact
//! (installed packages, edited profiles, planted files), for whoever reads
//! a failure. A summary by top-level directory comes first, then one
//! `A|M|D path` line per change.

use std::collections::BTreeMap;

use cleanroom_env::EnvDiff;

/// Harness-made paths that are not the agent's doing.
const HARNESS_PREFIX: &str = "/tmp/.cleanroom-";

pub(crate) fn render(diff: &EnvDiff, artifact_dest: &str) -> String {
    let inside =
        |p: &str| p == artifact_dest || p.starts_with(&format!("{}/", artifact_dest.trim_end_matches('/')));
    let changes: Vec<_> =
        diff.changes.iter().filter(|c| !inside(&c.path) && !c.path.starts_with(HARNESS_PREFIX)).collect();
    let mut by_top: BTreeMap<&str, [usize; 3]> = BTreeMap::new();
    for c in &changes {
        let top = c.path.split('/').nth(1).unwrap_or("");
        let counts = by_top.entry(top).or_default();
        counts[match c.kind.letter() {
            'A' => 0,
            'M' => 1,
            _ => 2,
        }] += 1;
    }
    let mut out = format!("# {} change(s) outside {artifact_dest}\n", changes.len());
    for (top, [a, m, d]) in &by_top {
        out.push_str(&format!("# /{top}: {a} added, {m} modified, {d} deleted\n"));
    }
    if diff.truncated {
        out.push_str("# incomplete: too many changes to list\n");
    }
    for c in changes {
        out.push(c.kind.letter());
        out.push(' ');
        out.extend(c.path.chars().map(|ch| if ch.is_control() { '?' } else { ch }));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_env::{PathChange, PathChangeKind};

    #[test]
    fn leaves_out_the_artifact_and_the_harness_and_counts_the_rest() {
        let change = |path: &str, kind| PathChange { path: path.into(), kind };
        let diff = EnvDiff {
            changes: vec![
                change("/etc/profile.d/venv.sh", PathChangeKind::Added),
                change("/tmp/.cleanroom-agent-00/a.sh", PathChangeKind::Added),
                change("/usr/bin/awk", PathChangeKind::Modified),
                change("/usr/lib/x\nforged", PathChangeKind::Added),
                change("/workspace/artifact", PathChangeKind::Added),
                change("/workspace/artifact/results/a.csv", PathChangeKind::Added),
                change("/workspace/artifactual", PathChangeKind::Deleted),
            ],
            truncated: false,
        };
        let text = render(&diff, "/workspace/artifact");
        assert!(text.starts_with("# 4 change(s) outside /workspace/artifact\n"), "{text}");
        assert!(text.contains("# /usr: 1 added, 1 modified, 0 deleted\n"), "{text}");
        assert!(text.contains("\nD /workspace/artifactual\n"), "{text}");
        assert!(text.contains("\nA /usr/lib/x?forged\n"), "one change is one line: {text}");
        assert!(!text.contains(".cleanroom-agent") && !text.contains("results/a.csv"), "{text}");
    }
}
