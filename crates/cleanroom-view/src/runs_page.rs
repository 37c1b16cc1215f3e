//! `/`: every run of the directory, newest first, with its state, agents
//! and counts, and a form to compare two agents.

use std::fmt::Write;

use crate::compare_page::arm_options;
use crate::page::{h, page, run_href};
use crate::source::RunEntry;

pub fn render_runs(dir: &str, runs: &[RunEntry]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "<h1>Runs</h1>\n<p class=\"meta\">In <code>{}</code>.</p>", h(dir));
    if runs.is_empty() {
        o.push_str("<p>No run here yet: <code>cleanroom run --tasks DIR --agent SPEC --out DIR</code> makes one.</p>\n");
        return page("runs", &[], &o, None);
    }
    o.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>run</th><th class=\"text\">created</th>\
         <th class=\"text\">state</th><th class=\"text\">backend</th><th class=\"text\">agents</th>\
         <th>trials</th><th>passed</th><th>failed</th><th>infra errors</th><th>skipped</th></tr></thead>\n<tbody>\n",
    );
    for run in runs {
        let agents: Vec<&str> = run.config.agents.iter().map(|a| a.id.as_str()).collect();
        let planned = run.planned;
        let (done, passed, failed, infra, skipped) = match &run.summary {
            Some(s) => {
                (s.totals.recorded, s.totals.passed, s.totals.failed, s.totals.infra_error, s.totals.skipped)
            }
            None => (0, 0, 0, 0, 0),
        };
        let _ = writeln!(
            o,
            "<tr><td><a href=\"{}\">{}</a></td><td class=\"text\">{}</td>\
             <td class=\"text\"><span class=\"badge {}\">{}</span></td><td class=\"text\">{}</td>\
             <td class=\"text\">{}</td><td>{done} of {planned}</td><td>{passed}</td><td>{failed}</td>\
             <td>{infra}</td><td>{skipped}</td></tr>",
            h(&run_href(&run.run_id)),
            h(&run.run_id),
            h(&run.config.created),
            run.state.as_str(),
            run.state.as_str(),
            h(&run.config.backend),
            h(&agents.join(", ")),
        );
    }
    o.push_str("</tbody>\n</table></div>\n");
    let options = arm_options(runs);
    if options.len() >= 2 {
        o.push_str(
            "<h2>Compare two agents</h2>\n<form class=\"filters\" method=\"get\" action=\"/compare\">",
        );
        for (name, label, pick) in [("a", "A", 0), ("b", "B", 1)] {
            let _ = write!(o, "<label>{label} <select name=\"{name}\">");
            for (k, (value, text)) in options.iter().enumerate() {
                let selected = if k == pick { " selected" } else { "" };
                let _ = write!(o, "<option value=\"{}\"{selected}>{}</option>", h(value), h(text));
            }
            o.push_str("</select></label>");
        }
        o.push_str("<button type=\"submit\">compare</button></form>\n");
    }
    page("runs", &[], &o, None)
}
