//! Tokens spent because of faults: in one case's exchanges (in order), an LLM call that a
//! fault made fail (an injected 429 or 5xx, a timeout, a cut stream) starts a chain; every
//! LLM answer after it, up to and including the first good answer no fault touched, is a
//! retry or a fallback the fault caused, and its tokens are that rule's. What the agent
//! spent otherwise because of a fault (more turns after a bad tool answer, a re-ask after
//! a truncated answer) is in its scenario's delta against the no-chaos baseline instead:
//! only the wire's own chain is said per rule.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::pricing::Pricing;
use super::tally::Tally;
use crate::exchange::{BodyEnd, Exchange, FaultKind, Outcome, Target};

/// What one fault rule's retries and fallbacks spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleSpend {
    /// The rule's id (`llm_faults[0]` unless the config names it).
    pub rule: String,
    pub mode: FaultKind,
    #[serde(flatten)]
    pub spent: Tally,
}

/// Per rule, what the LLM calls after its failed calls spent, in order of first fault.
pub fn because_of_faults(traffic: &[Arc<Exchange>], pricing: &Pricing) -> Vec<RuleSpend> {
    let mut out: Vec<RuleSpend> = vec![];
    let mut chain: Option<(String, FaultKind)> = None;
    for e in traffic
        .iter()
        .filter(|e| matches!(e.target, Target::Llm { .. }))
    {
        let fault = e.fault.as_ref().filter(|f| f.applied);
        if let (Some((rule, mode)), Some(u)) = (&chain, &e.usage) {
            let t = Tally::of_usage(u, pricing);
            match out.iter_mut().find(|s| &s.rule == rule) {
                Some(s) => s.spent.add(&t),
                None => out.push(RuleSpend {
                    rule: rule.clone(),
                    mode: *mode,
                    spent: t,
                }),
            }
        }
        match fault {
            Some(f) if failed(e) => chain = Some((f.rule.clone(), f.mode)),
            // A good answer ends the chain; a call that failed on its own continues it.
            Some(_) | None if !failed(e) => chain = None,
            Some(_) | None => {}
        }
    }
    out
}

/// Whether an LLM call gave the agent no whole answer: an error, a non-2xx status (no
/// usage record), a body that broke off.
fn failed(e: &Exchange) -> bool {
    match &e.outcome {
        Outcome::Error { .. } => true,
        Outcome::Response { body, .. } => e.usage.is_none() || *body != BodyEnd::Complete,
    }
}

/// `spends` of several cases, summed per rule.
pub fn sum_spends<'a>(spends: impl IntoIterator<Item = &'a RuleSpend>) -> Vec<RuleSpend> {
    let mut out: Vec<RuleSpend> = vec![];
    for s in spends {
        match out.iter_mut().find(|o| o.rule == s.rule) {
            Some(o) => o.spent.add(&s.spent),
            None => out.push(s.clone()),
        }
    }
    out
}
