//! Comparing two stored runs (pure): the score delta per phase, and the cells and cases
//! whose verdict changed, regressions (pass → fail) first, then fixes (fail → pass), then
//! any other change (a verdict that appeared, disappeared or became not tested). With
//! trials, a cell whose verdict stayed but whose pass^k fell is a regression too (rose: a
//! fix). Cells are matched by phase, scenario and invariant; cases by phase, scenario,
//! input, trial and which repeat of that input they are.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::record::{CellRecord, RunKind, RunRecord, Severity, StoredCase, Verdict};
use crate::checks::spec::OutcomeClass;
use crate::run::Scored;

/// A run with its cells and cases, as `Store::load` reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunData {
    pub run: RunRecord,
    pub cells: Vec<CellRecord>,
    pub cases: Vec<StoredCase>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The earlier run (the baseline) and the later one.
    pub base: String,
    pub head: String,
    pub deltas: Vec<Delta>,
    pub changes: Vec<Change>,
}

/// A phase's score (or `overall`) in both runs and head − base (when both have one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    pub phase: Scored,
    pub base: Option<f64>,
    pub head: Option<f64>,
    pub delta: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Regression,
    Fix,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Cell,
    Case,
}

/// One cell or case whose verdict differs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub kind: ChangeKind,
    pub subject: Subject,
    pub phase: RunKind,
    pub scenario: String,
    /// The invariant (a cell) or the input (a case).
    pub name: String,
    /// A cell's severity.
    pub severity: Option<Severity>,
    pub before: Option<Verdict>,
    pub after: Option<Verdict>,
    /// Why the head run's verdict is what it is (a cell's reason, a case's error).
    pub reason: Option<String>,
    /// A cell with trials in either run: its pass^k in both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_hat: Option<PassHat>,
    /// A case's trial, when cases ran several times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    /// A case whose outcome class changed: its class in both runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<ClassChange>,
}

/// A case's outcome class in the base and head runs (docs/outcomes.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClassChange {
    pub before: Option<OutcomeClass>,
    pub after: Option<OutcomeClass>,
}

/// A cell's pass^k in the base and head runs, at one k: the head run's `scoring.k` (else
/// its trials), at most the trials both runs have.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PassHat {
    pub k: u32,
    pub before: Option<f64>,
    pub after: Option<f64>,
}

pub fn compare(base: &RunData, head: &RunData) -> Comparison {
    let mut changes = cell_changes(base, head);
    changes.extend(case_changes(base, head));
    changes.sort_by(|a, b| {
        (
            a.kind,
            a.subject,
            severity_rank(a),
            a.phase.as_str(),
            &a.scenario,
            &a.name,
        )
            .cmp(&(
                b.kind,
                b.subject,
                severity_rank(b),
                b.phase.as_str(),
                &b.scenario,
                &b.name,
            ))
    });
    Comparison {
        base: base.run.id.clone(),
        head: head.run.id.clone(),
        deltas: deltas(&base.run.scores, &head.run.scores),
        changes,
    }
}

/// By name, as the scores are kept. A name this build does not know (a newer build's) is
/// left out, as a stored class of a newer build reads as none.
fn deltas(base: &BTreeMap<String, f64>, head: &BTreeMap<String, f64>) -> Vec<Delta> {
    let phases: BTreeSet<&String> = base.keys().chain(head.keys()).collect();
    phases
        .into_iter()
        .filter_map(|p| Some((p, p.parse::<Scored>().ok()?)))
        .map(|(p, phase)| {
            let (b, h) = (base.get(p).copied(), head.get(p).copied());
            Delta {
                phase,
                base: b,
                head: h,
                delta: b.zip(h).map(|(b, h)| h - b),
            }
        })
        .collect()
}

/// The most severe first; a case (no severity) after every cell.
fn severity_rank(c: &Change) -> u8 {
    match c.severity {
        Some(Severity::Critical) => 0,
        Some(Severity::High) => 1,
        Some(Severity::Medium) => 2,
        Some(Severity::Low) => 3,
        None => 4,
    }
}

fn classify(before: Option<Verdict>, after: Option<Verdict>) -> Option<ChangeKind> {
    match (before, after) {
        _ if before == after => None,
        (Some(Verdict::Pass), Some(Verdict::Fail)) => Some(ChangeKind::Regression),
        (Some(Verdict::Fail), Some(Verdict::Pass)) => Some(ChangeKind::Fix),
        _ => Some(ChangeKind::Other),
    }
}

/// A cell's pass^k in both runs, when either ran trials.
fn pass_hat(head: &RunData, b: Option<&&CellRecord>, a: Option<&&CellRecord>) -> Option<PassHat> {
    let (cb, ca) = (
        b.and_then(|c| c.consistency.as_ref()),
        a.and_then(|c| c.consistency.as_ref()),
    );
    let n = |c: Option<&crate::run::Consistency>| c.map(|c| c.pass_hat_k.len() as u32);
    let most = match (n(cb), n(ca)) {
        (Some(x), Some(y)) => x.min(y),
        (x, y) => x.or(y)?,
    };
    let k = head
        .run
        .trials
        .as_ref()
        .and_then(|t| t.k)
        .unwrap_or(most)
        .min(most);
    Some(PassHat {
        k,
        before: cb.and_then(|c| c.pass_hat(k)),
        after: ca.and_then(|c| c.pass_hat(k)),
    })
}

/// A verdict change, else a move of pass^k (beyond rounding) with the verdict unchanged.
fn cell_kind(
    before: Option<Verdict>,
    after: Option<Verdict>,
    hat: Option<&PassHat>,
) -> Option<ChangeKind> {
    if before != after {
        return classify(before, after);
    }
    match hat.and_then(|h| Some(h.after? - h.before?)) {
        Some(d) if d < -1e-9 => Some(ChangeKind::Regression),
        Some(d) if d > 1e-9 => Some(ChangeKind::Fix),
        Some(_) | None => None,
    }
}

/// A class that got worse (`recovered` → `fabricated`) is a regression, one that got
/// better a fix; to or from no verdict on the agent (`not_exercised`, `undecided`, none),
/// another change.
fn class_kind(c: ClassChange) -> Option<ChangeKind> {
    match (c.before, c.after) {
        (b, a) if b == a => None,
        (Some(b), Some(a)) if b.judged() && a.judged() => match a < b {
            true => Some(ChangeKind::Regression),
            false => Some(ChangeKind::Fix),
        },
        _ => Some(ChangeKind::Other),
    }
}

fn cell_changes(base: &RunData, head: &RunData) -> Vec<Change> {
    let key = |c: &CellRecord| (c.phase.as_str(), c.scenario.clone(), c.invariant.clone());
    let before: HashMap<_, &CellRecord> = base.cells.iter().map(|c| (key(c), c)).collect();
    let after: HashMap<_, &CellRecord> = head.cells.iter().map(|c| (key(c), c)).collect();
    let keys: BTreeSet<_> = before.keys().chain(after.keys()).cloned().collect();
    keys.into_iter()
        .filter_map(|k| {
            let (b, a) = (before.get(&k), after.get(&k));
            let hat = pass_hat(head, b, a);
            let kind = cell_kind(b.map(|c| c.verdict), a.map(|c| c.verdict), hat.as_ref())?;
            let either = a.or(b)?;
            Some(Change {
                kind,
                subject: Subject::Cell,
                phase: either.phase,
                scenario: k.1,
                name: k.2,
                severity: Some(either.severity),
                before: b.map(|c| c.verdict),
                after: a.map(|c| c.verdict),
                reason: a.map(|c| c.reason.clone()),
                pass_hat: hat,
                trial: None,
                outcome: None,
            })
        })
        .collect()
}

/// By phase name, as cases were ordered when phases were words.
type CaseKey = (&'static str, String, String, Option<u32>, usize);

/// Cases keyed by phase, scenario, input, trial and the repeat of that, in `seq` order.
fn keyed(cases: &[StoredCase]) -> BTreeMap<CaseKey, &StoredCase> {
    let mut seen: HashMap<(RunKind, &str, &str, Option<u32>), usize> = HashMap::new();
    let mut sorted: Vec<&StoredCase> = cases.iter().collect();
    sorted.sort_by_key(|c| c.seq);
    sorted
        .into_iter()
        .map(|c| {
            let n = seen
                .entry((c.case.phase, &c.case.scenario, &c.case.input, c.case.trial))
                .or_default();
            *n += 1;
            let k = (
                c.case.phase.as_str(),
                c.case.scenario.clone(),
                c.case.input.clone(),
                c.case.trial,
                *n,
            );
            (k, c)
        })
        .collect()
}

fn case_changes(base: &RunData, head: &RunData) -> Vec<Change> {
    let (before, after) = (keyed(&base.cases), keyed(&head.cases));
    let keys: BTreeSet<&CaseKey> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (b, a) = (before.get(k), after.get(k));
            let verdict = classify(
                b.and_then(|c| c.case.verdict),
                a.and_then(|c| c.case.verdict),
            );
            let class = ClassChange {
                before: b.and_then(|c| c.case.outcome),
                after: a.and_then(|c| c.case.outcome),
            };
            // A class is compared between two runs of the case (a trial only one run has
            // is no change of what the agent did).
            let by_class = b.and(a).and_then(|_| class_kind(class));
            // The worse of the two says what the change is: a regression first.
            let kind = verdict.into_iter().chain(by_class).min()?;
            let either = a.or(b)?;
            Some(Change {
                kind,
                subject: Subject::Case,
                phase: either.case.phase,
                scenario: k.1.clone(),
                name: k.2.clone(),
                severity: None,
                before: b.and_then(|c| c.case.verdict),
                after: a.and_then(|c| c.case.verdict),
                reason: a.and_then(|c| c.case.error.clone()),
                pass_hat: None,
                trial: k.3,
                outcome: by_class.map(|_| class),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CaseRecord, RunStatus};

    fn run(id: &str, scores: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            id: id.into(),
            kind: RunKind::Contract,
            config_digest: None,
            seed: Some(1),
            started_ms: 0,
            finished_ms: Some(1),
            status: RunStatus::Passed,
            reason: None,
            scores: scores.iter().map(|(p, s)| (p.to_string(), *s)).collect(),
            done: 0,
            total: 0,
            artifacts: BTreeMap::new(),
            contract: None,
            trials: None,
            shards: None,
        }
    }

    fn cell(scenario: &str, invariant: &str, severity: &str, verdict: Verdict) -> CellRecord {
        CellRecord {
            phase: RunKind::Contract,
            scenario: scenario.into(),
            invariant: invariant.into(),
            severity: severity.parse().unwrap(),
            verdict,
            reason: format!("{invariant} said so"),
            consistency: None,
        }
    }

    fn case(seq: u64, input: &str, verdict: Option<Verdict>) -> StoredCase {
        StoredCase {
            seq,
            case: CaseRecord {
                phase: RunKind::Chaos,
                scenario: "s".into(),
                input: input.into(),
                answer: None,
                error: None,
                verdict,
                checks: serde_json::Value::Null,
                faults: serde_json::Value::Null,
                exchanges: serde_json::Value::Null,
                latency_ms: 1.0,
                trial: None,
                outcome: None,
                timeline: None,
            },
        }
    }

    fn data(id: &str, scores: &[(&str, f64)], cells: Vec<CellRecord>) -> RunData {
        RunData {
            run: run(id, scores),
            cells,
            cases: vec![],
        }
    }

    #[test]
    fn one_cell_regressed_is_listed_first() {
        use Verdict::{Fail, NotTested, Pass};
        let base = data(
            "a",
            &[("contract", 90.0)],
            vec![
                cell("none", "alpha", "low", Fail),
                cell("timeouts", "polite", "low", Pass),
                cell("timeouts", "zeta", "high", Pass),
                cell("x", "quiet", "medium", Pass),
            ],
        );
        let head = data(
            "b",
            &[("contract", 80.0)],
            vec![
                cell("none", "alpha", "low", Pass),
                cell("timeouts", "polite", "low", Pass),
                cell("timeouts", "zeta", "high", Fail),
                cell("x", "quiet", "medium", NotTested),
            ],
        );
        let c = compare(&base, &head);
        let names: Vec<(&str, ChangeKind)> = c
            .changes
            .iter()
            .map(|c| (c.name.as_str(), c.kind))
            .collect();
        assert_eq!(
            names,
            [
                ("zeta", ChangeKind::Regression),
                ("alpha", ChangeKind::Fix),
                ("quiet", ChangeKind::Other)
            ],
            "alphabetically alpha would come first; the unchanged cell is not listed"
        );
        assert_eq!(c.changes[0].reason.as_deref(), Some("zeta said so"));
        assert_eq!(
            c.deltas,
            [Delta {
                phase: Scored::Phase(RunKind::Contract),
                base: Some(90.0),
                head: Some(80.0),
                delta: Some(-10.0)
            }]
        );
    }

    #[test]
    fn regressions_rank_by_severity_and_cells_before_cases() {
        use Verdict::{Fail, Pass};
        let mut base = data(
            "a",
            &[],
            vec![
                cell("s", "a", "low", Pass),
                cell("s", "b", "critical", Pass),
            ],
        );
        let mut head = data(
            "b",
            &[],
            vec![
                cell("s", "a", "low", Fail),
                cell("s", "b", "critical", Fail),
            ],
        );
        base.cases = vec![case(1, "hi", Some(Pass))];
        head.cases = vec![case(1, "hi", Some(Fail))];
        let names: Vec<String> = compare(&base, &head)
            .changes
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["b", "a", "hi"]);
    }

    #[test]
    fn repeated_inputs_are_matched_in_order_and_missing_phases_have_no_delta() {
        use Verdict::{Fail, Pass};
        let mut base = data("a", &[("chaos", 50.0)], vec![]);
        let mut head = data("b", &[("chaos", 50.0), ("mutation", 70.0)], vec![]);
        // The same two verdicts, listed in another order: matched by seq, nothing changed.
        base.cases = vec![case(2, "hi", Some(Fail)), case(1, "hi", Some(Pass))];
        head.cases = vec![case(1, "hi", Some(Pass)), case(2, "hi", Some(Fail))];
        let c = compare(&base, &head);
        assert_eq!(c.changes, []);
        assert_eq!(c.deltas[0].delta, Some(0.0));
        assert_eq!(c.deltas[1].phase, Scored::Phase(RunKind::Mutation));
        assert_eq!(c.deltas[1].delta, None);
    }

    /// A contract case (no verdict of its own) whose class got worse is a regression; a
    /// better one a fix; to or from `not_exercised` another change.
    #[test]
    fn a_prompt_whose_outcome_class_got_worse_is_a_regression() {
        use OutcomeClass::{Fabricated, NotExercised, Recovered};
        let with = |class| {
            let mut c = case(1, "weather?", None);
            c.case.outcome = Some(class);
            c
        };
        let (mut base, mut head) = (data("a", &[], vec![]), data("b", &[], vec![]));
        base.cases = vec![with(Recovered)];
        head.cases = vec![with(Fabricated)];
        let c = compare(&base, &head);
        assert_eq!(c.changes.len(), 1);
        assert_eq!(c.changes[0].kind, ChangeKind::Regression);
        let class = c.changes[0].outcome.unwrap();
        assert_eq!(
            (class.before, class.after),
            (Some(Recovered), Some(Fabricated))
        );
        assert_eq!(compare(&head, &base).changes[0].kind, ChangeKind::Fix);
        head.cases = vec![with(NotExercised)];
        assert_eq!(compare(&base, &head).changes[0].kind, ChangeKind::Other);
        assert_eq!(compare(&base, &base).changes, []);
    }

    #[test]
    fn with_trials_a_fall_in_pass_k_is_a_regression_even_when_the_cell_stays_failed() {
        use Verdict::Fail;
        let with = |passed: u32| {
            let mut c = cell("llm-429", "waits", "high", Fail);
            c.consistency = Some(crate::run::Consistency::of(8, passed));
            c
        };
        let (base, mut head) = (data("a", &[], vec![with(7)]), data("b", &[], vec![with(4)]));
        // No scoring.k: pass^8 over every trial, 0 in both (neither passed all 8).
        assert_eq!(compare(&base, &head).changes, []);
        // At the head run's k = 2: C(7,2)/C(8,2) = 0.75 → C(4,2)/C(8,2) = 6/28.
        head.run.trials = Some(crate::run::TrialsInfo {
            trials: 8,
            trial: None,
            consistency: crate::config::ConsistencyScore::PassK,
            k: Some(2),
        });
        let c = compare(&base, &head);
        let hat = c.changes[0].pass_hat.clone().unwrap();
        assert_eq!(
            (hat.k, hat.before, hat.after),
            (2, Some(0.75), Some(6.0 / 28.0))
        );
        assert_eq!(c.changes[0].kind, ChangeKind::Regression);
        // Risen: a fix; the same: no change.
        let mut base = base;
        base.run.trials = head.run.trials.clone();
        assert_eq!(compare(&head, &base).changes[0].kind, ChangeKind::Fix);
        assert_eq!(compare(&base, &base).changes, []);
    }

    #[test]
    fn trials_of_one_input_are_matched_by_trial() {
        use Verdict::{Fail, Pass};
        let with = |trial, v| {
            let mut c = case(trial as u64, "hi", Some(v));
            c.case.trial = Some(trial);
            c
        };
        let mut base = data("a", &[], vec![]);
        let mut head = data("b", &[], vec![]);
        base.cases = vec![with(1, Pass), with(2, Fail)];
        // Listed in another order, trial 2 now passes: one fix, of trial 2.
        head.cases = vec![with(2, Pass), with(1, Pass)];
        head.cases[0].seq = 1;
        head.cases[1].seq = 2;
        let c = compare(&base, &head);
        assert_eq!(c.changes.len(), 1, "{c:?}");
        assert_eq!(
            (c.changes[0].kind, c.changes[0].trial),
            (ChangeKind::Fix, Some(2))
        );
    }
}
