//! Against a real model server: llama.cpp's server running Gemma 3 270M,
//! which `scripts/local-model.sh start` runs at the address of the built-in
//! model `local` (the README's test command starts it first). The model is
//! tiny and bad at the job; what is tested is the plumbing: requests,
//! tool calls, usage, budgets, trajectories. Needs root.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

const TARGET: &str = "tests/fixtures/tasks-adversarial/target";

fn json_file(path: PathBuf) -> Value {
    serde_json::from_slice(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap()
}

/// Token counts summed from the server's own `usage` fields, as recorded
/// in the exchanges (not from cleanroom's totals).
fn server_usage(trial: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(trial.join("model-exchanges.jsonl")).unwrap();
    let mut sums = (0, 0);
    for line in text.lines() {
        let exchange: Value = serde_json::from_str(line).unwrap();
        let usage = &exchange["upstream_response"]["usage"];
        sums.0 += usage["prompt_tokens"].as_u64().unwrap_or(0);
        sums.1 += usage["completion_tokens"].as_u64().unwrap_or(0);
    }
    sums
}

#[test]
fn the_built_in_agent_and_mini_swe_agent_run_against_the_local_model() {
    let out = temp_out("local-model");
    let output = cleanroom()
        .arg("run")
        .args(["--tasks", &fixtures(TARGET), "--agent", "llm:local", "--agent", "command:mini-swe-agent"])
        .args(["--max-steps", "2", "--jobs", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let run_dir = std::fs::read_dir(&out).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    for agent in ["llm-local", "command-mini-swe-agent"] {
        let trial = run_dir.join("trials/target").join(agent).join("1");
        let result = json_file(trial.join("result.json"));
        let log = std::fs::read_to_string(trial.join("agent.log")).unwrap_or_default();
        assert_eq!(result["model"], "local", "{agent}: {result}");
        // The server answered: no model error (at most the budget's note),
        // and the verifier gave a verdict.
        let error = result["error"].as_str().unwrap_or("budget");
        assert!(error.contains("budget"), "{agent}: {result}\n{log}");
        assert!(!result["verdict"]["steps"].as_array().unwrap().is_empty(), "{agent}: {result}");
        let steps = result["steps"].as_u64().unwrap();
        assert!((1..=2).contains(&steps), "{agent}: {result}");
        // Two requests used: the step budget is what stopped it (the
        // built-in agent is refused a third; mini-swe-agent stops at its
        // own limit, which is set from --max-steps).
        if steps == 2 {
            assert_eq!(result["stop_reason"], "budget", "{agent}: {result}");
        }
        let (prompt, completion) = server_usage(&trial);
        assert!(prompt > 0 && completion > 0, "{agent}: no usage recorded");
        assert_eq!(result["tokens"]["prompt"], prompt, "{agent}");
        assert_eq!(result["tokens"]["completion"], completion, "{agent}");
        let trajectory = json_file(trial.join("trajectory.json"));
        assert_eq!(trajectory["final_metrics"]["total_prompt_tokens"], prompt, "{agent}");
        let agent_steps =
            trajectory["steps"].as_array().unwrap().iter().filter(|s| s["source"] == "agent").count();
        assert_eq!(agent_steps as u64, steps, "{agent}");
    }
    // The built-in agent's first request carried the tools, and the model
    // answered with at least one tool call that was executed.
    let trial = run_dir.join("trials/target/llm-local/1");
    let trajectory = json_file(trial.join("trajectory.json"));
    let observed =
        trajectory["steps"].as_array().unwrap().iter().any(|s| s["observation"]["results"].is_array());
    let log = std::fs::read_to_string(trial.join("agent.log")).unwrap_or_default();
    assert!(observed, "the local model made no tool call that ran:\n{log}");
}

/// Claude Code (Anthropic Messages) and Codex (OpenAI Responses) against the
/// same chat-completions server, through the forwarder's translation: one
/// model request each, whose answer reaches the agent, and a trajectory in
/// ATIF rebuilt from the exchanges.
#[test]
fn claude_code_and_codex_run_against_the_local_model() {
    let out = temp_out("local-model-clis");
    let output = cleanroom()
        .arg("run")
        .args(["--tasks", &fixtures(TARGET), "--agent", "command:claude-code", "--agent", "command:codex"])
        .args(["--max-steps", "1", "--jobs", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let run_dir = std::fs::read_dir(&out).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    for (agent, dialect, own_log) in [
        ("command-claude-code", "anthropic-messages", "agent-own-stream.jsonl"),
        ("command-codex", "openai-responses", "agent-own-events.jsonl"),
    ] {
        let trial = run_dir.join("trials/target").join(agent).join("1");
        let result = json_file(trial.join("result.json"));
        let log = std::fs::read_to_string(trial.join("agent.log")).unwrap_or_default();
        assert_eq!(result["steps"], 1, "{agent}: {result}\n{log}");
        assert_eq!(result["stop_reason"], "budget", "{agent}: {result}\n{log}");
        let (prompt, completion) = server_usage(&trial);
        assert!(prompt > 1000 && completion > 0, "{agent}: {prompt} {completion}");
        assert_eq!(result["tokens"]["prompt"], prompt, "{agent}");
        let exchange: Value = serde_json::from_str(
            std::fs::read_to_string(trial.join("model-exchanges.jsonl")).unwrap().lines().next().unwrap(),
        )
        .unwrap();
        assert_eq!(exchange["dialect"], dialect, "{agent}");
        assert!(exchange["agent_response"].is_object(), "{agent}: the answer was translated back");
        let trajectory = json_file(trial.join("trajectory.json"));
        let last = trajectory["steps"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["source"], "agent", "{agent}");
        assert_eq!(trajectory["final_metrics"]["total_prompt_tokens"], prompt, "{agent}");
        // The agent's own record of the session came out too.
        assert!(std::fs::metadata(trial.join(own_log)).map(|m| m.len() > 0).unwrap_or(false), "{agent}");
    }
}
