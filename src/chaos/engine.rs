//! `Engine`: the cheap-clone handle to the active rules. Rules are swapped whole and
//! atomically (an `Arc` behind a short read lock), so the data plane never waits for the
//! control plane and a swap drops no connection.

use std::sync::{Arc, RwLock};

use super::rules::{Decision, RuleSet};
use crate::config::chaos::ChaosSpec;
use crate::exchange::Target;

struct Inner {
    rules: RwLock<Arc<RuleSet>>,
    seed: u64,
}

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("seed", &self.inner.seed)
            .finish()
    }
}

impl Engine {
    /// An engine with no rules. `seed` fixes every decision (see `rng`).
    pub fn new(seed: u64) -> Self {
        let empty = RuleSet::compile(&ChaosSpec::default())
            .unwrap_or_else(|_| unreachable!("empty spec compiles"));
        Engine {
            inner: Arc::new(Inner {
                rules: RwLock::new(Arc::new(empty)),
                seed,
            }),
        }
    }

    pub fn seed(&self) -> u64 {
        self.inner.seed
    }

    /// The active rules (and their spec, for `GET /v1/chaos`).
    pub fn rules(&self) -> Arc<RuleSet> {
        self.inner
            .rules
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Compiles `spec` and makes it the active rule set, with fresh counters.
    pub fn set(&self, spec: &ChaosSpec) -> Result<(), String> {
        let compiled = Arc::new(RuleSet::compile(spec)?);
        *self.inner.rules.write().unwrap_or_else(|p| p.into_inner()) = compiled;
        Ok(())
    }

    /// No rules: every request passes untouched. Also resets every counter.
    pub fn clear(&self) {
        let _ = self.set(&ChaosSpec::default());
    }

    /// Installs `spec` until the guard drops, then restores what was active before.
    pub fn install(&self, spec: &ChaosSpec) -> Result<InstallGuard, String> {
        let previous = self.rules().spec.clone();
        self.set(spec)?;
        Ok(InstallGuard {
            engine: self.clone(),
            previous,
        })
    }

    /// What happens to a request for `url` of kind `target`.
    pub fn decide(&self, url: &str, target: &Target) -> Decision {
        self.rules().decide(url, target, self.inner.seed)
    }

    /// Whether faulted responses carry `x-flakestorm-fault`.
    pub fn marks_responses(&self) -> bool {
        self.rules().spec.mark_responses
    }
}

/// Restores the previous rules when dropped.
pub struct InstallGuard {
    engine: Engine,
    previous: ChaosSpec,
}

impl Drop for InstallGuard {
    fn drop(&mut self) {
        let _ = self.engine.set(&self.previous);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::Fault;
    use crate::exchange::Provider;

    fn spec(yaml: &str) -> ChaosSpec {
        use figment::providers::{Format, Yaml};
        figment::Figment::from(Yaml::string(yaml))
            .extract()
            .unwrap()
    }

    fn tool(name: &str) -> Target {
        Target::Tool { name: name.into() }
    }

    #[test]
    fn most_specific_rule_wins_and_scopes_hold() {
        let e = Engine::new(1);
        e.set(&spec(
            r#"
tool_faults:
  - {tool: "*", mode: error, error_code: 500}
  - {tool: search, mode: error, error_code: 502}
  - {tool: search, match_url: "https://api.search.example/v2/*", mode: error, error_code: 503}
llm_faults:
  - {mode: rate_limit, provider: anthropic}
"#,
        ))
        .unwrap();
        let code = |d: Decision| match d.fault.map(|f| f.what) {
            Some(Fault::Tool(crate::config::chaos::ToolMode::Error { error_code, .. })) => {
                error_code
            }
            Some(Fault::Llm(_)) => 429,
            _ => 0,
        };
        assert_eq!(
            code(e.decide("https://api.search.example/v2/q", &tool("search"))),
            503
        );
        assert_eq!(
            code(e.decide("https://api.search.example/v1/q", &tool("search"))),
            502
        );
        assert_eq!(
            code(e.decide("https://other.example/", &Target::Other)),
            500
        );
        let claude = Target::Llm {
            provider: Provider::Anthropic,
        };
        let gpt = Target::Llm {
            provider: Provider::Openai,
        };
        assert_eq!(
            code(e.decide("https://api.anthropic.com/v1/messages", &claude)),
            429
        );
        assert_eq!(
            code(e.decide("https://api.openai.com/v1/chat/completions", &gpt)),
            0,
            "tool rules never hit LLM calls"
        );
    }

    #[test]
    fn after_calls_and_probability_are_reproducible_with_a_seed() {
        let yaml = "tool_faults:\n  - {tool: '*', mode: error, probability: 0.5, after_calls: 3}\n";
        let run = |seed| {
            let e = Engine::new(seed);
            e.set(&spec(yaml)).unwrap();
            (0..40)
                .map(|_| e.decide("http://x/", &Target::Other).fault.is_some())
                .collect::<Vec<_>>()
        };
        let a = run(42);
        assert_eq!(a, run(42), "same seed, same requests, same decisions");
        assert_ne!(a, run(43));
        assert!(
            !a[..3].iter().any(|f| *f),
            "nothing fires during the first 3 calls"
        );
        let fired = a[3..].iter().filter(|f| **f).count();
        assert!((8..=29).contains(&fired), "about half of 37: {fired}");
    }

    #[test]
    fn install_restores_the_previous_rules() {
        let e = Engine::new(0);
        e.set(&spec("tool_faults: [{mode: malformed}]")).unwrap();
        {
            let _g = e.install(&ChaosSpec::default()).unwrap();
            assert!(e.decide("http://x/", &Target::Other).fault.is_none());
        }
        assert!(e.decide("http://x/", &Target::Other).fault.is_some());
    }
}
