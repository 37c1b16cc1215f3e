//! What the agent changed in the artifact: the original tree's manifest (the
//! harness's own copy) against the environment's at the end of the agent
//! phase. Originals under `protected` that are gone or differ in type, mode
//! or bytes are tampered with; new files are listed, never counted. An
//! original that the bounded survey of the environment did not reach counts
//! as gone, so a tree made too large to check fails the check.

use serde::{Deserialize, Serialize};

use cleanroom_env::{Entry, EntryKind, Globs, Manifest};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New: not in the original.
    Added,
    /// An original that is gone.
    Removed,
    /// Same type; mode, bytes or link target differ.
    Modified,
    /// The type differs (a file became a link, a directory a file, ...).
    TypeChanged,
}

impl ChangeKind {
    /// The letter of a changes.txt line.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Removed => 'D',
            ChangeKind::Modified => 'M',
            ChangeKind::TypeChanged => 'T',
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Relative to `artifact.dest`.
    pub path: String,
    pub kind: ChangeKind,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    /// By path.
    pub changes: Vec<Change>,
    /// The changed or removed originals that `protected` covers, by path.
    pub tampered: Vec<String>,
    /// Why a manifest was cut short, if one was: the listing may be
    /// incomplete (and originals not reached count as removed).
    pub incomplete: Option<String>,
}

/// Most bytes of changes.txt; the lines past it are counted, not written.
pub const MAX_RENDERED: usize = 1 << 20;

impl Changes {
    /// Compares the original artifact with what the environment holds now.
    pub fn compare(original: &Manifest, after: &Manifest, protected: &Globs) -> Changes {
        let mut changes = Vec::new();
        let mut tampered = Vec::new();
        for (path, before) in &original.entries {
            let kind = match after.entries.get(path) {
                None => ChangeKind::Removed,
                Some(now) if now.kind != before.kind => ChangeKind::TypeChanged,
                Some(now) if differs(before, now) => ChangeKind::Modified,
                Some(_) => continue,
            };
            let covered = if before.kind == EntryKind::Dir {
                protected.is_match_dir(path)
            } else {
                protected.is_match(path)
            };
            if covered {
                tampered.push(path.clone());
            }
            changes.push(Change { path: path.clone(), kind });
        }
        for path in after.entries.keys() {
            if !original.entries.contains_key(path) {
                changes.push(Change { path: path.clone(), kind: ChangeKind::Added });
            }
        }
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        let incomplete = original.incomplete.clone().or_else(|| after.incomplete.clone());
        Changes { changes, tampered, incomplete }
    }

    pub fn is_tampered(&self) -> bool {
        !self.tampered.is_empty()
    }

    /// changes.txt: one `X path` line per change (A added, D removed,
    /// M modified, T type changed), by path. Paths are written with control
    /// characters escaped, so that one change is one line. At most about
    /// [`MAX_RENDERED`] bytes: the rest is counted in a last `# truncated`
    /// line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(why) = &self.incomplete {
            out.push_str(&format!("# incomplete: {}\n", escape(why)));
        }
        for (i, c) in self.changes.iter().enumerate() {
            let line = format!("{} {}\n", c.kind.letter(), escape(&c.path));
            if out.len() + line.len() > MAX_RENDERED {
                out.push_str(&format!("# truncated: {} more change(s) not listed\n", self.changes.len() - i));
                break;
            }
            out.push_str(&line);
        }
        out
    }
}

/// Same type: do mode, bytes or link target differ? A directory's size says
/// nothing about its contents (and differs between file systems).
fn differs(before: &Entry, now: &Entry) -> bool {
    if before.mode != now.mode {
        return true;
    }
    match before.kind {
        EntryKind::File => before.size != now.size || before.sha256 != now.sha256,
        EntryKind::Symlink => before.link_target != now.link_target,
        EntryKind::Dir | EntryKind::Other => false,
    }
}

fn escape(path: &str) -> String {
    path.chars().flat_map(|c| if c.is_control() { c.escape_default().collect() } else { vec![c] }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mode: u32, bytes: &str) -> Entry {
        Entry {
            kind: EntryKind::File,
            mode,
            size: bytes.len() as u64,
            sha256: Some(format!("sha-of-{bytes}")),
            link_target: None,
        }
    }

    fn dir(mode: u32) -> Entry {
        Entry { kind: EntryKind::Dir, mode, size: 0, sha256: None, link_target: None }
    }

    fn link(target: &str) -> Entry {
        Entry {
            kind: EntryKind::Symlink,
            mode: 0o777,
            size: target.len() as u64,
            sha256: None,
            link_target: Some(target.into()),
        }
    }

    fn manifest(entries: &[(&str, Entry)]) -> Manifest {
        Manifest {
            entries: entries.iter().map(|(p, e)| (p.to_string(), e.clone())).collect(),
            incomplete: None,
        }
    }

    fn globs(p: &[&str]) -> Globs {
        Globs::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn original() -> Manifest {
        manifest(&[
            ("README", file(0o644, "readme")),
            ("eval", dir(0o755)),
            ("eval/score.py", file(0o644, "score")),
            ("eval/ref.json", file(0o644, "ref")),
            ("data", dir(0o755)),
            ("data/x.csv", file(0o644, "x")),
            ("run.sh", file(0o755, "run")),
            ("latest", link("data/x.csv")),
        ])
    }

    #[test]
    fn unchanged_is_empty() {
        let c = Changes::compare(&original(), &original(), &globs(&["eval/**"]));
        assert_eq!(c, Changes::default());
        assert_eq!(c.render(), "");
        assert!(!c.is_tampered());
    }

    #[test]
    fn lists_each_kind_of_change() {
        let mut after = original();
        after.entries.insert("run.sh".into(), file(0o644, "run")); // mode
        after.entries.insert("README".into(), file(0o644, "README")); // bytes
        after.entries.insert("latest".into(), link("/etc/passwd")); // target
        after.entries.remove("data/x.csv");
        after.entries.insert("data/x.csv".into(), link("/tmp/x.csv")); // type
        after.entries.remove("eval/ref.json");
        after.entries.insert("results".into(), dir(0o755));
        after.entries.insert("results/t.csv".into(), file(0o644, "t"));
        let c = Changes::compare(&original(), &after, &globs(&[]));
        assert_eq!(
            c.render(),
            "M README\nT data/x.csv\nD eval/ref.json\nM latest\nA results\nA results/t.csv\nM run.sh\n"
        );
        assert!(!c.is_tampered());
    }

    #[test]
    fn tampered_means_changed_or_removed_protected_originals() {
        let mut after = original();
        after.entries.insert("eval/score.py".into(), file(0o644, "forged"));
        after.entries.remove("data/x.csv");
        after.entries.insert("eval/new.py".into(), file(0o644, "new"));
        after.entries.insert("README".into(), file(0o600, "readme"));
        let c = Changes::compare(&original(), &after, &globs(&["eval/**", "data/**"]));
        assert_eq!(c.tampered, ["data/x.csv", "eval/score.py"]);
        assert!(c.is_tampered());
        // A new file under a protected glob is listed, not counted.
        assert!(c.changes.contains(&Change { path: "eval/new.py".into(), kind: ChangeKind::Added }));
    }

    #[test]
    fn a_protected_directory_replaced_by_a_link_is_tampering() {
        let mut after = original();
        after.entries.retain(|p, _| !p.starts_with("eval"));
        after.entries.insert("eval".into(), link("/tmp/fake-eval"));
        let c = Changes::compare(&original(), &after, &globs(&["eval/**"]));
        assert_eq!(c.tampered, ["eval", "eval/ref.json", "eval/score.py"]);
        assert_eq!(c.render(), "T eval\nD eval/ref.json\nD eval/score.py\n");
    }

    #[test]
    fn a_directory_mode_change_counts_under_dir_globs() {
        let mut after = original();
        after.entries.insert("eval".into(), dir(0o777));
        let c = Changes::compare(&original(), &after, &globs(&["eval/**"]));
        assert_eq!(c.tampered, ["eval"]);
        let c = Changes::compare(&original(), &after, &globs(&["data/**"]));
        assert!(!c.is_tampered());
        assert_eq!(c.render(), "M eval\n");
    }

    #[test]
    fn directory_sizes_do_not_matter() {
        let mut after = original();
        after.entries.insert("eval".into(), Entry { size: 4096, ..dir(0o755) });
        assert_eq!(Changes::compare(&original(), &after, &globs(&["eval/**"])), Changes::default());
    }

    #[test]
    fn paths_with_newlines_stay_on_one_line() {
        let after = manifest(&[("a\nD eval/score.py", file(0o644, "x"))]);
        let c = Changes::compare(&Manifest::default(), &after, &globs(&[]));
        assert_eq!(c.render(), "A a\\nD eval/score.py\n");
    }

    #[test]
    fn an_incomplete_survey_is_recorded_and_unreached_originals_are_tampered() {
        let mut after = original();
        after.entries.retain(|p, _| !p.starts_with("eval/"));
        after.incomplete = Some("took longer than 300 s".into());
        let c = Changes::compare(&original(), &after, &globs(&["eval/**"]));
        assert_eq!(c.incomplete.as_deref(), Some("took longer than 300 s"));
        assert_eq!(c.tampered, ["eval/ref.json", "eval/score.py"]);
        assert!(c.render().starts_with("# incomplete: took longer than 300 s\nD eval/ref.json\n"));
    }

    #[test]
    fn a_huge_listing_is_cut_with_a_count() {
        let long = "x".repeat(4000);
        let after = Manifest {
            entries: (0..1000).map(|i| (format!("{long}/{i:04}"), file(0o644, ""))).collect(),
            incomplete: None,
        };
        let text = Changes::compare(&Manifest::default(), &after, &globs(&[])).render();
        assert!(text.len() <= MAX_RENDERED + 100, "{}", text.len());
        let last = text.lines().last().unwrap();
        let listed = text.lines().filter(|l| l.starts_with("A ")).count();
        assert_eq!(last, format!("# truncated: {} more change(s) not listed", 1000 - listed));
        assert!(listed > 200, "{listed}");
    }
}
