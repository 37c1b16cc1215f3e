//! JSON and CSV for notebooks: one row per trial with the task's metadata
//! beside it (the same columns in both), and in JSON a `summary` with every
//! aggregate of the Markdown report.
//!
//! JSON keeps strings as they are (serde_json escapes control characters);
//! CSV shows them through `escape_terminal`, so a file printed to a
//! terminal sends no escape sequence and every trial stays on one line.

use serde_json::{json, Map, Value};

use crate::escape::escape_terminal;
use crate::model::{Report, Trial, PAIRING_RULE};
use crate::why::first_failure;

/// The version of the JSON report's layout.
pub const JSON_VERSION: u32 = 1;

pub fn render_json(report: &Report) -> String {
    let outside = report.outside();
    let agents: Vec<Value> = (0..report.arms.len())
        .map(|a| {
            let mut v = serde_json::to_value(&report.arms[a]).expect("arm serialises");
            v["counts"] = serde_json::to_value(report.counts(a)).expect("counts serialise");
            v["overall"] = serde_json::to_value(report.overall(a)).expect("rate serialises");
            v["costs"] = serde_json::to_value(report.costs(a)).expect("costs serialise");
            v
        })
        .collect();
    let tags: Vec<Value> = report
        .tags()
        .iter()
        .map(|t| {
            let per_agent: Vec<Value> = report
                .arms
                .iter()
                .enumerate()
                .map(|(a, arm)| json!({"agent": arm.label, "failed": t.failed[a], "passed": t.passed[a]}))
                .collect();
            json!({"name": t.name, "agents": per_agent})
        })
        .collect();
    let doc = json!({
        "format": "cleanroom-report",
        "version": JSON_VERSION,
        "by": report.by,
        "runs": report.runs,
        "notes": report.notes,
        "summary": {
            "left_out": {
                "infra_error": outside.infra_error,
                "skipped": outside.skipped,
                "negative_control": outside.negative_control,
            },
            "suspected": outside.suspected_lines(&report.arms),
            "agents": agents,
            "slices": report.slices(),
            "repeats": report.repeats(),
            "comparisons": {"rule": PAIRING_RULE, "pairs": report.comparisons()},
            "gate_effect": {"rule": PAIRING_RULE, "rows": report.gate_effects()},
            "tags": tags,
        },
        "trials": report.trials.iter().map(|t| row_object(trial_row(report, t))).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("report serialises");
    text.push('\n');
    text
}

/// One row per trial, the columns of `trial_row`.
pub fn render_csv(report: &Report) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> = trial_row(report, &empty_trial()).into_iter().map(|(k, _)| k).collect();
    w.write_record(&header).expect("write to memory");
    for t in &report.trials {
        w.write_record(trial_row(report, t).iter().map(|(_, v)| csv_cell(v))).expect("write to memory");
    }
    String::from_utf8(w.into_inner().expect("flush to memory")).expect("utf-8 in, utf-8 out")
}

fn empty_trial() -> Trial {
    Trial {
        arm: usize::MAX,
        run_id: String::new(),
        record: cleanroom_store::TrialRecord::new("", "", "", 0, 0),
    }
}

fn csv_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => escape_terminal(s).into_owned(),
        Value::Array(items) => items.iter().map(csv_cell).collect::<Vec<_>>().join(";"),
        other => other.to_string(),
    }
}

fn row_object(row: Vec<(&'static str, Value)>) -> Value {
    Value::Object(row.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())
}

/// A trial's columns, in CSV order.
fn trial_row(report: &Report, t: &Trial) -> Vec<(&'static str, Value)> {
    let r = &t.record;
    let info = report.task(&r.task);
    let arm = report.arms.get(t.arm);
    let mut m = Vec::new();
    let mut put = |k: &'static str, v: Value| m.push((k, v));
    put("run_id", json!(t.run_id));
    put("task", json!(r.task));
    put("agent", json!(arm.map_or(&r.agent_id, |a| &a.label)));
    put("agent_spec", json!(r.agent));
    put("agent_id", json!(r.agent_id));
    put("model", json!(r.model));
    put("trial", json!(r.trial));
    put("attempt", json!(r.attempt));
    put("outcome", json!(r.outcome.as_str()));
    put("negative_control", json!(r.negative_control));
    put("class", json!(r.class.map(|c| c.as_str())));
    put("stage", json!(r.stage.as_str()));
    put("stop_reason", json!(r.stop_reason.map(|s| s.as_str())));
    put("exit_code", json!(r.exit_code));
    put("skip_reason", json!(r.skip_reason));
    put("error", json!(r.error.as_deref().and_then(|e| e.lines().next())));
    put("first_failure", json!(first_failure(r)));
    put("gate", json!(r.gate));
    put("time_environment", json!(r.timings.environment));
    put("time_agent", json!(r.timings.agent));
    put("time_verify", json!(r.timings.verify));
    put("time_total", json!(r.timings.total()));
    put("tokens_prompt", json!(r.tokens.prompt));
    put("tokens_completion", json!(r.tokens.completion));
    put("tokens_cached", json!(r.tokens.cached));
    put("cost_usd", json!(r.cost_usd));
    put("tags", json!(r.tags.iter().map(|g| &g.name).collect::<Vec<_>>()));
    put("started_at", json!(r.started_at));
    put("finished_at", json!(r.finished_at));
    put("title", json!(info.map(|i| &i.title)));
    put("domain", json!(info.map(|i| &i.domain)));
    put("difficulty", json!(info.map(|i| &i.difficulty)));
    put("main_language", json!(info.and_then(|i| i.languages.first())));
    put("languages", json!(info.map(|i| &i.languages)));
    put("legacy", json!(info.map(|i| i.legacy)));
    put("gpu", json!(info.map(|i| i.gpu)));
    put("qemu", json!(info.map(|i| i.qemu)));
    put("task_tags", json!(info.map(|i| &i.tags)));
    m
}
