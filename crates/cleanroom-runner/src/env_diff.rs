//! env-diff.txt: what the agent changed on the machine outside the artifact
//! (installed packages, edited profiles, planted files), for whoever reads
//! a failure. A summary by top-level directory comes first, then one
//! `A|M|D path` line per change, to at most [`MAX_RENDERED`] bytes. What the
//! harness itself made is already left out of the diff (by exact path).

use std::collections::BTreeMap;

use cleanroom_env::EnvDiff;

/// Most bytes of change lines; the rest are counted in a last line.
const MAX_RENDERED: usize = 1 << 20;

pub(crate) fn render(diff: &EnvDiff, artifact_dest: &str) -> String {
    let inside =
        |p: &str| p == artifact_dest || p.starts_with(&format!("{}/", artifact_dest.trim_end_matches('/')));
    let changes: Vec<_> = diff.changes.iter().filter(|c| !inside(&c.path)).collect();
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
    if let Some(why) = &diff.incomplete {
        out.push_str(&format!("# incomplete: {}\n", one_line(why)));
    }
    let head = out.len();
    for (i, c) in changes.iter().enumerate() {
        let line = format!("{} {}\n", c.kind.letter(), one_line(&c.path));
        if out.len() - head + line.len() > MAX_RENDERED {
            out.push_str(&format!("# truncated: {} more change(s) not listed\n", changes.len() - i));
            break;
        }
        out.push_str(&line);
    }
    out
}

fn one_line(text: &str) -> String {
    text.chars().map(|ch| if ch.is_control() { '?' } else { ch }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_env::{PathChange, PathChangeKind};

    #[test]
    fn leaves_out_the_artifact_and_counts_the_rest() {
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
            incomplete: None,
        };
        let text = render(&diff, "/workspace/artifact");
        assert!(text.starts_with("# 5 change(s) outside /workspace/artifact\n"), "{text}");
        assert!(text.contains("# /usr: 1 added, 1 modified, 0 deleted\n"), "{text}");
        assert!(text.contains("\nD /workspace/artifactual\n"), "{text}");
        assert!(text.contains("\nA /usr/lib/x?forged\n"), "one change is one line: {text}");
        assert!(
            text.contains("\nA /tmp/.cleanroom-agent-00/a.sh\n"),
            "no path is left out by its name: {text}"
        );
        assert!(!text.contains("results/a.csv"), "{text}");
    }

    #[test]
    fn a_huge_diff_is_cut_with_a_count() {
        let long = "y".repeat(4000);
        let changes =
            (0..1000).map(|i| PathChange { path: format!("/tmp/{long}/{i}"), kind: PathChangeKind::Added });
        let diff =
            EnvDiff { changes: changes.collect(), incomplete: Some("more than 200000 entries".into()) };
        let text = render(&diff, "/workspace/artifact");
        assert!(text.len() < MAX_RENDERED + 4096, "{}", text.len());
        assert!(text.contains("\n# incomplete: more than 200000 entries\n"), "{}", &text[..200]);
        let listed = text.lines().filter(|l| l.starts_with("A ")).count();
        assert!(text.ends_with(&format!("\n# truncated: {} more change(s) not listed\n", 1000 - listed)));
    }
}
