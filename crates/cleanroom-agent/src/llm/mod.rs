//! The built-in agent, `llm:MODEL`: a tool-calling loop over an
//! OpenAI-compatible chat API, run in the harness, acting on the
//! environment through the backend. No "please continue" nudges: a reply
//! without a tool call ends the agent, as it would end a person's session.

pub mod gate;
mod tools;

use std::time::{Duration, Instant};

use cleanroom_env::{CancelToken, Captured, EnvError, Environment};
use cleanroom_model::atif::{content_text, Source, Step, ToolCall, Trajectory};
use cleanroom_model::{
    Budget, ChatClient, Dialect, Exhausted, GateMode, Gateway, GatewayError, Meter, ModelConfig,
};
use cleanroom_task::Task;
use serde_json::{json, Value};

use crate::{AgentRun, ModelRecord, Stop, AGENT_OUTPUT_LIMIT};
use gate::Gate;

const SYSTEM_PROMPT: &str = "You are working as root on a fresh Debian 12 machine with network access. \
Your task is in the user's message; its files are under /workspace. Act through the tools: bash runs \
commands (the working directory and variables carry over between calls), read_file, write_file and \
edit_file work on files. When you are done, call finish with a summary of what you did.";

pub struct LlmSettings<'a> {
    /// The model's name in the configuration.
    pub model_name: &'a str,
    pub model: &'a ModelConfig,
    pub max_steps: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub gate: GateMode,
    pub timeout: Duration,
    /// Fed with what the tool calls print, for progress reports.
    pub last_line: Option<cleanroom_env::LastLine>,
}

/// The conversation, the trajectory and the readable log, kept together.
struct Transcript {
    messages: Vec<Value>,
    trajectory: Trajectory,
    log: Captured,
}

impl Transcript {
    fn say(&mut self, text: &str) {
        self.log.push(text.as_bytes());
        if !text.ends_with('\n') {
            self.log.push(b"\n");
        }
    }
}

pub fn run_llm(
    task: &Task,
    env: &dyn Environment,
    settings: &LlmSettings,
    cancel: &CancelToken,
) -> Result<AgentRun, EnvError> {
    let started = Instant::now();
    let deadline = started + settings.timeout;
    let client = match ChatClient::new(settings.model) {
        Ok(c) => c,
        Err(e) => return Ok(model_failure(started, settings.model_name, e.to_string())),
    };
    let budget = Budget {
        max_steps: settings.max_steps,
        max_tokens: settings.max_tokens,
        max_cost_usd: settings.max_cost_usd,
        deadline: Some(deadline),
    };
    let gateway = Gateway::new(client, Meter::new(budget));
    let session = tools::Session::start(env, settings.last_line.clone())?;
    let mut gate = Gate::new(settings.gate);
    let instruction = task.agent_instruction();
    let mut t = Transcript {
        messages: vec![
            json!({"role": "system", "content": SYSTEM_PROMPT}),
            json!({"role": "user", "content": instruction}),
        ],
        trajectory: Trajectory::new(
            &crate::workspace::random_hex(),
            "cleanroom-llm",
            env!("CARGO_PKG_VERSION"),
            Some(settings.model_name),
        ),
        log: Captured::new(AGENT_OUTPUT_LIMIT),
    };
    t.trajectory.tool_definitions = tools::definitions();
    let now = cleanroom_env::time::rfc3339_utc_now;
    t.trajectory.steps.push(Step::new(Source::System, now(), SYSTEM_PROMPT));
    t.trajectory.steps.push(Step::new(Source::User, now(), instruction.clone()));
    t.say(&format!("[cleanroom] llm agent, model {} ({})\n", settings.model_name, settings.model.model));

    let ending = drive(task, env, settings, cancel, &gateway, &session, &mut gate, &mut t, deadline)?;
    let (stop, error, summary) = match ending {
        Ending::Finished(summary) => (Stop::Finished, None, summary),
        Ending::Stopped(stop, why) => (stop, why, None),
    };
    if let Some(why) = &error {
        t.say(&format!("[cleanroom] agent stopped: {why}"));
    }
    let totals = gateway.totals();
    let mut stopped = crate::trajectory_stop(stop, error.as_deref());
    stopped["summary"] = json!(summary);
    t.trajectory.extra.insert("stop".into(), stopped);
    Ok(AgentRun {
        stop,
        exit_code: None,
        duration: started.elapsed(),
        output: t.log,
        gate: gate.decisions().to_vec(),
        model: Some(ModelRecord {
            model: settings.model_name.to_string(),
            usage: totals.usage,
            cost_usd: totals.cost_usd,
            requests: totals.requests,
            retries: totals.retries,
            trajectory: Some(t.trajectory.to_json()),
            exchanges: gateway.exchanges_jsonl(),
            native_logs: Vec::new(),
            error,
        }),
    })
}

enum Ending {
    /// The agent finished (through `finish`, or by replying without a tool
    /// call), with its summary.
    Finished(Option<String>),
    Stopped(Stop, Option<String>),
}

#[allow(clippy::too_many_arguments)]
fn drive(
    task: &Task,
    env: &dyn Environment,
    settings: &LlmSettings,
    cancel: &CancelToken,
    gateway: &Gateway,
    session: &tools::Session,
    gate: &mut Gate,
    t: &mut Transcript,
    deadline: Instant,
) -> Result<Ending, EnvError> {
    let tool_definitions = tools::definitions();
    loop {
        if cancel.is_cancelled() {
            return Ok(Ending::Stopped(Stop::Interrupted, None));
        }
        let request = json!({"messages": t.messages, "tools": tool_definitions, "tool_choice": "auto"});
        let response = match gateway.chat(Dialect::Chat, None, &request, |r| Ok((r.clone(), None))) {
            Ok(r) => r,
            Err(GatewayError::Budget(Exhausted::Time)) => return Ok(Ending::Stopped(Stop::Timeout, None)),
            Err(GatewayError::Budget(why)) => {
                return Ok(Ending::Stopped(Stop::Budget, Some(why.describe().to_string())))
            }
            Err(_) if Instant::now() >= deadline => return Ok(Ending::Stopped(Stop::Timeout, None)),
            Err(e) => return Ok(Ending::Stopped(Stop::Crash, Some(e.to_string()))),
        };
        let message = &response["choices"][0]["message"];
        let calls = normalized_calls(message, t.trajectory.steps.len());
        let text = content_text(&message["content"]);
        let mut assistant = json!({"role": "assistant", "content": message["content"].clone()});
        if !calls.is_empty() {
            assistant["tool_calls"] = Value::Array(calls.clone());
        }
        t.messages.push(assistant);
        let usage = cleanroom_model::Usage::of_chat_response(&response);
        let mut step = Step::new(Source::Agent, cleanroom_env::time::rfc3339_utc_now(), text.clone());
        step.model_name = Some(settings.model_name.to_string());
        step.reasoning = message["reasoning_content"].as_str().map(str::to_string);
        step.tool_calls = calls.iter().map(ToolCall::of_chat).collect();
        step.usage = Some(usage);
        step.cost_usd = Some(usage.cost_usd(&settings.model.prices));
        t.say(&format!(
            "\n## step {} ({} prompt + {} completion tokens)",
            gateway.totals().requests,
            usage.prompt,
            usage.completion
        ));
        if !text.is_empty() {
            t.say(&text);
        }
        if calls.is_empty() {
            // A reply without a tool call is a stop, held like `finish`.
            step.extra.insert("ended".into(), json!("a reply without a tool call"));
            let decision = gate.on_finish(env, task, deadline, cancel)?;
            step.extra.insert("gate".into(), decision.to_json());
            t.trajectory.steps.push(step);
            let Some(message) = decision.message(task, "stop") else {
                return Ok(Ending::Finished(Some(text).filter(|s| !s.is_empty())));
            };
            t.say(&message);
            t.trajectory.steps.push(Step::new(
                Source::User,
                cleanroom_env::time::rfc3339_utc_now(),
                message.clone(),
            ));
            t.messages.push(json!({"role": "user", "content": message}));
            continue;
        }
        let mut finished = None;
        for call in &calls {
            let id = call["id"].as_str().unwrap_or_default().to_string();
            let name = call["function"]["name"].as_str().unwrap_or_default();
            let raw = call["function"]["arguments"].as_str().unwrap_or_default();
            t.say(&format!("$ {name} {raw}"));
            let observation = if finished.is_some() {
                "not run: the agent had already finished".to_string()
            } else {
                match serde_json::from_str::<Value>(if raw.trim().is_empty() { "{}" } else { raw }) {
                    Err(e) => format!("error: the arguments are not valid JSON ({e}); send a JSON object"),
                    Ok(args) if name == "finish" => {
                        let decision = gate.on_finish(env, task, deadline, cancel)?;
                        step.extra.insert("gate".into(), decision.to_json());
                        match decision.message(task, "call finish") {
                            Some(message) => message,
                            None => {
                                finished = Some(args["summary"].as_str().map(str::to_string));
                                "finished".to_string()
                            }
                        }
                    }
                    Ok(args) => {
                        gate.note_action();
                        session.call(env, name, &args, deadline, cancel)?
                    }
                }
            };
            if cancel.is_cancelled() {
                return Ok(Ending::Stopped(Stop::Interrupted, None));
            }
            t.say(&observation);
            step.observations.push((id.clone(), observation.clone()));
            t.messages.push(json!({"role": "tool", "tool_call_id": id, "content": observation}));
        }
        t.trajectory.steps.push(step);
        if let Some(summary) = finished {
            return Ok(Ending::Finished(summary));
        }
        if Instant::now() >= deadline {
            return Ok(Ending::Stopped(Stop::Timeout, None));
        }
    }
}

/// The message's tool calls with an id each (some servers leave it out)
/// and arguments as a string.
fn normalized_calls(message: &Value, step: usize) -> Vec<Value> {
    let Some(calls) = message["tool_calls"].as_array() else { return Vec::new() };
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = c["id"].as_str().filter(|s| !s.is_empty()).map_or_else(|| format!("call_{step}_{i}"), str::to_string);
            let args = match &c["function"]["arguments"] {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            json!({"id": id, "type": "function", "function": {"name": c["function"]["name"], "arguments": args}})
        })
        .collect()
}

/// An agent that could not even start talking to its model.
pub(crate) fn model_failure(started: Instant, model_name: &str, why: String) -> AgentRun {
    let mut log = Captured::new(AGENT_OUTPUT_LIMIT);
    log.push(format!("[cleanroom] agent stopped: {why}\n").as_bytes());
    AgentRun {
        stop: Stop::Crash,
        exit_code: None,
        duration: started.elapsed(),
        output: log,
        gate: Vec::new(),
        model: Some(ModelRecord {
            model: model_name.to_string(),
            error: Some(why),
            ..ModelRecord::default()
        }),
    }
}
