//! Shards of a run, made whole again (`flakestorm report merge`, docs/scale.md). What any
//! kind of run needs is here: the shards checked to be of one run (config, seed, version,
//! case set), each given once and all there (`check`); the matrix's outcomes rebuilt from
//! their cases, exchange ids renumbered so shards never collide (`outcomes`); what their
//! journals saw, summed (`seen`). Each kind then judges the outcomes through the code its
//! whole run ends with (`contract`, `chaos`, `ci`): cells, coverage, scores and verdicts
//! are computed, never summed from the shards' own. Missing shards with `allow_partial`
//! make the verdict not tested (INCOMPLETE), never a pass.

mod chaos;
mod ci;
mod contract;
mod mutation;
mod pick;
mod pieces;
mod replay;

use super::{Report, Scoring};

/// Why shards could not be merged: none given, shards not of one run (named by file), the
/// embeddings endpoint a whole run would ask.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{0}")]
    Shards(String),
    #[error(transparent)]
    Embedder(#[from] super::EmbedderError),
}

impl From<String> for MergeError {
    fn from(why: String) -> MergeError {
        MergeError::Shards(why)
    }
}

/// Merges the shard reports `shards` of a run made with `loaded`, in the context a whole
/// run would judge in (`Scoring`), without an agent, an engine or a proxy (embeddings, if
/// configured, are asked again, as a whole run would).
pub async fn merge_reports(
    loaded: &crate::config::Loaded,
    min_score: f64,
    shards: Vec<(String, Report)>,
    allow_partial: bool,
) -> Result<Report, MergeError> {
    let config = &loaded.config;
    let Some((_, first)) = shards.first() else {
        return Err(MergeError::Shards("no shard reports to merge".into()));
    };
    let seed = match first {
        Report::Contract(r) => r.seed,
        Report::Chaos(r) => r.seed,
        Report::Ci(r) => ci::seed(r),
        Report::Replay(r) => r.seed,
        Report::Mutation(r) => r.seed,
    };
    let embedder = super::Embedder::for_config(config).await?;
    let digest = loaded.digest.clone();
    let mut ctx = Scoring::of(config, seed, digest, min_score, embedder);
    // The trials the shards ran (`--trials` may differ from the config's); `check` makes
    // every shard agree.
    if let Some(part) = own_part(first) {
        ctx.trials.n = part.trials;
        ctx.trials.only = part.trial;
    }
    let count = u32::try_from(shards.len()).unwrap_or(u32::MAX);
    let merged = match first {
        Report::Contract(_) => contract::merge(&ctx, config, shards, allow_partial)
            .await
            .map(Report::Contract),
        Report::Chaos(_) => chaos::merge(&ctx, config, shards, allow_partial)
            .await
            .map(Report::Chaos),
        Report::Ci(_) => ci::merge(&ctx, config, shards, allow_partial)
            .await
            .map(|r| Report::Ci(Box::new(r))),
        Report::Replay(_) => replay::merge(&ctx, config, shards, allow_partial)
            .await
            .map(Report::Replay),
        Report::Mutation(_) => mutation::merge(&ctx, config, shards, allow_partial)
            .await
            .map(Report::Mutation),
    };
    let mut merged = merged?;
    // What the store shows beside the merged run (its `shards`), and the report says.
    if let Some(info) = merged.info_mut() {
        info.merged_shards = Some(count);
    }
    Ok(merged)
}

/// The config a shard report carries (`config::carried`): None when `r` is not a shard's,
/// `Some(None)` for a shard's written before shards carried it.
pub fn carried_config(r: &Report) -> Option<Option<&serde_json::Value>> {
    own_part(r).map(|p| p.config.as_ref())
}

/// Puts `config` (`config::Loaded::carried`) in the shard report `r`, where a merge reads it.
pub fn carry_config(r: &mut Report, config: &serde_json::Value) {
    let part = match r {
        Report::Contract(r) => r.shard.as_mut(),
        Report::Chaos(r) => r.shard.as_mut(),
        Report::Replay(r) => r.shard.as_mut(),
        Report::Mutation(r) => r.shard.as_mut(),
        Report::Ci(r) => match (&mut r.contract, &mut r.chaos) {
            (Some(c), _) if c.shard.is_some() => c.shard.as_mut(),
            (_, chaos) => chaos.as_mut().and_then(|c| c.shard.as_mut()),
        },
    };
    if let Some(part) = part {
        part.config = Some(config.clone());
    }
}

/// A shard report's own part (a `ci` shard's: its contract's, else its chaos phase's).
fn own_part(r: &Report) -> Option<&super::shard::ShardPart> {
    match r {
        Report::Contract(r) => r.shard.as_ref(),
        Report::Chaos(r) => r.shard.as_ref(),
        Report::Replay(r) => r.shard.as_ref(),
        Report::Mutation(r) => r.shard.as_ref(),
        Report::Ci(r) => r
            .contract
            .as_ref()
            .and_then(|c| c.shard.as_ref())
            .or_else(|| r.chaos.as_ref().and_then(|c| c.shard.as_ref())),
    }
}
