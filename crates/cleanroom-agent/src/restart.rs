//! The completion gate for agent CLIs that have no hook that can refuse a
//! stop: when the CLI ends on its own and the gate reports, the agent is
//! started again in the same environment with the report as its next
//! message. A CLI whose run.sh can resume its own session (`resume = true`)
//! gets the report alone (CLEANROOM_RESUME_FILE); any other starts a new
//! session whose instruction says what happened before: the task, the tool
//! calls of the earlier sessions as the forwarder saw them, and the report.

use cleanroom_env::{EnvError, Files};
use cleanroom_model::Exchange;
use serde_json::Value;

/// Most tool calls of earlier sessions a new session is told of (the last).
const HISTORY_CALLS: usize = 40;

/// Most characters of one tool call's arguments in that history.
const CALL_CHARS: usize = 400;

/// The files run.sh reads on a restart, inside the environment.
pub struct RestartFiles {
    /// The instruction (CLEANROOM_INSTRUCTION_FILE).
    pub instruction: String,
    /// The gate's report alone, for a CLI that resumes its session
    /// (CLEANROOM_RESUME_FILE).
    pub resume: Option<String>,
}

/// Writes the files of run number `run` into `dir`.
pub fn write_files(
    files: &dyn Files,
    dir: &str,
    run: u32,
    resume: bool,
    instruction: &str,
    report: &str,
    exchanges: &[Exchange],
) -> Result<RestartFiles, EnvError> {
    let write = |name: &str, text: &str| -> Result<String, EnvError> {
        let path = format!("{dir}/{name}");
        files.write_file(&path, text.as_bytes(), 0o644).map_err(|e| EnvError::io(path.clone(), e))?;
        Ok(path)
    };
    let told = new_session_instruction(instruction, &tool_calls(exchanges), report);
    Ok(RestartFiles {
        instruction: write(&format!("instruction-{run}.md"), &told)?,
        resume: if resume { Some(write(&format!("resume-{run}.md"), report)?) } else { None },
    })
}

/// The instruction of a new session that follows earlier ones.
fn new_session_instruction(instruction: &str, calls: &[String], report: &str) -> String {
    let mut text = format!(
        "{instruction}\n\n## Where you are\n\nYou worked on this task before, in this same environment, and \
         stopped. The files you changed and the packages you installed are still here.\n"
    );
    if !calls.is_empty() {
        let skipped = calls.len().saturating_sub(HISTORY_CALLS);
        text.push_str("\nThe tool calls of your earlier sessions, oldest first");
        if skipped > 0 {
            text.push_str(&format!(" ({skipped} earlier ones left out)"));
        }
        text.push_str(":\n\n");
        for call in &calls[skipped..] {
            text.push_str(&format!("- {call}\n"));
        }
    }
    text.push_str(&format!("\nWhen you stopped, the harness ran the designated experiment.\n\n{report}\n"));
    text
}

/// Each tool call the model made, as `name arguments` (arguments cut).
fn tool_calls(exchanges: &[Exchange]) -> Vec<String> {
    exchanges
        .iter()
        .flat_map(|x| calls_of(x).into_iter())
        .map(|(name, args)| {
            let args = args.replace('\n', " ");
            let cut: String = args.chars().take(CALL_CHARS).collect();
            let more = if cut.len() < args.len() { " …" } else { "" };
            format!("{name} {cut}{more}")
        })
        .collect()
}

/// The tool calls (name, arguments) of one exchange's answer, which the
/// forwarder holds as a chat completion whatever the agent's dialect.
fn calls_of(exchange: &Exchange) -> Vec<(String, String)> {
    let Some(response) = &exchange.upstream_response else { return Vec::new() };
    let calls = response["choices"][0]["message"]["tool_calls"].as_array().cloned().unwrap_or_default();
    calls
        .iter()
        .map(|c| {
            let name = c["function"]["name"].as_str().unwrap_or("?").to_string();
            let args = match &c["function"]["arguments"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (name, args)
        })
        .collect()
}

/// Whether the model made a tool call in any of `exchanges`: the agent
/// acted. A call of `finish` (the built-in agent's and OpenHands' way to
/// stop) is not an action.
pub fn acted(exchanges: &[Exchange]) -> bool {
    exchanges.iter().flat_map(calls_of).any(|(name, _)| name != "finish")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cleanroom_model::{Dialect, Usage};
    use serde_json::json;

    fn exchange(seq: u32, response: Value) -> Exchange {
        Exchange {
            seq,
            time: String::new(),
            dialect: Dialect::Chat,
            seconds: 0.0,
            retries: 0,
            agent_request: None,
            upstream_request: json!({}),
            upstream_response: Some(response),
            agent_response: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
        }
    }

    fn call(name: &str, args: &str) -> Value {
        json!({"choices": [{"message": {"tool_calls": [{"function": {"name": name, "arguments": args}}]}}]})
    }

    fn text(t: &str) -> Value {
        json!({"choices": [{"message": {"content": t}}]})
    }

    #[test]
    fn a_new_session_is_told_the_task_its_calls_and_the_report() {
        let long = "x".repeat(1000);
        let exchanges = vec![
            exchange(1, call("bash", "{\"command\": \"ls\"}")),
            exchange(2, call("bash", &long)),
            exchange(3, text("Done.")),
        ];
        let told = new_session_instruction(
            "Deploy it.",
            &tool_calls(&exchanges),
            "The designated experiment `x`: exit status 1.",
        );
        assert!(told.starts_with("Deploy it.\n"), "{told}");
        assert!(told.contains("- bash {\"command\": \"ls\"}\n"), "{told}");
        assert!(told.contains(&format!("- bash {} …\n", "x".repeat(CALL_CHARS))), "{told}");
        assert!(told.ends_with("The designated experiment `x`: exit status 1.\n"), "{told}");
    }

    #[test]
    fn a_long_history_keeps_its_end() {
        let calls: Vec<String> = (0..HISTORY_CALLS + 5).map(|i| format!("bash {i}")).collect();
        let told = new_session_instruction("Deploy it.", &calls, "report");
        assert!(told.contains("(5 earlier ones left out)"), "{told}");
        assert!(!told.contains("- bash 4\n") && told.contains("- bash 5\n"), "{told}");
        assert!(told.contains(&format!("- bash {}\n", HISTORY_CALLS + 4)), "{told}");
    }

    #[test]
    fn acting_is_a_tool_call_other_than_finish() {
        let exchanges = vec![
            exchange(1, call("bash", "{}")),
            exchange(2, text("Done.")),
            exchange(3, call("finish", "{}")),
        ];
        assert!(acted(&exchanges));
        assert!(!acted(&exchanges[1..]), "neither a reply without a tool call nor finish is an action");
    }
}
