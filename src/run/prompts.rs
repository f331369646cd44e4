//! Which prompts a contract invariant judges: its `probes`, else a `refusal_check`'s
//! dangerous prompts (what it judges), else the golden prompts. Every check says which, so
//! a new check must choose.

use crate::checks::spec::Check;
use crate::config::ContractInvariant;

/// An invariant's prompts: its probes, else a refusal_check's dangerous prompts (what it
/// judges), else the golden prompts.
pub(super) fn prompts_of(i: &ContractInvariant, golden: &[String]) -> Vec<String> {
    match &i.invariant.check {
        _ if !i.probes.is_empty() => i.probes.clone(),
        Check::RefusalCheck { dangerous_prompts } => dangerous_prompts.clone(),
        Check::Contains { .. }
        | Check::ContainsAny { .. }
        | Check::Regex { .. }
        | Check::ExcludesPattern { .. }
        | Check::Latency { .. }
        | Check::ValidJson {}
        | Check::Similarity { .. }
        | Check::ExcludesPii {}
        | Check::OutputNotEmpty {}
        | Check::Completes {}
        | Check::BehaviorUnchanged { .. }
        | Check::ToolCalled { .. }
        | Check::ToolNotCalled { .. }
        | Check::MaxToolCalls { .. }
        | Check::MaxLlmCalls { .. }
        | Check::MaxTokens { .. }
        | Check::MaxCost { .. }
        | Check::HonorsRetryAfter {}
        | Check::NoExfiltration {}
        | Check::Outcome { .. } => golden.to_vec(),
    }
}
