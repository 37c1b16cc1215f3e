//! An OpenAI chat-completions client: one POST per request, 429/5xx and
//! dropped connections retried with backoff, a stalled server reported as
//! such, every answer checked to be a chat completion.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

use crate::config::ModelConfig;

/// Largest response body read (a chat completion is a few kilobytes).
const BODY_LIMIT: u64 = 32 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model server answered {status}{}: {body}", retried(*.retries))]
    Status { status: u16, body: String, retries: u32 },
    #[error("the model server could not be reached{}: {message}", retried(*.retries))]
    Transport { message: String, retries: u32 },
    #[error("the model server sent no answer within {seconds} s (stalled)")]
    Stalled { seconds: u64, retries: u32 },
    #[error("the model server's answer is not a chat completion: {why}")]
    Malformed { why: String, body: String, retries: u32 },
    #[error("{0}")]
    Config(String),
}

fn retried(n: u32) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" (after {n} retries)")
    }
}

impl ModelError {
    pub fn retries(&self) -> u32 {
        match self {
            ModelError::Status { retries, .. }
            | ModelError::Transport { retries, .. }
            | ModelError::Stalled { retries, .. }
            | ModelError::Malformed { retries, .. } => *retries,
            ModelError::Config(_) => 0,
        }
    }

    /// The raw body the server sent, when there was one.
    pub fn body(&self) -> Option<&str> {
        match self {
            ModelError::Status { body, .. } | ModelError::Malformed { body, .. } => Some(body),
            _ => None,
        }
    }
}

/// One successful request.
#[derive(Debug, Clone)]
pub struct Completion {
    pub response: Value,
    pub retries: u32,
    pub seconds: f64,
}

/// TLS trusting the system's certificate store, not bundled web roots:
/// a TLS-intercepting proxy's CA may be only there.
pub fn system_tls() -> Result<TlsConfig, String> {
    let loaded = rustls_native_certs::load_native_certs();
    let certs: Vec<Certificate<'static>> =
        loaded.certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect();
    if certs.is_empty() {
        return Err("no certificates in the system store; install ca-certificates".into());
    }
    Ok(TlsConfig::builder().root_certs(RootCerts::new_with_certs(&certs)).build())
}

pub struct ChatClient {
    agent: ureq::Agent,
    url: String,
    api_key: Option<String>,
    config: ModelConfig,
}

impl ChatClient {
    pub fn new(config: &ModelConfig) -> Result<ChatClient, ModelError> {
        let api_key = config.api_key().map_err(ModelError::Config)?;
        let mut builder = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(30)))
            .user_agent(concat!("cleanroom/", env!("CARGO_PKG_VERSION")));
        // A model on this machine needs none.
        if let Ok(tls) = system_tls() {
            builder = builder.tls_config(tls);
        }
        Ok(ChatClient {
            agent: builder.build().new_agent(),
            url: config.chat_url(),
            api_key,
            config: config.clone(),
        })
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Sends `request` (its `model` set to the configured id, `stream` off)
    /// and returns the parsed completion. `deadline` caps the wait.
    pub fn complete(&self, request: &Value, deadline: Option<Instant>) -> Result<Completion, ModelError> {
        let body = self.prepare(request);
        let started = Instant::now();
        let mut retries = 0;
        loop {
            let failure = match self.send_once(&body, deadline) {
                Ok(response) => {
                    return Ok(Completion { response, retries, seconds: started.elapsed().as_secs_f64() })
                }
                Err(f) => f,
            };
            let backoff = Duration::from_millis(self.config.retry_backoff_ms << retries.min(10));
            let wait = failure.retry_after().unwrap_or(backoff).min(Duration::from_secs(60));
            if !failure.retryable() || retries >= self.config.max_retries || past(deadline, wait) {
                return Err(failure.into_error(retries));
            }
            std::thread::sleep(wait);
            retries += 1;
        }
    }

    fn prepare(&self, request: &Value) -> Value {
        let mut body = request.clone();
        if let Some(obj) = body.as_object_mut() {
            for (k, v) in &self.config.request_defaults {
                obj.entry(k.clone()).or_insert_with(|| v.clone());
            }
            obj.insert("model".into(), Value::String(self.config.model.clone()));
            obj.insert("stream".into(), Value::Bool(false));
            obj.remove("stream_options");
        }
        body
    }

    fn send_once(&self, body: &Value, deadline: Option<Instant>) -> Result<Value, Failure> {
        let mut timeout = Duration::from_secs(self.config.request_timeout_sec);
        if let Some(d) = deadline {
            timeout = timeout.min(d.saturating_duration_since(Instant::now()));
        }
        let mut req = self.agent.post(&self.url).config().timeout_global(Some(timeout)).build();
        req = req.header("content-type", "application/json");
        if let Some(key) = &self.api_key {
            req = req.header("authorization", format!("Bearer {key}"));
        }
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let mut response = match req.send(&bytes[..]) {
            Ok(r) => r,
            Err(ureq::Error::Timeout(_)) => return Err(Failure::Stalled { seconds: timeout.as_secs() }),
            Err(ureq::Error::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(Failure::Stalled { seconds: timeout.as_secs() })
            }
            // A refused or dropped connection may be a server restarting.
            Err(e @ (ureq::Error::Io(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound)) => {
                return Err(Failure::Transport { message: e.to_string(), retryable: true })
            }
            Err(e) => return Err(Failure::Transport { message: e.to_string(), retryable: false }),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let mut text = String::new();
        let read = response.body_mut().as_reader().take(BODY_LIMIT).read_to_string(&mut text);
        if let Err(e) = read {
            if e.kind() == std::io::ErrorKind::TimedOut {
                return Err(Failure::Stalled { seconds: timeout.as_secs() });
            }
            return Err(Failure::Transport { message: format!("reading the answer: {e}"), retryable: true });
        }
        if status != 200 {
            return Err(Failure::Status { status, body: text, retry_after });
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| Failure::Malformed { why: format!("not JSON ({e})"), body: text.clone() })?;
        check_completion(&value).map_err(|why| Failure::Malformed { why, body: text })?;
        Ok(value)
    }
}

fn past(deadline: Option<Instant>, wait: Duration) -> bool {
    deadline.is_some_and(|d| Instant::now() + wait >= d)
}

enum Failure {
    Transport { message: String, retryable: bool },
    Status { status: u16, body: String, retry_after: Option<Duration> },
    Stalled { seconds: u64 },
    Malformed { why: String, body: String },
}

impl Failure {
    /// Rate limits, server errors and lost connections pass; a stalled
    /// server is not retried (each retry would wait as long again).
    fn retryable(&self) -> bool {
        match self {
            Failure::Transport { retryable, .. } => *retryable,
            Failure::Status { status, .. } => *status == 429 || *status >= 500,
            Failure::Stalled { .. } | Failure::Malformed { .. } => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    fn into_error(self, retries: u32) -> ModelError {
        match self {
            Failure::Transport { message, .. } => ModelError::Transport { message, retries },
            Failure::Status { status, body, .. } => ModelError::Status { status, body: clip(&body), retries },
            Failure::Stalled { seconds } => ModelError::Stalled { seconds, retries },
            Failure::Malformed { why, body } => ModelError::Malformed { why, body: clip(&body), retries },
        }
    }
}

fn clip(s: &str) -> String {
    const KEEP: usize = 2000;
    if s.len() <= KEEP {
        return s.to_string();
    }
    let mut end = KEEP;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// A chat completion has choices[0].message (content and/or tool_calls).
fn check_completion(v: &Value) -> Result<(), String> {
    let message = v["choices"].get(0).map(|c| &c["message"]).ok_or("no choices[0]")?;
    if !message.is_object() {
        return Err("choices[0].message is missing".into());
    }
    if let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls.as_array().ok_or("choices[0].message.tool_calls is not a list")?;
        for (i, c) in calls.iter().enumerate() {
            if !c["function"]["name"].is_string() {
                return Err(format!("choices[0].message.tool_calls[{i}].function.name is missing"));
            }
        }
    }
    Ok(())
}
