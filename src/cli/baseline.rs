//! `--baseline last-pass|ID --max-drop X`: a run fails when one of its scores (a phase's,
//! or `ci`'s overall) is more than X below the baseline run's. The baseline is found before
//! the run starts (so `last-pass` never names the run itself), in the local run store or on
//! the daemon (`--server`). `last-pass` is the newest passing run of the same kind and of
//! the same config (its digest) or, for a contract, of the same contract (its name): the
//! folder's store also holds other agents' runs, which are no baseline for this one. With
//! trials (docs/trials.md) it must also have been measured the same way: as many trials per
//! case, scored alike; a run id given is compared whatever its measure, and the run says so.

use std::collections::BTreeMap;

use http::Method;
use serde_json::Value;

use super::runs::Show;
use crate::config::Loaded;
use crate::run::RunKind;
use crate::store::{RunRecord, RunStatus, SameAs, Store};

/// What `--baseline` asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The newest stored run of the same kind and config (or contract) that passed.
    LastPass,
    Run(String),
}

/// The daemon's pages of passing runs a `--server` `last-pass` reads at most, newest
/// first, looking for one of the same config or contract.
pub const PAGES: usize = 10;

/// What a run of `kind` on `loaded` must share with its `last-pass` baseline; `trials`:
/// the run's `--trials` and `--trial`.
pub fn same_as(loaded: &Loaded, kind: RunKind, trials: (Option<u32>, Option<u32>)) -> SameAs {
    let contract = match kind {
        RunKind::Contract => loaded.config.contract.as_ref().map(|c| c.name.clone()),
        RunKind::Chaos | RunKind::Mutation | RunKind::Replay | RunKind::Ci => None,
    };
    let c = &loaded.config;
    let measure = crate::run::Trials {
        n: trials.0.unwrap_or(c.advanced.trials),
        only: trials.1,
        ..crate::run::Trials::of(c)
    };
    SameAs {
        config_digest: loaded.digest.clone(),
        contract,
        trials: crate::run::TrialsInfo::of(&measure),
    }
}

/// The scores of `now` more than `max_drop` below `base`'s (none without a baseline),
/// saying first on stderr when the baseline was measured otherwise than this run (`now_trials`).
pub fn dropped(
    base: Option<Scored>,
    now: &[(String, f64)],
    now_trials: Option<&crate::run::TrialsInfo>,
    max_drop: f64,
) -> Vec<String> {
    let Some(base) = base else {
        return vec![];
    };
    if let Some(why) = other_measure(&base, now_trials) {
        eprintln!("flakestorm: {why}");
    }
    regressions(&base, now, max_drop)
}

/// Why a baseline's scores are not this run's measure, when they are not.
fn other_measure(base: &Scored, now: Option<&crate::run::TrialsInfo>) -> Option<String> {
    use crate::run::TrialsInfo;
    (base.trials.as_ref() != now).then(|| {
        format!(
            "baseline run {} was measured with {}, this run with {}: its scores are compared \
             as they are",
            base.id,
            TrialsInfo::words(base.trials.as_ref()),
            TrialsInfo::words(now)
        )
    })
}

impl Baseline {
    pub fn parse(arg: &str) -> Baseline {
        match arg {
            "last-pass" => Baseline::LastPass,
            id => Baseline::Run(id.to_string()),
        }
    }

    /// The baseline's scores from the local store; `Ok(None)` when `last-pass` finds no
    /// passing run of the same config or contract (nothing to compare with); an error for
    /// an unknown id. An id given names its run, whatever its config.
    pub fn scores_in(
        &self,
        store: &Store,
        kind: RunKind,
        same: &SameAs,
    ) -> Result<Option<Scored>, String> {
        let found = match self {
            Baseline::LastPass => store.last_passing(kind, same),
            Baseline::Run(id) => store.get(id),
        }
        .map_err(|e| e.to_string())?;
        self.found(found)
    }

    /// As `scores_in`, from what the daemon listed or answered.
    pub fn found(&self, run: Option<RunRecord>) -> Result<Option<Scored>, String> {
        match (run, self) {
            (Some(r), _) => Ok(Some(Scored {
                id: r.id,
                scores: r.scores,
                trials: r.trials,
            })),
            (None, Baseline::LastPass) => Ok(None),
            (None, Baseline::Run(id)) => Err(format!(
                "--baseline {id}: no run {id}; `flakestorm runs list` shows the runs"
            )),
        }
    }

    /// The daemon's query for this baseline: for `last-pass`, a page of passing runs of
    /// `kind` (after `cursor`), among which `pick` finds one of the same config.
    pub fn query(&self, kind: RunKind, cursor: Option<&str>) -> String {
        match self {
            Baseline::LastPass => {
                let mut q = form_urlencoded::Serializer::new(String::new());
                q.append_pair("kind", kind.as_str());
                q.append_pair("status", RunStatus::Passed.as_str());
                q.append_pair("limit", "1000");
                if let Some(c) = cursor {
                    q.append_pair("cursor", c);
                }
                format!("/v1/runs?{}", q.finish())
            }
            Baseline::Run(id) => format!("/v1/runs/{id}"),
        }
    }
}

/// The newest of `runs` (newest first) that is of the same config or contract.
pub fn pick(runs: Vec<RunRecord>, same: &SameAs) -> Option<RunRecord> {
    runs.into_iter().find(|r| same.matches(r))
}

/// Why `last-pass` found nothing to compare with, naming what it looked for.
pub fn none_found(kind: RunKind, same: &SameAs) -> String {
    let of = match (&same.config_digest, &same.contract) {
        (Some(d), Some(c)) => format!("of this config ({d}) or of contract `{c}`"),
        (Some(d), None) => format!("of this config ({d})"),
        (None, Some(c)) => format!("of contract `{c}`"),
        (None, None) => {
            return format!(
                "--baseline last-pass: this run's config has no file, so no stored {kind} run \
                 can be told to be of the same config; nothing to compare with (give a run id \
                 to compare with it)"
            );
        }
    };
    format!(
        "--baseline last-pass: no passing {kind} run {of} is stored yet (other configs' runs \
         are not compared with); nothing to compare with (give a run id to compare with it)"
    )
}

/// The baseline's scores, from the daemon's history: a run id's, or the newest passing
/// run of the same config or contract among the daemon's pages of passing runs (said on
/// stderr when there is none).
pub(super) async fn on_daemon(
    server: &super::daemon_client::Server,
    b: &Baseline,
    (kind, trials): (RunKind, (Option<u32>, Option<u32>)),
    loaded: &Loaded,
    show: Show,
) -> Result<Option<Scored>, String> {
    let record = |v: Value| {
        serde_json::from_value::<RunRecord>(v).map_err(|e| format!("the daemon's run record: {e}"))
    };
    if matches!(b, Baseline::Run(_)) {
        // An unknown id: `found(None)` says so.
        let found = server.json(Method::GET, &b.query(kind, None), None).await;
        return b.found(
            found
                .ok()
                .filter(|v| !v.is_null())
                .map(record)
                .transpose()?,
        );
    }
    let same = same_as(loaded, kind, trials);
    let mut cursor: Option<String> = None;
    for _ in 0..PAGES {
        let page = server
            .json(Method::GET, &b.query(kind, cursor.as_deref()), None)
            .await?;
        let runs = page["runs"].as_array().cloned().unwrap_or_default();
        let runs: Vec<RunRecord> = runs.into_iter().map(record).collect::<Result<_, _>>()?;
        if let Some(r) = pick(runs, &same) {
            return b.found(Some(r));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    if !show.quiet {
        eprintln!("flakestorm: {}", none_found(kind, &same));
    }
    b.found(None)
}

/// A baseline run's id, scores and how it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub id: String,
    pub scores: BTreeMap<String, f64>,
    pub trials: Option<crate::run::TrialsInfo>,
}

/// The scores of `now` more than `max_drop` below the baseline's, in words.
pub fn regressions(base: &Scored, now: &[(String, f64)], max_drop: f64) -> Vec<String> {
    now.iter()
        .filter_map(|(phase, score)| {
            let before = base.scores.get(phase)?;
            let drop = before - score;
            (drop > max_drop).then(|| {
                format!(
                    "{phase} {score:.1} is {drop:.1} below {before:.1} in baseline run {} (max \
                     drop {max_drop})",
                    base.id
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewRun;

    fn base() -> Scored {
        Scored {
            id: "r1".into(),
            scores: [
                ("contract".to_string(), 90.0),
                ("overall".to_string(), 80.0),
            ]
            .into(),
            trials: None,
        }
    }

    #[test]
    fn a_drop_over_the_limit_is_a_regression_and_new_phases_are_not() {
        let now = [
            ("contract".to_string(), 84.0),
            ("overall".to_string(), 79.0),
            ("chaos".to_string(), 10.0),
        ];
        assert_eq!(
            regressions(&base(), &now, 5.0),
            ["contract 84.0 is 6.0 below 90.0 in baseline run r1 (max drop 5)"]
        );
        assert!(regressions(&base(), &now, 6.0).is_empty());
        assert_eq!(regressions(&base(), &now, 0.0).len(), 2);
    }

    #[test]
    fn an_unknown_baseline_id_is_an_error_and_no_last_pass_is_nothing_to_compare() {
        assert_eq!(Baseline::parse("last-pass").found(None), Ok(None));
        let e = Baseline::parse("r9").found(None).unwrap_err();
        assert!(e.contains("no run r9"), "{e}");
        assert_eq!(
            Baseline::LastPass.query(RunKind::Ci, None),
            "/v1/runs?kind=ci&status=passed&limit=1000"
        );
        assert_eq!(
            Baseline::LastPass.query(RunKind::Ci, Some("2026 x")),
            "/v1/runs?kind=ci&status=passed&limit=1000&cursor=2026+x"
        );
    }

    /// A passing run of `kind` with config `digest` (and contract `name`), stored.
    fn passed(store: &Store, kind: RunKind, digest: &str, name: Option<&str>) -> String {
        let id = store.begin_run(NewRun {
            kind,
            config_digest: Some(digest.into()),
            seed: None,
            status: RunStatus::Running,
        });
        if let Some(name) = name {
            store.set_contract(&id, name);
        }
        let scores = [(kind.as_str().to_string(), 90.0)].into();
        store.finish_run(&id, RunStatus::Passed, scores, None);
        id.to_string()
    }

    /// Two agents' configs in one folder share its store: `last-pass` is the newest passing
    /// run of the same config, or for a contract of the same contract too, never the other
    /// agent's newer one; with none, nothing; a run id names its run whatever its config.
    #[tokio::test]
    async fn last_pass_is_a_run_of_the_same_config_or_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let mine = passed(&store, RunKind::Chaos, "sha256:mine", None);
        let theirs = passed(&store, RunKind::Chaos, "sha256:theirs", None);
        let edited = passed(&store, RunKind::Contract, "sha256:old", Some("Weather"));
        let other = passed(&store, RunKind::Contract, "sha256:other", Some("Research"));
        store.flush().await.unwrap();
        let last = |kind, digest: &str, contract: Option<&str>| {
            let same = SameAs {
                config_digest: Some(digest.into()),
                contract: contract.map(Into::into),
                trials: None,
            };
            Baseline::LastPass
                .scores_in(&store, kind, &same)
                .unwrap()
                .map(|s| s.id)
        };
        assert_eq!(last(RunKind::Chaos, "sha256:mine", None), Some(mine));
        assert_eq!(last(RunKind::Chaos, "sha256:new", None), None);
        // The contract's config changed since: its own contract's run is still its baseline.
        let weather = last(RunKind::Contract, "sha256:new", Some("Weather"));
        assert_eq!(weather, Some(edited));
        assert_eq!(last(RunKind::Contract, "sha256:new", Some("Billing")), None);
        let id = Baseline::Run(theirs.clone())
            .scores_in(&store, RunKind::Chaos, &SameAs::default())
            .unwrap();
        assert_eq!(id.map(|s| s.id), Some(theirs));
        assert_eq!(
            store.get(&other).unwrap().unwrap().contract.as_deref(),
            Some("Research")
        );
        let nothing = Baseline::LastPass.scores_in(&store, RunKind::Chaos, &SameAs::default());
        assert_eq!(
            nothing,
            Ok(None),
            "a run without a config file matches none"
        );
    }

    #[test]
    fn finding_nothing_says_what_was_looked_for() {
        let same = SameAs {
            config_digest: Some("sha256:ab".into()),
            contract: Some("Weather".into()),
            trials: None,
        };
        assert_eq!(
            none_found(RunKind::Contract, &same),
            "--baseline last-pass: no passing contract run of this config (sha256:ab) or of \
             contract `Weather` is stored yet (other configs' runs are not compared with); \
             nothing to compare with (give a run id to compare with it)"
        );
        assert!(none_found(RunKind::Ci, &SameAs::default()).contains("has no file"));
    }
}
