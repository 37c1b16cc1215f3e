//! A scripted OpenAI-compatible server for tests of the agents' logic: the
//! request's `model` picks a behaviour, and the n-th request of that model
//! gets the n-th scripted answer. It checks the API key on every request.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// What the server does for one request.
#[derive(Clone)]
pub enum Reply {
    /// A completion with this assistant message and these usage counts.
    Message {
        message: Value,
        prompt: u64,
        completion: u64,
    },
    Status(u16, String),
    /// 200 with a body that is not JSON.
    Garbage,
    /// Read the request and never answer.
    Stall,
    /// Like an agent's model: `call` (one tool call) while the conversation
    /// has no tool result yet, then `done` as text; plain text to requests
    /// without tools (an agent's side requests: titles, quota checks).
    Agentic {
        call: Value,
        done: String,
    },
    /// An agent that first claims to be done (`done`: an assistant
    /// message); once the completion gate's report is in the conversation,
    /// makes `call`, then is done again.
    GateAware {
        call: Value,
        done: Value,
    },
}

/// The conversation's text, message by message (content strings or parts).
fn texts(request: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default().to_string();
        let text = match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        };
        out.push((role, text));
    }
    out
}

pub fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

pub fn calls(calls: Vec<Value>, prompt: u64, completion: u64) -> Reply {
    Reply::Message {
        message: json!({"role": "assistant", "content": null, "tool_calls": calls}),
        prompt,
        completion,
    }
}

pub struct ScriptedModel {
    pub base_url: String,
    /// Every request body, by model.
    pub seen: Arc<Mutex<HashMap<String, Vec<Value>>>>,
}

/// `scripts`: model name → replies; past its end, a model repeats its last.
pub fn start(api_key: &str, scripts: HashMap<String, Vec<Reply>>) -> ScriptedModel {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen: Arc<Mutex<HashMap<String, Vec<Value>>>> = Arc::default();
    let (seen2, key) = (seen.clone(), api_key.to_string());
    let scripts = Arc::new(scripts);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let (seen, key, scripts) = (seen2.clone(), key.clone(), scripts.clone());
            std::thread::spawn(move || serve(conn, &seen, &key, &scripts));
        }
    });
    ScriptedModel { base_url, seen }
}

fn serve(
    conn: TcpStream,
    seen: &Mutex<HashMap<String, Vec<Value>>>,
    key: &str,
    scripts: &HashMap<String, Vec<Reply>>,
) {
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0;
        let mut auth = String::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end().to_string();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.trim().parse().unwrap(),
                "authorization" => auth = v.trim().to_string(),
                _ => {}
            }
        }
        let mut body = vec![0; len];
        reader.read_exact(&mut body).unwrap();
        if auth != format!("Bearer {key}") {
            respond(&mut writer, 401, "{\"error\":{\"message\":\"bad key\"}}");
            continue;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let model = request["model"].as_str().unwrap_or_default().to_string();
        let n = {
            let mut seen = seen.lock().unwrap();
            let list = seen.entry(model.clone()).or_default();
            list.push(request.clone());
            list.len()
        };
        let script = scripts.get(&model).cloned().unwrap_or_default();
        let Some(reply) = script.get(n - 1).or(script.last()).cloned() else {
            respond(&mut writer, 404, "{\"error\":{\"message\":\"no such model\"}}");
            continue;
        };
        let (message, prompt, completion) = match reply {
            Reply::Message { message, prompt, completion } => (message, prompt, completion),
            Reply::Agentic { call, done } => {
                let answered = texts(&request).iter().any(|(role, _)| role == "tool");
                (if without_tools(&request) || answered { say(&done) } else { make(call) }, 50, 5)
            }
            Reply::GateAware { call, done } => {
                let messages = texts(&request);
                let report = messages.iter().rposition(|(_, t)| t.contains("The designated experiment `"));
                let acted = report.is_some_and(|i| messages[i..].iter().any(|(role, _)| role == "tool"));
                (
                    if without_tools(&request) {
                        say("Done.")
                    } else if report.is_none() || acted {
                        done
                    } else {
                        make(call)
                    },
                    50,
                    5,
                )
            }
            Reply::Status(code, text) => {
                respond(&mut writer, code, &text);
                continue;
            }
            Reply::Garbage => {
                respond(&mut writer, 200, "<html>this is not json");
                continue;
            }
            Reply::Stall => {
                // Hold the connection open until the client gives up.
                let mut rest = Vec::new();
                let _ = reader.read_to_end(&mut rest);
                return;
            }
        };
        let finish = if message["tool_calls"].is_array() { "tool_calls" } else { "stop" };
        let body = json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 0,
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}});
        respond(&mut writer, 200, &body.to_string());
    }
}

/// An agent's side requests (titles, quota checks) come without tools.
fn without_tools(request: &Value) -> bool {
    request["tools"].as_array().is_none_or(|t| t.is_empty())
}

pub fn say(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

pub fn make(call: Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [call]})
}

fn respond(w: &mut TcpStream, status: u16, body: &str) {
    let _ = write!(
        w,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = w.flush();
}
