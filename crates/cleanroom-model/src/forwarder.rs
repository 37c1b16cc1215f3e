//! The model forwarder: an HTTP service the harness runs for one trial, on
//! a socket inside the environment's own network namespace (so agents reach
//! it at a fixed loopback address while the host's loopback stays shut).
//! It checks the trial's token, holds the real API key, translates the
//! Anthropic Messages and OpenAI Responses dialects to chat completions,
//! and sends everything through the trial's [`Gateway`]. Its clients are
//! the agent under test: the server it runs on bounds what they can hold.

use std::net::TcpListener;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::gateway::{Dialect, Gateway, GatewayError};
use crate::http::{Request, Response};
use crate::server::{Handler, Server};
use crate::translate::{anthropic, responses};

pub use crate::server::Limits;

/// Where agents inside an environment find the forwarder.
pub const PORT: u16 = 47311;

/// Why the forwarder wants the agent stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fatal {
    /// A budget ran out (the gateway's meter says which).
    Budget,
    /// The model API failed for good (after retries) or answered garbage.
    ModelFailed(String),
}

pub type OnFatal = Arc<dyn Fn(Fatal) + Send + Sync>;

/// The completion gate for agents whose CLI has a stop hook: the hook asks
/// `POST /cleanroom/gate`; the answer says whether the agent may stop and
/// what to tell it.
pub type OnGate = Arc<dyn Fn() -> GateAnswer + Send + Sync>;

#[derive(Debug, Clone)]
pub struct GateAnswer {
    pub allow_stop: bool,
    pub message: String,
}

pub struct Forwarder {
    server: Server,
}

struct Shared {
    gateway: Arc<Gateway>,
    token: String,
    /// The model name agents use and see.
    model_name: String,
    on_fatal: OnFatal,
    on_gate: Option<OnGate>,
}

impl Forwarder {
    pub fn start(
        listener: TcpListener,
        gateway: Arc<Gateway>,
        token: String,
        model_name: String,
        on_fatal: OnFatal,
        on_gate: Option<OnGate>,
    ) -> std::io::Result<Forwarder> {
        Forwarder::start_with_limits(
            listener,
            gateway,
            token,
            model_name,
            on_fatal,
            on_gate,
            Limits::default(),
        )
    }

    /// As [`Forwarder::start`], with other bounds on the clients (tests
    /// use short deadlines and small caps).
    pub fn start_with_limits(
        listener: TcpListener,
        gateway: Arc<Gateway>,
        token: String,
        model_name: String,
        on_fatal: OnFatal,
        on_gate: Option<OnGate>,
        limits: Limits,
    ) -> std::io::Result<Forwarder> {
        let shared = Arc::new(Shared { gateway, token, model_name, on_fatal, on_gate });
        Ok(Forwarder { server: Server::start("forwarder", listener, shared, limits)? })
    }

    /// Stops accepting. Connections being served finish on their own (the
    /// phase's end has closed their peers; idle ones time out).
    pub fn stop(mut self) {
        self.server.stop();
    }
}

impl Handler for Shared {
    fn screen(&self, head: &Request) -> Option<Response> {
        let refused = "cleanroom forwarder: missing or wrong API key (use the trial's token)";
        (!authorized(head, &self.token)).then(|| error(dialect_of(&head.path), 401, refused))
    }

    fn respond(&self, request: &Request) -> Response {
        route(request, self)
    }

    fn error(&self, path: &str, status: u16, message: &str) -> Response {
        error(dialect_of(path), status, message)
    }
}

/// The dialect of a path's answers, errors included.
fn dialect_of(path: &str) -> Dialect {
    match path.strip_prefix("/v1").unwrap_or(path) {
        "/messages" | "/messages/count_tokens" => Dialect::Anthropic,
        "/responses" => Dialect::Responses,
        _ => Dialect::Chat,
    }
}

/// Answers an authorised request.
fn route(req: &Request, shared: &Shared) -> Response {
    let path = req.path.strip_prefix("/v1").unwrap_or(&req.path);
    let dialect = dialect_of(&req.path);
    match (req.method.as_str(), path) {
        ("GET", "/models") => Response::Json {
            status: 200,
            body: json!({"object": "list", "data": [
                {"id": shared.model_name, "object": "model", "created": 0, "owned_by": "cleanroom"}]}),
        },
        ("GET", p) if p.starts_with("/models/") => Response::Json {
            status: 200,
            body: json!({"id": shared.model_name, "object": "model", "created": 0, "owned_by": "cleanroom"}),
        },
        // Plain text, so a hook written in bash alone can read it: the
        // first line is `allow` or `block`, the rest is for the agent.
        ("POST", "/cleanroom/gate") => {
            let answer = shared.on_gate.as_ref().map(|gate| gate());
            match answer {
                Some(GateAnswer { allow_stop: false, message }) => {
                    Response::Text(format!("block\n{message}"))
                }
                Some(GateAnswer { message, .. }) => Response::Text(format!("allow\n{message}")),
                None => Response::Text("allow\n".into()),
            }
        }
        ("POST", "/messages/count_tokens") => match body_json(req) {
            Ok(body) => Response::Json { status: 200, body: anthropic::count_tokens_estimate(&body) },
            Err(why) => error(dialect, 400, &why),
        },
        ("POST", "/chat/completions" | "/messages" | "/responses") => match body_json(req) {
            Ok(body) => complete(dialect, &body, shared),
            Err(why) => error(dialect, 400, &why),
        },
        (_, _) => error(dialect, 404, &format!("cleanroom forwarder: no {} {}", req.method, req.path)),
    }
}

fn complete(dialect: Dialect, body: &Value, shared: &Shared) -> Response {
    let stream = body["stream"].as_bool().unwrap_or(false);
    // Agents get back the model name they asked for (some check it).
    let model = body["model"].as_str().unwrap_or(&shared.model_name);
    let upstream_model = shared.gateway.model_id();
    let translated = match dialect {
        Dialect::Chat => Ok(body.clone()),
        Dialect::Anthropic => anthropic::request_to_chat(body, upstream_model).map_err(|e| e.to_string()),
        Dialect::Responses => responses::request_to_chat(body, upstream_model).map_err(|e| e.to_string()),
    };
    let upstream = match translated {
        Ok(u) => u,
        Err(why) => return error(dialect, 400, &format!("cleanroom forwarder: {why}")),
    };
    let agent_request = (dialect != Dialect::Chat).then_some(body);
    // Only Responses answers need to know which tools were custom.
    let tool_kinds = if dialect == Dialect::Responses {
        responses::tool_kinds(body)
    } else {
        responses::ToolKinds::default()
    };
    let result = shared.gateway.chat(dialect, agent_request, &upstream, |chat| {
        let rendered = match dialect {
            Dialect::Chat => Ok(with_model(chat, model)),
            Dialect::Anthropic => anthropic::chat_to_response(chat, model).map_err(|e| e.to_string()),
            Dialect::Responses => {
                responses::chat_to_response(chat, model, &tool_kinds).map_err(|e| e.to_string())
            }
        }?;
        let for_record = (dialect != Dialect::Chat).then(|| rendered.clone());
        Ok((rendered, for_record))
    });
    match result {
        Ok(rendered) if stream => Response::EventStream(match dialect {
            Dialect::Chat => chat_events(&rendered),
            Dialect::Anthropic => anthropic::sse_events(&rendered),
            Dialect::Responses => responses::sse_events(&rendered),
        }),
        Ok(rendered) => Response::Json { status: 200, body: rendered },
        Err(GatewayError::Budget(why)) => {
            (shared.on_fatal)(Fatal::Budget);
            error(dialect, 400, &format!("cleanroom: {}; the agent is being stopped", why.describe()))
        }
        Err(e) => {
            (shared.on_fatal)(Fatal::ModelFailed(e.to_string()));
            error(dialect, 502, &format!("cleanroom forwarder: {e}"))
        }
    }
}

fn authorized(req: &Request, token: &str) -> bool {
    let offered = req
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer ").or_else(|| a.strip_prefix("bearer ")))
        .or_else(|| req.header("x-api-key"))
        .or_else(|| req.header("api-key"));
    offered.is_some_and(|o| constant_time_eq(o.trim().as_bytes(), token.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn body_json(req: &Request) -> Result<Value, String> {
    serde_json::from_slice(&req.body).map_err(|e| format!("cleanroom forwarder: the body is not JSON ({e})"))
}

fn with_model(chat: &Value, model: &str) -> Value {
    let mut out = chat.clone();
    out["model"] = json!(model);
    out
}

fn error(dialect: Dialect, status: u16, message: &str) -> Response {
    let body = match dialect {
        Dialect::Anthropic => anthropic::error_body(status, message),
        Dialect::Chat | Dialect::Responses => responses::error_body(status, message),
    };
    Response::Json { status, body }
}

/// A complete chat completion as the chunks of a streamed one.
fn chat_events(chat: &Value) -> String {
    let message = &chat["choices"][0]["message"];
    let base = |delta: Value, finish: Value| {
        json!({"id": chat["id"], "object": "chat.completion.chunk", "created": chat["created"],
            "model": chat["model"], "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![base(json!({"role": "assistant", "content": message["content"]}), Value::Null)];
    if let Some(calls) = message["tool_calls"].as_array() {
        for (i, call) in calls.iter().enumerate() {
            let mut call = call.clone();
            call["index"] = json!(i);
            chunks.push(base(json!({"tool_calls": [call]}), Value::Null));
        }
    }
    let mut last = base(json!({}), chat["choices"][0]["finish_reason"].clone());
    last["usage"] = chat["usage"].clone();
    chunks.push(last);
    let mut out = String::new();
    for c in chunks {
        out.push_str(&format!("data: {c}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    out
}
