//! env-diff.txt (what the agent changed outside the artifact, one `A`,
//! `M` or `D` line per path) as a folded tree of directories, each with
//! how many changes it holds.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::page::h;

/// Paths drawn; past this the rest are counted (the file has them all).
const PATHS_SHOWN: usize = 5000;

#[derive(Default)]
struct Dir {
    dirs: BTreeMap<String, Dir>,
    /// (name, change letter)
    files: Vec<(String, char)>,
    changes: usize,
}

impl Dir {
    fn add(&mut self, parts: &[&str], kind: char) {
        self.changes += 1;
        match parts {
            [] => {}
            [name] => self.files.push((name.to_string(), kind)),
            [dir, rest @ ..] => self.dirs.entry(dir.to_string()).or_default().add(rest, kind),
        }
    }

    fn render(&self, o: &mut String, depth: usize) {
        o.push_str("<ul class=\"tree\">");
        for (name, dir) in &self.dirs {
            // A directory that is itself a change (`A /etc/gss`) shows once,
            // as the directory.
            let open = if depth == 0 { " open" } else { "" };
            let _ = write!(
                o,
                "<li><details{open}><summary>{}/ <span class=\"small\">({})</span></summary>",
                h(name),
                dir.changes
            );
            dir.render(o, depth + 1);
            o.push_str("</details></li>");
        }
        for (name, kind) in &self.files {
            if self.dirs.contains_key(name) {
                continue;
            }
            let _ = write!(o, "<li>{kind} {}</li>", h(name));
        }
        o.push_str("</ul>");
    }
}

/// The diff as a tree; its `#` comment lines as a summary above it.
pub fn render_env_diff(text: &str) -> String {
    let mut root = Dir::default();
    let mut notes = Vec::new();
    let mut left_out = 0usize;
    for line in text.lines() {
        if let Some(note) = line.strip_prefix('#') {
            notes.push(note.trim().to_string());
            continue;
        }
        let Some((kind, path)) = line.split_once(' ') else { continue };
        let kind = kind.chars().next().unwrap_or('?');
        if root.changes >= PATHS_SHOWN {
            left_out += 1;
            continue;
        }
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        root.add(&parts, kind);
    }
    let mut o = String::new();
    for note in &notes {
        let _ = writeln!(o, "<p class=\"small\">{}</p>", h(note));
    }
    if root.changes == 0 {
        o.push_str("<p class=\"small\">No change outside the artifact.</p>\n");
        return o;
    }
    o.push_str("<p class=\"small\">A added, M modified, D deleted.</p>");
    root.render(&mut o, 0);
    if left_out > 0 {
        let _ = writeln!(o, "<p class=\"small\">… {left_out} more paths in env-diff.txt.</p>");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_nest_under_their_directories_with_counts() {
        let text = "# 3 change(s)\nA /etc/a\nM /etc/sub/b\nD /usr/c\n";
        let html = render_env_diff(text);
        assert!(html.contains("etc/ <span class=\"small\">(2)</span>"), "{html}");
        assert!(html.contains("sub/ <span class=\"small\">(1)</span>"), "{html}");
        assert!(html.contains("<li>M b</li>") && html.contains("<li>D c</li>"), "{html}");
        assert!(html.contains("3 change(s)"));
    }

    #[test]
    fn names_are_escaped() {
        let html = render_env_diff("A /tmp/<script>x</script>\n");
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;"));
    }
}
