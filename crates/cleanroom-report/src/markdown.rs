//! The Markdown report: DeployBench's table (agents as columns, Overall
//! then one row per slice, each cell with n and a Wilson interval), then
//! repeated-trial statistics, paired comparisons, the completion gate's
//! effect, the failure analysis, the task × agent matrix, and cost, tokens
//! and time. Every string from a task, an agent SPEC or an environment
//! goes through `escape_md`.

use std::fmt::Write;

use crate::escape::escape_md as md;
use crate::format::plural;
use crate::model::{Report, SliceBy, PAIRING_RULE, SUSPECTED};
use crate::tables::{self, outcome_text, Cell, Table};

/// Trials listed under one tag, and evidence lines under one trial; the
/// rest is in the trials' result.json.
pub(crate) const TAG_TRIALS_SHOWN: usize = 20;
pub(crate) const EVIDENCE_SHOWN: usize = 5;

pub fn render_markdown(report: &Report) -> String {
    let mut o = String::new();
    header(&mut o, report);

    o.push_str("## Pass rate\n\n");
    let _ = writeln!(o, "{}\n", tables::EXPLAIN_RATE);
    if report.by == SliceBy::Tag {
        let _ = writeln!(o, "{}\n", tables::EXPLAIN_TAG_SLICES);
    }
    table(&mut o, &tables::pass_rates(report));
    if report.tasks.is_none() {
        o.push_str("No rows per slice: the tasks' metadata could not be loaded.\n\n");
    }

    if let Some(t) = tables::repeats(report) {
        o.push_str("## Repeated trials\n\n");
        let _ = writeln!(o, "{}\n", tables::EXPLAIN_REPEATS);
        table(&mut o, &t);
    }
    if let Some((t, folded)) = tables::comparisons(report) {
        o.push_str("## Paired comparisons\n\n");
        let _ = writeln!(o, "On the tasks both agents ran: {PAIRING_RULE}. {}\n", tables::EXPLAIN_PAIRS);
        if !t.rows.is_empty() {
            table(&mut o, &t);
        }
        if folded > 0 {
            let _ = writeln!(o, "{}\n", tables::folded_pairs(folded));
        }
    }
    if let Some((t, few)) = tables::gate_effect(report) {
        o.push_str("## Gate effect\n\n");
        let _ = writeln!(o, "On the tasks both columns ran: {PAIRING_RULE}. {}\n", tables::EXPLAIN_GATE);
        table(&mut o, &t);
        if few {
            let _ = writeln!(o, "{}\n", tables::few_gate_tasks());
        }
    }

    failures(&mut o, report);

    o.push_str("## Task × agent\n\n");
    let _ = writeln!(o, "{}\n", tables::EXPLAIN_MATRIX);
    table(&mut o, &tables::matrix(report, false));

    o.push_str("## Cost, tokens and time\n\n");
    if !tables::has_spend(report) {
        let _ = writeln!(o, "{}\n", tables::NO_SPEND);
    }
    table(&mut o, &tables::costs(report));
    o
}

fn cell(c: &Cell) -> String {
    let text = if c.ours { c.text.clone() } else { md(&c.text) };
    match &c.detail {
        Some(d) => format!("{text} {d}"),
        None => text,
    }
}

/// A Markdown table; text columns left-aligned, numbers right-aligned;
/// the Overall row in bold.
fn table(o: &mut String, t: &Table) {
    let head: Vec<String> = t.head.iter().map(cell).collect();
    let _ = writeln!(o, "| {} |", head.join(" | "));
    let align: Vec<&str> = (0..head.len()).map(|i| if i < t.text_columns { "---" } else { "---:" }).collect();
    let _ = writeln!(o, "|{}|", align.join("|"));
    for row in &t.rows {
        let mut cells: Vec<String> = row.cells.iter().map(cell).collect();
        if row.class == Some("overall") {
            cells[0] = format!("**{}**", cells[0]);
        }
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
}

fn header(o: &mut String, report: &Report) {
    o.push_str("# cleanroom report\n\n");
    let runs: Vec<String> =
        report.runs.iter().map(|r| format!("{} ({} trials)", md(&r.run_id), r.trials)).collect();
    let _ = writeln!(o, "Runs: {}.  ", runs.join(", "));
    let agents: Vec<String> = report
        .arms
        .iter()
        .map(|a| {
            let model = a.model.as_deref().map(|m| format!(", model {}", md(m))).unwrap_or_default();
            format!("{} = {}{model}", md(&a.label), md(&a.agent))
        })
        .collect();
    let agents = if agents.is_empty() { "none with a result yet".to_string() } else { agents.join("; ") };
    let _ = writeln!(o, "Agents: {agents}.  ");
    for sentence in report.runs.iter().filter_map(|r| r.packages_sentence()) {
        let _ = writeln!(o, "{}  ", md(&sentence));
    }
    let outside = report.outside();
    let _ = writeln!(o, "{}", md(&outside.sentence()));
    for line in outside.suspected_lines(&report.arms) {
        let _ = writeln!(o, "\n> **Suspected:** {} {}", md(&line), md(SUSPECTED));
    }
    for note in &report.notes {
        let _ = writeln!(o, "\n> Note: {}", md(note));
    }
    o.push('\n');
}

fn failed_trials(o: &mut String, report: &Report) {
    o.push_str("### Failed trials\n\n");
    let (t, more) = tables::failed_trials(report);
    if t.rows.is_empty() {
        o.push_str("No trial failed.\n\n");
        return;
    }
    let _ = writeln!(o, "{}\n", tables::EXPLAIN_FAILED);
    table(o, &t);
    if more > 0 {
        let _ = writeln!(o, "… {more} more failed trial{}: see the JSON report.\n", plural(more));
    }
}

fn failures(o: &mut String, report: &Report) {
    o.push_str("## Failure analysis\n\n");
    let failed: u64 = (0..report.arms.len()).map(|a| report.counts(a).failed).sum();
    let _ = writeln!(
        o,
        "{failed} failed trial{}; shares are of each column's failures.\n",
        plural(failed as usize)
    );
    o.push_str("### Classes\n\n");
    table(o, &tables::classes(report));
    o.push_str("### Stage reached by failed trials\n\n");
    table(o, &tables::stages(report));
    failed_trials(o, report);

    o.push_str("### Tags\n\n");
    let tags = report.tags();
    if tags.is_empty() {
        o.push_str("No trial carries a classifier tag.\n\n");
        return;
    }
    table(o, &tables::tags(report, &tags));
    for t in &tags {
        let _ = writeln!(o, "#### {}\n", md(&t.name));
        for &i in t.trials.iter().take(TAG_TRIALS_SHOWN) {
            let trial = &report.trials[i];
            let r = &trial.record;
            let tag = r.tags.iter().find(|g| g.name == t.name).expect("tag of its trial");
            let _ = writeln!(
                o,
                "- {} · {} #{} ({})",
                md(&r.task),
                md(&report.arms[trial.arm].label),
                r.trial,
                outcome_text(r)
            );
            for e in tag.evidence.iter().take(EVIDENCE_SHOWN) {
                let _ = writeln!(o, "  - {}:{}: {}", md(&e.file), e.line, md(&e.text));
            }
            if tag.evidence.len() > EVIDENCE_SHOWN {
                let _ = writeln!(o, "  - … {} more in result.json", tag.evidence.len() - EVIDENCE_SHOWN);
            }
        }
        if t.trials.len() > TAG_TRIALS_SHOWN {
            let _ = writeln!(o, "- … {} more trials", t.trials.len() - TAG_TRIALS_SHOWN);
        }
        o.push('\n');
    }
}
