//! The HTML report: one self-contained file (inline CSS and SVG; no
//! script, no font, no image, no request of any kind) with the Markdown
//! report's tables and three charts: pass rate per slice with interval
//! bars, outcomes and failure classes as stacked bars, and time per trial.
//!
//! Every string from a task, an agent SPEC or an environment goes through
//! `escape_html`. As a second line of defence the page carries a Content
//! Security Policy that forbids scripts and every network fetch, so even a
//! string that escaped escaping could not run or phone home.

use std::fmt::Write;

use cleanroom_store::{Outcome, TrialRecord};

use crate::escape::escape_html as h;
use crate::format::{duration, plural};
use crate::markdown::{EVIDENCE_SHOWN, TAG_TRIALS_SHOWN};
use crate::model::{Rate, Report, SliceBy, PAIRING_RULE, SUSPECTED};
use crate::segment::Segment;
use crate::svg::{self, arm_color, Dot};
use crate::tables::{self, outcome_text, Table};

pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

pub const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: #222; margin: 0;
       background: #fafafa; line-height: 1.45; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 28px 60px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 6px; }
h2 { font-size: 20px; margin: 34px 0 8px; padding-bottom: 4px; border-bottom: 2px solid #eee; }
h3 { font-size: 16px; margin: 22px 0 6px; }
p.meta { color: #555; margin: 2px 0; }
p.note { background: #fff7e0; border-left: 4px solid #e6a700; padding: 6px 10px; margin: 10px 0; }
p.explain { color: #555; font-size: 14px; margin: 4px 0 10px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 14px; }
th, td { padding: 4px 10px; border-bottom: 1px solid #e6e6e6; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; font-weight: 600; white-space: normal; max-width: 180px; vertical-align: bottom; }
td:first-child { white-space: normal; min-width: 110px; }
.scroll { overflow-x: auto; }
span.ci { color: #666; font-size: 12px; }
th:first-child, td:first-child { text-align: left; }
td.wrap { white-space: normal; text-align: left; min-width: 180px; }
td.path { white-space: normal; text-align: left; word-break: break-all; font-size: 12px;
          font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
th.text, td.text { text-align: left; }
tr.overall td { font-weight: 600; background: #f7fbff; }
tr.outside td { color: #777; }
td.m { text-align: center; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
td.pass { background: #e3f4ea; } td.fail { background: #fbe5e1; } td.mixed { background: #fff2cc; }
td.none { background: #eeeeee; color: #777; }
.chart { margin: 10px 0 6px; overflow-x: auto; }
.chart svg { max-width: 100%; height: auto; }
ul.agents { margin: 4px 0 8px; padding-left: 20px; color: #444; }
ul.agents li { overflow-wrap: anywhere; }
ul.ev { margin: 2px 0 8px; padding-left: 22px; font-size: 13px; }
ul.ev li code, .tag-trials code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px;
       background: #f5f5f5; padding: 0 3px; word-break: break-all; }
.small { color: #666; font-size: 13px; }
";

/// Links from a report's cells to the viewer's pages.
pub trait Links {
    /// A trial's page.
    fn trial(&self, run_id: &str, r: &TrialRecord) -> String;
    /// The trials of one task and agent of a run.
    fn trials(&self, run_id: &str, task: &str, agent_id: &str) -> String;
}

pub fn render_html(report: &Report) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <title>cleanroom report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        h(&report.runs.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>().join(", "))
    );
    o.push_str("<h1>cleanroom report</h1>\n");
    o.push_str(&render_html_sections(report, None));
    o.push_str("</main>\n</body>\n</html>\n");
    o
}

/// The report's sections without the page around them (for the viewer,
/// which links matrix cells and failed trials to their pages).
pub fn render_html_sections(report: &Report, links: Option<&dyn Links>) -> String {
    let mut o = String::new();
    header(&mut o, report);

    o.push_str("<h2>Pass rate</h2>\n");
    explain(&mut o, tables::EXPLAIN_RATE);
    if report.by == SliceBy::Tag {
        explain(&mut o, tables::EXPLAIN_TAG_SLICES);
    }
    table(&mut o, &tables::pass_rates(report));
    if report.tasks.is_none() {
        o.push_str("<p class=\"note\">No rows per slice: the tasks' metadata could not be loaded.</p>\n");
    }
    rate_chart(&mut o, report);

    if let Some(t) = tables::repeats(report) {
        o.push_str("<h2>Repeated trials</h2>\n");
        explain(&mut o, tables::EXPLAIN_REPEATS);
        table(&mut o, &t);
    }
    if let Some((t, folded)) = tables::comparisons(report) {
        o.push_str("<h2>Paired comparisons</h2>\n");
        explain(&mut o, &format!("On the tasks both agents ran: {PAIRING_RULE}. {}", tables::EXPLAIN_PAIRS));
        if !t.rows.is_empty() {
            table(&mut o, &t);
        }
        if folded > 0 {
            explain(&mut o, &tables::folded_pairs(folded));
        }
    }
    if let Some((t, few)) = tables::gate_effect(report) {
        o.push_str("<h2>Gate effect</h2>\n");
        explain(&mut o, &format!("On the tasks both columns ran: {PAIRING_RULE}. {}", tables::EXPLAIN_GATE));
        table(&mut o, &t);
        if few {
            explain(&mut o, &tables::few_gate_tasks());
        }
    }

    failures(&mut o, report, links);
    times(&mut o, report);

    o.push_str("<h2>Task × agent</h2>\n");
    explain(&mut o, tables::EXPLAIN_MATRIX);
    let mut matrix = tables::matrix(report, true);
    if let Some(links) = links {
        link_matrix(&mut matrix, report, links);
    }
    table(&mut o, &matrix);

    o.push_str("<h2>Cost, tokens and time</h2>\n");
    if !tables::has_spend(report) {
        explain(&mut o, tables::NO_SPEND);
    }
    table(&mut o, &tables::costs(report));
    o
}

/// Each matrix cell links to its trial, or to the list of its trials.
fn link_matrix(matrix: &mut Table, report: &Report, links: &dyn Links) {
    let first_arm = matrix.text_columns;
    for (row, task) in matrix.rows.iter_mut().zip(&report.task_ids) {
        for (a, arm) in report.arms.iter().enumerate() {
            let trials = report.cell(task, a);
            row.cells[first_arm + a].href = match trials.as_slice() {
                [] => None,
                [one] => Some(links.trial(&arm.run_id, one)),
                _ => Some(links.trials(&arm.run_id, task, &arm.agent_id)),
            };
        }
    }
}

/// Every cell and link of `t`, escaped, as an HTML table.
pub fn html_table(t: &Table) -> String {
    let mut o = String::new();
    table(&mut o, t);
    o
}

fn explain(o: &mut String, text: &str) {
    let _ = writeln!(o, "<p class=\"explain\">{}</p>", h(text));
}

/// Every cell is escaped, ours too (a p-value can read `<0.001`).
fn table(o: &mut String, t: &Table) {
    o.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for (i, c) in t.head.iter().enumerate() {
        let class = if i > 0 && i < t.text_columns { " class=\"text\"" } else { "" };
        let _ = write!(o, "<th{class}>{}</th>", breakable(&h(&c.text)));
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        match row.class {
            Some(c) => {
                let _ = write!(o, "<tr class=\"{c}\">");
            }
            None => o.push_str("<tr>"),
        }
        for (i, c) in row.cells.iter().enumerate() {
            o.push_str("<td");
            if i < t.text_columns && i > 0 && c.class.is_none() {
                o.push_str(" class=\"text\"");
            }
            if let Some(class) = c.class {
                let class = if matches!(class, "wrap" | "path") { class } else { class_with_m(class) };
                let _ = write!(o, " class=\"{class}\"");
            }
            if let Some(title) = &c.title {
                let _ = write!(o, " title=\"{}\"", h(title));
            }
            match &c.href {
                Some(href) => {
                    let _ = write!(o, "><a href=\"{}\">{}</a>", h(href), h(&c.text));
                }
                None => {
                    let _ = write!(o, ">{}", h(&c.text));
                }
            }
            if let Some(d) = &c.detail {
                let _ = write!(o, "<br/><span class=\"ci\">{}</span>", h(d));
            }
            o.push_str("</td>");
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody>\n</table></div>\n");
}

/// Escaped `text` with a line-break opportunity after each `@`, `-`, `/`
/// and `_`, so that long agent labels wrap at their natural joints rather
/// than widening every column. Entities hold none of these characters.
fn breakable(escaped: &str) -> String {
    let mut out = String::with_capacity(escaped.len() + 16);
    for c in escaped.chars() {
        out.push(c);
        if matches!(c, '@' | '-' | '/' | '_') {
            out.push_str("<wbr/>");
        }
    }
    out
}

/// Matrix cells are monospaced and coloured by their class.
fn class_with_m(class: &str) -> &'static str {
    match class {
        "pass" => "m pass",
        "fail" => "m fail",
        "mixed" => "m mixed",
        _ => "m none",
    }
}

fn header(o: &mut String, report: &Report) {
    let runs: Vec<String> =
        report.runs.iter().map(|r| format!("{} ({} trials)", h(&r.run_id), r.trials)).collect();
    let _ = writeln!(o, "<p class=\"meta\">Runs: {}</p>", runs.join(", "));
    for sentence in report.runs.iter().filter_map(|r| r.packages_sentence()) {
        let _ = writeln!(o, "<p class=\"meta\">{}</p>", h(&sentence));
    }
    let agents: Vec<String> = report
        .arms
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let model = a.model.as_deref().map(|m| format!(", model {}", h(m))).unwrap_or_default();
            let spec = if a.agent == a.label { String::new() } else { format!(": {}", h(&a.agent)) };
            format!(
                "<li><span style=\"color:{}\">■</span> <b>{}</b>{spec}{model} <span class=\"small\">(run {})</span></li>",
                arm_color(i),
                h(&a.label),
                h(&a.run_id)
            )
        })
        .collect();
    if agents.is_empty() {
        o.push_str("<p class=\"meta\">Agents: none with a result yet.</p>\n");
    } else {
        let _ = writeln!(o, "<p class=\"meta\">Agents:</p>\n<ul class=\"agents\">{}</ul>", agents.concat());
    }
    let outside = report.outside();
    let _ = writeln!(o, "<p class=\"meta\">{}</p>", h(&outside.sentence()));
    for line in outside.suspected_lines(&report.arms) {
        let _ = writeln!(o, "<p class=\"suspected\">{}: {}</p>", h(&line), h(SUSPECTED));
    }
    for note in &report.notes {
        let _ = writeln!(o, "<p class=\"note\">{}</p>", h(note));
    }
}

fn rate_chart(o: &mut String, report: &Report) {
    let mut groups: Vec<(String, Vec<Rate>)> =
        vec![("Overall".to_string(), (0..report.arms.len()).map(|a| report.overall(a)).collect())];
    groups.extend(report.slices().unwrap_or_default().into_iter().map(|s| (s.label, s.cells)));
    let labels: Vec<String> = report.arms.iter().map(|a| a.label.clone()).collect();
    let _ = writeln!(
        o,
        "<h3>Pass rate by {} with 95% intervals</h3>\n<div class=\"chart\">{}</div>",
        report.by.as_str(),
        svg::rate_chart(&groups, &labels)
    );
}

fn failures(o: &mut String, report: &Report, links: Option<&dyn Links>) {
    o.push_str("<h2>Failure analysis</h2>\n");
    let counts: Vec<_> = (0..report.arms.len()).map(|a| report.counts(a)).collect();
    let all = Segment::all();
    let rows: Vec<(String, Vec<u64>)> = report
        .arms
        .iter()
        .zip(&counts)
        .map(|(arm, c)| (arm.label.clone(), all.iter().map(|s| s.count(c)).collect()))
        .collect();
    // Only the segments that occur, so the legend lists nothing absent.
    let used: Vec<usize> = (0..all.len()).filter(|&k| rows.iter().any(|(_, v)| v[k] > 0)).collect();
    let segments: Vec<(&str, &str)> = used.iter().map(|&k| all[k].legend()).collect();
    let rows: Vec<(String, Vec<u64>)> =
        rows.into_iter().map(|(l, v)| (l, used.iter().map(|&k| v[k]).collect())).collect();
    let _ = writeln!(
        o,
        "<h3>Outcomes and failure classes</h3>\n<div class=\"chart\">{}</div>",
        svg::stacked_chart(&rows, &segments)
    );

    let failed: u64 = counts.iter().map(|c| c.failed).sum();
    explain(
        o,
        &format!("{failed} failed trial{}; shares are of each column's failures.", plural(failed as usize)),
    );
    table(o, &tables::classes(report));
    o.push_str("<h3>Stage reached by failed trials</h3>\n");
    table(o, &tables::stages(report));
    failed_trials(o, report, links);

    o.push_str("<h3>Tags</h3>\n");
    let tags = report.tags();
    if tags.is_empty() {
        explain(o, "No trial carries a classifier tag.");
        return;
    }
    table(o, &tables::tags(report, &tags));
    for t in &tags {
        let _ = writeln!(o, "<h3>Tag {}</h3>\n<ul class=\"tag-trials\">", h(&t.name));
        for &i in t.trials.iter().take(TAG_TRIALS_SHOWN) {
            let trial = &report.trials[i];
            let r = &trial.record;
            let tag = r.tags.iter().find(|g| g.name == t.name).expect("tag of its trial");
            let _ = write!(
                o,
                "<li>{} · {} #{} ({})<ul class=\"ev\">",
                h(&r.task),
                h(&report.arms[trial.arm].label),
                r.trial,
                h(&outcome_text(r))
            );
            for e in tag.evidence.iter().take(EVIDENCE_SHOWN) {
                let _ = write!(o, "<li>{}:{}: <code>{}</code></li>", h(&e.file), e.line, h(&e.text));
            }
            if tag.evidence.len() > EVIDENCE_SHOWN {
                let _ = write!(o, "<li>… {} more in result.json</li>", tag.evidence.len() - EVIDENCE_SHOWN);
            }
            o.push_str("</ul></li>\n");
        }
        if t.trials.len() > TAG_TRIALS_SHOWN {
            let _ = writeln!(o, "<li>… {} more trials</li>", t.trials.len() - TAG_TRIALS_SHOWN);
        }
        o.push_str("</ul>\n");
    }
}

fn failed_trials(o: &mut String, report: &Report, links: Option<&dyn Links>) {
    o.push_str("<h3>Failed trials</h3>\n");
    let (mut t, more) = tables::failed_trials(report);
    if let Some(links) = links {
        for (row, (trial, _)) in t.rows.iter_mut().zip(crate::why::failed_trials(report)) {
            row.cells[0].href = Some(links.trial(&trial.run_id, &trial.record));
        }
    }
    if t.rows.is_empty() {
        explain(o, "No trial failed.");
        return;
    }
    explain(o, tables::EXPLAIN_FAILED);
    table(o, &t);
    if more > 0 {
        explain(o, &format!("… {more} more failed trial{}: see the JSON report.", plural(more)));
    }
}

fn times(o: &mut String, report: &Report) {
    let ran = |t: &&crate::model::Trial| t.record.outcome != Outcome::Skipped;
    let rows: Vec<(String, Vec<Dot>)> = report
        .arms
        .iter()
        .enumerate()
        .map(|(a, arm)| {
            let dots = report
                .trials
                .iter()
                .filter(|t| t.arm == a)
                .filter(ran)
                .map(|t| {
                    let r = &t.record;
                    Dot {
                        secs: r.timings.total(),
                        color: Segment::of(r).color(),
                        tip: format!(
                            "{} #{}: {}, {}",
                            r.task,
                            r.trial,
                            outcome_text(r),
                            duration(r.timings.total())
                        ),
                    }
                })
                .collect();
            (arm.label.clone(), dots)
        })
        .collect();
    if rows.iter().all(|(_, d)| d.is_empty()) {
        return;
    }
    let occurring: Vec<Segment> = report.trials.iter().filter(ran).map(|t| Segment::of(&t.record)).collect();
    let present: Vec<(&str, &str)> =
        Segment::all().into_iter().filter(|s| occurring.contains(s)).map(Segment::legend).collect();
    o.push_str("<h2>Time per trial</h2>\n");
    explain(
        o,
        "Total time of each trial (environment, agent and verification), one dot per trial, coloured by outcome; \
         the black tick is the median. Skipped trials did not run.",
    );
    let _ = writeln!(o, "<div class=\"chart\">{}</div>", svg::time_chart(&rows, &present));
}
