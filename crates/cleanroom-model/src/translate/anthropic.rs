//! The Anthropic Messages API (what Claude Code speaks) on top of chat
//! completions.
//!
//! Choices worth knowing:
//! - Server tools (any tool with a `type` other than `custom`, e.g.
//!   `web_search_20250305`, `bash_20250124`) are dropped: they would have to
//!   run on Anthropic's side. [`dropped_tools`] lists them for logging.
//! - Thinking blocks are dropped from history and `reasoning_content` from
//!   answers: a thinking block sent back needs a signature we cannot make.
//! - Tool-call arguments that are not a JSON object come back as
//!   `{"_raw": "<arguments>"}`, so the agent's input validation reports the
//!   problem to the model instead of the whole turn failing.
//! - Usage follows Anthropic's meaning: `input_tokens` excludes cache reads,
//!   so `input_tokens + cache_read_input_tokens` is the full prompt.

use serde_json::{json, Map, Value};

use super::{
    chat_id, chat_message, chat_text, copy_field, finish_reason, image_part, parts_content, required_str,
    sse_event, text_part, ChatMessages, ChatUsage, TranslateError,
};

/// Rough token cost of one image or document for [`count_tokens_estimate`].
const ATTACHMENT_TOKENS: u64 = 1600;

/// Translates a Messages request into a non-streaming chat-completions
/// request for `upstream_model`.
pub fn request_to_chat(req: &Value, upstream_model: &str) -> Result<Value, TranslateError> {
    let mut out = ChatMessages::default();
    if let Some(system) = system_text(req.get("system"))? {
        out.push(json!({"role": "system", "content": system}));
    }
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| TranslateError::new("messages", "missing or not an array"))?;
    for (i, message) in messages.iter().enumerate() {
        push_message(message, &format!("messages[{i}]"), &mut out)?;
    }

    let mut chat = json!({"model": upstream_model, "messages": out.finish(), "stream": false});
    copy_field(req, "max_tokens", &mut chat, "max_tokens");
    copy_field(req, "temperature", &mut chat, "temperature");
    copy_field(req, "top_p", &mut chat, "top_p");
    // An empty stop list is not valid everywhere upstream.
    if req["stop_sequences"].as_array().is_some_and(|s| !s.is_empty()) {
        chat["stop"] = req["stop_sequences"].clone();
    }
    add_tools(req, &mut chat)?;
    Ok(chat)
}

/// Names (or, lacking one, types) of the tools [`request_to_chat`] drops
/// because only Anthropic could run them.
pub fn dropped_tools(req: &Value) -> Vec<String> {
    let tools = req["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    tools
        .iter()
        .filter(|t| !is_client_tool(t))
        .map(|t| t["name"].as_str().or(t["type"].as_str()).unwrap_or("?").to_owned())
        .collect()
}

/// `system` is a string or a list of text blocks (often with cache_control).
fn system_text(system: Option<&Value>) -> Result<Option<String>, TranslateError> {
    let text = match system {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut texts = Vec::new();
            for (i, block) in blocks.iter().enumerate() {
                let path = format!("system[{i}]");
                match block["type"].as_str() {
                    Some("text") => texts.push(required_str(block, &path, "text")?),
                    other => return Err(unknown_block(&path, other)),
                }
            }
            texts.join("\n\n")
        }
        Some(_) => return Err(TranslateError::new("system", "expected a string or an array of blocks")),
    };
    Ok(Some(text).filter(|t| !t.is_empty()))
}

fn unknown_block(path: &str, ty: Option<&str>) -> TranslateError {
    match ty {
        Some(t) => TranslateError::new(format!("{path}.type"), format!("unknown block type {t:?}")),
        None => TranslateError::new(format!("{path}.type"), "missing"),
    }
}

fn push_message(message: &Value, path: &str, out: &mut ChatMessages) -> Result<(), TranslateError> {
    let role = required_str(message, path, "role")?;
    match (role, message.get("content")) {
        ("user" | "assistant", Some(Value::String(s))) => {
            out.push(json!({"role": role, "content": s}));
            Ok(())
        }
        ("user", Some(Value::Array(blocks))) => push_user_blocks(blocks, path, out),
        ("assistant", Some(Value::Array(blocks))) => push_assistant_blocks(blocks, path, out),
        // Claude Code sends context (environment, deferred tools) as system
        // messages in the conversation; they stay where they are.
        ("system", content) => {
            if let Some(text) = system_text(content).map_err(|e| e.under(&format!("{path}.content")))? {
                out.push(json!({"role": "system", "content": text}));
            }
            Ok(())
        }
        ("user" | "assistant", _) => {
            Err(TranslateError::new(format!("{path}.content"), "expected a string or an array"))
        }
        _ => Err(TranslateError::new(format!("{path}.role"), format!("unknown role {role:?}"))),
    }
}

/// A user turn: its tool results become `role: tool` messages first (they
/// must directly follow the assistant's tool calls), then everything else in
/// the turn becomes one user message after them.
fn push_user_blocks(blocks: &[Value], path: &str, out: &mut ChatMessages) -> Result<(), TranslateError> {
    let mut parts = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        let path = format!("{path}.content[{j}]");
        match block["type"].as_str() {
            Some("tool_result") => push_tool_result(block, &path, out)?,
            Some("text") => parts.push(text_part(required_str(block, &path, "text")?)),
            Some("image") => parts.push(image(block, &path)?),
            Some("document") => parts.push(document(block, &path)?),
            Some("thinking" | "redacted_thinking") => {}
            other => return Err(unknown_block(&path, other)),
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts_content(parts)}));
    }
    Ok(())
}

/// An assistant turn: text blocks become the content, tool_use blocks the
/// tool_calls. A turn left with neither (only thinking) is skipped.
fn push_assistant_blocks(blocks: &[Value], path: &str, out: &mut ChatMessages) -> Result<(), TranslateError> {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        let path = format!("{path}.content[{j}]");
        match block["type"].as_str() {
            Some("text") => texts.push(required_str(block, &path, "text")?),
            Some("tool_use") => calls.push(json!({
                "id": required_str(block, &path, "id")?,
                "type": "function",
                "function": {
                    "name": required_str(block, &path, "name")?,
                    "arguments": block.get("input").unwrap_or(&json!({})).to_string(),
                },
            })),
            Some("thinking" | "redacted_thinking") => {}
            other => return Err(unknown_block(&path, other)),
        }
    }
    let text = texts.join("\n\n");
    match (text.is_empty(), calls.is_empty()) {
        (true, true) => {}
        (_, true) => out.push(json!({"role": "assistant", "content": text})),
        (empty, false) => {
            let content = if empty { Value::Null } else { Value::String(text) };
            out.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
        }
    }
    Ok(())
}

/// A tool_result block as a `role: tool` message. Its content is a string or
/// text/image blocks; an error result is marked in the text, since chat
/// completions has no error flag.
fn push_tool_result(block: &Value, path: &str, out: &mut ChatMessages) -> Result<(), TranslateError> {
    let call_id = required_str(block, path, "tool_use_id")?;
    let mut texts = Vec::new();
    let mut images = Vec::new();
    match block.get("content") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => texts.push(s.clone()),
        Some(Value::Array(items)) => {
            for (k, item) in items.iter().enumerate() {
                let path = format!("{path}.content[{k}]");
                match item["type"].as_str() {
                    Some("text") => texts.push(required_str(item, &path, "text")?.to_owned()),
                    Some("image") => images.push(image(item, &path)?),
                    Some("document") => {
                        texts.push(document(item, &path)?["text"].as_str().unwrap_or("").into())
                    }
                    // Tool search results name tools that were loaded; the
                    // upstream model can only be told so.
                    Some("tool_reference") => {
                        texts.push(format!("Tool loaded: {}", required_str(item, &path, "tool_name")?))
                    }
                    other => return Err(unknown_block(&path, other)),
                }
            }
        }
        Some(_) => {
            return Err(TranslateError::new(format!("{path}.content"), "expected a string or an array"))
        }
    }
    let mut text = texts.join("\n\n");
    if block["is_error"] == true {
        text = format!("[tool error] {text}");
    }
    out.push_tool(call_id, text, images);
    Ok(())
}

/// An image block as a chat image part: base64 sources become data: URLs.
fn image(block: &Value, path: &str) -> Result<Value, TranslateError> {
    let source = &block["source"];
    let path = format!("{path}.source");
    match source["type"].as_str() {
        Some("base64") => {
            let media = required_str(source, &path, "media_type")?;
            let data = required_str(source, &path, "data")?;
            Ok(image_part(format!("data:{media};base64,{data}")))
        }
        Some("url") => Ok(image_part(required_str(source, &path, "url")?)),
        Some(other) => {
            Err(TranslateError::new(format!("{path}.type"), format!("unsupported image source {other:?}")))
        }
        None => Err(TranslateError::new(format!("{path}.type"), "missing")),
    }
}

/// A document block as a text part. Plain-text documents keep their text;
/// PDFs and other binary documents cannot be passed through chat completions
/// portably, so the model is told one was left out rather than failing the turn.
fn document(block: &Value, path: &str) -> Result<Value, TranslateError> {
    let source = &block["source"];
    let title = block["title"].as_str().map(|t| format!(" {t:?}")).unwrap_or_default();
    match source["type"].as_str() {
        Some("text") => Ok(text_part(required_str(source, &format!("{path}.source"), "data")?)),
        _ => Ok(text_part(format!(
            "[document{title} omitted: this model endpoint cannot read {} documents]",
            source["media_type"].as_str().unwrap_or("binary")
        ))),
    }
}

/// Client tools: no `type`, or `type: "custom"`. Anything else is a server tool.
fn is_client_tool(tool: &Value) -> bool {
    matches!(tool.get("type"), None | Some(Value::Null)) || tool["type"] == "custom"
}

/// Client tools become chat functions; tool_choice follows them. With no
/// tool left, neither is sent (upstreams reject tool_choice without tools).
fn add_tools(req: &Value, chat: &mut Value) -> Result<(), TranslateError> {
    let mut functions = Vec::new();
    let tools = req["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, tool) in tools.iter().enumerate().filter(|(_, t)| is_client_tool(t)) {
        let path = format!("tools[{i}]");
        let mut function = json!({
            "name": required_str(tool, &path, "name")?,
            "parameters": tool.get("input_schema").cloned().unwrap_or(json!({"type": "object", "properties": {}})),
        });
        copy_field(tool, "description", &mut function, "description");
        functions.push(json!({"type": "function", "function": function}));
    }
    if functions.is_empty() {
        return Ok(());
    }
    if let Some(choice) = req.get("tool_choice").filter(|c| !c.is_null()) {
        chat["tool_choice"] = tool_choice(choice, &functions)?;
        if choice["disable_parallel_tool_use"] == true {
            chat["parallel_tool_calls"] = json!(false);
        }
    }
    chat["tools"] = Value::Array(functions);
    Ok(())
}

/// auto/any/tool/none → auto/required/{function}/none. Forcing a tool that
/// was dropped falls back to auto.
fn tool_choice(choice: &Value, functions: &[Value]) -> Result<Value, TranslateError> {
    Ok(match choice["type"].as_str() {
        Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => {
            let name = required_str(choice, "tool_choice", "name")?;
            if functions.iter().any(|f| f["function"]["name"] == name) {
                json!({"type": "function", "function": {"name": name}})
            } else {
                json!("auto")
            }
        }
        Some(other) => {
            return Err(TranslateError::new(
                "tool_choice.type",
                format!("unknown tool_choice type {other:?}"),
            ))
        }
        None => return Err(TranslateError::new("tool_choice.type", "missing")),
    })
}

/// Translates a chat completion into a Messages response that claims to come
/// from `requested_model` (the name the agent asked for).
pub fn chat_to_response(chat: &Value, requested_model: &str) -> Result<Value, TranslateError> {
    let message = chat_message(chat)?;
    let mut content = Vec::new();
    let text = chat_text(message);
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    let calls = message["tool_calls"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (k, call) in calls.iter().enumerate() {
        content.push(tool_use(call, k)?);
    }
    let usage = ChatUsage::of(chat);
    Ok(json!({
        "id": format!("msg_{}", chat_id(chat)),
        "type": "message",
        "role": "assistant",
        "model": requested_model,
        "content": content,
        "stop_reason": stop_reason(finish_reason(chat), !calls.is_empty()),
        "stop_sequence": null,
        "usage": {
            "input_tokens": usage.prompt.saturating_sub(usage.cached),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": usage.cached,
            "output_tokens": usage.completion,
        },
    }))
}

fn tool_use(call: &Value, k: usize) -> Result<Value, TranslateError> {
    let path = format!("choices[0].message.tool_calls[{k}]");
    let function = &call["function"];
    let name = required_str(function, &format!("{path}.function"), "name")?;
    let id = call["id"].as_str().map(str::to_owned).unwrap_or_else(|| format!("toolu_{k}"));
    Ok(json!({"type": "tool_use", "id": id, "name": name, "input": tool_input(&function["arguments"])}))
}

/// Tool input from chat arguments (a JSON string, or already an object from
/// lenient servers). Empty means no arguments; anything that is not a JSON
/// object is kept verbatim under `_raw`.
fn tool_input(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        Value::Null => json!({}),
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => json!({"_raw": s}),
        },
        other => json!({"_raw": other.to_string()}),
    }
}

/// finish_reason → stop_reason. Some servers say "stop" even when they
/// return tool calls; the calls decide then, since the agent must run them.
fn stop_reason(finish: Option<&str>, has_calls: bool) -> &'static str {
    match finish {
        Some("length") => "max_tokens",
        Some("content_filter") => "refusal",
        _ if has_calls => "tool_use",
        _ => "end_turn",
    }
}

/// Renders a complete Messages response as the SSE stream a streaming
/// client expects: message_start, one start/delta/stop triple per content
/// block, message_delta, message_stop.
pub fn sse_events(msg: &Value) -> String {
    let usage = &msg["usage"];
    let mut start = msg.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["stop_sequence"] = Value::Null;
    start["usage"]["output_tokens"] = json!(0);
    let mut out = sse_event("message_start", &json!({"type": "message_start", "message": start}));

    let blocks = msg["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (index, block) in blocks.iter().enumerate() {
        out.push_str(&block_events(index, block));
    }

    // message_delta carries the final, cumulative usage.
    let delta = json!({
        "type": "message_delta",
        "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": msg["stop_sequence"]},
        "usage": usage,
    });
    out.push_str(&sse_event("message_delta", &delta));
    out.push_str(&sse_event("message_stop", &json!({"type": "message_stop"})));
    out
}

/// content_block_start (the block emptied), one delta with the whole
/// payload, content_block_stop.
fn block_events(index: usize, block: &Value) -> String {
    let (empty, delta) = match block["type"].as_str() {
        Some("text") => {
            (json!({"type": "text", "text": ""}), Some(json!({"type": "text_delta", "text": block["text"]})))
        }
        Some("tool_use") => {
            let mut empty = block.clone();
            empty["input"] = json!({});
            let partial = block.get("input").unwrap_or(&json!({})).to_string();
            (empty, Some(json!({"type": "input_json_delta", "partial_json": partial})))
        }
        _ => (block.clone(), None),
    };
    let start = json!({"type": "content_block_start", "index": index, "content_block": empty});
    let mut out = sse_event("content_block_start", &start);
    if let Some(delta) = delta {
        let event = json!({"type": "content_block_delta", "index": index, "delta": delta});
        out.push_str(&sse_event("content_block_delta", &event));
    }
    out.push_str(&sse_event("content_block_stop", &json!({"type": "content_block_stop", "index": index})));
    out
}

/// An error body in Anthropic's shape, typed by HTTP status.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// A rough answer for `POST /v1/messages/count_tokens`: about four
/// characters per token over the text of system, messages and tools, and a
/// flat [`ATTACHMENT_TOKENS`] per base64 image or document. It is an
/// estimate only; the upstream has no counting endpoint to ask.
pub fn count_tokens_estimate(req: &Value) -> Value {
    let mut chars = 0;
    let mut attachments = 0;
    for key in ["system", "messages", "tools"] {
        if let Some(v) = req.get(key) {
            measure(v, &mut chars, &mut attachments);
        }
    }
    json!({"input_tokens": chars.div_ceil(4) + attachments * ATTACHMENT_TOKENS})
}

fn measure(v: &Value, chars: &mut u64, attachments: &mut u64) {
    match v {
        Value::String(s) => *chars += s.chars().count() as u64,
        Value::Array(items) => items.iter().for_each(|i| measure(i, chars, attachments)),
        Value::Object(map) if is_base64_source(map) => *attachments += 1,
        Value::Object(map) => map.values().for_each(|i| measure(i, chars, attachments)),
        _ => {}
    }
}

fn is_base64_source(map: &Map<String, Value>) -> bool {
    map.get("type").and_then(Value::as_str) == Some("base64") && map.contains_key("data")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::test_support::{parse_sse, roles};

    #[test]
    fn basic_request() {
        let req = json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "temperature": 0.2,
            "top_p": 0.9,
            "stop_sequences": ["END"],
            "metadata": {"user_id": "x"},
            "stream": true,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "Be kind."}],
            "messages": [{"role": "user", "content": "hi"}],
        });
        let chat = request_to_chat(&req, "up-model").unwrap();
        assert_eq!(chat["model"], "up-model");
        assert_eq!(chat["stream"], false);
        assert_eq!(chat["max_tokens"], 1024);
        assert_eq!(chat["temperature"], 0.2);
        assert_eq!(chat["top_p"], 0.9);
        assert_eq!(chat["stop"], json!(["END"]));
        assert!(chat.get("metadata").is_none());
        assert_eq!(chat["messages"][0], json!({"role": "system", "content": "Be brief.\n\nBe kind."}));
        assert_eq!(chat["messages"][1], json!({"role": "user", "content": "hi"}));
    }

    #[test]
    fn tool_round_trip_keeps_order() {
        let req = json!({
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list files"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "s"},
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"path": "a"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a\nb"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                     "content": [{"type": "text", "text": "no such file"}]},
                    {"type": "text", "text": "and now?"},
                ]},
            ],
        });
        let chat = request_to_chat(&req, "m").unwrap();
        assert_eq!(roles(&chat), ["user", "assistant", "tool", "tool", "user"]);
        let m = &chat["messages"];
        assert_eq!(m[0]["content"], "list files");
        assert_eq!(m[1]["content"], "Looking.");
        let call = &m[1]["tool_calls"][0];
        assert_eq!(call["id"], "toolu_1");
        assert_eq!(call["type"], "function");
        assert_eq!(call["function"]["name"], "Bash");
        assert_eq!(call["function"]["arguments"], r#"{"command":"ls"}"#);
        assert_eq!(m[2], json!({"role": "tool", "tool_call_id": "toolu_1", "content": "a\nb"}));
        assert_eq!(m[3]["tool_call_id"], "toolu_2");
        assert_eq!(m[3]["content"], "[tool error] no such file");
        assert_eq!(m[4]["content"], "and now?");
    }

    #[test]
    fn assistant_with_only_tool_calls_has_null_content() {
        let req = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
        ]});
        let chat = request_to_chat(&req, "m").unwrap();
        assert!(chat["messages"][1]["content"].is_null());
        assert_eq!(chat["messages"][2]["content"], "");
    }

    #[test]
    fn images_become_data_urls() {
        let img =
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}});
        let req = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, img.clone()]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [img]}]},
        ]});
        let chat = request_to_chat(&req, "m").unwrap();
        let m = &chat["messages"];
        assert_eq!(m[0]["content"][1]["image_url"]["url"], "data:image/png;base64,AAA");
        // The tool's image is held back into a user message after the tool message.
        assert_eq!(roles(&chat), ["user", "assistant", "tool", "user"]);
        assert!(m[2]["content"].as_str().unwrap().contains("1 image(s)"));
        assert_eq!(m[3]["content"][1]["image_url"]["url"], "data:image/png;base64,AAA");
    }

    #[test]
    fn unknown_block_names_its_path() {
        let req = json!({"messages": [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": [{"type": "foo"}]},
        ]});
        let err = request_to_chat(&req, "m").unwrap_err();
        assert_eq!(err.to_string(), "messages[2].content[0].type: unknown block type \"foo\"");
        let err = request_to_chat(&json!({}), "m").unwrap_err();
        assert_eq!(err.path, "messages");
    }

    #[test]
    fn system_messages_in_the_conversation_stay_in_place() {
        let req = json!({"system": "top", "messages": [
            {"role": "user", "content": "task"},
            {"role": "system", "content": [{"type": "text", "text": "env", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": [{"type": "bogus"}]},
        ]});
        let err = request_to_chat(&req, "m").unwrap_err();
        assert_eq!(err.to_string(), "messages[2].content[0].type: unknown block type \"bogus\"");
        let req = json!({"system": "top", "messages": req["messages"].as_array().unwrap()[..2]});
        let chat = request_to_chat(&req, "m").unwrap();
        assert_eq!(roles(&chat), ["system", "user", "system"]);
        assert_eq!(chat["messages"][2]["content"], "env");
    }

    #[test]
    fn tool_reference_blocks_become_text() {
        let req = json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "ToolSearch", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]}]},
        ]});
        let chat = request_to_chat(&req, "m").unwrap();
        assert_eq!(chat["messages"][1]["content"], "Tool loaded: WebFetch");
    }

    /// The shape of a request captured from Claude Code 2.1 (every long text
    /// replaced, so none of its prompts is kept here).
    #[test]
    fn real_claude_code_request() {
        let req: Value = serde_json::from_str(include_str!("testdata/claude-code-messages.json")).unwrap();
        let chat = request_to_chat(&req, "up").unwrap();
        assert_eq!(chat["model"], "up");
        assert_eq!(chat["stream"], false);
        assert_eq!(chat["max_tokens"], 32000);
        for ignored in ["thinking", "context_management", "output_config", "metadata", "system"] {
            assert!(chat.get(ignored).is_none(), "{ignored} leaked upstream");
        }
        assert_eq!(roles(&chat), ["system", "user", "system"]);
        assert!(chat["messages"][1]["content"].as_str().unwrap().contains("# Task"));
        let tools = chat["tools"].as_array().unwrap();
        assert_eq!(tools.len(), req["tools"].as_array().unwrap().len());
        assert!(tools.iter().any(|t| t["function"]["name"] == "Bash"));
        assert!(dropped_tools(&req).is_empty());

        // And an answer back, as Claude Code would receive it.
        let answer = chat_answer(
            json!({"role": "assistant", "content": "On it.", "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls /work\"}"}}]}),
            "tool_calls",
        );
        let msg = chat_to_response(&answer, req["model"].as_str().unwrap()).unwrap();
        assert_eq!(msg["model"], "fake-model");
        let events = parse_sse(&sse_events(&msg));
        assert_eq!(events.len(), 9);
    }

    #[test]
    fn tools_and_choice() {
        let req = json!({
            "messages": [{"role": "user", "content": "x"}],
            "tools": [
                {"name": "Bash", "description": "run", "input_schema": {"type": "object", "properties": {}}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
                {"type": "bash_20250124", "name": "bash"},
                {"type": "custom", "name": "Other", "input_schema": {"type": "object"}},
            ],
            "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        });
        let chat = request_to_chat(&req, "m").unwrap();
        let tools = chat["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(tools[0]["function"]["name"], "Bash");
        assert_eq!(tools[0]["function"]["description"], "run");
        assert_eq!(tools[0]["function"]["parameters"]["type"], "object");
        assert_eq!(tools[1]["function"]["name"], "Other");
        assert_eq!(chat["tool_choice"], "required");
        assert_eq!(chat["parallel_tool_calls"], false);
        assert_eq!(dropped_tools(&req), ["web_search", "bash"]);

        let pick = |choice: Value| {
            let mut r = req.clone();
            r["tool_choice"] = choice;
            request_to_chat(&r, "m").unwrap()["tool_choice"].clone()
        };
        assert_eq!(pick(json!({"type": "auto"})), "auto");
        assert_eq!(pick(json!({"type": "none"})), "none");
        assert_eq!(
            pick(json!({"type": "tool", "name": "Bash"})),
            json!({"type": "function", "function": {"name": "Bash"}})
        );
        assert_eq!(pick(json!({"type": "tool", "name": "web_search"})), "auto");
    }

    #[test]
    fn only_server_tools_means_no_tools() {
        let req = json!({
            "messages": [{"role": "user", "content": "x"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}],
            "tool_choice": {"type": "auto"},
        });
        let chat = request_to_chat(&req, "m").unwrap();
        assert!(chat.get("tools").is_none());
        assert!(chat.get("tool_choice").is_none());
    }

    fn chat_answer(message: Value, finish: &str) -> Value {
        json!({
            "id": "chatcmpl-abc",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "up-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                      "prompt_tokens_details": {"cached_tokens": 30}},
        })
    }

    #[test]
    fn response_with_text_and_tool_calls() {
        let chat = chat_answer(
            json!({"role": "assistant", "content": "Running it.", "reasoning_content": "think",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "Noop", "arguments": ""}},
                {"id": "call_3", "type": "function", "function": {"name": "Bad", "arguments": "{oops"}},
            ]}),
            "tool_calls",
        );
        let msg = chat_to_response(&chat, "claude-sonnet-4-5").unwrap();
        assert_eq!(msg["id"], "msg_chatcmpl-abc");
        assert_eq!(msg["type"], "message");
        assert_eq!(msg["role"], "assistant");
        assert_eq!(msg["model"], "claude-sonnet-4-5");
        assert_eq!(msg["stop_reason"], "tool_use");
        assert!(msg["stop_sequence"].is_null());
        let content = msg["content"].as_array().unwrap();
        assert_eq!(content.len(), 4);
        assert_eq!(content[0], json!({"type": "text", "text": "Running it."}));
        assert_eq!(
            content[1],
            json!({"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "ls"}})
        );
        assert_eq!(content[2]["input"], json!({}));
        assert_eq!(content[3]["input"], json!({"_raw": "{oops"}));
        assert_eq!(
            msg["usage"],
            json!({"input_tokens": 70, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 30, "output_tokens": 20})
        );
    }

    #[test]
    fn stop_reasons() {
        let text = json!({"role": "assistant", "content": "x"});
        let reason = |finish| {
            chat_to_response(&chat_answer(text.clone(), finish), "m").unwrap()["stop_reason"].clone()
        };
        assert_eq!(reason("stop"), "end_turn");
        assert_eq!(reason("length"), "max_tokens");
        assert_eq!(reason("content_filter"), "refusal");
        // Tool calls decide even when the server says "stop".
        let call = json!({"role": "assistant", "content": null,
                          "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]});
        let msg = chat_to_response(&chat_answer(call, "stop"), "m").unwrap();
        assert_eq!(msg["stop_reason"], "tool_use");
        assert_eq!(msg["content"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn missing_choices_is_an_error() {
        let err = chat_to_response(&json!({"id": "x", "choices": []}), "m").unwrap_err();
        assert_eq!(err.path, "choices");
    }

    #[test]
    fn sse_stream_replays_the_message() {
        let chat = chat_answer(
            json!({"role": "assistant", "content": "Hi\nthere",
                   "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"ls\"}"}}]}),
            "tool_calls",
        );
        let msg = chat_to_response(&chat, "claude").unwrap();
        let events = parse_sse(&sse_events(&msg));
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        for (name, data) in &events {
            assert_eq!(data["type"], name.as_str());
        }
        let start = &events[0].1["message"];
        assert_eq!(start["content"], json!([]));
        assert!(start["stop_reason"].is_null());
        assert_eq!(start["usage"]["input_tokens"], 70);
        assert_eq!(events[1].1["content_block"], json!({"type": "text", "text": ""}));
        assert_eq!(events[2].1["delta"], json!({"type": "text_delta", "text": "Hi\nthere"}));
        assert_eq!(events[4].1["index"], 1);
        assert_eq!(events[4].1["content_block"]["input"], json!({}));
        assert_eq!(events[4].1["content_block"]["name"], "Bash");
        let partial = events[5].1["delta"]["partial_json"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(partial).unwrap(), json!({"command": "ls"}));
        assert_eq!(events[7].1["delta"]["stop_reason"], "tool_use");
        assert_eq!(events[7].1["usage"]["output_tokens"], 20);
    }

    #[test]
    fn error_types_by_status() {
        assert_eq!(
            error_body(400, "bad"),
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})
        );
        let kind = |s| error_body(s, "m")["error"]["type"].clone();
        assert_eq!(kind(401), "authentication_error");
        assert_eq!(kind(404), "not_found_error");
        assert_eq!(kind(429), "rate_limit_error");
        assert_eq!(kind(500), "api_error");
        assert_eq!(kind(502), "api_error");
        assert_eq!(kind(529), "overloaded_error");
    }

    #[test]
    fn token_estimate() {
        let req = json!({
            "model": "a-very-long-model-name-that-is-not-counted",
            "system": "12345678",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "abcd"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x".repeat(100000)}},
            ]}],
        });
        // "12345678" + "user" + "text" + "abcd" + "image" = 25 chars → 7 tokens, plus one image.
        assert_eq!(count_tokens_estimate(&req), json!({"input_tokens": 7 + ATTACHMENT_TOKENS}));
    }
}
