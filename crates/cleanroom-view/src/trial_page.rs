//! `/runs/<run>/trials/<task>/<agent>/<n>`: first, why the trial failed
//! (its first failed step or check with the exit code and the tail of that
//! step's output, the agent's error); then checks expected against
//! observed, the steps, tags with their evidence linked to the log lines,
//! the gate's decisions, timings, tokens and cost, the trajectory step by
//! step, verify.log, the env-diff as a tree, and the trial's files.

use std::fmt::Write;
use std::path::Path;

use cleanroom_report::tables::outcome_text;
use cleanroom_report::why;
use cleanroom_store::TrialRecord;
use cleanroom_verify::StepStatus;

use crate::env_diff::render_env_diff;
use crate::page::{file_href, folded_pre, h, h_lines, page, run_href, trial_href};
use crate::source::{optional_file, trial_files};
use crate::trajectory::{gate_decisions, render_trajectory};

/// Lines of the failed step's output shown under "why".
const TAIL_LINES: usize = 40;

pub fn render_trial(run_id: &str, r: &TrialRecord, dir: &Path) -> String {
    let href = trial_href(run_id, r);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<h1>{} · {} #{}</h1>\n<p class=\"meta\"><span class=\"badge {}\">{}</span> agent <code>{}</code>{} · attempt {}</p>",
        h(&r.task),
        h(&r.agent_id),
        r.trial,
        r.outcome.as_str(),
        h(&outcome_text(r)),
        h(&r.agent),
        r.model.as_deref().map(|m| format!(" · model {}", h(m))).unwrap_or_default(),
        r.attempt
    );
    let verify_log = optional_file(dir, "verify.log").map(|(text, _)| text);
    why_section(&mut o, r, &href, verify_log.as_deref());
    summary(&mut o, r);
    checks(&mut o, r);
    steps(&mut o, r);
    tags(&mut o, r, &href);
    let trajectory: Option<serde_json::Value> =
        optional_file(dir, "trajectory.json").and_then(|(text, _)| serde_json::from_str(&text).ok());
    gate(&mut o, r, trajectory.as_ref());
    o.push_str("<h2 id=\"trajectory\">Trajectory</h2>\n");
    match &trajectory {
        Some(t) => o.push_str(&render_trajectory(t)),
        None => o.push_str("<p class=\"explain\">No trajectory.json: this agent makes no model requests (oracle, nop, script), or it made none.</p>\n"),
    }
    o.push_str("<h2 id=\"verify-log\">verify.log</h2>\n");
    match &verify_log {
        Some(text) => {
            let _ = writeln!(
                o,
                "<p class=\"small\"><a href=\"{}\">the whole file, with line numbers</a></p>{}",
                h(&file_href(&href, "verify.log")),
                folded_pre(text, 400)
            );
        }
        None => o.push_str("<p class=\"explain\">No verify.log: verification did not run.</p>\n"),
    }
    o.push_str("<h2 id=\"env-diff\">Changes outside the artifact</h2>\n");
    match optional_file(dir, "env-diff.txt") {
        Some((text, _)) => o.push_str(&render_env_diff(&text)),
        None => o.push_str("<p class=\"explain\">No env-diff.txt.</p>\n"),
    }
    if let Some((text, _)) = optional_file(dir, "changes.txt").filter(|(t, _)| !t.trim().is_empty()) {
        o.push_str("<h3>Changes to the artifact</h3>\n");
        o.push_str(&folded_pre(&text, 40));
    }
    files(&mut o, dir, &href);
    let trail = [
        (run_href(run_id), run_id.to_string()),
        (href.clone(), format!("{} · {} #{}", r.task, r.agent_id, r.trial)),
    ];
    page(&format!("{} · {} #{}", r.task, r.agent_id, r.trial), &trail, &o, None)
}

fn why_section(o: &mut String, r: &TrialRecord, href: &str, verify_log: Option<&str>) {
    let Some(why) = why(r) else {
        let text = match r.outcome {
            cleanroom_store::Outcome::Skipped => {
                format!(
                    "Skipped: {}",
                    r.skip_reason.as_deref().unwrap_or("the backend cannot provide what the task needs")
                )
            }
            _ => "Passed: every verification step and check held.".to_string(),
        };
        let _ = writeln!(o, "<div class=\"why ok\">{}</div>", h(&text));
        return;
    };
    let _ = write!(
        o,
        "<div class=\"why\" id=\"why\"><b>Why it failed:</b> {} <span class=\"small\">(<a href=\"{}\">{}</a>)</span>",
        h(&why.text),
        h(&file_href(href, why.log)),
        h(why.log)
    );
    let failed_step = r
        .verdict
        .as_ref()
        .and_then(|v| v.steps.iter().find(|s| matches!(s.status, StepStatus::Failed | StepStatus::TimedOut)));
    if let (Some(step), Some(log)) = (failed_step, verify_log) {
        if let Some(tail) = step_output_tail(log, &step.name) {
            let _ = write!(
                o,
                "<p class=\"small\">The end of step {}'s output:</p><pre>{}</pre>",
                h(&step.name),
                h_lines(&tail)
            );
        }
    }
    if let Some(error) = &r.error {
        let _ = write!(o, "<p class=\"small\">The agent's error:</p><pre>{}</pre>", h_lines(error));
    }
    o.push_str("</div>\n");
}

/// The last lines verify.log holds for the step named `name`: from its
/// `== step k/N: name (stage)` header to the next `== ` line.
pub fn step_output_tail(log: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines.iter().position(|l| {
        l.starts_with("== step ")
            && l.split_once(": ").is_some_and(|(_, rest)| rest.starts_with(&format!("{name} (")))
    })?;
    let end =
        lines[start + 1..].iter().position(|l| l.starts_with("== ")).map_or(lines.len(), |k| start + 1 + k);
    let body = &lines[start + 1..end];
    Some(body[body.len().saturating_sub(TAIL_LINES)..].join("\n"))
}

fn summary(o: &mut String, r: &TrialRecord) {
    let mut rows: Vec<(&str, String)> = vec![
        ("outcome", outcome_text(r)),
        ("stage reached", r.stage.as_str().to_string()),
        ("stop reason", r.stop_reason.map_or("-".to_string(), |s| s.as_str().to_string())),
        ("exit code", r.exit_code.map_or("-".to_string(), |c| c.to_string())),
        ("completion gate", r.gate.as_str().to_string()),
        (
            "time",
            format!(
                "{:.1} s (environment {:.2} s, agent {:.1} s, verify {:.1} s)",
                r.timings.total(),
                r.timings.environment,
                r.timings.agent,
                r.timings.verify
            ),
        ),
        (
            "tokens",
            format!(
                "{} prompt, {} completion, {} cached",
                r.tokens.prompt, r.tokens.completion, r.tokens.cached
            ),
        ),
        ("cost", format!("${:.4}", r.cost_usd)),
        ("started", r.started_at.clone()),
        ("finished", r.finished_at.clone()),
    ];
    if let Some(steps) = r.steps {
        rows.push(("model requests", format!("{steps} ({} retried)", r.model_retries.unwrap_or(0))));
    }
    if let Some(limits) = &r.limits {
        rows.push(("limits", serde_json::to_string(limits).unwrap_or_default()));
    }
    if let Some(a) = &r.accelerator {
        rows.push(("accelerator", a.clone()));
    }
    if let Some(m) = &r.machine {
        rows.push(("machine", serde_json::to_string(m).unwrap_or_default()));
    }
    if let Some(e) = &r.executor {
        rows.push(("executor", format!("{} job {} on {}", e.name, e.job_id, e.node)));
    }
    if let Some(c) = &r.changes {
        rows.push((
            "artifact changes",
            format!("{} added, {} removed, {} modified", c.added, c.removed, c.modified),
        ));
    }
    o.push_str("<h2>Summary</h2>\n<div class=\"scroll\"><table>\n<tbody>\n");
    for (k, v) in rows {
        let _ = writeln!(o, "<tr><td>{k}</td><td class=\"wrap\">{}</td></tr>", h(&v));
    }
    o.push_str("</tbody>\n</table></div>\n");
}

fn checks(o: &mut String, r: &TrialRecord) {
    let Some(verdict) = &r.verdict else { return };
    o.push_str("<h2 id=\"checks\">Checks: expected and observed</h2>\n");
    if verdict.checks.is_empty() {
        o.push_str("<p class=\"explain\">The task has no checks.</p>\n");
        return;
    }
    o.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>check</th><th class=\"text\">result</th>\
         <th class=\"text\">expected</th><th class=\"text\">observed</th></tr></thead>\n<tbody>\n",
    );
    for c in &verdict.checks {
        let (class, text) = if c.passed { ("pass", "passed") } else { ("fail", "failed") };
        let _ = writeln!(
            o,
            "<tr><td class=\"wrap\">{}</td><td class=\"m {class}\">{text}</td><td class=\"wrap\">{}</td><td class=\"wrap\">{}</td></tr>",
            h(&c.name),
            h(&c.expected),
            h(&c.observed)
        );
    }
    o.push_str("</tbody>\n</table></div>\n");
}

fn steps(o: &mut String, r: &TrialRecord) {
    let Some(verdict) = &r.verdict else { return };
    o.push_str("<h2 id=\"steps\">Verification steps</h2>\n<div class=\"scroll\"><table>\n<thead><tr><th>step</th>\
                <th class=\"text\">stage</th><th class=\"text\">status</th><th>exit code</th><th>seconds</th></tr></thead>\n<tbody>\n");
    for s in &verdict.steps {
        let status = serde_json::to_value(s.status)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let class = match s.status {
            StepStatus::Passed => "pass",
            StepStatus::NotRun => "none",
            _ => "fail",
        };
        let _ = writeln!(
            o,
            "<tr><td class=\"wrap\">{}</td><td class=\"text\">{}</td><td class=\"m {class}\">{}</td><td>{}</td><td>{:.2}</td></tr>",
            h(&s.name),
            s.stage.as_str(),
            h(&status),
            s.exit_code.map_or("-".to_string(), |c| c.to_string()),
            s.seconds
        );
    }
    o.push_str("</tbody>\n</table></div>\n");
}

fn tags(o: &mut String, r: &TrialRecord, href: &str) {
    if r.tags.is_empty() {
        return;
    }
    o.push_str("<h2 id=\"tags\">Tags</h2>\n");
    for t in &r.tags {
        let _ = write!(o, "<h3>{}</h3>\n<ul class=\"ev\">", h(&t.name));
        for e in &t.evidence {
            let line_href = format!("{}#L{}", file_href(href, &e.file), e.line);
            let _ = write!(
                o,
                "<li><a href=\"{}\">{}:{}</a>: <code>{}</code></li>",
                h(&line_href),
                h(&e.file),
                e.line,
                h(&e.text)
            );
        }
        o.push_str("</ul>\n");
    }
}

fn gate(o: &mut String, r: &TrialRecord, trajectory: Option<&serde_json::Value>) {
    o.push_str("<h2 id=\"gate\">Completion gate</h2>\n");
    let decisions = trajectory.map(gate_decisions).unwrap_or_default();
    let held = r.gate_mechanism.map(|m| format!(", held by {}", m.as_str())).unwrap_or_default();
    let _ = writeln!(
        o,
        "<p class=\"explain\">Gate: {}{held}. {} decision{} recorded.</p>",
        r.gate.as_str(),
        decisions.len(),
        if decisions.len() == 1 { "" } else { "s" }
    );
    for (step, decision) in decisions {
        let at = match (step, decision["run"].as_u64()) {
            (Some(s), _) => format!("at <a href=\"#step-{s}\">step {s}</a>"),
            (None, Some(run)) => format!("when run {run} of the agent ended"),
            (None, None) => "on the trajectory".into(),
        };
        let _ = write!(
            o,
            "<div class=\"small\">{at}</div>{}",
            folded_pre(&serde_json::to_string_pretty(&decision).unwrap_or_default(), 12)
        );
    }
}

fn files(o: &mut String, dir: &Path, href: &str) {
    o.push_str("<h2 id=\"files\">Files</h2>\n<ul>");
    for (name, size) in trial_files(dir) {
        let _ = write!(
            o,
            "<li><a href=\"{}\">{}</a> <span class=\"small\">({size} bytes)</span></li>",
            h(&file_href(href, &name)),
            h(&name)
        );
    }
    o.push_str("</ul>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failed_steps_output_is_cut_from_verify_log() {
        let log = "cleanroom verify: 2 steps\n== step 1/2: clean build (build)\n$ make\n-- failed: exit 127\nmake: not found\n== step 2/2: run (run)\n-- not run\n== checks\n";
        assert_eq!(
            step_output_tail(log, "clean build").unwrap(),
            "$ make\n-- failed: exit 127\nmake: not found"
        );
        assert_eq!(step_output_tail(log, "run").unwrap(), "-- not run");
        assert!(step_output_tail(log, "clean").is_none());
    }
}
