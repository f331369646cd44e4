//! The rule-based generators: the 13 `Family::Text` mutation types, one file each, made
//! from the run seed alone (no LLM). Every generator draws only from the variant's own
//! stream and cycles its families by `index`, so 20 variants of one prompt are mostly
//! distinct and a variant never depends on which other types ran.

use super::Draw;
use crate::mutate::kind::MutationType as M;

mod advanced_jailbreak;
mod codecs;
mod context_manipulation;
mod custom;
mod encoding;
mod format_poisoning;
mod language_mixing;
mod length_extremes;
mod multi_turn;
mod noise;
mod prompt_injection;
mod temporal;
mod token_manipulation;
mod tone_shift;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;

/// What the text generators read from `mutations:`.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// `mutations.noise_rate`: share of characters `noise` changes (0–1).
    pub noise_rate: f64,
    /// `mutations.custom_templates`, name → template with `{prompt}`, in name order.
    pub custom_templates: &'a [(String, String)],
}

/// Variant `index` (0-based) of `prompt` for a `Family::Text` type, drawing only from `d`
/// (the caller makes `d = Draw::new(seed, kind, prompt, index)`). None for a type of another family.
pub fn generate(kind: M, prompt: &str, index: u32, d: &mut Draw, opts: &Options) -> Option<String> {
    let i = index as usize;
    Some(match kind {
        M::Noise => noise::mutate(prompt, opts.noise_rate, d),
        M::ToneShift => tone_shift::mutate(prompt, i, d),
        M::PromptInjection => prompt_injection::mutate(prompt, i, d),
        M::EncodingAttacks => encoding::mutate(prompt, i, d),
        M::ContextManipulation => context_manipulation::mutate(prompt, i, d),
        M::LengthExtremes => length_extremes::mutate(prompt, i, d),
        M::Custom => custom::mutate(prompt, i, opts.custom_templates),
        M::MultiTurnAttack => multi_turn::mutate(prompt, i, d),
        M::AdvancedJailbreak => advanced_jailbreak::mutate(prompt, i, d),
        M::FormatPoisoning => format_poisoning::mutate(prompt, i, d),
        M::LanguageMixing => language_mixing::mutate(prompt, i, d),
        M::TokenManipulation => token_manipulation::mutate(prompt, i, d),
        M::TemporalAttack => temporal::mutate(prompt, i, d),
        M::Paraphrase
        | M::SemanticSimilarityAttack
        | M::HttpHeaderInjection
        | M::PayloadSizeAttack
        | M::ContentTypeConfusion
        | M::QueryParameterPoisoning
        | M::RequestMethodAttack
        | M::ProtocolLevelAttack
        | M::ResourceExhaustion
        | M::ConcurrentRequestPattern
        | M::TimeoutManipulation => return None,
    })
}

/// `template` with every `{prompt}` replaced (the prompt itself is not re-scanned).
fn fill(template: &str, prompt: &str) -> String {
    template.replace("{prompt}", prompt)
}

/// `template` with `{prompt}` and `{x}` replaced in one pass, so a prompt that happens
/// to contain `{x}` (or an `x` containing `{prompt}`) is left as written.
fn fill2(template: &str, prompt: &str, x: &str) -> String {
    let mut out = String::with_capacity(template.len() + prompt.len() + x.len());
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(t) = tail.strip_prefix("{prompt}") {
            out.push_str(prompt);
            rest = t;
        } else if let Some(t) = tail.strip_prefix("{x}") {
            out.push_str(x);
            rest = t;
        } else {
            out.push('{');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}
