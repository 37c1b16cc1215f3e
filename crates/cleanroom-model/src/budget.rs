//! A trial's model budget: steps (requests), tokens, dollars and time.
//! Checked before each request, so the request that would start over the
//! limit is refused rather than paid for.

use std::sync::Mutex;
use std::time::Instant;

use crate::usage::Usage;

#[derive(Debug, Clone, Copy, Default)]
pub struct Budget {
    pub max_steps: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub deadline: Option<Instant>,
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    Steps,
    Tokens,
    Cost,
    Time,
}

impl Exhausted {
    pub fn describe(self) -> &'static str {
        match self {
            Exhausted::Steps => "step budget (--max-steps) used up",
            Exhausted::Tokens => "token budget (--max-tokens) used up",
            Exhausted::Cost => "cost budget (--max-cost) used up",
            Exhausted::Time => "time budget used up",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub requests: u32,
    /// Retried answers (429, 5xx, dropped connections) across requests.
    pub retries: u32,
    pub usage: Usage,
    pub cost_usd: f64,
}

pub struct Meter {
    budget: Budget,
    totals: Mutex<Totals>,
    exhausted: Mutex<Option<Exhausted>>,
}

impl Meter {
    pub fn new(budget: Budget) -> Meter {
        Meter { budget, totals: Mutex::new(Totals::default()), exhausted: Mutex::new(None) }
    }

    /// Counts one more request, or says which budget forbids it.
    pub fn admit(&self) -> Result<(), Exhausted> {
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let b = &self.budget;
        let over = if b.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Exhausted::Time)
        } else if b.max_steps.is_some_and(|m| totals.requests >= m) {
            Some(Exhausted::Steps)
        } else if b.max_tokens.is_some_and(|m| totals.usage.total() >= m) {
            Some(Exhausted::Tokens)
        } else if b.max_cost_usd.is_some_and(|m| totals.cost_usd >= m) {
            Some(Exhausted::Cost)
        } else {
            None
        };
        if let Some(why) = over {
            self.exhausted.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(why);
            return Err(why);
        }
        totals.requests += 1;
        Ok(())
    }

    pub fn record(&self, usage: Usage, cost_usd: f64, retries: u32) {
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        totals.usage.add(usage);
        totals.cost_usd += cost_usd;
        totals.retries += retries;
    }

    pub fn totals(&self) -> Totals {
        *self.totals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first budget that refused a request, if any did.
    pub fn exhausted(&self) -> Option<Exhausted> {
        *self.exhausted.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.budget.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_tokens_and_cost_each_stop_the_next_request() {
        let m = Meter::new(Budget { max_steps: Some(2), ..Budget::default() });
        assert!(m.admit().is_ok() && m.admit().is_ok());
        assert_eq!(m.admit(), Err(Exhausted::Steps));
        assert_eq!(m.exhausted(), Some(Exhausted::Steps));

        let m = Meter::new(Budget { max_tokens: Some(100), ..Budget::default() });
        m.admit().unwrap();
        m.record(Usage { prompt: 90, completion: 10, cached: 0 }, 0.0, 0);
        assert_eq!(m.admit(), Err(Exhausted::Tokens));

        let m = Meter::new(Budget { max_cost_usd: Some(0.01), ..Budget::default() });
        m.admit().unwrap();
        m.record(Usage::default(), 0.009, 1);
        assert!(m.admit().is_ok());
        m.record(Usage::default(), 0.002, 0);
        assert_eq!(m.admit(), Err(Exhausted::Cost));
        assert_eq!(m.totals().retries, 1);

        let m = Meter::new(Budget { deadline: Some(Instant::now()), ..Budget::default() });
        assert_eq!(m.admit(), Err(Exhausted::Time));
    }
}
