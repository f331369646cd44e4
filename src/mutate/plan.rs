//! A mutation run's cases from `mutations:`: `count` variants of each golden prompt per
//! requested type, each from its own seeded stream; variants that are empty, the prompt
//! itself, or a repeat of one already planned for that prompt are dropped and counted; types
//! this build cannot make are skipped with the reason; over `max_per_run`, a stratified pick
//! (round-robin over types, then prompts, then index) keeps every requested type in the run.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::Draw;
use crate::config::MutationsSpec;
use crate::mutate::kind::{Family, MutationType};

/// One variant to send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    #[serde(rename = "type")]
    pub kind: MutationType,
    /// Index of the golden prompt it was made from.
    pub prompt_index: usize,
    /// Which variant of that prompt and type (its stream).
    pub index: u32,
    /// The exact text sent.
    pub text: String,
}

/// Why a generated variant was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dropped {
    Empty,
    /// Identical to the golden prompt: it tests nothing new.
    Unchanged,
    /// The same text as a variant already planned for that prompt.
    Repeat,
    /// The `model:` LLM timed out or wrote no text for it.
    ModelFailed,
}

/// The cases of a mutation run, and what was left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// In the order they run.
    pub variants: Vec<Variant>,
    /// Generated variants not sent, counted per type and reason.
    pub dropped: BTreeMap<MutationType, BTreeMap<Dropped, usize>>,
    /// Requested types that made no variant, with the reason.
    pub skipped: BTreeMap<MutationType, String>,
    /// Variants left out by `max_per_run`.
    pub over_cap: usize,
}

/// Plans a run over `prompts` with `seed`. `generate(kind, prompt, index, draw)` makes a
/// variant, or None when this build cannot make that type (`skip_reason` says why).
pub fn plan(
    spec: &MutationsSpec,
    prompts: &[String],
    seed: u64,
    generate: impl Fn(MutationType, &str, u32, &mut Draw) -> Option<String>,
    skip_reason: impl Fn(MutationType) -> String,
) -> Plan {
    let mut out = Plan::default();
    // Per type: its variants in (index, prompt) order, so a cap keeps early indexes of
    // every prompt before late ones of a few.
    let mut by_type: Vec<Vec<Variant>> = vec![];
    for &kind in &spec.types {
        let mut kept = vec![];
        let mut made_any = false;
        let mut seen: Vec<HashSet<String>> = vec![HashSet::new(); prompts.len()];
        for index in 0..spec.count {
            for (p, prompt) in prompts.iter().enumerate() {
                let mut draw = Draw::new(seed, kind, prompt, index);
                let Some(text) = generate(kind, prompt, index, &mut draw) else {
                    continue;
                };
                made_any = true;
                let why = if text.is_empty() {
                    Some(Dropped::Empty)
                } else if text == *prompt {
                    Some(Dropped::Unchanged)
                } else if !seen[p].insert(text.clone()) {
                    Some(Dropped::Repeat)
                } else {
                    None
                };
                match why {
                    Some(why) => {
                        *out.dropped.entry(kind).or_default().entry(why).or_default() += 1;
                    }
                    None => kept.push(Variant {
                        kind,
                        prompt_index: p,
                        index,
                        text,
                    }),
                }
            }
        }
        if !made_any && !prompts.is_empty() {
            out.skipped.insert(kind, skip_reason(kind));
        }
        by_type.push(kept);
    }
    let total: usize = by_type.iter().map(Vec::len).sum();
    let cap = spec.max_per_run as usize;
    let mut queues: Vec<std::vec::IntoIter<Variant>> =
        by_type.into_iter().map(Vec::into_iter).collect();
    while out.variants.len() < cap.min(total) {
        for q in &mut queues {
            if out.variants.len() == cap {
                break;
            }
            if let Some(v) = q.next() {
                out.variants.push(v);
            }
        }
    }
    out.over_cap = total - out.variants.len();
    out
}

/// Why this build makes no variant of `kind` (for a type `generate` returned None for).
pub fn unsupported(kind: MutationType) -> String {
    match kind.family() {
        Family::Model => format!(
            "{kind} needs the `model:` LLM, which wrote no variant for this plan; the run goes \
             on with the other types"
        ),
        Family::Wire => format!("{kind}: no wire-level variant was planned"),
        Family::Text => format!("{kind} made no variant"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(types: &[MutationType], count: u32, max: u32) -> MutationsSpec {
        MutationsSpec {
            types: types.to_vec(),
            count,
            max_per_run: max,
            ..MutationsSpec::default()
        }
    }

    /// A generator whose output is easy to predict: `<type>:<index>:<prompt>`, except for
    /// the cases the planner must drop.
    fn fake(kind: MutationType, prompt: &str, index: u32, _: &mut Draw) -> Option<String> {
        match (kind.family(), index) {
            (Family::Model, _) => None,
            (_, 0) => Some(String::new()),
            (_, 1) => Some(prompt.to_string()),
            (_, 2) => Some(format!("{kind}:x")),
            (_, 3) => Some(format!("{kind}:x")),
            (_, i) => Some(format!("{kind}:{i}:{prompt}")),
        }
    }

    #[test]
    fn drops_empty_unchanged_and_repeats_and_counts_them() {
        use MutationType as M;
        let p = plan(
            &spec(&[M::Noise, M::Paraphrase], 6, 1000),
            &["a".into(), "b".into()],
            1,
            fake,
            unsupported,
        );
        let noise = &p.dropped[&M::Noise];
        assert_eq!(
            (
                noise[&Dropped::Empty],
                noise[&Dropped::Unchanged],
                noise[&Dropped::Repeat]
            ),
            (2, 2, 2),
            "a repeat is per prompt: `noise:x` is kept once for each"
        );
        let texts: Vec<&str> = p.variants.iter().map(|v| v.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "noise:x",
                "noise:x",
                "noise:4:a",
                "noise:4:b",
                "noise:5:a",
                "noise:5:b"
            ]
        );
        assert!(p.skipped[&M::Paraphrase].contains("needs the `model:` LLM"));
        assert_eq!(p.over_cap, 0);
    }

    #[test]
    fn the_cap_keeps_every_type() {
        use MutationType as M;
        let types = [M::Noise, M::ToneShift, M::PromptInjection];
        let p = plan(
            &spec(&types, 10, 4),
            &["a".into(), "b".into()],
            1,
            |k, prompt, i, _| Some(format!("{k}{i}{prompt}")),
            unsupported,
        );
        let kinds: Vec<MutationType> = p.variants.iter().map(|v| v.kind).collect();
        assert_eq!(
            kinds,
            [M::Noise, M::ToneShift, M::PromptInjection, M::Noise]
        );
        assert_eq!(p.over_cap, 60 - 4);
    }

    #[test]
    fn the_same_seed_plans_the_same_variants() {
        use MutationType as M;
        let g = |k: MutationType, prompt: &str, _i: u32, d: &mut Draw| {
            Some(format!("{k}{prompt}{}", d.next_u64()))
        };
        let s = spec(&[M::Noise, M::ToneShift], 3, 50);
        let prompts = ["a".to_string(), "b".to_string()];
        let a = plan(&s, &prompts, 7, g, unsupported);
        assert_eq!(a, plan(&s, &prompts, 7, g, unsupported));
        assert_ne!(a, plan(&s, &prompts, 8, g, unsupported));
        // A type's variants do not depend on which other types ran.
        let alone = plan(&spec(&[M::ToneShift], 3, 50), &prompts, 7, g, unsupported);
        let tone: Vec<&Variant> = a
            .variants
            .iter()
            .filter(|v| v.kind == M::ToneShift)
            .collect();
        assert_eq!(tone, alone.variants.iter().collect::<Vec<_>>());
    }
}
