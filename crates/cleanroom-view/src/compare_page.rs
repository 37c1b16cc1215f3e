//! `/compare?a=<run>/<agent>&b=<run>/<agent>`: two agents, of one run or
//! of two, side by side: the paired comparison (rates with counts, the
//! difference with its interval, McNemar), and the tasks where their
//! verdicts differ, each linked to both trials.

use std::fmt::Write;

use serde::Deserialize;

use cleanroom_report::tables::{comparisons, outcome_text, EXPLAIN_PAIRS};
use cleanroom_report::{html_table, Report, ReportInput, RunInput, SliceBy, PAIRING_RULE};

use crate::page::{h, page, trial_href};
use crate::source::{LoadedRun, RunEntry};

#[derive(Debug, Clone, Deserialize)]
pub struct CompareQuery {
    pub a: String,
    pub b: String,
}

/// One side: a run id and an agent id, from `RUN/AGENT`.
pub fn side(value: &str) -> Option<(&str, &str)> {
    value.rsplit_once('/')
}

/// Every agent of every run as a choice for the form: `RUN/AGENT`.
pub fn arm_options(runs: &[RunEntry]) -> Vec<(String, String)> {
    runs.iter()
        .flat_map(|r| {
            r.config
                .agents
                .iter()
                .map(move |a| (format!("{}/{}", r.run_id, a.id), format!("{} ({})", a.id, r.run_id)))
        })
        .collect()
}

fn only(run: &LoadedRun, agent: &str) -> RunInput {
    RunInput {
        run_id: run.entry.run_id.clone(),
        agents: vec![agent.to_string()],
        records: run.records.iter().filter(|r| r.agent_id == agent).cloned().collect(),
        gates: run.entry.config.agent_gates(),
    }
}

pub fn render_compare(a: (&LoadedRun, &str), b: (&LoadedRun, &str)) -> String {
    let ((run_a, agent_a), (run_b, agent_b)) = (a, b);
    let same_run = run_a.entry.run_id == run_b.entry.run_id;
    let runs = if same_run {
        let mut both = only(run_a, agent_a);
        both.agents.push(agent_b.to_string());
        both.records.extend(run_b.records.iter().filter(|r| r.agent_id == agent_b).cloned());
        vec![both]
    } else {
        vec![only(run_a, agent_a), only(run_b, agent_b)]
    };
    let mut tasks = run_a.entry.config.task_info.clone();
    for (k, v) in &run_b.entry.config.task_info {
        tasks.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let report = Report::build(ReportInput { runs, tasks: Some(tasks), notes: vec![] }, SliceBy::Domain);
    let label = |i: usize| report.arms.get(i).map_or("?".to_string(), |a| a.label.clone());
    let mut o = String::new();
    let _ = writeln!(o, "<h1>{} vs {}</h1>", h(&label(0)), h(&label(1)));
    let _ = writeln!(
        o,
        "<p class=\"meta\">A: {} of run {} · B: {} of run {}</p>",
        h(agent_a),
        h(&run_a.entry.run_id),
        h(agent_b),
        h(&run_b.entry.run_id)
    );
    let _ = writeln!(
        o,
        "<p class=\"explain\">On the tasks both agents ran: {}. {}</p>",
        h(PAIRING_RULE),
        h(EXPLAIN_PAIRS)
    );
    match comparisons(&report) {
        Some((table, _)) if !table.rows.is_empty() => o.push_str(&html_table(&table)),
        _ => o.push_str("<p class=\"note\">Too few tasks in common for a paired comparison.</p>\n"),
    }
    o.push_str("<h2>Tasks where they differ</h2>\n");
    let mut rows = String::new();
    let mut same = 0;
    let (first_a, first_b) = (report.first_judged(0), report.first_judged(1));
    for (task, ra) in &first_a {
        let Some(rb) = first_b.get(task) else { continue };
        if ra.outcome == rb.outcome {
            same += 1;
            continue;
        }
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td class=\"text\"><a href=\"{}\">{}</a></td><td class=\"text\"><a href=\"{}\">{}</a></td></tr>",
            h(task),
            h(&trial_href(&run_a.entry.run_id, ra)),
            h(&outcome_text(ra)),
            h(&trial_href(&run_b.entry.run_id, rb)),
            h(&outcome_text(rb))
        );
    }
    if rows.is_empty() {
        o.push_str("<p class=\"explain\">None: on every task both ran, their verdicts agree.</p>\n");
    } else {
        let _ = writeln!(
            o,
            "<div class=\"scroll\"><table>\n<thead><tr><th>task</th><th class=\"text\">A: {}</th><th class=\"text\">B: {}</th></tr></thead>\n<tbody>\n{rows}</tbody>\n</table></div>",
            h(&label(0)),
            h(&label(1))
        );
    }
    let _ = writeln!(
        o,
        "<p class=\"explain\">{same} task{} with the same verdict.</p>",
        if same == 1 { "" } else { "s" }
    );
    page(&format!("{} vs {}", label(0), label(1)), &[], &o, None)
}
