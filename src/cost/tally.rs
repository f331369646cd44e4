//! Sums of LLM usage and cost (`Tally`): of one case's exchanges, a scenario's, a run's.
//! A count some answer did not report is unknown: a sum that met one counts what was
//! reported and says how many answers were not (`unknown_calls`), and is `null` when no
//! answer reported it at all, never 0. A cost likewise says why it is only part of the
//! spend (`cost_note`): answers without usage, models without a price.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::pricing::{Pricing, Unpriced};
use crate::exchange::{Exchange, Usage};

/// Tokens and cost of some LLM answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// Successful LLM answers counted.
    pub llm_calls: u32,
    /// Reported input tokens; `null` when none of the answers reported them.
    pub input_tokens: Option<u64>,
    /// Reported output tokens; `null` when none of the answers reported them.
    pub output_tokens: Option<u64>,
    /// Answers whose usage was (partly) unknown: the token sums leave them out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unknown_calls: u32,
    /// What the priced answers cost; `null` when none could be priced.
    pub cost: Option<f64>,
    pub currency: String,
    /// Models answers named that the price table has no price for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced_models: Vec<String>,
    /// Why `cost` is only part of the spend, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_note: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Tally {
    /// Nothing yet: no calls, 0 tokens, 0 spent.
    pub fn empty(currency: &str) -> Tally {
        Tally {
            llm_calls: 0,
            input_tokens: Some(0),
            output_tokens: Some(0),
            unknown_calls: 0,
            cost: Some(0.0),
            currency: currency.to_string(),
            unpriced_models: vec![],
            cost_note: None,
        }
    }

    /// One answer's usage, priced.
    pub fn of_usage(u: &Usage, pricing: &Pricing) -> Tally {
        let (cost, unpriced) = match pricing.cost(u) {
            Ok(c) => (Some(c), vec![]),
            Err(Unpriced::NoUsage) => (None, vec![]),
            Err(Unpriced::Model(m)) => (None, vec![m]),
        };
        let mut t = Tally {
            llm_calls: 1,
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            unknown_calls: u32::from(!u.known()),
            cost,
            currency: pricing.currency.clone(),
            unpriced_models: unpriced,
            cost_note: None,
        };
        t.cost_note = t.note();
        t
    }

    /// The LLM answers among `exchanges` (those with a usage record), summed.
    pub fn of(exchanges: &[Arc<Exchange>], pricing: &Pricing) -> Tally {
        let mut t = Tally::empty(&pricing.currency);
        for u in exchanges.iter().filter_map(|e| e.usage.as_ref()) {
            t.add(&Tally::of_usage(u, pricing));
        }
        t
    }

    /// Adds `other`'s calls to these.
    pub fn add(&mut self, other: &Tally) {
        let (mine, theirs) = (self.llm_calls == 0, other.llm_calls == 0);
        let sum = |a: Option<u64>, b: Option<u64>| match (mine, theirs) {
            (true, _) => b,
            (_, true) => a,
            _ => [a, b].into_iter().flatten().reduce(u64::saturating_add),
        };
        self.input_tokens = sum(self.input_tokens, other.input_tokens);
        self.output_tokens = sum(self.output_tokens, other.output_tokens);
        self.cost = match (mine, theirs) {
            (true, _) => other.cost,
            (_, true) => self.cost,
            _ => [self.cost, other.cost]
                .into_iter()
                .flatten()
                .reduce(|a, b| a + b),
        };
        self.llm_calls += other.llm_calls;
        self.unknown_calls += other.unknown_calls;
        for m in &other.unpriced_models {
            if !self.unpriced_models.contains(m) {
                self.unpriced_models.push(m.clone());
            }
        }
        self.cost_note = self.note();
    }

    /// Total tokens reported (input and output).
    pub fn tokens(&self) -> Option<u64> {
        [self.input_tokens, self.output_tokens]
            .into_iter()
            .flatten()
            .reduce(u64::saturating_add)
    }

    /// `tokens` as a number to compare with a limit.
    pub fn tokens_f64(&self) -> Option<f64> {
        self.tokens().map(|n| n as f64)
    }

    /// Whether every answer's usage was reported and priced.
    pub fn complete(&self) -> bool {
        self.cost_note.is_none()
    }

    fn note(&self) -> Option<String> {
        let mut why = vec![];
        if self.unknown_calls > 0 {
            why.push(format!(
                "{} LLM answer(s) reported no usage: tokens unknown",
                self.unknown_calls
            ));
        }
        if !self.unpriced_models.is_empty() {
            let names: Vec<String> = self
                .unpriced_models
                .iter()
                .map(|m| format!("`{m}`"))
                .collect();
            why.push(format!(
                "no price for {} (pricing.models)",
                names.join(", ")
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }
}

/// A sum in a line: `1,234 tokens (1,000 in, 234 out), 0.0123 USD`, with what is unknown.
pub fn line(t: &Tally) -> String {
    let n = |x: Option<u64>| x.map_or_else(|| "unknown".to_string(), |x| x.to_string());
    let tokens = match t.tokens() {
        Some(total) => format!(
            "{total} tokens ({} in, {} out)",
            n(t.input_tokens),
            n(t.output_tokens)
        ),
        None => "tokens unknown".to_string(),
    };
    let cost = match t.cost {
        Some(c) => format!("{} {}", money(c), t.currency),
        None => format!("cost unknown ({})", t.currency),
    };
    let note = t
        .cost_note
        .as_ref()
        .map_or(String::new(), |n| format!(" [{n}]"));
    format!("{} LLM call(s), {tokens}, {cost}{note}", t.llm_calls)
}

/// A cost with enough digits for a cheap model's single call.
pub fn money(c: f64) -> String {
    if c == 0.0 || c >= 1.0 {
        format!("{c:.2}")
    } else {
        format!("{c:.6}")
    }
}
