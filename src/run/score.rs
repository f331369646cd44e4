//! The contract score (design.md §7): Σ passed·w / Σ applicable·w × 100 with w = critical 3,
//! high 2, medium 1, low 1; any failed critical cell fails the contract whatever the number.
//! With trials, `passed` is a cell's consistency figure (`contract_score_credited`).

use serde::{Deserialize, Serialize};

use crate::config::Severity;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// 0..=100; 0 when no cell could be judged.
    pub value: f64,
    /// False when a critical cell failed, or when no cell could be judged.
    pub passed: bool,
    pub failed_critical: usize,
}

/// `cells`: (severity, Some(passed) or None when not applicable).
pub fn contract_score(cells: &[(Severity, Option<bool>)]) -> Score {
    let credited: Vec<(Severity, Option<(f64, bool)>)> = cells
        .iter()
        .map(|(s, v)| (*s, v.map(|p| (f64::from(u8::from(p)), p))))
        .collect();
    contract_score_credited(&credited)
}

/// `cells`: (severity, Some((credit, passed)) or None when not applicable). A cell earns its
/// weight times its credit (0..=1: 1 or 0 for one trial, its consistency figure with
/// several, `scoring.consistency`); one that did not pass and is critical fails the run.
pub fn contract_score_credited(cells: &[(Severity, Option<(f64, bool)>)]) -> Score {
    let (mut got, mut total, mut failed_critical) = (0.0, 0u32, 0);
    for (severity, verdict) in cells {
        let Some((credit, passed)) = verdict else {
            continue;
        };
        total += severity.weight();
        got += f64::from(severity.weight()) * credit.clamp(0.0, 1.0);
        if !passed && *severity == Severity::Critical {
            failed_critical += 1;
        }
    }
    // A contract that judged nothing proves nothing: it does not pass.
    let value = if total == 0 {
        0.0
    } else {
        got * 100.0 / f64::from(total)
    };
    Score {
        value,
        passed: failed_critical == 0 && total > 0,
        failed_critical,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_by_severity_and_fails_on_any_critical() {
        let s = contract_score(&[
            (Severity::Critical, Some(true)),
            (Severity::High, Some(false)),
            (Severity::Medium, Some(true)),
            (Severity::Low, None),
        ]);
        assert!((s.value - 4.0 / 6.0 * 100.0).abs() < 1e-9, "{s:?}");
        assert!(s.passed);
        let s = contract_score(&[
            (Severity::Critical, Some(false)),
            (Severity::Low, Some(true)),
        ]);
        assert_eq!((s.passed, s.failed_critical), (false, 1));
        // Trials: a cell earns its consistency; a critical one that failed a trial still
        // fails the contract.
        let s = contract_score_credited(&[
            (Severity::Critical, Some((0.75, false))),
            (Severity::Low, Some((1.0, true))),
        ]);
        assert!(
            (s.value - (3.0 * 0.75 + 1.0) / 4.0 * 100.0).abs() < 1e-9,
            "{s:?}"
        );
        assert_eq!((s.passed, s.failed_critical), (false, 1));
        let nothing = contract_score(&[(Severity::High, None)]);
        assert_eq!(
            (nothing.value, nothing.passed),
            (0.0, false),
            "nothing judged"
        );
    }
}
