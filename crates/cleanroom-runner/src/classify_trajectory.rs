//! `weaker_target` from a trajectory (issue 5): the agent finished and
//! claimed success, but its last checks never ran the designated
//! experiment, or ran it, saw it fail, and finished anyway. The study's
//! dominant failure; the log rules only see the claim, this sees the
//! commands.

use cleanroom_store::{Evidence, Tag};
use regex::Regex;
use serde_json::Value;

use crate::classify_tags::MAX_TEXT;

pub const FILE: &str = "trajectory.json";

/// One shell command of the trajectory and what came back.
struct Command {
    step: u64,
    text: String,
    observation: String,
}

/// The tag with its evidence, if the trajectory shows a weaker target.
/// `experiment` is the task's public `[experiment].command`.
pub fn weaker_target(trajectory: &Value, experiment: Option<&str>) -> Option<Tag> {
    let experiment = experiment?.trim();
    let steps = trajectory["steps"].as_array()?;
    let commands = commands(steps);
    let claim = final_claim(steps)?;
    if admits_failure(&claim.1) {
        return None;
    }
    let runs: Vec<&Command> = commands.iter().filter(|c| runs_experiment(&c.text, experiment)).collect();
    let mut evidence = Vec::new();
    match runs.last() {
        None => {
            let last = commands.last().map_or("none".to_string(), |c| format!("`{}`", one_line(&c.text)));
            evidence.push(ev(
                claim.0,
                format!("never ran the designated experiment `{experiment}`; last command: {last}"),
            ));
        }
        Some(last) if failed(&last.observation) => evidence.push(ev(
            last.step,
            format!(
                "ran the designated experiment, it failed ({}), and finished anyway",
                failure_line(&last.observation)
            ),
        )),
        Some(_) => return None,
    }
    evidence.push(ev(claim.0, format!("final summary: {}", one_line(&claim.1))));
    Some(Tag { name: "weaker_target".into(), evidence })
}

fn ev(step: u64, text: String) -> Evidence {
    Evidence { file: FILE.into(), line: step, text: text.chars().take(MAX_TEXT).collect() }
}

/// Shell commands from tool calls of any agent: `command` or `cmd`, as a
/// string or an argv list.
fn commands(steps: &[Value]) -> Vec<Command> {
    let mut out = Vec::new();
    for step in steps {
        let id = step["step_id"].as_u64().unwrap_or(0);
        for call in step["tool_calls"].as_array().into_iter().flatten() {
            let args = &call["arguments"];
            let text = match args.get("command").or_else(|| args.get("cmd")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => {
                    parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")
                }
                _ => continue,
            };
            let observation = step["observation"]["results"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|r| r["source_call_id"] == call["tool_call_id"])
                .and_then(|r| r["content"].as_str())
                .unwrap_or_default()
                .to_string();
            out.push(Command { step: id, text, observation });
        }
    }
    out
}

/// The summary the agent finished with (a `finish`-like call's summary, or
/// its last message) and its step.
fn final_claim(steps: &[Value]) -> Option<(u64, String)> {
    let last = steps.iter().rev().find(|s| s["source"] == "agent")?;
    let id = last["step_id"].as_u64().unwrap_or(0);
    let from_call = last["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| c["arguments"]["summary"].as_str().or_else(|| c["arguments"]["result"].as_str()));
    let text = from_call.or_else(|| last["message"].as_str()).unwrap_or_default().trim().to_string();
    (!text.is_empty()).then_some((id, text))
}

/// Whether `command` runs the experiment: its whole command, or the script
/// it names (`bash run.sh` is run by `./run.sh` too).
fn runs_experiment(command: &str, experiment: &str) -> bool {
    if command.contains(experiment) {
        return true;
    }
    experiment
        .split_whitespace()
        .filter(|w| w.contains('.') || w.contains('/'))
        .any(|w| command.contains(w.trim_start_matches("./")))
}

fn failure_regex() -> &'static Regex {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"(?i)\[exit code [1-9]\d*\]|<returncode>[1-9]\d*</returncode>|exit(ed)? (with )?(code|status):? ?[1-9]\d*|\[killed|Traceback \(most recent call last\)",
        )
        .expect("a valid regex")
    })
}

fn failed(observation: &str) -> bool {
    failure_regex().is_match(observation)
}

fn failure_line(observation: &str) -> String {
    let re = failure_regex();
    observation.lines().rev().find(|l| re.is_match(l)).map(one_line).unwrap_or_default()
}

fn admits_failure(summary: &str) -> bool {
    static RE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b(could not|couldn't|cannot|can't|failed|fails|unable|not able|did not|didn't|unsuccessful|not working|does not work|doesn't work)\b")
            .expect("a valid regex")
    })
    .is_match(summary)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trajectory(calls: &[(&str, &str)], summary: &str) -> Value {
        let mut steps = vec![json!({"step_id": 1, "source": "user", "message": "deploy"})];
        for (i, (cmd, obs)) in calls.iter().enumerate() {
            let id = format!("c{i}");
            steps.push(json!({"step_id": i + 2, "source": "agent", "message": "",
                "tool_calls": [{"tool_call_id": id, "function_name": "bash", "arguments": {"command": cmd}}],
                "observation": {"results": [{"source_call_id": id, "content": obs}]}}));
        }
        steps.push(json!({"step_id": calls.len() + 2, "source": "agent", "message": "",
            "tool_calls": [{"tool_call_id": "f", "function_name": "finish", "arguments": {"summary": summary}}]}));
        json!({"steps": steps})
    }

    #[test]
    fn finishing_without_the_experiment_is_a_weaker_target() {
        let t = trajectory(
            &[("pip install numpy", "Successfully installed"), ("python -c 'import numpy'", "")],
            "All set up and working.",
        );
        let tag = weaker_target(&t, Some("bash run.sh")).unwrap();
        assert!(
            tag.evidence[0].text.contains("never ran the designated experiment `bash run.sh`"),
            "{tag:?}"
        );
        assert!(tag.evidence[0].text.contains("import numpy"));
        assert_eq!(tag.evidence[1].line, 4);
        assert!(tag.evidence[1].text.contains("All set up"));
    }

    #[test]
    fn a_failed_run_then_finish_is_a_weaker_target_and_a_passing_one_is_not() {
        let failed = trajectory(
            &[("cd /w && ./run.sh", "ImportError: x\n[exit code 1]")],
            "Deployed; results reproduced.",
        );
        let tag = weaker_target(&failed, Some("bash run.sh")).unwrap();
        assert_eq!(tag.evidence[0].line, 2);
        assert!(tag.evidence[0].text.contains("[exit code 1]"), "{tag:?}");
        let passed = trajectory(&[("bash run.sh", "done\n")], "Deployed; results reproduced.");
        assert!(weaker_target(&passed, Some("bash run.sh")).is_none());
        // Other agents' ways of saying a command failed.
        let mini = trajectory(&[("bash run.sh", "<returncode>2</returncode>")], "Done.");
        assert!(weaker_target(&mini, Some("bash run.sh")).is_some());
    }

    #[test]
    fn an_agent_that_admits_failure_or_a_task_without_experiment_is_not_tagged() {
        let t = trajectory(&[("make", "error")], "I could not get the build to work.");
        assert!(weaker_target(&t, Some("bash run.sh")).is_none());
        let t = trajectory(&[("make", "")], "Done.");
        assert!(weaker_target(&t, None).is_none());
    }
}
