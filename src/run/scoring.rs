//! What judging a run's cases takes, apart from driving them: the seed, trials, the pass
//! mark, the declared traffic, the embedder and what the config says of the agent. A live
//! run holds it in its `RunContext`; the merge of a sharded run's reports judges with it
//! alone, with no agent, engine or journal.

use super::{Declared, Embedder, Trials};
use crate::config::{Attribution, Config};

/// The context cases are judged, covered and scored in.
#[derive(Clone)]
pub struct Scoring {
    /// The run's seed: every draw of the run (variants, trace ids, canaries, per-trace
    /// rules) comes from it; the engine's global rules draw from `engine.seed()`, which is
    /// this seed whenever the run has the engine to itself.
    pub seed: u64,
    /// `advanced.trials` (each case runs that many times), and `--trial`: only that one.
    pub trials: Trials,
    /// The loaded config's digest (`Loaded::digest`), stamped on every report.
    pub config_digest: Option<String>,
    /// `tools:` and `llm:`: where the agent's traffic should go.
    pub declared: Declared,
    /// The pass mark (`--min-score`, else `scoring.min_score`).
    pub min_score: f64,
    /// `advanced.embeddings`: similarity checks compare embeddings instead of words.
    pub embedder: Option<Embedder>,
    /// How an exchange is tied to its case (`advanced.attribution`, design.md §6), when
    /// there is no agent pool.
    pub attribution: Attribution,
    /// `proxy.max_rewrite_bytes`: a body larger than this is not scanned for a case's
    /// outcome (the case is `undecided`).
    pub max_scan: usize,
    /// `agent.reset_endpoint` is POSTed before every case: the agent starts each clean.
    pub resets: bool,
    /// `agent.capture: netns`: every TCP connection of the agent ends at flakestorm.
    pub netns: bool,
    /// What LLM calls cost (`pricing:`): each case's usage is priced with it.
    pub pricing: std::sync::Arc<crate::cost::Pricing>,
}

impl Scoring {
    /// The scoring of a run of `config` drawing from `seed`.
    pub fn of(
        config: &Config,
        seed: u64,
        config_digest: Option<String>,
        min_score: f64,
        embedder: Option<Embedder>,
    ) -> Scoring {
        let agent = config.agent.as_ref();
        Scoring {
            seed,
            trials: Trials::of(config),
            config_digest,
            declared: Declared {
                tools: config.tools.clone(),
                llm: config.llm.clone(),
                started: started(agent),
            },
            min_score,
            embedder,
            attribution: config.advanced.attribution,
            max_scan: config.proxy.max_rewrite_bytes,
            resets: agent.is_some_and(|a| a.reset_endpoint.is_some()),
            netns: agent.is_some_and(|a| a.capture == crate::capture::Mode::Netns),
            pricing: std::sync::Arc::new(config.pricing.clone()),
        }
    }
}

/// How the agent runs, as far as its traffic's way goes: started by flakestorm or not, on
/// which stack, and what of the proxy environment `agent.env` changes (the agent gets it).
fn started(agent: Option<&crate::config::AgentTarget>) -> super::Started {
    let Some(a) = agent.filter(|a| a.command.is_some()) else {
        return super::Started::default();
    };
    let no_proxy = |k: &String| k.eq_ignore_ascii_case("no_proxy");
    let replaced = a.env.keys().filter(|k| {
        !no_proxy(k) && ["HTTPS_PROXY", "HTTP_PROXY"].contains(&k.to_ascii_uppercase().as_str())
    });
    super::Started {
        command: true,
        stack: super::Stack::of(a.command.as_deref().unwrap_or_default()),
        // The last spelling wins, as `agent::with_user_env` gives it to the agent.
        no_proxy: a
            .env
            .iter()
            .rev()
            .find(|(k, _)| no_proxy(k))
            .map(|(_, v)| v.clone()),
        replaced: replaced.cloned().collect(),
    }
}
