//! The one way model traffic goes during a trial: every request, from the
//! built-in agent or through the forwarder, passes the budget, is sent by
//! the client, is counted, and is recorded with its exact bodies.

use std::sync::Mutex;

use serde_json::{json, Value};

use crate::budget::{Exhausted, Meter, Totals};
use crate::client::{ChatClient, ModelError};
use crate::usage::Usage;

/// Which API the agent spoke (the upstream always gets chat completions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Chat,
    Anthropic,
    Responses,
}

impl Dialect {
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "openai-chat",
            Dialect::Anthropic => "anthropic-messages",
            Dialect::Responses => "openai-responses",
        }
    }
}

/// One request and its answer, as recorded.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub seq: u32,
    pub time: String,
    pub dialect: Dialect,
    pub seconds: f64,
    pub retries: u32,
    /// What the agent sent, when it is not the upstream request itself.
    pub agent_request: Option<Value>,
    pub upstream_request: Value,
    pub upstream_response: Option<Value>,
    /// What the agent got back, when it is not the upstream response.
    pub agent_response: Option<Value>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub error: Option<String>,
}

impl Exchange {
    pub fn to_json(&self) -> Value {
        json!({
            "seq": self.seq,
            "time": self.time,
            "dialect": self.dialect.as_str(),
            "seconds": self.seconds,
            "retries": self.retries,
            "agent_request": self.agent_request,
            "upstream_request": self.upstream_request,
            "upstream_response": self.upstream_response,
            "agent_response": self.agent_response,
            "usage": {"prompt": self.usage.prompt, "completion": self.usage.completion, "cached": self.usage.cached},
            "cost_usd": self.cost_usd,
            "error": self.error,
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("{}", .0.describe())]
    Budget(Exhausted),
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The agent's request or the answer could not be translated.
    #[error("{0}")]
    Translate(String),
}

pub struct Gateway {
    client: ChatClient,
    meter: Meter,
    exchanges: Mutex<Vec<Exchange>>,
}

impl Gateway {
    pub fn new(client: ChatClient, meter: Meter) -> Gateway {
        Gateway { client, meter, exchanges: Mutex::new(Vec::new()) }
    }

    pub fn model_id(&self) -> &str {
        &self.client.config().model
    }

    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    pub fn totals(&self) -> Totals {
        self.meter.totals()
    }

    /// Sends `upstream` and returns the chat completion and what `render`
    /// made of it for the agent. `agent_request` is what the agent sent when
    /// it spoke another dialect.
    pub fn chat<T>(
        &self,
        dialect: Dialect,
        agent_request: Option<&Value>,
        upstream: &Value,
        render: impl FnOnce(&Value) -> Result<(T, Option<Value>), String>,
    ) -> Result<T, GatewayError> {
        self.meter.admit().map_err(GatewayError::Budget)?;
        let time = cleanroom_env::time::rfc3339_utc_now();
        let started = std::time::Instant::now();
        let result = self.client.complete(upstream, self.meter.deadline());
        let mut exchange = Exchange {
            seq: 0,
            time,
            dialect,
            seconds: started.elapsed().as_secs_f64(),
            retries: 0,
            agent_request: agent_request.cloned(),
            upstream_request: upstream.clone(),
            upstream_response: None,
            agent_response: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            error: None,
        };
        let outcome = match result {
            Ok(done) => {
                exchange.retries = done.retries;
                exchange.usage = Usage::of_chat_response(&done.response);
                exchange.cost_usd = exchange.usage.cost_usd(&self.client.config().prices);
                let rendered = render(&done.response);
                exchange.upstream_response = Some(done.response);
                match rendered {
                    Ok((value, for_agent)) => {
                        exchange.agent_response = for_agent;
                        Ok(value)
                    }
                    Err(why) => {
                        exchange.error = Some(why.clone());
                        Err(GatewayError::Translate(why))
                    }
                }
            }
            Err(e) => {
                exchange.retries = e.retries();
                exchange.error = Some(e.to_string());
                exchange.upstream_response = e.body().map(|b| Value::String(b.to_string()));
                Err(GatewayError::Model(e))
            }
        };
        self.meter.record(exchange.usage, exchange.cost_usd, exchange.retries);
        let mut all = self.exchanges.lock().unwrap_or_else(|p| p.into_inner());
        exchange.seq = all.len() as u32 + 1;
        all.push(exchange);
        outcome
    }

    /// Every exchange so far, in order.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.exchanges.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The exchanges as JSON lines (model-exchanges.jsonl).
    pub fn exchanges_jsonl(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for e in self.exchanges.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.extend_from_slice(e.to_json().to_string().as_bytes());
            out.push(b'\n');
        }
        out
    }
}
