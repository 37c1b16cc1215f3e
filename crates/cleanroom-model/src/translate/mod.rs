//! Agent-facing API dialects translated to and from OpenAI chat completions.
//!
//! The forwarder speaks only non-streaming chat completions upstream, while
//! agents speak the Anthropic Messages API (Claude Code) or the OpenAI
//! Responses API (Codex CLI), usually with `stream: true`. Everything here is
//! a pure function over JSON values: a request is translated before it is
//! forwarded, the complete chat answer is translated back, and a streaming
//! client gets that finished answer replayed as one burst of server-sent
//! events.

use serde_json::{json, Value};

pub mod anthropic;
pub mod responses;

/// A request (or upstream answer) that cannot be translated; `path` names the
/// offending field, e.g. `messages[2].content[0].type`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TranslateError {
    pub path: String,
    pub message: String,
}

impl TranslateError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        TranslateError { path: path.into(), message: message.into() }
    }

    /// The same error for a value found nested at `prefix`: its first path
    /// segment is replaced, so `system[1].type` under `messages[3].content`
    /// becomes `messages[3].content[1].type`.
    fn under(self, prefix: &str) -> Self {
        let cut = self.path.find(['.', '[']).unwrap_or(self.path.len());
        TranslateError { path: format!("{prefix}{}", &self.path[cut..]), message: self.message }
    }
}

/// One server-sent event in the `event: NAME\ndata: JSON\n\n` framing.
/// serde_json escapes newlines inside strings, so the data stays on one line.
fn sse_event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The string at `v[key]`, or an error naming `path.key`.
fn required_str<'a>(v: &'a Value, path: &str, key: &str) -> Result<&'a str, TranslateError> {
    match v.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(TranslateError::new(format!("{path}.{key}"), "expected a string")),
        None => Err(TranslateError::new(format!("{path}.{key}"), "missing")),
    }
}

/// Copies `from[key]` to `to[as_key]` when present and not null.
fn copy_field(from: &Value, key: &str, to: &mut Value, as_key: &str) {
    if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
        to[as_key] = v.clone();
    }
}

fn text_part(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

fn image_part(url: impl Into<String>) -> Value {
    json!({"type": "image_url", "image_url": {"url": url.into()}})
}

/// Chat message content from parts: a plain string when every part is text
/// (the form every OpenAI-compatible server accepts), the part array once an
/// image is involved.
fn parts_content(parts: Vec<Value>) -> Value {
    if parts.iter().all(|p| p["type"] == "text") {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n\n"))
    } else {
        Value::Array(parts)
    }
}

/// Collects chat messages while keeping the one ordering rule chat
/// completions enforce: `role: tool` messages must directly follow the
/// assistant message whose `tool_calls` they answer. Tool messages can carry
/// only text, so images returned by tools are held back and sent in a user
/// message right after the run of tool messages.
#[derive(Default)]
struct ChatMessages {
    messages: Vec<Value>,
    held_images: Vec<Value>,
}

impl ChatMessages {
    fn push(&mut self, message: Value) {
        self.flush_held_images();
        self.messages.push(message);
    }

    /// A tool result; `images` are chat image parts it returned.
    fn push_tool(&mut self, call_id: &str, mut text: String, images: Vec<Value>) {
        if !images.is_empty() {
            let n = images.len();
            text.push_str(&format!("\n[{n} image(s) from this tool result follow in the next user message]"));
            self.held_images.extend(images);
        }
        self.messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
    }

    /// Adds a tool call to the directly preceding assistant message, or opens
    /// a new assistant message for it.
    fn push_tool_call(&mut self, call: Value) {
        if self.held_images.is_empty() {
            if let Some(last) = self.messages.last_mut().filter(|m| m["role"] == "assistant") {
                match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                    Some(calls) => calls.push(call),
                    None => last["tool_calls"] = json!([call]),
                }
                return;
            }
        }
        self.push(json!({"role": "assistant", "content": null, "tool_calls": [call]}));
    }

    fn flush_held_images(&mut self) {
        if self.held_images.is_empty() {
            return;
        }
        let mut parts = vec![text_part("Images returned by the tool calls above:")];
        parts.append(&mut self.held_images);
        self.messages.push(json!({"role": "user", "content": parts}));
    }

    /// The final list, with leading system messages merged into one: many
    /// chat templates accept a single system message, and only first.
    fn finish(mut self) -> Vec<Value> {
        self.flush_held_images();
        let leading = self.messages.iter().take_while(|m| m["role"] == "system").count();
        if leading < 2 {
            return self.messages;
        }
        let texts: Vec<String> = self.messages[..leading]
            .iter()
            .map(|m| m["content"].as_str().map(str::to_owned).unwrap_or_else(|| m["content"].to_string()))
            .collect();
        let mut out = vec![json!({"role": "system", "content": texts.join("\n\n")})];
        out.extend(self.messages.drain(leading..));
        out
    }
}

/// The first choice's message of a chat completion.
fn chat_message(chat: &Value) -> Result<&Value, TranslateError> {
    let choice = chat
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| TranslateError::new("choices", "missing or empty in the upstream answer"))?;
    choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| TranslateError::new("choices[0].message", "missing in the upstream answer"))
}

fn finish_reason(chat: &Value) -> Option<&str> {
    chat["choices"][0]["finish_reason"].as_str()
}

/// The assistant text of a chat message; some servers send content as an
/// array of text parts, and a refusal stands in for missing content.
fn chat_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => message["refusal"].as_str().unwrap_or_default().to_owned(),
    }
}

/// The upstream completion id, the base for the ids handed to agents.
fn chat_id(chat: &Value) -> String {
    chat["id"].as_str().filter(|s| !s.is_empty()).unwrap_or("cleanroom").to_owned()
}

/// Token counts from a chat `usage` object.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct ChatUsage {
    prompt: u64,
    cached: u64,
    completion: u64,
    reasoning: u64,
}

impl ChatUsage {
    fn of(chat: &Value) -> Self {
        let u = &chat["usage"];
        ChatUsage {
            prompt: u["prompt_tokens"].as_u64().unwrap_or(0),
            cached: u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
            completion: u["completion_tokens"].as_u64().unwrap_or(0),
            reasoning: u["completion_tokens_details"]["reasoning_tokens"].as_u64().unwrap_or(0),
        }
    }
}

/// What the dialects' tests share.
#[cfg(test)]
pub(crate) mod test_support {
    use serde_json::Value;

    /// The roles of a chat request's messages, in order.
    pub fn roles(chat: &Value) -> Vec<&str> {
        chat["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect()
    }

    /// Splits an SSE body into (event name, data) pairs.
    pub fn parse_sse(body: &str) -> Vec<(String, Value)> {
        assert!(body.ends_with("\n\n"));
        body.trim_end()
            .split("\n\n")
            .map(|frame| {
                let (event, data) = frame.split_once('\n').unwrap();
                let name = event.strip_prefix("event: ").unwrap().to_owned();
                (name, serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_names_the_path() {
        let e = TranslateError::new("messages[2].content[0].type", "unknown block type \"foo\"");
        assert_eq!(e.to_string(), "messages[2].content[0].type: unknown block type \"foo\"");
    }

    #[test]
    fn nested_errors_take_the_outer_path() {
        let e = TranslateError::new("system[1].type", "x").under("messages[3].content");
        assert_eq!(e.path, "messages[3].content[1].type");
        assert_eq!(
            TranslateError::new("system", "x").under("messages[0].content").path,
            "messages[0].content"
        );
    }

    #[test]
    fn held_images_follow_the_tool_messages() {
        let mut m = ChatMessages::default();
        m.push_tool_call(json!({"id": "a"}));
        m.push_tool_call(json!({"id": "b"}));
        m.push_tool("a", "one".into(), vec![image_part("data:image/png;base64,AA")]);
        m.push_tool("b", "two".into(), vec![]);
        m.push(json!({"role": "user", "content": "next"}));
        let out = m.finish();
        let roles: Vec<&str> = out.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["assistant", "tool", "tool", "user", "user"]);
        assert_eq!(out[0]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(out[3]["content"][1]["type"], "image_url");
    }

    #[test]
    fn leading_system_messages_merge() {
        let mut m = ChatMessages::default();
        m.push(json!({"role": "system", "content": "a"}));
        m.push(json!({"role": "system", "content": "b"}));
        m.push(json!({"role": "user", "content": "c"}));
        m.push(json!({"role": "system", "content": "d"}));
        let out = m.finish();
        assert_eq!(out.len(), 3);
        assert_eq!(out[0]["content"], "a\n\nb");
        assert_eq!(out[2]["content"], "d");
    }

    #[test]
    fn text_only_parts_become_a_string() {
        assert_eq!(parts_content(vec![text_part("a"), text_part("b")]), json!("a\n\nb"));
        let mixed = parts_content(vec![text_part("a"), image_part("u")]);
        assert!(mixed.is_array());
    }
}
