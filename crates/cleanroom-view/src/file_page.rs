//! `/runs/<run>/trials/<task>/<agent>/<n>/files/<name>`: one file of a
//! trial directory, escaped, each line with its number as an anchor, so
//! that a tag's evidence links to the very line (`#L120`).

use std::fmt::Write;

use crate::page::{h, h_log_line, page, run_href};

pub fn render_file(
    run_id: &str,
    trial_href: &str,
    trial_label: &str,
    name: &str,
    text: &str,
    cut: bool,
) -> String {
    let mut o = String::with_capacity(text.len() + text.len() / 2 + 1024);
    let _ = writeln!(o, "<h1>{}</h1>", h(name));
    if cut {
        let _ = writeln!(
            o,
            "<p class=\"note\">Only the first {} MiB are shown: the whole file is in the trial directory.</p>",
            crate::source::FILE_SHOWN >> 20
        );
    }
    o.push_str("<pre class=\"log\">");
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        // Each span is a block of its own: a newline as well would double
        // the spacing.
        let _ =
            write!(o, "<span id=\"L{n}\"><a class=\"ln\" href=\"#L{n}\">{n}</a>{}</span>", h_log_line(line));
    }
    o.push_str("</pre>\n");
    let trail = [
        (run_href(run_id), run_id.to_string()),
        (trial_href.to_string(), trial_label.to_string()),
        (crate::page::file_href(trial_href, name), name.to_string()),
    ];
    page(name, &trail, &o, None)
}
