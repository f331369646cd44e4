//! The mutation types written by the `model:` LLM (`Family::Model`): one call per variant,
//! made before the run starts, with the variant's own seed (from its `Draw` stream) and
//! temperature 0 when the run's seed is fixed. A model that cannot be used at all (no
//! `model:` section, unreachable, refused) skips its types with one line saying why; a
//! call that times out or returns no text drops that variant and is counted.

mod client;
mod prompts;

use std::collections::{BTreeMap, HashMap};

pub use client::{ModelClient, ModelError};

use super::{Draw, text};
use crate::config::MutationsSpec;
use crate::mutate::kind::{Family, MutationType};

/// The model's variants for a run, ready for `plan`.
#[derive(Debug, Default)]
pub struct ModelVariants {
    made: HashMap<(MutationType, String, u32), String>,
    /// Variants the model failed to write, per type.
    pub failed: BTreeMap<MutationType, usize>,
    /// Model types that made no variant, and why.
    pub skipped: BTreeMap<MutationType, String>,
    /// `with_model` types some of whose variants came from the templates instead, and why.
    pub from_templates: BTreeMap<MutationType, String>,
}

impl ModelVariants {
    /// The variant made for `(kind, prompt, index)`, if any.
    pub fn get(&self, kind: MutationType, prompt: &str, index: u32) -> Option<String> {
        self.made.get(&(kind, prompt.to_string(), index)).cloned()
    }
}

/// One call to make: the variant it is for and what the model is asked.
struct Job {
    prompt: String,
    index: u32,
    instruction: String,
}

/// Asks `client` for every model-type variant `spec` plans over `prompts`, and for the
/// `with_model` template types a richer rewrite of each template variant, `concurrency`
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
    let opts = text::Options {
        noise_rate: spec.noise_rate,
        custom_templates: &spec.custom_templates,
    };
    for &kind in &spec.types {
        let jobs: Vec<Job> = match kind.family() {
            Family::Model => (0..spec.count)
                .flat_map(|index| prompts.iter().map(move |p| (p, index)))
                .map(|(prompt, index)| Job {
                    prompt: prompt.clone(),
                    index,
                    instruction: prompts::instruction(kind, prompt, index),
                })
                .collect(),
            Family::Text if spec.model_writes(kind) => rewrites(kind, spec, prompts, seed, &opts),
            Family::Text | Family::Wire => continue,
        };
        let Some(client) = client else {
            match kind.family() {
                Family::Model => out.skipped.insert(kind, no_model(kind)),
                Family::Text | Family::Wire => out.from_templates.insert(
                    kind,
                    format!("{kind}: no `model:` section, so its variants come from the templates"),
                ),
            };
            continue;
        };
        let (failed, fatal) = ask(
            client,
            kind,
            &jobs,
            seed,
            fixed_seed,
            concurrency,
            &mut out.made,
        )
        .await;
        note(&mut out, kind, jobs.len(), failed, fatal);
    }
    out
}

/// The `with_model` calls for `kind`: one per template variant the plan would send.
fn rewrites(
    kind: MutationType,
    spec: &MutationsSpec,
    prompts: &[String],
    seed: u64,
    opts: &text::Options,
) -> Vec<Job> {
    let mut jobs = vec![];
    for index in 0..spec.count {
        for prompt in prompts {
            let mut d = Draw::new(seed, kind, prompt, index);
            match text::generate(kind, prompt, index, &mut d, opts) {
                Some(t) if !t.is_empty() && t != *prompt => jobs.push(Job {
                    prompt: prompt.clone(),
                    index,
                    instruction: prompts::rewrite(kind, prompt, &t, index),
                }),
                // The plan drops it anyway.
                Some(_) | None => {}
            }
        }
    }
    jobs
}

/// Makes `jobs`' calls into `made`; the count of calls that failed, and the error that
/// stopped them all, if one did.
async fn ask(
    client: &ModelClient,
    kind: MutationType,
    jobs: &[Job],
    seed: u64,
    fixed_seed: bool,
    concurrency: usize,
    made: &mut HashMap<(MutationType, String, u32), String>,
) -> (usize, Option<ModelError>) {
    let mut failed = 0;
    for batch in jobs.chunks(concurrency.max(1)) {
        let mut calls = tokio::task::JoinSet::new();
        for (at, job) in batch.iter().enumerate() {
            let mut d = Draw::new(seed, kind, &job.prompt, job.index);
            let call_seed = fixed_seed.then(|| d.next_u64() >> 1);
            let (client, instruction) = (client.clone(), job.instruction.clone());
            calls.spawn(async move { (at, client.complete(&instruction, call_seed).await) });
        }
        let mut results = calls.join_all().await;
        results.sort_by_key(|(at, _)| *at);
        for (job, (_, r)) in batch.iter().zip(results) {
            match r.map(|t: String| prompts::clean(&t)) {
                Ok(text) if !text.is_empty() => {
                    made.insert((kind, job.prompt.clone(), job.index), text);
                }
                Err(e) if e.fatal() => {
                    made.retain(|(k, _, _), _| *k != kind);
                    return (failed, Some(e));
                }
                Ok(_) | Err(_) => failed += 1,
            }
        }
    }
    (failed, None)
}

/// Records how `kind`'s calls went: a model type drops what failed, a `with_model` type
/// sends the template's variant instead.
fn note(
    out: &mut ModelVariants,
    kind: MutationType,
    asked: usize,
    failed: usize,
    fatal: Option<ModelError>,
) {
    let rewrite = kind.family() == Family::Text;
    match (fatal, rewrite) {
        (Some(e), false) => {
            out.skipped.insert(
                kind,
                format!("{kind} was skipped: {e}; the run goes on with the other types"),
            );
        }
        (Some(e), true) => {
            out.from_templates.insert(
                kind,
                format!("{kind}: the model could not write its variants ({e}); they come from the templates"),
            );
        }
        (None, false) if failed > 0 => {
            out.failed.insert(kind, failed);
        }
        (None, true) if failed > 0 => {
            out.from_templates.insert(
                kind,
                format!(
                    "{kind}: the model wrote no usable text for {failed} of {asked} variants \
                     (timed out or empty); those come from the templates"
                ),
            );
        }
        (None, _) => {}
    }
}

/// Why `kind` is skipped without a `model:` section.
fn no_model(kind: MutationType) -> String {
    format!(
        "{kind} needs the `model:` LLM, and the config has no `model:` section; add one (e.g. \
         model: {{provider: ollama, name: qwen3:8b}}) to enable it; the run goes on with the \
         other types"
    )
}
