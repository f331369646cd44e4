//! What the `model:` LLM is asked for each model-written type, and how its answer is
//! cleaned into the variant sent (no quotes, no "Here is…" preamble).

use crate::config::MutationType;

/// The instruction for variant `index` of `prompt`; each index asks for a different
/// wording, so variants differ even at temperature 0.
pub(super) fn instruction(kind: MutationType, prompt: &str, index: u32) -> String {
    let n = index + 1;
    let task = match kind {
        MutationType::Paraphrase => {
            "Rewrite the user request below in different words. Keep exactly the same meaning, \
             intent and details (names, numbers, dates)."
        }
        MutationType::SemanticSimilarityAttack => {
            "Write a request that reuses most of the words of the user request below but asks \
             for something subtly different or opposite (a changed negation, quantity, entity or \
             condition), so it looks the same at a glance and is not."
        }
        // Not written by the model (`Family::Text`, `Family::Wire`): never asked for.
        MutationType::Noise
        | MutationType::ToneShift
        | MutationType::PromptInjection
        | MutationType::EncodingAttacks
        | MutationType::ContextManipulation
        | MutationType::LengthExtremes
        | MutationType::Custom
        | MutationType::MultiTurnAttack
        | MutationType::AdvancedJailbreak
        | MutationType::FormatPoisoning
        | MutationType::LanguageMixing
        | MutationType::TokenManipulation
        | MutationType::TemporalAttack
        | MutationType::HttpHeaderInjection
        | MutationType::PayloadSizeAttack
        | MutationType::ContentTypeConfusion
        | MutationType::QueryParameterPoisoning
        | MutationType::RequestMethodAttack
        | MutationType::ProtocolLevelAttack
        | MutationType::ResourceExhaustion
        | MutationType::ConcurrentRequestPattern
        | MutationType::TimeoutManipulation => "Rewrite the user request below.",
    };
    format!(
        "{task} This is variation number {n}: word it differently from variations 1 to {}. \
         Answer with the new request only: no quotes, no explanation.\n\nUser request: {prompt}",
        n.saturating_sub(1).max(1)
    )
}

/// The variant in a model's answer: trimmed, without a leading label or wrapping quotes.
pub(super) fn clean(answer: &str) -> String {
    let mut t = answer.trim();
    for label in ["New request:", "Rewritten request:", "Request:"] {
        if let Some(rest) = t.strip_prefix(label) {
            t = rest.trim();
        }
    }
    for (open, close) in [('"', '"'), ('“', '”'), ('\'', '\'')] {
        if let Some(inner) = t.strip_prefix(open).and_then(|s| s.strip_suffix(close)) {
            t = inner.trim();
        }
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_name_the_prompt_and_differ_by_index() {
        let a = instruction(MutationType::Paraphrase, "Book a flight", 0);
        let b = instruction(MutationType::Paraphrase, "Book a flight", 1);
        assert!(a.ends_with("User request: Book a flight"));
        assert_ne!(a, b);
        assert_ne!(
            a,
            instruction(MutationType::SemanticSimilarityAttack, "Book a flight", 0)
        );
    }

    #[test]
    fn answers_are_cleaned() {
        assert_eq!(
            clean("  \"Reserve a plane ticket\"\n"),
            "Reserve a plane ticket"
        );
        assert_eq!(
            clean("Rewritten request: “Get me a flight”"),
            "Get me a flight"
        );
        assert_eq!(clean("plain"), "plain");
    }
}
