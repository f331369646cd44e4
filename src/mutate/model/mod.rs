//! The mutation types written by the `model:` LLM (`Family::Model`): one call per variant,
//! made before the run starts, with the variant's own seed (from its `Draw` stream) and
//! temperature 0 when the run's seed is fixed. A model that cannot be used at all (no
//! `model:` section, unreachable, refused) skips its types with one line saying why; a
//! call that times out or returns no text drops that variant and is counted.

mod client;
mod prompts;

use std::collections::{BTreeMap, HashMap};

pub use client::{ModelClient, ModelError};

use super::Draw;
use crate::config::{Family, MutationType, MutationsSpec};

/// The model's variants for a run, ready for `plan`.
#[derive(Debug, Default)]
pub struct ModelVariants {
    made: HashMap<(MutationType, String, u32), String>,
    /// Variants the model failed to write, per type.
    pub failed: BTreeMap<MutationType, usize>,
    /// Model types that made no variant, and why.
    pub skipped: BTreeMap<MutationType, String>,
}

impl ModelVariants {
    /// The variant made for `(kind, prompt, index)`, if any.
    pub fn get(&self, kind: MutationType, prompt: &str, index: u32) -> Option<String> {
        self.made.get(&(kind, prompt.to_string(), index)).cloned()
    }
}

/// Asks `client` for every model-type variant `spec` plans over `prompts`, `concurrency`
/// calls at a time. `fixed_seed`: the run's seed was set, so calls are at temperature 0.
pub async fn generate(
    client: Option<&ModelClient>,
    spec: &MutationsSpec,
    prompts: &[String],
    seed: u64,
    fixed_seed: bool,
    concurrency: usize,
) -> ModelVariants {
    let mut out = ModelVariants::default();
    let kinds = spec
        .types
        .iter()
        .copied()
        .filter(|t| t.family() == Family::Model);
    for kind in kinds {
        let Some(client) = client else {
            out.skipped.insert(
                kind,
                format!(
                    "{kind} needs the `model:` LLM, and the config has no `model:` section; add \
                     one (e.g. model: {{provider: ollama, name: qwen3:8b}}) to enable it; the run \
                     goes on with the other types"
                ),
            );
            continue;
        };
        let jobs: Vec<(String, u32)> = (0..spec.count)
            .flat_map(|i| prompts.iter().map(move |p| (p.clone(), i)))
            .collect();
        let mut fatal: Option<ModelError> = None;
        for batch in jobs.chunks(concurrency.max(1)) {
            let mut calls = tokio::task::JoinSet::new();
            for (at, (prompt, index)) in batch.iter().enumerate() {
                let mut d = Draw::new(seed, kind, prompt, *index);
                let call_seed = fixed_seed.then(|| d.next_u64() >> 1);
                let instruction = prompts::instruction(kind, prompt, *index);
                let client = client.clone();
                calls.spawn(async move { (at, client.complete(&instruction, call_seed).await) });
            }
            let mut results = calls.join_all().await;
            results.sort_by_key(|(at, _)| *at);
            let results = results.into_iter().map(|(_, r)| r);
            for ((prompt, index), r) in batch.iter().zip(results) {
                match r.map(|t: String| prompts::clean(&t)) {
                    Ok(text) => {
                        out.made.insert((kind, prompt.clone(), *index), text);
                    }
                    Err(e) if e.fatal() => fatal = Some(e),
                    Err(_) => *out.failed.entry(kind).or_default() += 1,
                }
            }
            if fatal.is_some() {
                break;
            }
        }
        if let Some(e) = fatal {
            out.made.retain(|(k, _, _), _| *k != kind);
            out.failed.remove(&kind);
            out.skipped.insert(
                kind,
                format!("{kind} was skipped: {e}; the run goes on with the other types"),
            );
        }
    }
    out
}
