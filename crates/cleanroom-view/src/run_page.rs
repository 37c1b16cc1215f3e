//! `/runs/<run>`: a run's progress, its trials (filtered by the query
//! string, each linked to its page), links to compare its agents, and the
//! HTML report's sections (DeployBench's table with intervals, slices,
//! charts, failures, the task × agent matrix linked to the trials).

use std::collections::BTreeSet;
use std::fmt::Write;

use cleanroom_report::tables::outcome_text;
use cleanroom_report::{render_html_sections, why, Links, Report, ReportInput, RunInput, SliceBy};
use cleanroom_store::{RunConfig, TrialRecord};

use crate::filter::Filter;
use crate::page::{h, page, query, run_href, trial_href};
use crate::source::{LoadedRun, RunState};

/// Trials listed on the page; the filters narrow the rest down.
pub const TRIALS_SHOWN: usize = 500;

/// Seconds between reloads of a running run's page.
pub const REFRESH_SECONDS: u32 = 5;

struct ViewLinks;

impl Links for ViewLinks {
    fn trial(&self, run_id: &str, r: &TrialRecord) -> String {
        trial_href(run_id, r)
    }

    fn trials(&self, run_id: &str, task: &str, agent_id: &str) -> String {
        format!("{}{}#trials", run_href(run_id), query(&[("task", task), ("agent", agent_id)]))
    }
}

/// The report of one run, its task metadata from run.toml.
pub fn run_report(run: &LoadedRun) -> Report {
    let config = &run.entry.config;
    let mut notes = Vec::new();
    let tasks = if config.task_info.is_empty() {
        notes.push(
            "this run's run.toml has no task metadata (made before cleanroom kept it): no slices".into(),
        );
        None
    } else {
        Some(config.task_info.clone())
    };
    let input = ReportInput {
        runs: vec![RunInput {
            run_id: run.entry.run_id.clone(),
            agents: config.agents.iter().map(|a| a.id.clone()).collect(),
            records: run.records.clone(),
            gates: config.agent_gates(),
        }],
        tasks,
        notes,
    };
    Report::build(input, SliceBy::Domain)
}

pub fn render_run(run: &LoadedRun, filter: &Filter) -> String {
    let entry = &run.entry;
    let config = &entry.config;
    let report = run_report(run);
    let mut o = String::new();
    let _ = writeln!(o, "<h1>Run {}</h1>", h(&entry.run_id));
    let _ = writeln!(
        o,
        "<p class=\"meta\">Created {} · backend {} · cleanroom {} · gate {} · {} trial{} per task and agent</p>",
        h(&config.created),
        h(&config.backend),
        h(&config.tool_version),
        gates(config),
        config.trials,
        if config.trials == 1 { "" } else { "s" }
    );
    progress(&mut o, run);
    trials(&mut o, run, filter);
    compare_links(&mut o, run);
    if run.records.is_empty() {
        o.push_str(
            "<p class=\"explain\">No trial has finished yet: the tables appear with the first result.</p>\n",
        );
    } else {
        o.push_str(&render_html_sections(&report, Some(&ViewLinks)));
    }
    let refresh = (entry.state == RunState::Running).then_some(REFRESH_SECONDS);
    page(&format!("run {}", entry.run_id), &[(run_href(&entry.run_id), entry.run_id.clone())], &o, refresh)
}

/// The gates the run's agents ran under, each once, in their order: two
/// for a run of `--gate off --gate enforced`.
fn gates(config: &RunConfig) -> String {
    let mut gates: Vec<&str> = Vec::new();
    for gate in config.agents.iter().map(|a| config.gate_of(a).as_str()) {
        if !gates.contains(&gate) {
            gates.push(gate);
        }
    }
    if gates.is_empty() {
        gates.push(config.gate.as_str());
    }
    gates.join(", ")
}

fn progress(o: &mut String, run: &LoadedRun) {
    let entry = &run.entry;
    let planned = entry.planned;
    let done = run.records.len();
    let last = run.records.iter().max_by(|a, b| a.finished_at.cmp(&b.finished_at));
    let last = last
        .map(|r| format!("; last finished: {} · {} #{} ({})", r.task, r.agent_id, r.trial, outcome_text(r)));
    let text = match entry.state {
        RunState::Running => format!(
            "Running: {done} of {planned} trials done{}. This page reloads every {REFRESH_SECONDS} s.",
            last.unwrap_or_default()
        ),
        RunState::Stopped => format!(
            "Stopped at {done} of {planned} trials, with no cleanroom attached: `cleanroom run --resume` of this run finishes it."
        ),
        RunState::Finished => format!("Finished: {done} of {planned} trials."),
    };
    let _ = writeln!(
        o,
        "<p class=\"progress\"><span class=\"badge {}\">{}</span> {}</p>",
        entry.state.as_str(),
        entry.state.as_str(),
        h(&text)
    );
}

fn trials(o: &mut String, run: &LoadedRun, filter: &Filter) {
    let config = &run.entry.config;
    o.push_str("<h2 id=\"trials\">Trials</h2>\n");
    filter_form(o, run, filter);
    let shown: Vec<&TrialRecord> =
        run.records.iter().filter(|r| filter.matches(r, config.task_info.get(&r.task))).collect();
    let _ = writeln!(
        o,
        "<p class=\"explain\">{} of {} trials{}.</p>",
        shown.len(),
        run.records.len(),
        if filter.is_empty() { "" } else { " match the filters" }
    );
    if shown.is_empty() {
        return;
    }
    o.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>trial</th><th class=\"text\">outcome</th>\
         <th class=\"text\">first failure</th><th class=\"text\">tags</th><th>time</th></tr></thead>\n<tbody>\n",
    );
    for r in shown.iter().take(TRIALS_SHOWN) {
        let failure = why(r).map(|w| w.text).unwrap_or_default();
        let tags: Vec<&str> = r.tags.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(
            o,
            "<tr><td><a href=\"{}\">{} · {} #{}</a></td><td class=\"text\"><span class=\"badge {}\">{}</span></td>\
             <td class=\"wrap\">{}</td><td class=\"text\">{}</td><td>{:.1} s</td></tr>",
            h(&trial_href(&run.entry.run_id, r)),
            h(&r.task),
            h(&r.agent_id),
            r.trial,
            r.outcome.as_str(),
            h(&outcome_text(r)),
            h(&failure),
            h(&tags.join(", ")),
            r.timings.total()
        );
    }
    o.push_str("</tbody>\n</table></div>\n");
    if shown.len() > TRIALS_SHOWN {
        let _ = writeln!(
            o,
            "<p class=\"explain\">… {} more: narrow the filters to see them.</p>",
            shown.len() - TRIALS_SHOWN
        );
    }
}

/// A form of selects, one per filter field, with the values this run has.
fn filter_form(o: &mut String, run: &LoadedRun, filter: &Filter) {
    let config = &run.entry.config;
    let records = &run.records;
    let values = |f: &dyn Fn(&TrialRecord) -> Vec<String>| -> Vec<String> {
        records.iter().flat_map(f).collect::<BTreeSet<_>>().into_iter().collect()
    };
    let fields: [(&str, Vec<String>); 6] = [
        ("task", values(&|r| vec![r.task.clone()])),
        ("agent", values(&|r| vec![r.agent_id.clone()])),
        (
            "domain",
            config
                .task_info
                .values()
                .map(|t| t.domain.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        ),
        ("outcome", values(&|r| vec![r.outcome.as_str().to_string()])),
        ("class", values(&|r| r.class.map(|c| c.as_str().to_string()).into_iter().collect())),
        ("tag", values(&|r| r.tags.iter().map(|t| t.name.clone()).collect())),
    ];
    let _ = write!(
        o,
        "<form class=\"filters\" method=\"get\" action=\"{}#trials\">",
        h(&run_href(&run.entry.run_id))
    );
    for ((name, options), (_, current)) in fields.iter().zip(filter.fields()) {
        let _ = write!(o, "<label>{name} <select name=\"{name}\"><option value=\"\">all</option>");
        for v in options {
            let selected = if current == Some(v.as_str()) { " selected" } else { "" };
            let _ = write!(o, "<option value=\"{}\"{selected}>{}</option>", h(v), h(v));
        }
        o.push_str("</select></label>");
    }
    o.push_str("<button type=\"submit\">filter</button></form>\n");
}

fn compare_links(o: &mut String, run: &LoadedRun) {
    let agents: Vec<&str> = run.entry.config.agents.iter().map(|a| a.id.as_str()).collect();
    if agents.len() < 2 {
        return;
    }
    o.push_str("<p class=\"meta\">Compare: ");
    let mut links = Vec::new();
    for (i, a) in agents.iter().enumerate() {
        for b in &agents[i + 1..] {
            let run_id = &run.entry.run_id;
            let href = format!(
                "/compare{}",
                query(&[("a", &format!("{run_id}/{a}")), ("b", &format!("{run_id}/{b}"))])
            );
            links.push(format!("<a href=\"{}\">{} vs {}</a>", h(&href), h(a), h(b)));
        }
    }
    o.push_str(&links.join(" · "));
    o.push_str("</p>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(gate: &str, agents: &str) -> RunConfig {
        let head =
            "tool_version = \"0\"\ncreated = \"\"\nrun_id = \"r\"\nbackend = \"sandbox\"\ntasks = []\n\
                    trials = 1\njobs = 1\ntimeout_multiplier = 1.0\nretries = 1\n";
        toml::from_str(&format!("{head}gate = \"{gate}\"\n{agents}")).unwrap()
    }

    #[test]
    fn the_meta_line_names_every_gate_the_agents_ran_under() {
        let plain = "[[agents]]\nspec = \"nop\"\nid = \"nop\"\n";
        assert_eq!(gates(&config("enforced", plain)), "enforced");
        let both = "[[agents]]\nspec = \"nop\"\nid = \"nop-gate-off\"\ngate = \"off\"\n\
                    [[agents]]\nspec = \"nop\"\nid = \"nop-gate-enforced\"\ngate = \"enforced\"\n";
        assert_eq!(gates(&config("off", both)), "off, enforced");
        assert_eq!(gates(&config("advisory", "agents = []\n")), "advisory", "a run of no agent has its own");
    }
}
