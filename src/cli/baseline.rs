//! `--baseline last-pass|ID --max-drop X`: a run fails when one of its scores (a phase's,
//! or `ci`'s overall) is more than X points below the baseline run's. The baseline is
//! found before the run starts (so `last-pass` never names the run itself), in the local
//! run store or on the daemon (`--server`).

use std::collections::BTreeMap;

use crate::run::RunKind;
use crate::store::{RunRecord, RunStatus, Store};

/// What `--baseline` asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The newest stored run of the same kind that passed.
    LastPass,
    Run(String),
}

impl Baseline {
    pub fn parse(arg: &str) -> Baseline {
        match arg {
            "last-pass" => Baseline::LastPass,
            id => Baseline::Run(id.to_string()),
        }
    }

    /// The baseline's scores from the local store; `Ok(None)` when `last-pass` finds no
    /// passing run yet (nothing to compare with); an error for an unknown id.
    pub fn scores_in(&self, store: &Store, kind: RunKind) -> Result<Option<Scored>, String> {
        let found = match self {
            Baseline::LastPass => store.last_passing(kind),
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
            })),
            (None, Baseline::LastPass) => Ok(None),
            (None, Baseline::Run(id)) => Err(format!(
                "--baseline {id}: no run {id}; `flakestorm runs list` shows the runs"
            )),
        }
    }

    /// The daemon's query for this baseline.
    pub fn query(&self, kind: RunKind) -> String {
        match self {
            Baseline::LastPass => format!(
                "/v1/runs?kind={kind}&status={}&limit=1",
                RunStatus::Passed.as_str()
            ),
            Baseline::Run(id) => format!("/v1/runs/{id}"),
        }
    }
}

/// A baseline run's id and scores.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub id: String,
    pub scores: BTreeMap<String, f64>,
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

    fn base() -> Scored {
        Scored {
            id: "r1".into(),
            scores: [
                ("contract".to_string(), 90.0),
                ("overall".to_string(), 80.0),
            ]
            .into(),
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
            Baseline::LastPass.query(RunKind::Ci),
            "/v1/runs?kind=ci&status=passed&limit=1"
        );
    }
}
