//! Token counts as the server reports them, and what they cost.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::Prices;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    /// Of `prompt`, how many the server had cached.
    pub cached: u64,
}

impl Usage {
    /// The `usage` object of a chat-completions response; zeros when absent.
    pub fn of_chat_response(response: &Value) -> Usage {
        let u = &response["usage"];
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        Usage {
            prompt: n(&u["prompt_tokens"]),
            completion: n(&u["completion_tokens"]),
            cached: n(&u["prompt_tokens_details"]["cached_tokens"]),
        }
    }

    pub fn total(&self) -> u64 {
        self.prompt + self.completion
    }

    pub fn add(&mut self, other: Usage) {
        self.prompt += other.prompt;
        self.completion += other.completion;
        self.cached += other.cached;
    }

    pub fn cost_usd(&self, prices: &Prices) -> f64 {
        let cached = self.cached.min(self.prompt) as f64;
        let uncached = self.prompt as f64 - cached;
        let cached_price = prices.cached_input_per_mtok.unwrap_or(prices.input_per_mtok);
        (uncached * prices.input_per_mtok
            + cached * cached_price
            + self.completion as f64 * prices.output_per_mtok)
            / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_usage_and_prices_cached_tokens_apart() {
        let r = serde_json::json!({"usage": {"prompt_tokens": 1000, "completion_tokens": 200,
            "prompt_tokens_details": {"cached_tokens": 400}}});
        let u = Usage::of_chat_response(&r);
        assert_eq!(u, Usage { prompt: 1000, completion: 200, cached: 400 });
        let prices = Prices { input_per_mtok: 2.0, output_per_mtok: 10.0, cached_input_per_mtok: Some(0.5) };
        // 600 * 2 + 400 * 0.5 + 200 * 10 = 3400 per million.
        assert!((u.cost_usd(&prices) - 0.0034).abs() < 1e-12);
        assert_eq!(Usage::of_chat_response(&serde_json::json!({})), Usage::default());
    }
}
