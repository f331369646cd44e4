//! Sharded runs (docs/scale.md): `--shard K/N` runs the K-th of N disjoint parts of a run's
//! cases, chosen by a stable hash of each case's unit (a contract's prompt, with every
//! scenario and trial of it, so its baseline, `when` and seeds stay in one shard), and the
//! shard's report carries what `report merge` needs to judge the whole run again through
//! the same code: which units it ran, the digest of the whole set, each scenario's
//! exchanges outside its cases and each case's journal window, and the run's traffic
//! counts. Pure: no I/O.

use std::collections::HashSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::matrix::ScenarioOutcome;
use crate::exchange::Exchange;

/// The K-th (1-based) of N shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub k: u32,
    pub n: u32,
}

/// The form `--shard` takes, for its errors.
const FORM: &str = "expected K/N with 1 <= K <= N (e.g. 2/5), or auto/N inside a Kubernetes \
                    Indexed Job (K from JOB_COMPLETION_INDEX + 1)";

/// Why `--shard` could not be read: the text, what is wrong, and the form it takes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ShardError(String);

impl Shard {
    /// Reads `--shard`: `K/N`, or `auto/N` with `index` (`JOB_COMPLETION_INDEX`, 0-based).
    pub fn parse(text: &str, index: Option<&str>) -> Result<Shard, ShardError> {
        Shard::read(text, index).map_err(ShardError)
    }

    fn read(text: &str, index: Option<&str>) -> Result<Shard, String> {
        let bad = |why: String| format!("--shard {text}: {why}; {FORM}");
        let (k, n) = text.split_once('/').ok_or_else(|| bad("no `/`".into()))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| bad(format!("N `{n}` is not a whole number")))?;
        if n == 0 {
            return Err(bad("N is 0".into()));
        }
        let k: u32 = match k.trim() {
            "auto" => {
                let index = index.ok_or_else(|| {
                    bad("auto needs JOB_COMPLETION_INDEX, which is not set".into())
                })?;
                let i: u32 = index.trim().parse().map_err(|_| {
                    bad(format!(
                        "JOB_COMPLETION_INDEX `{index}` is not a whole number"
                    ))
                })?;
                i.checked_add(1)
                    .ok_or_else(|| bad(format!("JOB_COMPLETION_INDEX {i} is too large")))?
            }
            k => k
                .parse()
                .map_err(|_| bad(format!("K `{k}` is not a whole number")))?,
        };
        if k == 0 || k > n {
            return Err(bad(format!("K is {k}, outside 1..={n}")));
        }
        Ok(Shard { k, n })
    }

    /// Whether the case unit `unit` is this shard's: the first 8 bytes of its SHA-256,
    /// modulo N. Disjoint and complete over K, and a unit keeps its shard when others are
    /// added.
    pub fn holds(&self, unit: &str) -> bool {
        let d = ring::digest::digest(&ring::digest::SHA256, unit.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&d.as_ref()[..8]);
        u64::from_be_bytes(first) % u64::from(self.n) == u64::from(self.k - 1)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// The digest of a whole run's case units (in any order): shards of one run agree on it.
pub fn units_digest(units: &[String]) -> String {
    let mut sorted: Vec<&str> = units.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut bytes = vec![];
    for u in sorted {
        bytes.extend_from_slice(u.as_bytes());
        bytes.push(0);
    }
    crate::config::digest(&bytes)
}

/// What a shard's report says of itself, beyond its cases and coverage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    #[serde(flatten)]
    pub shard: Shard,
    /// `units_digest` of the whole run's units.
    pub units_digest: String,
    /// How many units the whole run has, and the ones this shard ran.
    pub units_total: usize,
    pub units: Vec<String>,
    /// The trials each case ran (`advanced.trials` or `--trials`) and the one run alone
    /// (`--trial`): a merge judges with them, whatever the config given says.
    #[serde(default = "one")]
    pub trials: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub raw: Raw,
    /// The config the shard ran with, credentials out (`config::carried`), so that a merge
    /// needs no config file. Shards written before it: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

fn one() -> u32 {
    1
}

/// What the shard's journal saw that its cases do not carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Raw {
    /// Exchanges recorded during the shard, attributed or not, and the agent's own.
    pub exchanges: usize,
    pub agent_exchanges: usize,
    /// Why `agent.response_path` looked wrong: every answer the shard read lacked it.
    pub response_path: Option<String>,
    /// Answers the shard read (a shard that read none says nothing of `response_path`).
    pub answers: usize,
    /// Per scenario run (a `(baseline)` pass first when there is one).
    pub scenarios: Vec<RawScenario>,
}

/// A scenario's exchanges that belong to no case, and each case's journal window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawScenario {
    pub name: String,
    pub strays: Vec<Arc<Exchange>>,
    /// In the order of the report's cases of this scenario.
    pub windows: Vec<(u64, u64)>,
}

impl Raw {
    /// The counts of `seen`, no scenarios yet.
    pub(super) fn of(seen: &super::verdict::Seen) -> Raw {
        Raw {
            exchanges: seen.exchanges,
            agent_exchanges: seen.agent_exchanges,
            response_path: seen.response_path.clone(),
            answers: seen.answers,
            scenarios: vec![],
        }
    }
}

impl ShardPart {
    /// What the shard `shard` of a run whose units are `all` says of itself: it ran
    /// `mine`, and its journal saw `raw`.
    pub fn new(
        shard: Shard,
        trials: &super::Trials,
        all: &[String],
        mine: Vec<String>,
        raw: Raw,
    ) -> ShardPart {
        ShardPart {
            shard,
            units_digest: units_digest(all),
            units_total: all.len(),
            units: mine,
            trials: trials.n,
            trial: trials.only,
            raw,
            config: None,
        }
    }
}

/// Each scenario run's (named in `names`) exchanges outside its cases and its cases'
/// windows, from the matrix's `outcomes`.
pub(super) fn raw_scenarios(names: &[&str], outcomes: &[ScenarioOutcome]) -> Vec<RawScenario> {
    names
        .iter()
        .zip(outcomes)
        .map(|(name, o)| {
            let inside: HashSet<u64> = o
                .cases
                .iter()
                .flat_map(|c| c.traffic.iter().flatten().map(|e| e.id))
                .collect();
            RawScenario {
                name: name.to_string(),
                strays: o
                    .exchanges
                    .iter()
                    .filter(|e| !inside.contains(&e.id))
                    .cloned()
                    .collect(),
                windows: o.cases.iter().map(|c| c.window).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_complete_and_stable() {
        let units: Vec<String> = (0..200).map(|i| format!("prompt {i}")).collect();
        for n in [1, 3, 7, 250] {
            let shards: Vec<Shard> = (1..=n).map(|k| Shard { k, n }).collect();
            for u in &units {
                let holders = shards.iter().filter(|s| s.holds(u)).count();
                assert_eq!(holders, 1, "{u} in {holders} of {n} shards");
            }
        }
        // Every shard of 3 gets a fair share of 200 units.
        for k in 1..=3 {
            let s = Shard { k, n: 3 };
            let mine = units.iter().filter(|u| s.holds(u)).count();
            assert!((40..=95).contains(&mine), "shard {s}: {mine}");
        }
        assert_eq!(
            units_digest(&units[..2]),
            units_digest(&[units[1].clone(), units[0].clone()])
        );
        assert_ne!(units_digest(&units[..2]), units_digest(&units[..3]));
    }

    #[test]
    fn bad_shards_name_the_problem_and_the_form() {
        for (text, index, why) in [
            ("0/3", None, "K is 0"),
            ("4/3", None, "K is 4, outside 1..=3"),
            ("1/0", None, "N is 0"),
            ("x/y", None, "N `y` is not a whole number"),
            ("2", None, "no `/`"),
            ("auto/3", None, "auto needs JOB_COMPLETION_INDEX"),
            ("auto/3", Some("3"), "K is 4"),
            ("auto/3", Some("one"), "JOB_COMPLETION_INDEX `one`"),
        ] {
            let e = Shard::parse(text, index).unwrap_err();
            let e = e.to_string();
            assert!(e.contains(why) && e.contains("expected K/N"), "{text}: {e}");
        }
        assert_eq!(Shard::parse("auto/3", Some("0")), Ok(Shard { k: 1, n: 3 }));
        assert_eq!(Shard::parse(" 2 / 5 ", None), Ok(Shard { k: 2, n: 5 }));
    }
}
