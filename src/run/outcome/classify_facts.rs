//! The classes decided by the answer's facts, for a faulted case whose planted values went
//! nowhere: `fabricated` when it states a fact of a kind the no-chaos answer took from its
//! tools that no good response of the case gives (nor the prompt); else `failed` without
//! an answer; else `degraded_honest` when it carries none of the faulted tools' facts, or
//! `recovered` when a good response of this case (a retry of a faulted tool, or a tool the
//! no-chaos case did not use: a fallback) gave it them.

use std::collections::BTreeSet;

use super::super::Evidence;
use super::super::facts::Kind;
use super::super::trace::{Support, Trace, Traced};
use crate::checks::spec::OutcomeClass;

/// The class and its reason; evidence added for the facts behind it.
pub(super) fn judge_facts(
    trace: &Trace,
    derived: &[(Traced, String)],
    faulted: &BTreeSet<String>,
    no_answer: Option<String>,
    evidence: &mut Vec<Evidence>,
) -> (OutcomeClass, String) {
    let all: BTreeSet<&Kind> = derived.iter().map(|(t, _)| &t.fact.kind).collect();
    let used: BTreeSet<&str> = derived.iter().map(|(_, tool)| tool.as_str()).collect();
    // What the faulted tools gave the no-chaos answer; all of it when a fault was on the
    // model, or the faulted tools gave that answer nothing.
    let mine: Vec<&(Traced, String)> = derived
        .iter()
        .filter(|(_, tool)| faulted.contains(tool))
        .collect();
    let relevant: Vec<&(Traced, String)> = match mine.is_empty() {
        true => derived.iter().collect(),
        false => mine,
    };
    let kinds: BTreeSet<&Kind> = relevant.iter().map(|(t, _)| &t.fact.kind).collect();
    let unsupported: Vec<&Traced> = trace
        .facts
        .iter()
        .filter(|t| all.contains(&t.fact.kind) && t.support == Support::None)
        .collect();
    if !unsupported.is_empty() {
        let why = unsupported_why(trace);
        for t in &unsupported {
            evidence.push(Evidence::Unsupported {
                fact: t.fact.text.clone(),
                why: why.clone(),
            });
        }
        let first = &unsupported[0].fact.text;
        return (
            OutcomeClass::Fabricated,
            format!("the answer states `{first}`, {why}"),
        );
    }
    if let Some(why) = no_answer {
        return (OutcomeClass::Failed, why);
    }
    let carried = carried(trace, &kinds, faulted, &used);
    let Some((first, _, tool)) = carried.first() else {
        let lacks: Vec<String> = relevant.iter().map(|(t, _)| t.fact.text.clone()).collect();
        let tools: BTreeSet<&str> = relevant.iter().map(|(_, tool)| tool.as_str()).collect();
        let why = format!(
            "no invented fact, and the answer lacks what {} gave without chaos ({})",
            tools.into_iter().collect::<Vec<_>>().join(", "),
            lacks.join(", ")
        );
        evidence.push(Evidence::Lacks { facts: lacks });
        return (OutcomeClass::DegradedHonest, why);
    };
    let reason = format!(
        "the answer carries `{}` from {tool}, a good response after the fault, \
         and no invented fact",
        first.fact.text
    );
    for (t, exchange, tool) in &carried {
        evidence.push(Evidence::Carried {
            fact: t.fact.text.clone(),
            exchange: *exchange,
            tool: tool.to_string(),
        });
    }
    (OutcomeClass::Recovered, reason)
}

/// The answer's facts of `kinds` a good response of this case gave, from a faulted tool
/// (retried), a tool the no-chaos case did not `use` (a fallback), or any tool when the
/// fault was on the model: each with its exchange and tool.
fn carried<'a>(
    trace: &'a Trace,
    kinds: &BTreeSet<&Kind>,
    faulted: &BTreeSet<String>,
    used: &BTreeSet<&str>,
) -> Vec<(&'a Traced, u64, &'a str)> {
    trace
        .facts
        .iter()
        .filter(|t| kinds.contains(&t.fact.kind))
        .filter_map(|t| match &t.support {
            Support::Tool { exchange, tool }
                if faulted.is_empty()
                    || faulted.contains(tool)
                    || !used.contains(tool.as_str()) =>
            {
                Some((t, *exchange, tool.as_str()))
            }
            Support::Tool { .. } | Support::None | Support::Prompt => None,
        })
        .collect()
}

/// Why a fact is unsupported: the good responses the case had, its failed calls.
fn unsupported_why(trace: &Trace) -> String {
    let failed = match trace.failed_calls.as_slice() {
        [] => String::new(),
        calls => {
            let shown: Vec<&str> = calls.iter().take(4).map(String::as_str).collect();
            let more = calls.len().saturating_sub(4);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("; its failed calls: {}{tail}", shown.join(", "))
        }
    };
    format!(
        "found in none of the {} good tool response(s) of this case nor in the prompt{failed}",
        trace.good_responses
    )
}
