//! Consistency over repeated trials (`advanced.trials`): from n trials of a case with c
//! passes, the unbiased estimators of τ-bench's **pass^k** (all of k trials drawn without
//! replacement pass: C(c,k)/C(n,k)) and of **pass@k** (at least one does:
//! 1 − C(n−c,k)/C(n,k)), for k = 1..n, and whether the trials disagree (flaky). A group of
//! cases (a contract cell, a run) averages the per-case figures, as τ-bench averages over
//! tasks. Pure.

use serde::{Deserialize, Serialize};

use crate::config::ConsistencyScore;

/// One case's (or one group's) trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Consistency {
    /// Trials judged.
    pub trials: u32,
    /// Of those, the ones that passed.
    pub passed: u32,
    /// pass^k for k = 1..=trials (index 0 is k = 1).
    pub pass_hat_k: Vec<f64>,
    /// pass@k for k = 1..=trials.
    pub pass_at_k: Vec<f64>,
    /// Some trials passed and some failed.
    pub flaky: bool,
}

/// One case (a scenario and a prompt) over its trials: passed when every check applied to
/// the trial passed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseTrials {
    pub scenario: String,
    pub prompt: String,
    #[serde(flatten)]
    pub consistency: Consistency,
}

/// Each (scenario, prompt)'s trials among `cases`, in their order: a trial counts when it
/// was judged and a check passed or failed on it (a trial the faults of its checks' `when`
/// missed tested nothing); it passed when none of its checks failed.
pub fn per_case(cases: &[super::CaseResult]) -> Vec<CaseTrials> {
    let judged = cases
        .iter()
        .filter(|c| c.not_judged.is_none() && c.checks.iter().any(|k| k.verdict.judged()))
        .map(|c| {
            let failed =
                |k: &super::CaseCheck| matches!(k.verdict, crate::checks::Verdict::Fail(_));
            (
                c.scenario.as_str(),
                c.prompt.as_str(),
                !c.checks.iter().any(failed),
            )
        });
    grouped(judged)
}

/// Each (scenario, prompt)'s trials from its judged trials' outcomes (passed or not), in
/// their order.
pub fn grouped<'a>(trials: impl Iterator<Item = (&'a str, &'a str, bool)>) -> Vec<CaseTrials> {
    let mut out: Vec<(&str, &str, u32, u32)> = vec![];
    for (scenario, prompt, passed) in trials {
        let passed = u32::from(passed);
        match out
            .iter_mut()
            .find(|(s, p, _, _)| *s == scenario && *p == prompt)
        {
            Some((_, _, n, ok)) => {
                *n += 1;
                *ok += passed;
            }
            None => out.push((scenario, prompt, 1, passed)),
        }
    }
    out.into_iter()
        .map(|(s, p, n, ok)| CaseTrials {
            scenario: s.to_string(),
            prompt: p.to_string(),
            consistency: Consistency::of(n, ok),
        })
        .collect()
}

/// C(n, k) as a float (exact for the small n trials use).
fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

impl Consistency {
    /// The figures of one case judged `trials` times, `passed` of them passing.
    pub fn of(trials: u32, passed: u32) -> Consistency {
        let passed = passed.min(trials);
        let ks = 1..=trials;
        let total = |k| choose(trials, k);
        Consistency {
            trials,
            passed,
            pass_hat_k: ks.clone().map(|k| choose(passed, k) / total(k)).collect(),
            pass_at_k: ks
                .map(|k| 1.0 - choose(trials - passed, k) / total(k))
                .collect(),
            flaky: passed > 0 && passed < trials,
        }
    }

    /// The mean of several cases' figures (a cell's prompts); `None` for no cases. Cases
    /// with fewer trials judged than the most count only for the k they have.
    pub fn mean(cases: &[Consistency]) -> Option<Consistency> {
        let n = cases.iter().map(|c| c.trials).max()?;
        let mean_at = |get: fn(&Consistency) -> &Vec<f64>, i: usize| {
            let v: Vec<f64> = cases
                .iter()
                .filter_map(|c| get(c).get(i).copied())
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        Some(Consistency {
            trials: cases.iter().map(|c| c.trials).sum(),
            passed: cases.iter().map(|c| c.passed).sum(),
            pass_hat_k: (0..n as usize)
                .map(|i| mean_at(|c| &c.pass_hat_k, i))
                .collect(),
            pass_at_k: (0..n as usize)
                .map(|i| mean_at(|c| &c.pass_at_k, i))
                .collect(),
            flaky: cases.iter().any(|c| c.flaky),
        })
    }

    /// pass^k, when `k` is within the trials.
    pub fn pass_hat(&self, k: u32) -> Option<f64> {
        self.pass_hat_k.get((k as usize).checked_sub(1)?).copied()
    }

    /// What these trials earn toward a score (0..=1): pass^1 under `scoring.consistency:
    /// mean`, pass^k under `pass_k` (k: `scoring.k`, else every trial). With fewer trials
    /// judged than k (`--trial`, or trials not judged), pass^k over the trials it has.
    pub fn credit(&self, scoring: ConsistencyScore, k: Option<u32>) -> f64 {
        let n = self.pass_hat_k.len() as u32;
        let k = match scoring {
            ConsistencyScore::Mean => 1,
            ConsistencyScore::PassK => k.unwrap_or(n).min(n),
        };
        self.pass_hat(k).unwrap_or(0.0)
    }
}

/// A score (0–100) from units' (weight, trials): each earns its weight times its credit
/// (`Consistency::credit`); 0 when no unit was judged. Chaos prompts, replay sessions and
/// mutated inputs score so when they run several trials.
pub fn credited_score(
    units: impl IntoIterator<Item = (f64, Consistency)>,
    scoring: ConsistencyScore,
    k: Option<u32>,
) -> f64 {
    let (mut got, mut total) = (0.0, 0.0);
    for (w, c) in units.into_iter().filter(|(_, c)| c.trials > 0) {
        total += w;
        got += w * c.credit(scoring, k);
    }
    match total > 0.0 {
        true => got * 100.0 / total,
        false => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_estimators_are_exact_on_the_counts() {
        let c = Consistency::of(8, 6);
        // pass^1 = c/n; pass^k = C(6,k)/C(8,k); pass^7 = 0 (only 6 passes).
        assert!(close(c.pass_hat(1).unwrap(), 0.75));
        assert!(close(c.pass_hat(2).unwrap(), 15.0 / 28.0));
        assert!(close(c.pass_hat(6).unwrap(), 1.0 / 28.0));
        assert_eq!(c.pass_hat(7), Some(0.0));
        // pass@2 = 1 - C(2,2)/C(8,2).
        assert!(close(c.pass_at_k[1], 1.0 - 1.0 / 28.0));
        assert!(close(c.pass_at_k[2], 1.0), "3 draws always include a pass");
        assert!(c.flaky);
        assert_eq!(c.pass_hat(0), None);
        assert_eq!(c.pass_hat(9), None);
    }

    #[test]
    fn agreeing_trials_are_not_flaky() {
        let all = Consistency::of(5, 5);
        assert!(all.pass_hat_k.iter().all(|p| close(*p, 1.0)) && !all.flaky);
        let none = Consistency::of(5, 0);
        assert!(none.pass_at_k.iter().all(|p| close(*p, 0.0)) && !none.flaky);
        let one = Consistency::of(1, 1);
        assert_eq!((one.pass_hat_k.clone(), one.flaky), (vec![1.0], false));
    }

    #[test]
    fn credit_is_pass_1_or_pass_k_and_the_score_weighs_units() {
        let c = Consistency::of(8, 6);
        assert!(close(c.credit(ConsistencyScore::Mean, Some(8)), 0.75));
        assert!(close(
            c.credit(ConsistencyScore::PassK, Some(2)),
            15.0 / 28.0
        ));
        assert_eq!(
            c.credit(ConsistencyScore::PassK, None),
            0.0,
            "k = n: 6 of 8"
        );
        let one = Consistency::of(1, 1);
        assert_eq!(
            one.credit(ConsistencyScore::PassK, Some(8)),
            1.0,
            "--trial: k = 1"
        );
        let units = [
            (2.0, Consistency::of(4, 4)),
            (1.0, Consistency::of(4, 2)),
            (5.0, Consistency::of(0, 0)),
        ];
        let mean = credited_score(units.clone(), ConsistencyScore::Mean, None);
        assert!(close(mean, (2.0 + 0.5) / 3.0 * 100.0), "{mean}");
        let all = credited_score(units, ConsistencyScore::PassK, Some(4));
        assert!(close(all, 2.0 / 3.0 * 100.0), "{all}");
        assert_eq!(credited_score([], ConsistencyScore::Mean, None), 0.0);
    }

    #[test]
    fn a_group_averages_its_cases() {
        let g = Consistency::mean(&[Consistency::of(4, 4), Consistency::of(4, 2)]).unwrap();
        assert_eq!((g.trials, g.passed, g.flaky), (8, 6, true));
        assert!(close(g.pass_hat_k[0], 0.75));
        // (1 + C(2,2)/C(4,2)) / 2
        assert!(close(g.pass_hat_k[1], (1.0 + 1.0 / 6.0) / 2.0));
        assert_eq!(Consistency::mean(&[]), None);
    }
}
