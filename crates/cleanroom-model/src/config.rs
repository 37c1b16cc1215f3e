//! A model as the configuration names it (DESIGN.md: base URL, API key
//! variable, model id, prices).

use serde::{Deserialize, Serialize};

/// Dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default)]
    pub input_per_mtok: f64,
    #[serde(default)]
    pub output_per_mtok: f64,
    /// Prompt tokens served from the provider's cache; input price if unset.
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The OpenAI-compatible API root, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The environment variable holding the API key; none for local servers.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The model id the server knows.
    pub model: String,
    #[serde(default)]
    pub prices: Prices,
    /// A request with no answer after this long is a stalled server.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_sec: u64,
    /// Retries of 429 and 5xx answers and dropped connections.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First wait before a retry; doubled each time (a Retry-After header
    /// wins, up to a minute).
    #[serde(default = "default_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// Extra fields merged into every chat request (temperature, ...).
    #[serde(default)]
    pub request_defaults: serde_json::Map<String, serde_json::Value>,
}

fn default_request_timeout() -> u64 {
    600
}

fn default_backoff_ms() -> u64 {
    1000
}

fn default_retries() -> u32 {
    4
}

impl ModelConfig {
    /// The API key from its variable: Ok(None) when no variable is named.
    pub fn api_key(&self) -> Result<Option<String>, String> {
        match &self.api_key_env {
            None => Ok(None),
            Some(var) => match std::env::var(var) {
                Ok(v) if !v.is_empty() => Ok(Some(v)),
                _ => Err(format!("the API key variable {var} is not set")),
            },
        }
    }

    pub fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// An external agent CLI (`command:NAME`), resolved: its scripts' text, so
/// that run.toml alone can rerun it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalAgent {
    /// What is installed, for the record (`mini-swe-agent 1.14.4`).
    pub version: String,
    /// The API dialect it speaks: `openai-chat`, `anthropic-messages` or
    /// `openai-responses` (informational: the forwarder serves all three).
    pub dialect: String,
    /// The configured model it uses unless the SPEC names one.
    #[serde(default)]
    pub model: Option<String>,
    /// Run on the host as `bash install.sh PREFIX`, once per recipe;
    /// installs the agent and its own runtime under PREFIX.
    pub install_script: String,
    /// Other files of the install recipe, by path relative to the install
    /// script's directory (`constraints.txt`, `../_lib/common.sh`).
    #[serde(default)]
    pub install_files: std::collections::BTreeMap<String, String>,
    /// Run inside the environment as the agent (variables: see the docs).
    pub run_script: String,
    /// Whether run.sh installs a stop hook that asks the completion gate
    /// (it gets CLEANROOM_GATE when a gate applies).
    #[serde(default)]
    pub stop_hook: bool,
    /// Whether run.sh resumes the CLI's own session when started again by
    /// the gate (it gets CLEANROOM_RESUME_FILE); otherwise a restart is a
    /// new session told what happened before.
    #[serde(default)]
    pub resume: bool,
    /// Files the agent writes in CLEANROOM_LOG_DIR that are its own
    /// trajectory, kept with the trial.
    #[serde(default)]
    pub logs: Vec<String>,
}
