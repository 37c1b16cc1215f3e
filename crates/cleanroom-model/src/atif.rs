//! Trajectories in ATIF (the Agent Trajectory Interchange Format that
//! Harbor reads): one step per system prompt, user message or model turn,
//! each model turn with its tool calls, their observations and its token
//! counts.

use serde_json::{json, Map, Value};

use crate::usage::Usage;

/// The version current Harbor writes and validates (harbor 0.26).
pub const SCHEMA_VERSION: &str = "ATIF-v1.8";

/// The one step of a trajectory in which the agent made no model call.
pub const NO_STEPS: &str = "(no step: the agent made no model call)";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    System,
    User,
    Agent,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::System => "system",
            Source::User => "user",
            Source::Agent => "agent",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Parsed arguments, always a JSON object as ATIF requires: what the
    /// model sent that is not one (invalid JSON, a bare string) is kept as
    /// it came, under [`UNPARSED`].
    pub arguments: Value,
}

/// The key under which a tool call's arguments that are not a JSON object
/// are kept, as text.
pub const UNPARSED: &str = "unparsed_arguments";

impl ToolCall {
    /// A chat-completions `tool_calls` entry.
    pub fn of_chat(call: &Value) -> ToolCall {
        let arguments = match &call["function"]["arguments"] {
            Value::Object(object) => Value::Object(object.clone()),
            Value::String(raw) => match serde_json::from_str(raw) {
                Ok(Value::Object(object)) => Value::Object(object),
                _ => json!({ UNPARSED: raw }),
            },
            Value::Null => json!({}),
            other => json!({ UNPARSED: other.to_string() }),
        };
        ToolCall {
            id: call["id"].as_str().unwrap_or_default().to_string(),
            name: call["function"]["name"].as_str().unwrap_or_default().to_string(),
            arguments,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub timestamp: String,
    pub source: Source,
    pub model_name: Option<String>,
    pub message: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// (tool call id, content) per result.
    pub observations: Vec<(String, String)>,
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    /// cleanroom's own fields (gate decisions, timings, budget stops).
    pub extra: Map<String, Value>,
}

impl Step {
    pub fn new(source: Source, timestamp: String, message: impl Into<String>) -> Step {
        Step {
            timestamp,
            source,
            model_name: None,
            message: message.into(),
            reasoning: None,
            tool_calls: Vec::new(),
            observations: Vec::new(),
            usage: None,
            cost_usd: None,
            extra: Map::new(),
        }
    }

    fn to_json(&self, step_id: usize) -> Value {
        let mut step = json!({
            "step_id": step_id,
            "timestamp": self.timestamp,
            "source": self.source.as_str(),
            "message": self.message,
        });
        let obj = step.as_object_mut().expect("an object");
        if let Some(m) = &self.model_name {
            obj.insert("model_name".into(), json!(m));
        }
        if let Some(r) = &self.reasoning {
            obj.insert("reasoning_content".into(), json!(r));
        }
        if !self.tool_calls.is_empty() {
            let calls: Vec<Value> = self
                .tool_calls
                .iter()
                .map(|c| json!({"tool_call_id": c.id, "function_name": c.name, "arguments": c.arguments}))
                .collect();
            obj.insert("tool_calls".into(), Value::Array(calls));
        }
        if !self.observations.is_empty() {
            let results: Vec<Value> = self
                .observations
                .iter()
                .map(|(id, content)| json!({"source_call_id": id, "content": content}))
                .collect();
            obj.insert("observation".into(), json!({ "results": results }));
        }
        if let Some(u) = self.usage {
            let mut metrics = json!({"prompt_tokens": u.prompt, "completion_tokens": u.completion,
                "cached_tokens": u.cached});
            if let Some(c) = self.cost_usd {
                metrics["cost_usd"] = json!(c);
            }
            obj.insert("metrics".into(), metrics);
        }
        if !self.extra.is_empty() {
            obj.insert("extra".into(), Value::Object(self.extra.clone()));
        }
        step
    }
}

#[derive(Debug, Clone)]
pub struct Trajectory {
    pub session_id: String,
    pub agent_name: String,
    pub agent_version: String,
    pub model_name: Option<String>,
    pub tool_definitions: Value,
    pub steps: Vec<Step>,
    pub extra: Map<String, Value>,
}

impl Trajectory {
    pub fn new(
        session_id: &str,
        agent_name: &str,
        agent_version: &str,
        model_name: Option<&str>,
    ) -> Trajectory {
        Trajectory {
            session_id: session_id.to_string(),
            agent_name: agent_name.to_string(),
            agent_version: agent_version.to_string(),
            model_name: model_name.map(str::to_string),
            tool_definitions: Value::Array(Vec::new()),
            steps: Vec::new(),
            extra: Map::new(),
        }
    }

    /// Token and cost totals over the agent's steps.
    pub fn totals(&self) -> (Usage, f64) {
        let mut usage = Usage::default();
        let mut cost = 0.0;
        for s in &self.steps {
            if let Some(u) = s.usage {
                usage.add(u);
            }
            cost += s.cost_usd.unwrap_or(0.0);
        }
        (usage, cost)
    }

    pub fn to_json(&self) -> Value {
        let (usage, cost) = self.totals();
        let mut steps: Vec<Value> = self.steps.iter().enumerate().map(|(i, s)| s.to_json(i + 1)).collect();
        if steps.is_empty() {
            // ATIF has no empty trajectory: one step says there was nothing.
            steps
                .push(Step::new(Source::System, cleanroom_env::time::rfc3339_utc_now(), NO_STEPS).to_json(1));
        }
        let mut agent = json!({"name": self.agent_name, "version": self.agent_version,
            "tool_definitions": self.tool_definitions});
        if let Some(m) = &self.model_name {
            agent["model_name"] = json!(m);
        }
        let mut out = json!({
            "schema_version": SCHEMA_VERSION,
            "session_id": self.session_id,
            "agent": agent,
            "steps": steps,
            "final_metrics": {
                "total_prompt_tokens": usage.prompt,
                "total_completion_tokens": usage.completion,
                "total_cached_tokens": usage.cached,
                "total_cost_usd": cost,
                "total_steps": steps.len(),
            },
        });
        if !self.extra.is_empty() {
            out["extra"] = Value::Object(self.extra.clone());
        }
        out
    }
}

/// Text of a chat message's `content` (a string or a list of parts).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str().or_else(|| p.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The trajectory of an agent that talked through the forwarder, rebuilt
/// from its exchanges (in chat-completions form, whatever its dialect):
/// the first request's system and user messages, then per exchange the
/// model's turn, whose observations are the tool results that the next
/// request carries.
pub fn from_exchanges(
    exchanges: &[crate::gateway::Exchange],
    agent_name: &str,
    agent_version: &str,
    model_name: &str,
) -> Trajectory {
    let session = exchanges.first().map_or_else(String::new, |e| format!("{agent_name}-{}", e.time));
    let mut t = Trajectory::new(&session, agent_name, agent_version, Some(model_name));
    if let Some(first) = exchanges.first() {
        t.tool_definitions = first.upstream_request["tools"].clone();
    }
    // Index of the agent step whose tool calls await their results.
    let mut pending: Option<usize> = None;
    for (i, ex) in exchanges.iter().enumerate() {
        let messages = ex.upstream_request["messages"].as_array().cloned().unwrap_or_default();
        // What is new in this request: everything after the last assistant
        // turn (all of it, for the first request).
        let new_from = if i == 0 {
            0
        } else {
            messages.iter().rposition(|m| m["role"] == "assistant").map_or(0, |p| p + 1)
        };
        for m in &messages[new_from..] {
            match m["role"].as_str() {
                Some("tool") => {
                    let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                    let text = content_text(&m["content"]);
                    match pending {
                        Some(p) => t.steps[p].observations.push((id, text)),
                        None => t.steps.push(Step::new(Source::User, ex.time.clone(), text)),
                    }
                }
                Some("system") | Some("developer") => {
                    t.steps.push(Step::new(Source::System, ex.time.clone(), content_text(&m["content"])))
                }
                _ => t.steps.push(Step::new(Source::User, ex.time.clone(), content_text(&m["content"]))),
            }
        }
        let mut step = Step::new(Source::Agent, ex.time.clone(), String::new());
        step.model_name = Some(model_name.to_string());
        step.usage = Some(ex.usage);
        step.cost_usd = Some(ex.cost_usd);
        step.extra.insert("seconds".into(), json!(ex.seconds));
        match &ex.upstream_response {
            Some(r) if ex.error.is_none() => {
                let message = &r["choices"][0]["message"];
                step.message = content_text(&message["content"]);
                step.reasoning = message["reasoning_content"].as_str().map(str::to_string);
                if let Some(calls) = message["tool_calls"].as_array() {
                    step.tool_calls = calls.iter().map(ToolCall::of_chat).collect();
                }
            }
            _ => {
                step.extra.insert("error".into(), json!(ex.error));
            }
        }
        t.steps.push(step);
        pending = Some(t.steps.len() - 1);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::{Dialect, Exchange};

    fn exchange(messages: Value, reply: Value, usage: Usage) -> Exchange {
        Exchange {
            seq: 1,
            time: "2026-11-30T00:00:00Z".into(),
            dialect: Dialect::Anthropic,
            seconds: 1.5,
            retries: 0,
            agent_request: None,
            upstream_request: json!({"messages": messages, "tools": [{"type": "function", "function": {"name": "bash"}}]}),
            upstream_response: Some(json!({"choices": [{"message": reply}]})),
            agent_response: None,
            usage,
            cost_usd: 0.0,
            error: None,
        }
    }

    #[test]
    fn exchanges_become_steps_with_observations_and_totals() {
        let call = json!({"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}});
        let first = exchange(
            json!([{"role": "system", "content": "be good"}, {"role": "user", "content": "deploy it"}]),
            json!({"role": "assistant", "content": "looking", "tool_calls": [call]}),
            Usage { prompt: 100, completion: 10, cached: 0 },
        );
        let second = exchange(
            json!([{"role": "system", "content": "be good"}, {"role": "user", "content": "deploy it"},
                {"role": "assistant", "content": "looking", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "README.md"}]),
            json!({"role": "assistant", "content": "done"}),
            Usage { prompt: 150, completion: 5, cached: 50 },
        );
        let t = from_exchanges(&[first, second], "claude-code", "2.0", "local").to_json();
        let steps = t["steps"].as_array().unwrap();
        let sources: Vec<&str> = steps.iter().map(|s| s["source"].as_str().unwrap()).collect();
        assert_eq!(sources, ["system", "user", "agent", "agent"]);
        assert_eq!(steps[2]["tool_calls"][0]["function_name"], "bash");
        assert_eq!(steps[2]["tool_calls"][0]["arguments"]["command"], "ls");
        assert_eq!(steps[2]["observation"]["results"][0]["content"], "README.md");
        assert_eq!(steps[3]["message"], "done");
        assert_eq!(t["final_metrics"]["total_prompt_tokens"], 250);
        assert_eq!(t["final_metrics"]["total_cached_tokens"], 50);
        assert_eq!(t["final_metrics"]["total_steps"], 4);
        assert_eq!(t["schema_version"], SCHEMA_VERSION);
    }

    #[test]
    fn arguments_are_always_an_object() {
        let call = |args: &str| {
            ToolCall::of_chat(&json!({"id": "c", "function": {"name": "bash", "arguments": args}})).arguments
        };
        assert_eq!(call(r#"{"command":"ls"}"#), json!({"command": "ls"}));
        let sent_parsed = json!({"id": "c", "function": {"name": "bash", "arguments": {"command": "ls"}}});
        assert_eq!(ToolCall::of_chat(&sent_parsed).arguments, json!({"command": "ls"}));
        for sent in [r#"{"command": "ls""#, r#""ls""#, "[1, 2]", ""] {
            assert_eq!(call(sent), json!({ UNPARSED: sent }), "{sent}");
        }
    }

    #[test]
    fn a_trajectory_without_steps_has_one_that_says_so() {
        let t = Trajectory::new("s", "codex", "1", None).to_json();
        let steps = t["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!((steps[0]["step_id"].as_u64(), steps[0]["source"].as_str()), (Some(1), Some("system")));
        assert_eq!(steps[0]["message"], NO_STEPS);
        assert_eq!(t["final_metrics"]["total_steps"], 1);
    }
}
