//! A run's own trial count (`--trials`, the API's `trials`) over `advanced.trials`, and the
//! checks that tie `--trial` and `scoring.k` to it (docs/trials.md).

use super::{Config, ConfigError};

/// `advanced.trials` in range, and `scoring.k` within it.
pub(super) fn check(c: &Config, errors: &mut Vec<ConfigError>) {
    let (n, max) = (c.advanced.trials, super::schema::MAX_TRIALS);
    if !(1..=max).contains(&n) {
        errors.push(ConfigError::new(
            "advanced.trials",
            format!("{n} is out of range 1..={max}"),
        ));
    }
    if let Some(k) = c.scoring.k.filter(|k| !(1..=n).contains(k)) {
        errors.push(ConfigError::new(
            "scoring.k",
            format!("{k} is outside 1..={n} (advanced.trials: pass^k needs k trials)"),
        ));
    }
}

/// Applies a run's own trial count (`--trials`, or the API's `trials`) to `c`, and checks
/// the one trial it asks to run (`--trial` / `trial`) and `scoring.k` against the count.
/// `names` says how the caller spells the two (flags or fields), for the errors.
pub fn override_trials(
    c: &mut Config,
    trials: Option<u32>,
    trial: Option<u32>,
    names: (&str, &str),
) -> Result<(), Vec<ConfigError>> {
    let mut errors = vec![];
    let max = super::schema::MAX_TRIALS;
    match trials {
        Some(n) if !(1..=max).contains(&n) => errors.push(ConfigError::new(
            names.0,
            format!("{n} is out of range 1..={max}"),
        )),
        Some(n) => c.advanced.trials = n,
        None => {}
    }
    let n = c.advanced.trials;
    if let Some(t) = trial.filter(|t| !(1..=n).contains(t)) {
        errors.push(ConfigError::new(
            names.1,
            format!("{t} is outside 1..={n} (the trials each case runs: advanced.trials)"),
        ));
    }
    if let Some(k) = c.scoring.k.filter(|k| *k > n) {
        errors.push(ConfigError::new(
            "scoring.k",
            format!("{k} is above the {n} trial(s) each case runs"),
        ));
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors),
    }
}
