//! The metrics of runs driven by the daemon (`/v1/runs`): runs started and running by kind
//! (dashboards annotate run windows with them), finished runs by kind and status, their
//! duration, the latest score of each phase, and their cases by final verdict.
//! Registered in the daemon's one registry by `Metrics::new`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunLabels {
    /// `contract`, `chaos`, `mutation`, `replay`, `ci`.
    pub kind: &'static str,
    /// How it ended: `passed`, `failed`, `not_tested`, `cancelled`, `interrupted`, `error`.
    pub status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    /// `contract`, `chaos`, `mutation`, `replay`, `overall`.
    pub phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerdictLabels {
    /// `pass`, `fail`, `not_applicable`, `not_tested`.
    pub verdict: &'static str,
}

pub(super) struct RunFamilies {
    started: Family<KindLabels, Counter>,
    running: Family<KindLabels, Gauge>,
    runs: Family<RunLabels, Counter>,
    duration: Family<KindLabels, Histogram>,
    score: Family<PhaseLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    cases: Family<VerdictLabels, Counter>,
}

impl RunFamilies {
    pub(super) fn register(registry: &mut Registry) -> RunFamilies {
        let started = Family::<KindLabels, Counter>::default();
        registry.register(
            "runs_started",
            "Runs driven by the daemon that got their turn and started, by kind",
            started.clone(),
        );
        let running = Family::<KindLabels, Gauge>::default();
        registry.register(
            "runs_running",
            "Runs driven by the daemon running now, by kind",
            running.clone(),
        );
        let runs = Family::<RunLabels, Counter>::default();
        registry.register(
            "runs",
            "Runs driven by the daemon that ended, by kind and status",
            runs.clone(),
        );
        // 1 s .. ~9 h.
        let duration = Family::<KindLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(1.0, 2.0, 16))
        });
        registry.register(
            "run_duration_seconds",
            "Wall time of runs driven by the daemon, from start to end, by kind",
            duration.clone(),
        );
        let score = Family::<PhaseLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "score",
            "The latest score (0-100) of each phase among the runs that ended with one",
            score.clone(),
        );
        let cases = Family::<VerdictLabels, Counter>::default();
        registry.register(
            "cases",
            "Cases of runs driven by the daemon, by final verdict (contract runs: their cells)",
            cases.clone(),
        );
        RunFamilies {
            started,
            running,
            runs,
            duration,
            score,
            cases,
        }
    }
}

impl super::Metrics {
    /// A run of `kind` got its turn and started.
    pub fn run_started(&self, kind: &'static str) {
        let f = &self.inner.runs;
        f.started.get_or_create(&KindLabels { kind }).inc();
        f.running.get_or_create(&KindLabels { kind }).inc();
    }

    /// Every kind's started and running series, and every (kind, end status) of
    /// `runs_total`, at 0 before any run: a series that first appears at 1 is no change
    /// to `increase()` or `changes()`, so the first failed run of a daemon (a CI sidecar
    /// has one) would raise no alert and mark no annotation.
    pub fn runs_known(&self, kinds: &[&'static str], statuses: &[&'static str]) {
        let f = &self.inner.runs;
        for &kind in kinds {
            drop(f.started.get_or_create(&KindLabels { kind }));
            drop(f.running.get_or_create(&KindLabels { kind }));
            for &status in statuses {
                drop(f.runs.get_or_create(&RunLabels { kind, status }));
            }
        }
    }

    /// A run that had started (`run_started`) is no longer running; `run_ended` follows.
    pub fn run_stopped(&self, kind: &'static str) {
        self.inner
            .runs
            .running
            .get_or_create(&KindLabels { kind })
            .dec();
    }

    /// A run ended: its status, how long it ran, its phases' scores and its verdicts.
    pub fn run_ended(
        &self,
        run: RunLabels,
        seconds: f64,
        scores: &[(String, f64)],
        verdicts: &[&'static str],
    ) {
        let f = &self.inner.runs;
        f.runs.get_or_create(&run).inc();
        f.duration
            .get_or_create(&KindLabels { kind: run.kind })
            .observe(seconds);
        for (phase, s) in scores {
            f.score
                .get_or_create(&PhaseLabels {
                    phase: phase.clone(),
                })
                .set(*s);
        }
        for &verdict in verdicts {
            f.cases.get_or_create(&VerdictLabels { verdict }).inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;
    use super::*;

    #[test]
    fn known_kinds_and_statuses_are_exported_at_zero_before_any_run() {
        let m = Metrics::new();
        m.runs_known(&["ci", "chaos"], &["passed", "failed"]);
        let text = m.encode();
        for want in [
            r#"flakestorm_runs_started_total{kind="ci"} 0"#,
            r#"flakestorm_runs_running{kind="chaos"} 0"#,
            r#"flakestorm_runs_total{kind="ci",status="failed"} 0"#,
            r#"flakestorm_runs_total{kind="chaos",status="passed"} 0"#,
        ] {
            assert!(text.contains(want), "missing {want} in {text}");
        }
    }

    #[test]
    fn a_run_that_ended_is_counted_with_its_scores_and_verdicts() {
        let m = Metrics::new();
        m.run_started("ci");
        assert!(
            m.encode()
                .contains(r#"flakestorm_runs_running{kind="ci"} 1"#)
        );
        m.run_stopped("ci");
        let run = RunLabels {
            kind: "ci",
            status: "failed",
        };
        let scores = [
            ("contract".to_string(), 87.5),
            ("overall".to_string(), 60.0),
        ];
        m.run_ended(run, 3.0, &scores, &["pass", "pass", "fail"]);
        let text = m.encode();
        for want in [
            r#"flakestorm_runs_started_total{kind="ci"} 1"#,
            r#"flakestorm_runs_running{kind="ci"} 0"#,
            r#"flakestorm_runs_total{kind="ci",status="failed"} 1"#,
            r#"flakestorm_run_duration_seconds_count{kind="ci"} 1"#,
            r#"flakestorm_score{phase="contract"} 87.5"#,
            r#"flakestorm_score{phase="overall"} 60.0"#,
            r#"flakestorm_cases_total{verdict="pass"} 2"#,
            r#"flakestorm_cases_total{verdict="fail"} 1"#,
        ] {
            assert!(text.contains(want), "missing {want} in {text}");
        }
    }
}
