//! `scoring` (the weights `ci` combines phases with) and `output` (report formats and
//! folder) (config.md): how runs report.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::de::section;
use super::{ConfigError, OneOrMany};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScoringSpec {
    pub mutation: f64,
    pub chaos: f64,
    pub contract: f64,
    pub replay: f64,
    /// The pass mark (0–100) every run's score must reach; `--min-score` overrides it.
    /// Not a weight. Added by flakestorm (v2 had none: a contract passed at any score).
    pub min_score: f64,
    /// With `advanced.trials` above 1: what a contract cell scores, its trials' mean pass
    /// rate or their pass^k (docs/trials.md).
    pub consistency: ConsistencyScore,
    /// The k of `consistency: pass_k` (default: `advanced.trials`).
    pub k: Option<u32>,
    /// With trials: a failed `critical` cell fails the run only when its pass^k is below
    /// this (0 < x ≤ 1); unset, any failing trial of a critical cell fails the run.
    pub critical_pass_k: Option<f64>,
}

/// What a cell with several trials contributes to the score (`scoring.consistency`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsistencyScore {
    /// Its pass^1: the share of its cases' trials that passed.
    #[default]
    Mean,
    /// Its pass^k: the chance that k trials of a case all pass.
    PassK,
}

/// The default pass mark: a run scoring below it does not pass.
pub const DEFAULT_MIN_SCORE: f64 = 70.0;

impl Default for ScoringSpec {
    fn default() -> Self {
        ScoringSpec {
            mutation: 0.20,
            chaos: 0.35,
            contract: 0.35,
            replay: 0.10,
            min_score: DEFAULT_MIN_SCORE,
            consistency: ConsistencyScore::Mean,
            k: None,
            critical_pass_k: None,
        }
    }
}

/// A report format. Its list (`all`) and names are derived, serde's (a test checks).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::EnumIter, strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReportFormat {
    Json,
    Html,
    Junit,
    Markdown,
}

impl ReportFormat {
    /// Every format, in declaration order.
    pub fn all() -> ReportFormatIter {
        <ReportFormat as strum::IntoEnumIterator>::iter()
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl std::str::FromStr for ReportFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        ReportFormat::all()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                let all: Vec<&str> = ReportFormat::all().map(ReportFormat::as_str).collect();
                format!("unknown report format `{s}`; valid: {}", all.join(", "))
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputSpec {
    pub format: Vec<ReportFormat>,
    pub path: PathBuf,
    /// Which cases' traffic is written as HAR tapes beside the report.
    pub tapes: Tapes,
}

/// `output.tapes` (added by flakestorm): the cases whose exchanges become tapes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tapes {
    /// Cases that failed (default): what `replay export` turns into sessions.
    #[default]
    Failed,
    All,
    None,
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            format: vec![ReportFormat::Json],
            path: PathBuf::from("reports"),
            tapes: Tapes::default(),
        }
    }
}

/// `output`: `format` is one format or a list.
pub(super) fn output_section(v: Value, errors: &mut Vec<ConfigError>) -> OutputSpec {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        #[serde(default)]
        format: Option<OneOrMany>,
        #[serde(default)]
        path: Option<PathBuf>,
        #[serde(default)]
        tapes: Tapes,
    }
    let Some(raw) = section::<Raw>(v, "output", errors) else {
        return OutputSpec::default();
    };
    let mut out = OutputSpec {
        tapes: raw.tapes,
        ..OutputSpec::default()
    };
    if let Some(f) = raw.format {
        out.format = f
            .as_slice()
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let parsed = serde_json::from_value::<ReportFormat>(Value::String(name.clone()));
                parsed
                    .map_err(|e| {
                        errors.push(ConfigError::new(
                            format!("output.format[{i}]"),
                            e.to_string(),
                        ))
                    })
                    .ok()
            })
            .collect();
    }
    if let Some(p) = raw.path {
        out.path = p;
    }
    out
}

pub(super) fn check_scoring(s: &ScoringSpec, errors: &mut Vec<ConfigError>) {
    let parts = [
        ("mutation", s.mutation),
        ("chaos", s.chaos),
        ("contract", s.contract),
        ("replay", s.replay),
    ];
    for (name, w) in parts {
        if !(0.0..=1.0).contains(&w) {
            errors.push(ConfigError::new(
                format!("scoring.{name}"),
                format!("{w} is outside 0..=1"),
            ));
        }
    }
    if !(0.0..=100.0).contains(&s.min_score) {
        errors.push(ConfigError::new(
            "scoring.min_score",
            format!("{} is outside 0..=100", s.min_score),
        ));
    }
    if let Some(x) = s.critical_pass_k.filter(|x| !(*x > 0.0 && *x <= 1.0)) {
        errors.push(ConfigError::new(
            "scoring.critical_pass_k",
            format!("{x} is outside 0 < x <= 1 (the pass^k a critical cell must keep)"),
        ));
    }
    let sum: f64 = parts.iter().map(|(_, w)| w).sum();
    if (sum - 1.0).abs() > 1e-6 {
        errors.push(ConfigError::new(
            "scoring",
            format!("weights sum to {sum}; they must sum to 1.0"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_is_named_as_serde_names_it_and_parses_back() {
        for f in ReportFormat::all() {
            assert_eq!(serde_json::to_value(f).unwrap(), f.as_str());
            assert_eq!(f.as_str().parse(), Ok(f));
        }
        assert_eq!(
            "pdf".parse::<ReportFormat>(),
            Err("unknown report format `pdf`; valid: json, html, junit, markdown".into())
        );
    }
}
