//! The OpenAI Responses API (what Codex CLI speaks) on top of chat
//! completions.
//!
//! Choices worth knowing:
//! - Stateless only: `previous_response_id` is refused, as the forwarder
//!   keeps no responses. Codex runs with `store: false` and sends the whole
//!   conversation in `input` every turn, so it never needs one.
//! - Codex's freeform tools (`type: "custom"`, e.g. apply_patch) become chat
//!   functions taking one string argument `input`, and the legacy
//!   `local_shell` tool a function `local_shell` taking the exec action's
//!   fields. [`ToolKinds`] remembers which names were which, so that calls
//!   come back as `custom_tool_call` / `local_shell_call` items.
//! - Hosted tools (web_search, file_search, ...) are dropped: they run on
//!   OpenAI's side. [`dropped_tools`] lists them for logging.
//! - `developer` messages are sent as `system` (not every upstream knows
//!   `developer`); reasoning items are dropped, as upstream cannot read them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};

use super::{
    chat_id, chat_message, chat_text, copy_field, finish_reason, parts_content, required_str, sse_event,
    text_part, ChatMessages, ChatUsage, TranslateError,
};

/// The chat function name standing in for the `local_shell` tool.
const LOCAL_SHELL: &str = "local_shell";

/// Translates a Responses request into a non-streaming chat-completions
/// request for `upstream_model`.
pub fn request_to_chat(req: &Value, upstream_model: &str) -> Result<Value, TranslateError> {
    if req.get("previous_response_id").is_some_and(|v| !v.is_null()) {
        return Err(TranslateError::new(
            "previous_response_id",
            "not supported: this endpoint keeps no state; send the whole conversation in `input`",
        ));
    }
    let mut out = ChatMessages::default();
    if let Some(instructions) = req["instructions"].as_str().filter(|s| !s.is_empty()) {
        out.push(json!({"role": "system", "content": instructions}));
    }
    match req.get("input") {
        Some(Value::String(s)) => out.push(json!({"role": "user", "content": s})),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                push_item(item, &format!("input[{i}]"), &mut out)?;
            }
        }
        Some(_) => return Err(TranslateError::new("input", "expected a string or an array of items")),
        None => return Err(TranslateError::new("input", "missing")),
    }

    let mut chat = json!({"model": upstream_model, "messages": out.finish(), "stream": false});
    copy_field(req, "max_output_tokens", &mut chat, "max_tokens");
    copy_field(req, "temperature", &mut chat, "temperature");
    copy_field(req, "top_p", &mut chat, "top_p");
    if let Some(format) = response_format(&req["text"]["format"]) {
        chat["response_format"] = format;
    }
    add_tools(req, &mut chat)?;
    Ok(chat)
}

fn push_item(item: &Value, path: &str, out: &mut ChatMessages) -> Result<(), TranslateError> {
    match item.get("type").and_then(Value::as_str) {
        None | Some("message") => push_message(item, path, out),
        Some("function_call") => {
            let arguments = match item.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) if !v.is_null() => v.to_string(),
                _ => "{}".to_owned(),
            };
            out.push_tool_call(tool_call(
                required_str(item, path, "call_id")?,
                &call_name(item, path)?,
                arguments,
            ));
            Ok(())
        }
        Some("custom_tool_call") => {
            let arguments = json!({"input": required_str(item, path, "input")?}).to_string();
            out.push_tool_call(tool_call(
                required_str(item, path, "call_id")?,
                &call_name(item, path)?,
                arguments,
            ));
            Ok(())
        }
        Some("local_shell_call") => {
            let arguments = shell_arguments(item.get("action").unwrap_or(&Value::Null)).to_string();
            out.push_tool_call(tool_call(shell_call_id(item, path)?, LOCAL_SHELL, arguments));
            Ok(())
        }
        Some("function_call_output" | "custom_tool_call_output") => {
            let (text, images) = tool_output(item.get("output"), &format!("{path}.output"))?;
            out.push_tool(required_str(item, path, "call_id")?, text, images);
            Ok(())
        }
        Some("local_shell_call_output") => {
            let (text, images) = tool_output(item.get("output"), &format!("{path}.output"))?;
            out.push_tool(shell_call_id(item, path)?, text, images);
            Ok(())
        }
        // Reasoning is opaque to the upstream; a web search ran on OpenAI's side.
        Some("reasoning" | "web_search_call") => Ok(()),
        Some(other) => {
            Err(TranslateError::new(format!("{path}.type"), format!("unknown item type {other:?}")))
        }
    }
}

/// The chat function name a call item was made under.
fn call_name(item: &Value, path: &str) -> Result<String, TranslateError> {
    Ok(chat_name(item["namespace"].as_str(), required_str(item, path, "name")?))
}

fn tool_call(call_id: &str, name: &str, arguments: String) -> Value {
    json!({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// Local shell items carry `call_id` in Codex, while the API reference names
/// the output's `id` as the call's id; accept either.
fn shell_call_id<'a>(item: &'a Value, path: &str) -> Result<&'a str, TranslateError> {
    item["call_id"]
        .as_str()
        .or(item["id"].as_str())
        .ok_or_else(|| TranslateError::new(format!("{path}.call_id"), "missing"))
}

/// A local shell exec action as `local_shell` function arguments: its
/// non-null fields without the `type` tag.
fn shell_arguments(action: &Value) -> Value {
    let mut args = serde_json::Map::new();
    if let Some(fields) = action.as_object() {
        for (key, value) in fields.iter().filter(|(k, v)| *k != "type" && !v.is_null()) {
            args.insert(key.clone(), value.clone());
        }
    }
    Value::Object(args)
}

/// A message item; `developer` becomes `system`.
fn push_message(item: &Value, path: &str, out: &mut ChatMessages) -> Result<(), TranslateError> {
    let role = match required_str(item, path, "role")? {
        "system" | "developer" => "system",
        role @ ("user" | "assistant") => role,
        other => return Err(TranslateError::new(format!("{path}.role"), format!("unknown role {other:?}"))),
    };
    let parts = match item.get("content") {
        Some(Value::String(s)) => vec![text_part(s.as_str())],
        Some(Value::Array(parts)) => {
            let mut out = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                out.push(content_part(part, &format!("{path}.content[{j}]"), role)?);
            }
            out
        }
        _ => return Err(TranslateError::new(format!("{path}.content"), "expected a string or an array")),
    };
    let content = parts_content(parts);
    if role == "assistant" && content == "" {
        return Ok(());
    }
    out.push(json!({"role": role, "content": content}));
    Ok(())
}

/// One content part as a chat part; images only in user messages, the only
/// place chat completions accepts them.
fn content_part(part: &Value, path: &str, role: &str) -> Result<Value, TranslateError> {
    match part["type"].as_str() {
        Some("input_text" | "output_text" | "text") => Ok(text_part(required_str(part, path, "text")?)),
        Some("refusal") => Ok(text_part(required_str(part, path, "refusal")?)),
        Some("input_image") if role == "user" => image(part, path),
        Some("input_image") => Err(TranslateError::new(
            format!("{path}.type"),
            format!("images are not supported in {role} messages"),
        )),
        Some(other) => {
            Err(TranslateError::new(format!("{path}.type"), format!("unsupported content type {other:?}")))
        }
        None => Err(TranslateError::new(format!("{path}.type"), "missing")),
    }
}

/// An input_image part (a URL, usually a data: URL) as a chat image part.
fn image(part: &Value, path: &str) -> Result<Value, TranslateError> {
    let url = match &part["image_url"] {
        Value::String(url) => url.as_str(),
        Value::Object(o) => o.get("url").and_then(Value::as_str).unwrap_or_default(),
        _ => "",
    };
    if url.is_empty() {
        // file_id images would need the Files API, which the upstream lacks.
        return Err(TranslateError::new(
            format!("{path}.image_url"),
            "missing (file_id images are not supported)",
        ));
    }
    let mut image_url = json!({"url": url});
    copy_field(part, "detail", &mut image_url, "detail");
    Ok(json!({"type": "image_url", "image_url": image_url}))
}

/// A tool output: a string, or a list of text and image parts. The images
/// are returned apart, as chat tool messages carry text only.
fn tool_output(output: Option<&Value>, path: &str) -> Result<(String, Vec<Value>), TranslateError> {
    let parts = match output {
        None | Some(Value::Null) => return Ok((String::new(), Vec::new())),
        Some(Value::String(s)) => return Ok((s.clone(), Vec::new())),
        Some(Value::Array(parts)) => parts,
        Some(other) => return Ok((other.to_string(), Vec::new())),
    };
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for (k, part) in parts.iter().enumerate() {
        let part = content_part(part, &format!("{path}[{k}]"), "user")?;
        match part["text"].as_str() {
            Some(text) => texts.push(text.to_owned()),
            None => images.push(part),
        }
    }
    Ok((texts.join("\n\n"), images))
}

/// `text.format` (structured output) as chat's `response_format`.
fn response_format(format: &Value) -> Option<Value> {
    match format["type"].as_str()? {
        "json_schema" => {
            let mut schema =
                json!({"name": format["name"].as_str().unwrap_or("response"), "schema": format["schema"]});
            copy_field(format, "strict", &mut schema, "strict");
            copy_field(format, "description", &mut schema, "description");
            Some(json!({"type": "json_schema", "json_schema": schema}))
        }
        "json_object" => Some(json!({"type": "json_object"})),
        _ => None,
    }
}

/// How chat tool calls go back into Responses items: which chat function
/// names stand for freeform (`custom`) tools, whether `local_shell` was
/// offered, and which names are flattened namespace members.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolKinds {
    /// Chat function names of freeform tools.
    pub custom: BTreeSet<String>,
    pub local_shell: bool,
    /// Chat function name → (namespace, tool name inside it).
    pub namespaced: BTreeMap<String, (String, String)>,
}

/// The [`ToolKinds`] of a Responses request.
pub fn tool_kinds(req: &Value) -> ToolKinds {
    let mut kinds = ToolKinds::default();
    for (_, namespace, tool) in flat_tools(req) {
        if tool["type"] == "local_shell" {
            kinds.local_shell = true;
        }
        let Some(name) = tool["name"].as_str() else { continue };
        let namespace = namespace.and_then(|n| n["name"].as_str());
        let chat = chat_name(namespace, name);
        if tool["type"] == "custom" {
            kinds.custom.insert(chat.clone());
        }
        if let Some(namespace) = namespace {
            kinds.namespaced.insert(chat, (namespace.to_owned(), name.to_owned()));
        }
    }
    kinds
}

/// Chat has no tool namespaces, so a namespaced tool is flattened to
/// `{namespace}__{name}`, which stays within the `[A-Za-z0-9_-]` names
/// OpenAI accepts.
fn chat_name(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}__{name}"),
        None => name.to_owned(),
    }
}

/// The request's tools with namespace members listed in place of their
/// namespace: (path, enclosing namespace tool, tool).
fn flat_tools(req: &Value) -> Vec<(String, Option<&Value>, &Value)> {
    let mut out = Vec::new();
    for (i, tool) in req["tools"].as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        if tool["type"] != "namespace" {
            out.push((format!("tools[{i}]"), None, tool));
            continue;
        }
        for (j, member) in tool["tools"].as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate()
        {
            out.push((format!("tools[{i}].tools[{j}]"), Some(tool), member));
        }
    }
    out
}

/// Names (or, lacking one, types) of the hosted tools [`request_to_chat`]
/// drops because only OpenAI could run them.
pub fn dropped_tools(req: &Value) -> Vec<String> {
    flat_tools(req)
        .into_iter()
        .filter(|(_, _, t)| !matches!(t["type"].as_str(), Some("function" | "custom" | "local_shell")))
        .map(|(_, _, t)| t["name"].as_str().or(t["type"].as_str()).unwrap_or("?").to_owned())
        .collect()
}

/// Function, custom and local_shell tools (namespace members too) become
/// chat functions; tool_choice follows them. With no tool left, neither is sent.
fn add_tools(req: &Value, chat: &mut Value) -> Result<(), TranslateError> {
    let mut functions = Vec::new();
    for (path, namespace, tool) in flat_tools(req) {
        let mut function = match tool["type"].as_str() {
            Some("function") => plain_function(tool, &path)?,
            Some("custom") => custom_function(tool, &path)?,
            Some("local_shell") => local_shell_function(),
            _ => continue,
        };
        if let Some(namespace) = namespace {
            qualify(&mut function, namespace, &path)?;
        }
        functions.push(json!({"type": "function", "function": function}));
    }
    if functions.is_empty() {
        return Ok(());
    }
    if let Some(choice) = req.get("tool_choice").filter(|c| !c.is_null()) {
        chat["tool_choice"] = tool_choice(choice)?;
    }
    copy_field(req, "parallel_tool_calls", chat, "parallel_tool_calls");
    chat["tools"] = Value::Array(functions);
    Ok(())
}

/// Renames a namespace member to its flattened name and prefixes the
/// namespace's description, which would otherwise be lost.
fn qualify(function: &mut Value, namespace: &Value, path: &str) -> Result<(), TranslateError> {
    let ns = required_str(namespace, path.rsplit_once(".tools").map_or(path, |(p, _)| p), "name")?;
    function["name"] = json!(chat_name(Some(ns), function["name"].as_str().unwrap_or_default()));
    if let Some(about) = namespace["description"].as_str().filter(|d| !d.is_empty()) {
        let own = function["description"].as_str().unwrap_or_default();
        function["description"] = json!(format!("[{ns}: {about}]\n{own}").trim_end().to_owned());
    }
    Ok(())
}

fn plain_function(tool: &Value, path: &str) -> Result<Value, TranslateError> {
    let mut function = json!({
        "name": required_str(tool, path, "name")?,
        "parameters": tool.get("parameters").filter(|p| !p.is_null()).cloned()
            .unwrap_or(json!({"type": "object", "properties": {}})),
    });
    copy_field(tool, "description", &mut function, "description");
    // strict: false is the default; only pass the opt-in, which upstreams may not know.
    if tool["strict"] == true {
        function["strict"] = json!(true);
    }
    Ok(function)
}

/// A freeform tool as a function with one string parameter `input`; the
/// grammar, if any, is spelled out for the model in the parameter's
/// description since chat functions cannot enforce it.
fn custom_function(tool: &Value, path: &str) -> Result<Value, TranslateError> {
    let format = &tool["format"];
    let input_description = match (format["type"].as_str(), format["definition"].as_str()) {
        (Some("grammar"), Some(definition)) => format!(
            "The raw tool input as one string. It must match this {} grammar:\n{definition}",
            format["syntax"].as_str().unwrap_or("")
        ),
        _ => "The raw tool input as one free-form string.".to_owned(),
    };
    let mut function = json!({
        "name": required_str(tool, path, "name")?,
        "parameters": {
            "type": "object",
            "properties": {"input": {"type": "string", "description": input_description}},
            "required": ["input"],
        },
    });
    copy_field(tool, "description", &mut function, "description");
    Ok(function)
}

fn local_shell_function() -> Value {
    json!({
        "name": LOCAL_SHELL,
        "description": "Runs a command on the local machine. `command` is an argv array, \
                        e.g. [\"bash\", \"-lc\", \"ls -la\"].",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "array", "items": {"type": "string"}},
                "working_directory": {"type": "string"},
                "timeout_ms": {"type": "integer"},
            },
            "required": ["command"],
        },
    })
}

/// auto/none/required pass through; a named function or custom tool becomes
/// a named function; allowed_tools keeps its mode; a hosted tool is gone, so auto.
fn tool_choice(choice: &Value) -> Result<Value, TranslateError> {
    if let Some(mode) = choice.as_str() {
        return match mode {
            "auto" | "none" | "required" => Ok(json!(mode)),
            _ => Err(TranslateError::new("tool_choice", format!("unknown tool_choice {mode:?}"))),
        };
    }
    Ok(match choice["type"].as_str() {
        Some("function" | "custom") => {
            let name = chat_name(choice["namespace"].as_str(), required_str(choice, "tool_choice", "name")?);
            json!({"type": "function", "function": {"name": name}})
        }
        Some("allowed_tools") => json!(choice["mode"].as_str().unwrap_or("auto")),
        _ => json!("auto"),
    })
}

/// Translates a chat completion into a Responses response object that claims
/// to come from `requested_model`; `kinds` (from the request) decides which
/// item type each tool call becomes.
pub fn chat_to_response(
    chat: &Value,
    requested_model: &str,
    kinds: &ToolKinds,
) -> Result<Value, TranslateError> {
    let message = chat_message(chat)?;
    let id = chat_id(chat);
    let mut output = Vec::new();
    let text = chat_text(message);
    if !text.is_empty() {
        output.push(json!({
            "id": format!("msg_{id}"),
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }));
    }
    let calls = message["tool_calls"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (k, call) in calls.iter().enumerate() {
        output.push(call_item(call, k, &id, kinds)?);
    }

    let incomplete = match finish_reason(chat) {
        Some("length") => Some("max_output_tokens"),
        Some("content_filter") => Some("content_filter"),
        _ => None,
    };
    let usage = ChatUsage::of(chat);
    Ok(json!({
        "id": format!("resp_{id}"),
        "object": "response",
        "created_at": chat["created"].as_u64().unwrap_or(0),
        "status": if incomplete.is_some() { "incomplete" } else { "completed" },
        "error": null,
        "incomplete_details": incomplete.map(|reason| json!({"reason": reason})),
        "model": requested_model,
        "output": output,
        "usage": {
            "input_tokens": usage.prompt,
            "input_tokens_details": {"cached_tokens": usage.cached},
            "output_tokens": usage.completion,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning},
            "total_tokens": usage.prompt + usage.completion,
        },
    }))
}

/// One chat tool call as a function_call, custom_tool_call or
/// local_shell_call item.
fn call_item(call: &Value, k: usize, id: &str, kinds: &ToolKinds) -> Result<Value, TranslateError> {
    let path = format!("choices[0].message.tool_calls[{k}]");
    let function = &call["function"];
    let name = required_str(function, &format!("{path}.function"), "name")?;
    let call_id = call["id"].as_str().map(str::to_owned).unwrap_or_else(|| format!("call_{k}"));
    let arguments = match &function["arguments"] {
        Value::String(s) if !s.trim().is_empty() => s.clone(),
        Value::String(_) | Value::Null => "{}".to_owned(),
        other => other.to_string(),
    };
    let (namespace, own_name) = match kinds.namespaced.get(name) {
        Some((namespace, own_name)) => (Some(namespace), own_name.as_str()),
        None => (None, name),
    };
    let mut item = if kinds.custom.contains(name) {
        json!({"id": format!("ctc_{id}_{k}"), "type": "custom_tool_call", "status": "completed",
               "call_id": call_id, "name": own_name, "input": custom_input(&arguments)})
    } else if kinds.local_shell && name == LOCAL_SHELL {
        json!({"id": format!("lsh_{id}_{k}"), "type": "local_shell_call", "status": "completed",
               "call_id": call_id, "action": shell_action(&arguments)})
    } else {
        json!({"id": format!("fc_{id}_{k}"), "type": "function_call", "status": "completed",
               "call_id": call_id, "name": own_name, "arguments": arguments})
    };
    if let Some(namespace) = namespace {
        item["namespace"] = json!(namespace);
    }
    Ok(item)
}

/// The freeform input from `{"input": "..."}` arguments. A model that wrote
/// the raw input straight into the arguments gets it passed through as is.
fn custom_input(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut o)) => match o.remove("input") {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    }
}

/// An exec action from `local_shell` arguments, typed strictly (clients
/// drop items that do not parse). A command given as one string rather than
/// the argv asked for is run through `bash -lc`.
fn shell_action(arguments: &str) -> Value {
    let args = serde_json::from_str::<Value>(arguments).unwrap_or(Value::Null);
    let as_string = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
    let command: Vec<String> = match &args["command"] {
        Value::String(s) => vec!["bash".into(), "-lc".into(), s.clone()],
        Value::Array(argv) => argv.iter().map(as_string).collect(),
        _ => Vec::new(),
    };
    let env: serde_json::Map<String, Value> = args["env"]
        .as_object()
        .map(|env| env.iter().map(|(k, v)| (k.clone(), json!(as_string(v)))).collect())
        .unwrap_or_default();
    json!({
        "type": "exec",
        "command": command,
        "timeout_ms": args["timeout_ms"].as_u64(),
        "working_directory": args["working_directory"].as_str().or(args["workdir"].as_str()),
        "env": env,
        "user": args["user"].as_str(),
    })
}

/// Numbers events and renders them; every event carries its type and an
/// increasing `sequence_number`.
struct EventStream {
    out: String,
    sequence: u64,
}

impl EventStream {
    fn emit(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.out.push_str(&sse_event(kind, &data));
    }
}

/// Renders a complete Responses response object as the SSE stream a
/// streaming client expects: created, in_progress, the events of each
/// output item, then completed (or incomplete / failed by status).
pub fn sse_events(resp: &Value) -> String {
    let mut stream = EventStream { out: String::new(), sequence: 0 };
    let mut pending = resp.clone();
    pending["status"] = json!("in_progress");
    pending["output"] = json!([]);
    pending["usage"] = Value::Null;
    pending["incomplete_details"] = Value::Null;
    stream.emit("response.created", json!({"response": pending}));
    stream.emit("response.in_progress", json!({"response": pending}));

    for (index, item) in resp["output"].as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        item_events(&mut stream, index, item);
    }

    let last = match resp["status"].as_str() {
        Some("incomplete") => "response.incomplete",
        Some("failed") => "response.failed",
        _ => "response.completed",
    };
    stream.emit(last, json!({"response": resp}));
    stream.out
}

/// output_item.added, the item's content events, output_item.done.
fn item_events(stream: &mut EventStream, index: usize, item: &Value) {
    let item_id = &item["id"];
    stream.emit("response.output_item.added", json!({"output_index": index, "item": in_progress(item)}));
    match item["type"].as_str() {
        Some("message") => {
            for (part_index, part) in
                item["content"].as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate()
            {
                let at = json!({"item_id": item_id, "output_index": index, "content_index": part_index});
                text_part_events(stream, &at, part);
            }
        }
        Some("function_call") => {
            let at = json!({"item_id": item_id, "output_index": index});
            stream.emit("response.function_call_arguments.delta", with(&at, "delta", &item["arguments"]));
            stream.emit("response.function_call_arguments.done", with(&at, "arguments", &item["arguments"]));
        }
        Some("custom_tool_call") => {
            let at = json!({"item_id": item_id, "output_index": index});
            stream.emit("response.custom_tool_call_input.delta", with(&at, "delta", &item["input"]));
            stream.emit("response.custom_tool_call_input.done", with(&at, "input", &item["input"]));
        }
        _ => {}
    }
    stream.emit("response.output_item.done", json!({"output_index": index, "item": item}));
}

/// content_part.added, output_text.delta/.done (for text parts), content_part.done.
fn text_part_events(stream: &mut EventStream, at: &Value, part: &Value) {
    let mut empty = part.clone();
    if part["type"] == "output_text" {
        empty["text"] = json!("");
    }
    stream.emit("response.content_part.added", with(at, "part", &empty));
    if part["type"] == "output_text" {
        let mut delta = with(at, "delta", &part["text"]);
        delta["logprobs"] = json!([]);
        stream.emit("response.output_text.delta", delta);
        let mut done = with(at, "text", &part["text"]);
        done["logprobs"] = json!([]);
        stream.emit("response.output_text.done", done);
    }
    stream.emit("response.content_part.done", with(at, "part", part));
}

/// `base` with one more field.
fn with(base: &Value, key: &str, value: &Value) -> Value {
    let mut v = base.clone();
    v[key] = value.clone();
    v
}

/// An item as first announced: in progress, its payload still empty.
fn in_progress(item: &Value) -> Value {
    let mut item = item.clone();
    item["status"] = json!("in_progress");
    match item["type"].as_str() {
        Some("message") => item["content"] = json!([]),
        Some("function_call") => item["arguments"] = json!(""),
        Some("custom_tool_call") => item["input"] = json!(""),
        _ => {}
    }
    item
}

/// An error body in OpenAI's shape, typed by HTTP status.
pub fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "invalid_request_error",
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::test_support::{parse_sse, roles};

    #[test]
    fn basic_request() {
        let req = json!({
            "model": "gpt-5-codex",
            "instructions": "You are Codex.",
            "input": "hello",
            "max_output_tokens": 500,
            "temperature": 0.5,
            "top_p": 1,
            "stream": true,
            "store": false,
            "reasoning": {"effort": "high"},
        });
        let chat = request_to_chat(&req, "up").unwrap();
        assert_eq!(chat["model"], "up");
        assert_eq!(chat["stream"], false);
        assert_eq!(chat["max_tokens"], 500);
        assert_eq!(chat["temperature"], 0.5);
        assert_eq!(chat["top_p"], 1);
        assert!(chat.get("store").is_none() && chat.get("reasoning").is_none());
        assert_eq!(
            chat["messages"],
            json!([
                {"role": "system", "content": "You are Codex."},
                {"role": "user", "content": "hello"},
            ])
        );
    }

    #[test]
    fn conversation_items() {
        let req = json!({
            "instructions": "sys",
            "input": [
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"},
                ]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xx"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
                {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"},
                {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a b"},
                {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "done"}]},
                {"role": "user", "content": "patch it"},
                {"type": "custom_tool_call", "call_id": "c3", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
                {"type": "custom_tool_call_output", "call_id": "c3", "output": "Success"},
                {"type": "local_shell_call", "id": "lsh_1", "call_id": "c4", "status": "completed",
                 "action": {"type": "exec", "command": ["pwd"], "timeout_ms": null, "working_directory": "/w"}},
                {"type": "local_shell_call_output", "call_id": "c4", "output": "/w"},
            ],
        });
        let chat = request_to_chat(&req, "m").unwrap();
        assert_eq!(
            roles(&chat),
            ["system", "user", "assistant", "tool", "tool", "user", "assistant", "tool", "assistant", "tool"]
        );
        let m = &chat["messages"];
        // instructions and the leading developer message are one system message.
        assert_eq!(m[0]["content"], "sys\n\ndev");
        assert_eq!(
            m[1]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA", "detail": "auto"}})
        );
        // The two calls join the assistant text before them.
        assert_eq!(m[2]["content"], "ok");
        let calls = m[2]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0],
            json!({"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"ls\"]}"}})
        );
        assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "c1", "content": "a b"}));
        assert_eq!(m[4]["content"], "done");
        assert_eq!(m[5]["content"], "patch it");
        let custom = &m[6]["tool_calls"][0]["function"];
        assert_eq!(custom["name"], "apply_patch");
        let args: Value = serde_json::from_str(custom["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"input": "*** Begin Patch\n*** End Patch"}));
        assert_eq!(m[7]["tool_call_id"], "c3");
        let shell = &m[8]["tool_calls"][0];
        assert_eq!(shell["id"], "c4");
        assert_eq!(shell["function"]["name"], "local_shell");
        let args: Value = serde_json::from_str(shell["function"]["arguments"].as_str().unwrap()).unwrap();
        assert_eq!(args, json!({"command": ["pwd"], "working_directory": "/w"}));
        assert_eq!(m[9], json!({"role": "tool", "tool_call_id": "c4", "content": "/w"}));
    }

    #[test]
    fn refusals_and_errors_name_paths() {
        let err = request_to_chat(&json!({"previous_response_id": "resp_1", "input": "x"}), "m").unwrap_err();
        assert_eq!(err.path, "previous_response_id");
        let err = request_to_chat(
            &json!({"input": [{"role": "user", "content": "x"}, {"type": "item_reference", "id": "a"}]}),
            "m",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "input[1].type: unknown item type \"item_reference\"");
        let err =
            request_to_chat(&json!({"input": [{"type": "function_call", "name": "f"}]}), "m").unwrap_err();
        assert_eq!(err.to_string(), "input[0].call_id: missing");
        let err = request_to_chat(&json!({}), "m").unwrap_err();
        assert_eq!(err.path, "input");
    }

    fn tooled_request() -> Value {
        json!({
            "input": "x",
            "tools": [
                {"type": "function", "name": "shell", "description": "run", "strict": false,
                 "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}},
                {"type": "custom", "name": "apply_patch", "description": "patch",
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: patch"}},
                {"type": "local_shell"},
                {"type": "web_search"},
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": false,
        })
    }

    #[test]
    fn tools_become_functions() {
        let req = tooled_request();
        let chat = request_to_chat(&req, "m").unwrap();
        let tools = chat["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 3);
        assert_eq!(tools[0]["function"]["name"], "shell");
        assert!(tools[0]["function"].get("strict").is_none());
        assert_eq!(tools[0]["function"]["parameters"]["properties"]["command"]["type"], "array");
        let custom = &tools[1]["function"];
        assert_eq!(custom["description"], "patch");
        assert_eq!(custom["parameters"]["required"], json!(["input"]));
        let input_desc = custom["parameters"]["properties"]["input"]["description"].as_str().unwrap();
        assert!(input_desc.contains("lark grammar") && input_desc.contains("start: patch"));
        assert_eq!(tools[2]["function"]["name"], "local_shell");
        assert_eq!(tools[2]["function"]["parameters"]["properties"]["command"]["type"], "array");
        assert_eq!(chat["tool_choice"], "auto");
        assert_eq!(chat["parallel_tool_calls"], false);
        assert_eq!(dropped_tools(&req), ["web_search"]);
        let kinds = tool_kinds(&req);
        assert!(kinds.custom.contains("apply_patch") && kinds.local_shell);

        let choice = |c: Value| tool_choice(&c).unwrap();
        assert_eq!(choice(json!("required")), "required");
        assert_eq!(
            choice(json!({"type": "custom", "name": "apply_patch"})),
            json!({"type": "function", "function": {"name": "apply_patch"}})
        );
        assert_eq!(choice(json!({"type": "web_search_preview"})), "auto");
    }

    #[test]
    fn namespaced_tools_are_flattened_and_restored() {
        let req = json!({
            "input": [
                {"type": "function_call", "call_id": "c1", "namespace": "agents", "name": "spawn", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ],
            "tools": [{"type": "namespace", "name": "agents", "description": "Sub-agents.", "tools": [
                {"type": "function", "name": "spawn", "description": "Start one.", "parameters": {"type": "object"}},
                {"type": "custom", "name": "script"},
            ]}],
            "tool_choice": {"type": "function", "namespace": "agents", "name": "spawn"},
        });
        let chat = request_to_chat(&req, "m").unwrap();
        assert_eq!(chat["messages"][0]["tool_calls"][0]["function"]["name"], "agents__spawn");
        let tools = chat["tools"].as_array().unwrap();
        assert_eq!(tools[0]["function"]["name"], "agents__spawn");
        assert_eq!(tools[0]["function"]["description"], "[agents: Sub-agents.]\nStart one.");
        assert_eq!(tools[1]["function"]["name"], "agents__script");
        assert_eq!(chat["tool_choice"]["function"]["name"], "agents__spawn");

        let kinds = tool_kinds(&req);
        assert!(kinds.custom.contains("agents__script"));
        let call = |name: &str| json!({"id": "c2", "type": "function", "function": {"name": name, "arguments": "{}"}});
        let answer =
            chat_answer(json!({"tool_calls": [call("agents__spawn"), call("agents__script")]}), "tool_calls");
        let resp = chat_to_response(&answer, "m", &kinds).unwrap();
        let out = &resp["output"];
        assert_eq!(
            (out[0]["type"].as_str(), out[0]["name"].as_str()),
            (Some("function_call"), Some("spawn"))
        );
        assert_eq!(out[0]["namespace"], "agents");
        assert_eq!(
            (out[1]["type"].as_str(), out[1]["name"].as_str()),
            (Some("custom_tool_call"), Some("script"))
        );
        assert_eq!(out[1]["namespace"], "agents");
    }

    /// The shape of a request captured from Codex CLI (every long text
    /// replaced, so none of its prompts is kept here).
    #[test]
    fn real_codex_request() {
        let req: Value = serde_json::from_str(include_str!("testdata/codex-responses.json")).unwrap();
        let chat = request_to_chat(&req, "up").unwrap();
        assert_eq!(chat["stream"], false);
        for ignored in ["reasoning", "store", "include", "prompt_cache_key", "client_metadata", "input"] {
            assert!(chat.get(ignored).is_none(), "{ignored} leaked upstream");
        }
        // The two developer messages merge into one system message.
        assert_eq!(roles(&chat), ["system", "user", "user"]);
        assert!(chat["messages"][0]["content"].as_str().unwrap().starts_with("You are a coding agent"));
        assert!(chat["messages"][2]["content"].as_str().unwrap().contains("# Task"));
        let names: Vec<&str> = chat["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"exec_command"));
        assert!(names.contains(&"multi_agent_v1__spawn_agent"));
        assert!(dropped_tools(&req).is_empty());
        assert_eq!(chat["tool_choice"], "auto");
        assert_eq!(chat["parallel_tool_calls"], true);

        let kinds = tool_kinds(&req);
        let answer = chat_answer(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "exec_command", "arguments": "{\"cmd\":\"ls\"}"}}]}),
            "tool_calls",
        );
        let resp = chat_to_response(&answer, "fake-model", &kinds).unwrap();
        assert_eq!(resp["output"][0]["type"], "function_call");
        assert_eq!(resp["output"][0]["name"], "exec_command");
        assert!(resp["output"][0].get("namespace").is_none());
        assert_eq!(parse_sse(&sse_events(&resp)).last().unwrap().0, "response.completed");
    }

    #[test]
    fn structured_output_format() {
        let req = json!({"input": "x", "text": {"format": {"type": "json_schema", "name": "out", "strict": true,
                                                          "schema": {"type": "object"}}}});
        let chat = request_to_chat(&req, "m").unwrap();
        assert_eq!(
            chat["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "out", "strict": true, "schema": {"type": "object"}}})
        );
    }

    fn chat_answer(message: Value, finish: &str) -> Value {
        json!({
            "id": "chatcmpl-xyz",
            "created": 1700000000,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                      "prompt_tokens_details": {"cached_tokens": 40}},
        })
    }

    fn calls_answer() -> Value {
        let call = |id: &str, name: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
        chat_answer(
            json!({"role": "assistant", "content": "Doing it.", "tool_calls": [
                call("c1", "shell", "{\"command\":[\"ls\"]}"),
                call("c2", "apply_patch", "{\"input\":\"*** Begin Patch\\n*** End Patch\"}"),
                call("c3", "local_shell", "{\"command\":\"ls -la\",\"workdir\":\"/w\"}"),
                call("c4", "apply_patch", "*** Begin Patch"),
            ]}),
            "tool_calls",
        )
    }

    #[test]
    fn response_items_by_tool_kind() {
        let resp = chat_to_response(&calls_answer(), "gpt-5-codex", &tool_kinds(&tooled_request())).unwrap();
        assert_eq!(resp["id"], "resp_chatcmpl-xyz");
        assert_eq!(resp["object"], "response");
        assert_eq!(resp["created_at"], 1700000000);
        assert_eq!(resp["status"], "completed");
        assert!(resp["incomplete_details"].is_null());
        assert_eq!(resp["model"], "gpt-5-codex");
        let out = resp["output"].as_array().unwrap();
        assert_eq!(out.len(), 5);
        assert_eq!(out[0]["type"], "message");
        assert_eq!(out[0]["role"], "assistant");
        assert_eq!(out[0]["status"], "completed");
        assert_eq!(
            out[0]["content"],
            json!([{"type": "output_text", "text": "Doing it.", "annotations": []}])
        );
        assert_eq!(out[1]["type"], "function_call");
        assert_eq!(out[1]["call_id"], "c1");
        assert_eq!(out[1]["name"], "shell");
        assert_eq!(out[1]["arguments"], "{\"command\":[\"ls\"]}");
        assert_eq!(out[2]["type"], "custom_tool_call");
        assert_eq!(out[2]["input"], "*** Begin Patch\n*** End Patch");
        assert_eq!(out[3]["type"], "local_shell_call");
        assert_eq!(out[3]["call_id"], "c3");
        assert_eq!(out[3]["action"]["type"], "exec");
        assert_eq!(out[3]["action"]["command"], json!(["bash", "-lc", "ls -la"]));
        assert_eq!(out[3]["action"]["working_directory"], "/w");
        assert_eq!(out[4]["input"], "*** Begin Patch");
        let ids: BTreeSet<&str> = out.iter().map(|i| i["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 5);
        assert_eq!(
            resp["usage"],
            json!({
                "input_tokens": 100, "input_tokens_details": {"cached_tokens": 40},
                "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120,
            })
        );

        // Without the kinds, every call is a plain function call.
        let plain = chat_to_response(&calls_answer(), "m", &ToolKinds::default()).unwrap();
        assert!(plain["output"].as_array().unwrap()[1..].iter().all(|i| i["type"] == "function_call"));
    }

    #[test]
    fn shell_actions_are_strictly_typed() {
        let action =
            shell_action(r#"{"command": ["ls", 1], "timeout_ms": "5", "env": {"A": 1}, "user": null}"#);
        assert_eq!(
            action,
            json!({"type": "exec", "command": ["ls", "1"], "timeout_ms": null, "working_directory": null,
                   "env": {"A": "1"}, "user": null})
        );
        assert_eq!(shell_action("not json")["command"], json!([]));
    }

    #[test]
    fn length_is_incomplete() {
        let resp =
            chat_to_response(&chat_answer(json!({"content": "cut"}), "length"), "m", &ToolKinds::default())
                .unwrap();
        assert_eq!(resp["status"], "incomplete");
        assert_eq!(resp["incomplete_details"], json!({"reason": "max_output_tokens"}));
        let events = parse_sse(&sse_events(&resp));
        assert_eq!(events.last().unwrap().0, "response.incomplete");
    }

    #[test]
    fn sse_stream_replays_the_response() {
        let resp = chat_to_response(&calls_answer(), "gpt-5-codex", &tool_kinds(&tooled_request())).unwrap();
        let events = parse_sse(&sse_events(&resp));
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names[..9],
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
            ]
        );
        assert_eq!(
            names[9..12],
            [
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
            ]
        );
        assert_eq!(
            names[13..15],
            ["response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"]
        );
        assert_eq!(*names.last().unwrap(), "response.completed");
        for (n, (name, data)) in events.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], n);
        }
        let created = &events[0].1["response"];
        assert_eq!(created["status"], "in_progress");
        assert_eq!(created["output"], json!([]));
        let added = &events[2].1;
        assert_eq!(added["output_index"], 0);
        assert_eq!(added["item"]["content"], json!([]));
        let delta = &events[4].1;
        assert_eq!(delta["item_id"], resp["output"][0]["id"]);
        assert_eq!((delta["output_index"].clone(), delta["content_index"].clone()), (json!(0), json!(0)));
        assert_eq!(delta["delta"], "Doing it.");
        assert_eq!(events[8].1["item"]["arguments"], "");
        assert_eq!(events[10].1["arguments"], "{\"command\":[\"ls\"]}");
        assert_eq!(events[10].1["output_index"], 1);
        assert_eq!(events[14].1["input"], "*** Begin Patch\n*** End Patch");
        // Every item's done event carries the finished item.
        let done: Vec<&Value> = events
            .iter()
            .filter(|(n, _)| n == "response.output_item.done")
            .map(|(_, d)| &d["item"])
            .collect();
        assert_eq!(done, resp["output"].as_array().unwrap().iter().collect::<Vec<_>>());
        assert_eq!(events.last().unwrap().1["response"], resp);
    }

    #[test]
    fn error_shape() {
        assert_eq!(
            error_body(400, "bad"),
            json!({"error": {"message": "bad", "type": "invalid_request_error", "param": null, "code": null}})
        );
        assert_eq!(error_body(429, "slow")["error"]["type"], "rate_limit_error");
        assert_eq!(error_body(502, "down")["error"]["type"], "server_error");
    }
}
