//! The `ttl` of chaos rules installed through the control API (`PUT /v1/chaos?ttl=10m`,
//! `POST /v1/chaos/profiles/{name}?ttl=10m`): a dead-man's switch for shared sidecars.
//! When it runs out the rules revert to the *baseline* (the last rules set without a
//! `ttl`: the daemon's config at start, a `PUT` without one, `DELETE`, `reset`), a warning
//! is logged and `flakestorm_chaos_expired_total` counts it. Any later change through the
//! API cancels a pending revert. Timers are tokio's (paused in tests). Owns the parsing
//! of the parameter and the revert; never touches a run's rules (a run's scenario
//! installed over ttl rules is left alone: the revert happens once the run gives them
//! back).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::chaos::spec::CompiledChaos;
use crate::chaos::{Engine, RuleSet};
use crate::telemetry::Metrics;

/// The longest `ttl` accepted: rules meant to stay longer are set without one.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// How often a revert held back by a run's scenario looks again.
const RETRY: Duration = Duration::from_secs(1);

/// A `ttl` value: one or more `<number><unit>` with units `s`, `m`, `h` (`90s`, `10m`,
/// `1h30m`), from 1 s to `MAX_TTL`.
pub fn parse(text: &str) -> Result<Duration, String> {
    let shown: String = text.chars().take(40).collect();
    let bad = || {
        format!(
            "`{shown}` is not a duration: use a number and a unit, s, m or h (e.g. 90s, 10m, \
             1h30m), at most 24h"
        )
    };
    let (mut total, mut digits) = (0u64, String::new());
    for c in text.chars() {
        match c {
            '0'..='9' if digits.len() < 9 => digits.push(c),
            's' | 'm' | 'h' if !digits.is_empty() => {
                let unit = match c {
                    's' => 1,
                    'm' => 60,
                    _ => 3600,
                };
                let n: u64 = digits.parse().map_err(|_| bad())?;
                total = total.saturating_add(n.saturating_mul(unit));
                digits.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !digits.is_empty() || text.is_empty() {
        return Err(bad());
    }
    let ttl = Duration::from_secs(total);
    if ttl.is_zero() || ttl > MAX_TTL {
        return Err(format!(
            "`{shown}` is outside 1s..=24h: rules meant to stay longer are set without a ttl"
        ));
    }
    Ok(ttl)
}

/// The daemon's baseline rules and the pending revert, if any. Cheap to clone.
#[derive(Clone)]
pub struct Expiry {
    inner: Arc<Mutex<State>>,
}

struct State {
    /// Bumped by every change through the API: a revert scheduled under an older one is
    /// void.
    generation: u64,
    baseline: CompiledChaos,
    pending: Option<(Duration, Instant)>,
}

impl Expiry {
    /// `baseline`: the rules the daemon started with.
    pub fn new(baseline: CompiledChaos) -> Expiry {
        let state = State {
            generation: 0,
            baseline,
            pending: None,
        };
        Expiry {
            inner: Arc::new(Mutex::new(state)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Rules set with no `ttl` are the new baseline; a pending revert is cancelled.
    pub fn settled(&self, rules: &CompiledChaos) {
        let mut s = self.lock();
        s.generation += 1;
        s.baseline = rules.clone();
        s.pending = None;
    }

    /// The `ttl` set and how long is left, while a revert is pending.
    pub fn pending(&self) -> Option<(Duration, Duration)> {
        let s = self.lock();
        let (ttl, at) = s.pending?;
        Some((ttl, at.saturating_duration_since(Instant::now())))
    }

    /// `installed` (just set) reverts to the baseline after `ttl`.
    pub fn expire_after(
        &self,
        engine: Engine,
        metrics: Metrics,
        installed: Arc<RuleSet>,
        ttl: Duration,
    ) {
        let generation = {
            let mut s = self.lock();
            s.generation += 1;
            s.pending = Some((ttl, Instant::now() + ttl));
            s.generation
        };
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ttl).await;
            loop {
                let baseline = {
                    let s = me.lock();
                    if s.generation != generation {
                        return;
                    }
                    s.baseline.clone()
                };
                if engine.set_if_current(&installed, &baseline) {
                    me.lock().pending = None;
                    metrics.chaos_expired();
                    let spec = baseline.spec();
                    let rules = spec.tool_faults.len()
                        + spec.llm_faults.len()
                        + spec.context_attacks.rules().len();
                    tracing::warn!(
                        ttl_s = ttl.as_secs(),
                        "chaos rules installed through the API with a ttl of {}s expired: \
                         reverted to the baseline rules ({rules} rules)",
                        ttl.as_secs(),
                    );
                    return;
                }
                // A run's scenario is installed over them: revert once it gives them back.
                tokio::time::sleep(RETRY).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_their_limits() {
        let ok = [
            ("90s", 90),
            ("10m", 600),
            ("1h30m", 5400),
            ("24h", 86_400),
            ("1s", 1),
        ];
        for (text, secs) in ok {
            assert_eq!(parse(text), Ok(Duration::from_secs(secs)), "{text}");
        }
        for bad in [
            "",
            "10",
            "m",
            "10x",
            "-5m",
            "1.5h",
            "10 m",
            "ten",
            "1m1",
            "9999999999s",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("not a duration"), "{bad}: {e}");
        }
        for out in ["0s", "25h", "1441m", "24h1s"] {
            let e = parse(out).unwrap_err();
            assert!(e.contains("outside 1s..=24h"), "{out}: {e}");
        }
        let long = "9".repeat(500);
        assert!(
            parse(&long).unwrap_err().len() < 200,
            "a long value is not echoed"
        );
    }
}
