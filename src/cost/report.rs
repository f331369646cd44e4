//! A run's tokens and cost as its report carries them: per case (`CaseUsage`), per
//! scenario with its delta against the no-chaos baseline of the same prompts
//! (`ScenarioUsage`, `Delta`), and for the whole run with the prices used (`RunUsage`).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::exchange::Exchange;

use super::faults::RuleSpend;
use super::pricing::Pricing;
use super::tally::Tally;

/// One case's LLM usage: its sum, and what fault rules' retries and fallbacks spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseUsage {
    #[serde(flatten)]
    pub spent: Tally,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub because_of_faults: Vec<RuleSpend>,
}

impl CaseUsage {
    /// What a case's LLM calls (`traffic`) spent, and what of it fault rules' retries and
    /// fallbacks did.
    pub fn of(traffic: &[Arc<Exchange>], pricing: &Pricing) -> CaseUsage {
        CaseUsage {
            spent: Tally::of(traffic, pricing),
            because_of_faults: super::faults::because_of_faults(traffic, pricing),
        }
    }
}

/// A scenario's minus the no-chaos baseline's, over the prompts both told apart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    /// The scenario compared with (`no-chaos`, or `(baseline)`).
    pub baseline: String,
    /// Cases compared (each with its prompt's mean baseline figures).
    pub cases: u32,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost: Option<f64>,
    /// Why some cases were left out, or figures are partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One scenario's LLM usage (its whole journal window, attributed or not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioUsage {
    pub scenario: String,
    #[serde(flatten)]
    pub spent: Tally,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub because_of_faults: Vec<RuleSpend>,
    /// Absent for a scenario without chaos, or when there is no baseline to compare with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<Delta>,
}

/// The prices a report's costs were computed with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PricingInfo {
    pub currency: String,
    /// The shipped table's date, when its prices were used.
    pub as_of: Option<String>,
    /// Models the config priced itself.
    pub overridden: usize,
}

impl PricingInfo {
    pub fn of(p: &Pricing) -> PricingInfo {
        PricingInfo {
            currency: p.currency.clone(),
            as_of: p.as_of.clone(),
            overridden: p.overridden,
        }
    }
}

/// A run's LLM usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunUsage {
    #[serde(flatten)]
    pub spent: Tally,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub because_of_faults: Vec<RuleSpend>,
    pub pricing: PricingInfo,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<ScenarioUsage>,
}

impl RunUsage {
    /// The run's tokens and cost in one terminal line, when it saw an LLM answer: what
    /// answers did not report is `unknown` (with the floor the others make), never 0.
    pub fn summary_line(&self) -> Option<String> {
        let t = &self.spent;
        if t.llm_calls == 0 {
            return None;
        }
        let n = |x: Option<u64>| x.map_or_else(|| "unknown".to_string(), |x| x.to_string());
        let (tokens, cost) = (t.tokens(), t.cost.map(super::money));
        let unpriced = !t.unpriced_models.is_empty();
        let tokens = match (t.unknown_calls, tokens) {
            (0, Some(all)) => format!(
                "{all} tokens ({} in, {} out)",
                n(t.input_tokens),
                n(t.output_tokens)
            ),
            (_, Some(floor)) => format!("tokens unknown (at least {floor})"),
            (_, None) => "tokens unknown".to_string(),
        };
        let cost = match (t.unknown_calls > 0 || unpriced, cost) {
            (false, Some(c)) => format!("{c} {}", t.currency),
            (true, Some(c)) => format!("cost unknown (at least {c} {})", t.currency),
            (_, None) => format!("cost unknown ({})", t.currency),
        };
        let mut line = format!("LLM usage: {} call(s), {tokens}, {cost}", t.llm_calls);
        if t.unknown_calls > 0 {
            line.push_str(&format!(
                "; {} answer(s) reported no usage",
                t.unknown_calls
            ));
        }
        if unpriced {
            let names: Vec<&str> = t.unpriced_models.iter().map(String::as_str).collect();
            line.push_str(&format!("; no price for {}", names.join(", ")));
        }
        for s in &self.because_of_faults {
            let spent = s.spent.tokens().map_or("unknown".into(), |n| n.to_string());
            line.push_str(&format!(
                "\n  {spent} tokens spent on retries after `{}` ({})",
                s.rule, s.mode
            ));
        }
        Some(line)
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
