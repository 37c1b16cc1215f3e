//! trajectory.json (ATIF) step by step: each message, its reasoning, tool
//! calls with their arguments and the observations they got, token counts,
//! and the completion gate's decisions; long texts folded.

use std::fmt::Write;

use serde_json::Value;

use crate::page::{folded_pre, h};

/// Lines of a message or an output shown before it is folded.
const FOLD_LINES: usize = 12;

/// The gate's decisions: those recorded on steps (the built-in agent) and
/// on the trajectory (external agents held by a hook).
pub fn gate_decisions(trajectory: &Value) -> Vec<(Option<u64>, Value)> {
    let mut out = Vec::new();
    for step in trajectory["steps"].as_array().into_iter().flatten() {
        if let Some(gate) = step["extra"].get("gate") {
            out.push((step["step_id"].as_u64(), gate.clone()));
        }
    }
    match &trajectory["extra"]["gate"] {
        Value::Array(list) => out.extend(list.iter().map(|d| (None, d.clone()))),
        Value::Null => {}
        other => out.push((None, other.clone())),
    }
    out
}

pub fn render_trajectory(trajectory: &Value) -> String {
    let mut o = String::new();
    let agent = &trajectory["agent"];
    let _ = writeln!(
        o,
        "<p class=\"meta\">{} {} · model {} · {} · session {}</p>",
        h(agent["name"].as_str().unwrap_or("?")),
        h(agent["version"].as_str().unwrap_or("")),
        h(agent["model_name"].as_str().unwrap_or("-")),
        h(trajectory["schema_version"].as_str().unwrap_or("?")),
        h(trajectory["session_id"].as_str().unwrap_or("?"))
    );
    let metrics = &trajectory["final_metrics"];
    if metrics.is_object() {
        let _ = writeln!(
            o,
            "<p class=\"meta\">{} steps · {} prompt, {} completion, {} cached tokens · ${:.4}</p>",
            metrics["total_steps"].as_u64().unwrap_or(0),
            metrics["total_prompt_tokens"].as_u64().unwrap_or(0),
            metrics["total_completion_tokens"].as_u64().unwrap_or(0),
            metrics["total_cached_tokens"].as_u64().unwrap_or(0),
            metrics["total_cost_usd"].as_f64().unwrap_or(0.0)
        );
    }
    for step in trajectory["steps"].as_array().into_iter().flatten() {
        step_html(&mut o, step);
    }
    o
}

fn step_html(o: &mut String, step: &Value) {
    // Also a class name: only the three ATIF sources pass.
    let source =
        step["source"].as_str().filter(|s| matches!(*s, "agent" | "user" | "system")).unwrap_or("system");
    let _ = write!(
        o,
        "<div class=\"step {source}\" id=\"step-{0}\"><div class=\"head\"><a href=\"#step-{0}\">#{0}</a> {source} · {1}",
        step["step_id"].as_u64().unwrap_or(0),
        h(step["timestamp"].as_str().unwrap_or(""))
    );
    if let Some(m) = step["metrics"].as_object() {
        let _ = write!(
            o,
            " · {} prompt / {} completion tokens",
            m.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
            m.get("completion_tokens").and_then(Value::as_u64).unwrap_or(0)
        );
    }
    o.push_str("</div>");
    if let Some(message) = step["message"].as_str().filter(|m| !m.is_empty()) {
        o.push_str(&folded_pre(message, FOLD_LINES));
    }
    if let Some(reasoning) = step["reasoning_content"].as_str().filter(|r| !r.is_empty()) {
        let _ =
            write!(o, "<details><summary>reasoning</summary>{}</details>", folded_pre(reasoning, FOLD_LINES));
    }
    for call in step["tool_calls"].as_array().into_iter().flatten() {
        let arguments = serde_json::to_string_pretty(&call["arguments"]).unwrap_or_default();
        let _ = write!(
            o,
            "<div><b>tool call</b> <code>{}</code>{}</div>",
            h(call["function_name"].as_str().unwrap_or("?")),
            folded_pre(&arguments, FOLD_LINES)
        );
    }
    for result in step["observation"]["results"].as_array().into_iter().flatten() {
        let content = match &result["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = write!(o, "<div><b>output</b>{}</div>", folded_pre(&content, FOLD_LINES));
    }
    if let Some(gate) = step["extra"].get("gate") {
        let _ = write!(
            o,
            "<div><b>completion gate</b>{}</div>",
            folded_pre(&serde_json::to_string_pretty(gate).unwrap_or_default(), FOLD_LINES)
        );
    }
    o.push_str("</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_show_messages_calls_and_outputs_escaped() {
        let t = json!({"schema_version": "ATIF-v1.8", "session_id": "s", "agent": {"name": "cleanroom", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "timestamp": "t", "message": "deploy <b>it</b>"},
            {"step_id": 2, "source": "agent", "timestamp": "t", "message": "",
             "tool_calls": [{"tool_call_id": "c", "function_name": "bash", "arguments": {"command": "ls </x>"}}],
             "observation": {"results": [{"source_call_id": "c", "content": "<img src=x>"}]},
             "extra": {"gate": {"decision": "refused"}}}
        ]});
        let html = render_trajectory(&t);
        assert!(html.contains("deploy &lt;b&gt;it&lt;/b&gt;"), "{html}");
        assert!(html.contains("<code>bash</code>"));
        assert!(html.contains("ls &lt;/x&gt;") && html.contains("&lt;img src=x&gt;"), "{html}");
        assert!(!html.contains("<img") && !html.contains("<b>it"));
        assert_eq!(gate_decisions(&t).len(), 1);
        assert!(html.contains("completion gate"));
    }

    #[test]
    fn a_long_output_is_folded() {
        let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let t = json!({"steps": [{"step_id": 1, "source": "agent", "message": long}]});
        let html = render_trajectory(&t);
        assert!(html.contains("<details><summary><code>line 0</code> … (100 lines)"), "{html}");
    }
}
