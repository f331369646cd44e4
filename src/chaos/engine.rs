//! `Engine`: the cheap-clone handle to the active rules. Rules are swapped whole and
//! atomically (an `Arc` behind a short read lock), so the data plane never waits for the
//! control plane and a swap drops no connection. Besides the global rules, a run under
//! `attribution: header` installs rules per W3C trace id, so cases of different scenarios
//! can be in flight at once (design.md §6): a request carrying that trace id gets them.

// No catch-all arm over an enum here: a new variant must be handled where it matters.
#![warn(clippy::wildcard_enum_match_arm)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::canary::Canary;
use super::classify::Classifier;
use super::replay::ReplayTable;
use super::rng::{mix, stream};
use super::rules::{Decision, Formats, RuleSet};
use crate::chaos::spec::{ChaosSpec, CompiledChaos, Problem};
use crate::exchange::{McpCall, Target};

/// Rules installed for one trace id, drawing from their own seed, with their own memory of
/// response formats.
struct Scoped {
    rules: Arc<RuleSet>,
    seed: u64,
    formats: Formats,
}

struct Inner {
    rules: RwLock<Arc<RuleSet>>,
    /// What requests are: the daemon's `tools:` and `llm:`, or a run's while it runs.
    declared: RwLock<Arc<Classifier>>,
    traces: RwLock<HashMap<String, Scoped>>,
    /// The global rules' seed: the daemon's, or the run's while a run has the engine to
    /// itself (exclusive attribution).
    seed: AtomicU64,
}

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("seed", &self.seed())
            .finish()
    }
}

impl Engine {
    /// An engine with no rules. `seed` fixes every decision (see `rng`).
    pub fn new(seed: u64) -> Self {
        let empty = RuleSet::new(&CompiledChaos::default());
        Engine {
            inner: Arc::new(Inner {
                rules: RwLock::new(Arc::new(empty)),
                declared: RwLock::new(Arc::new(Classifier::default())),
                traces: RwLock::new(HashMap::new()),
                seed: AtomicU64::new(seed),
            }),
        }
    }

    pub fn seed(&self) -> u64 {
        self.inner.seed.load(Ordering::Relaxed)
    }

    /// Makes `seed` the global rules' seed (a run that has the engine to itself); returns
    /// the one it replaces.
    pub fn set_seed(&self, seed: u64) -> u64 {
        self.inner.seed.swap(seed, Ordering::Relaxed)
    }

    /// The active global rules (and their spec, for `GET /v1/chaos`).
    pub fn rules(&self) -> Arc<RuleSet> {
        self.inner
            .rules
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Makes `rules` (compiled at load or by the control API) the active rule set, with
    /// fresh counters; returns it (to compare with `rules()` later, see `set_if_current`).
    pub fn set(&self, rules: &CompiledChaos) -> Arc<RuleSet> {
        let installed = Arc::new(RuleSet::new(rules));
        self.swap(installed.clone());
        installed
    }

    /// Makes `rules` the active rule set only if `current` (a set `set` returned) is still
    /// the active one; false when something else (a run's scenario, newer rules) is.
    pub fn set_if_current(&self, current: &Arc<RuleSet>, rules: &CompiledChaos) -> bool {
        let mut slot = self.inner.rules.write().unwrap_or_else(|p| p.into_inner());
        if !Arc::ptr_eq(&slot, current) {
            return false;
        }
        *slot = Arc::new(RuleSet::new(rules));
        true
    }

    /// Whether any rule is in force: global rules, or a run's rules for a trace id.
    pub fn active(&self) -> bool {
        !self.rules().is_empty()
            || !self
                .inner
                .traces
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
    }

    fn swap(&self, rules: Arc<RuleSet>) -> Arc<RuleSet> {
        std::mem::replace(
            &mut *self.inner.rules.write().unwrap_or_else(|p| p.into_inner()),
            rules,
        )
    }

    /// Makes `declared` what requests are classified by (the daemon's `tools:`, `llm:`).
    pub fn set_declared(&self, declared: Arc<Classifier>) {
        *self
            .inner
            .declared
            .write()
            .unwrap_or_else(|p| p.into_inner()) = declared;
    }

    /// Classifies requests by `declared` (a run's `tools:` and `llm:`) until the guard
    /// drops, then by what was declared before.
    pub fn declare(&self, declared: Arc<Classifier>) -> DeclareGuard {
        let mut slot = self
            .inner
            .declared
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let previous = std::mem::replace(&mut *slot, declared);
        DeclareGuard {
            engine: self.clone(),
            previous: Some(previous),
        }
    }

    /// What a request for `url` (on `host`, at `path`) is.
    pub fn classify(&self, url: &str, host: &str, path: &str) -> Target {
        let declared = self
            .inner
            .declared
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        declared.classify(url, host, path)
    }

    /// Whether the tool named `name` was declared `protocol: mcp`.
    pub fn speaks_mcp(&self, name: &str) -> bool {
        self.inner
            .declared
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .speaks_mcp(name)
    }

    /// No rules: every request passes untouched. Also resets every counter.
    pub fn clear(&self) {
        self.set(&CompiledChaos::default());
    }

    /// Installs a spec built in code (tests, embedders), compiled first by the same single
    /// path as config loading; the error names the bad field. See `install_compiled`.
    pub fn install(
        &self,
        spec: &ChaosSpec,
        canary: Option<Arc<Canary>>,
    ) -> Result<InstallGuard, Problem> {
        Ok(self.install_compiled(&CompiledChaos::try_from(spec)?, canary))
    }

    /// Installs `rules` (planting `canary`, if any) until the guard drops, then restores
    /// what was active before.
    pub fn install_compiled(
        &self,
        rules: &CompiledChaos,
        canary: Option<Arc<Canary>>,
    ) -> InstallGuard {
        let rules = Arc::new(RuleSet::new(rules).with_canary(canary));
        let previous = self.swap(rules.clone());
        InstallGuard {
            engine: self.clone(),
            installed: rules,
            previous: Some(previous),
        }
    }

    /// Installs `spec` for requests carrying trace id `trace` only, with counters and draws
    /// of its own (derived from the trace id alone, which a run derives from its seed, so
    /// runs with different seeds can overlap), until the guard drops.
    pub fn install_for_trace(
        &self,
        trace: &str,
        rules: &CompiledChaos,
        canary: Option<Arc<Canary>>,
    ) -> TraceGuard {
        let rules = Arc::new(RuleSet::new(rules).with_canary(canary));
        self.install_scoped(trace, rules)
    }

    fn install_scoped(&self, trace: &str, rules: Arc<RuleSet>) -> TraceGuard {
        let seed = mix(stream(trace));
        self.inner
            .traces
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                trace.to_string(),
                Scoped {
                    rules: rules.clone(),
                    seed,
                    formats: Formats::default(),
                },
            );
        TraceGuard {
            engine: self.clone(),
            trace: trace.to_string(),
            installed: rules,
        }
    }

    /// Installs no chaos but a replay session's recorded tool answers (`table`) until the
    /// guard drops: globally, or for requests carrying trace id `trace` only.
    pub fn install_replay(&self, table: Arc<ReplayTable>, trace: Option<&str>) -> Installed {
        let rules = Arc::new(RuleSet::new(&CompiledChaos::default()).with_replay(Some(table)));
        match trace {
            None => {
                let previous = self.swap(rules.clone());
                Installed::Global(InstallGuard {
                    engine: self.clone(),
                    installed: rules,
                    previous: Some(previous),
                })
            }
            Some(t) => Installed::Trace(self.install_scoped(t, rules)),
        }
    }

    /// What happens to a request for `url` of kind `target`, carrying trace id `trace`
    /// (and, for an MCP request, the message it carries).
    pub fn decide(&self, url: &str, target: &Target, trace: Option<&str>) -> Decision {
        self.decide_mcp(url, target, None, trace)
    }

    /// `decide` for a request that carries an MCP message.
    pub fn decide_mcp(
        &self,
        url: &str,
        target: &Target,
        mcp: Option<&McpCall>,
        trace: Option<&str>,
    ) -> Decision {
        let scoped = trace.and_then(|t| {
            let traces = self.inner.traces.read().unwrap_or_else(|p| p.into_inner());
            traces
                .get(t)
                .map(|s| (s.rules.clone(), s.seed, s.formats.clone()))
        });
        if let Some((rules, seed, formats)) = scoped {
            let mut d = rules.decide(url, target, mcp, seed);
            d.formats = Some(formats);
            return d;
        }
        self.rules().decide(url, target, mcp, self.seed())
    }
}

/// A replay session installed globally or for one trace id; withdrawn when dropped.
pub enum Installed {
    Global(InstallGuard),
    Trace(TraceGuard),
}

impl Installed {
    /// The rules installed, with the replay table's counters.
    pub fn rules(&self) -> &RuleSet {
        match self {
            Installed::Global(g) => g.rules(),
            Installed::Trace(g) => g.rules(),
        }
    }
}

/// Restores the previous rules when dropped.
pub struct InstallGuard {
    engine: Engine,
    installed: Arc<RuleSet>,
    previous: Option<Arc<RuleSet>>,
}

impl InstallGuard {
    /// The rules this guard installed, with their counters.
    pub fn rules(&self) -> &RuleSet {
        &self.installed
    }
}

impl Drop for InstallGuard {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            self.engine.swap(previous);
        }
    }
}

/// Removes a trace's rules when dropped.
pub struct TraceGuard {
    engine: Engine,
    trace: String,
    installed: Arc<RuleSet>,
}

impl TraceGuard {
    /// The rules installed for this trace id, with their counters.
    pub fn rules(&self) -> &RuleSet {
        &self.installed
    }
}

impl Drop for TraceGuard {
    fn drop(&mut self) {
        self.engine
            .inner
            .traces
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.trace);
    }
}

/// A run's `tools:` and `llm:` declared on the engine; dropping it restores the ones before.
#[must_use = "the declarations are withdrawn when the guard drops"]
pub struct DeclareGuard {
    engine: Engine,
    previous: Option<Arc<Classifier>>,
}

impl Drop for DeclareGuard {
    fn drop(&mut self) {
        if let Some(p) = self.previous.take() {
            self.engine.set_declared(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chaos::Fault;
    use crate::chaos::spec::ChaosSpec;
    use crate::exchange::Provider;

    fn spec(yaml: &str) -> CompiledChaos {
        use crate::config::Yaml;
        use figment::providers::Format;
        let spec: ChaosSpec = figment::Figment::from(Yaml::string(yaml))
            .extract()
            .unwrap();
        CompiledChaos::try_from(&spec).unwrap()
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
        ));
        let code = |d: Decision| match d.fault.map(|f| f.what) {
            Some(Fault::Tool(crate::chaos::spec::ToolMode::Error { error_code, .. })) => error_code,
            Some(Fault::Llm(_)) => 429,
            _ => 0,
        };
        assert_eq!(
            code(e.decide("https://api.search.example/v2/q", &tool("search"), None)),
            503
        );
        assert_eq!(
            code(e.decide("https://api.search.example/v1/q", &tool("search"), None)),
            502
        );
        assert_eq!(
            code(e.decide("https://other.example/", &Target::Other, None)),
            500
        );
        let claude = Target::Llm {
            provider: Provider::Anthropic,
        };
        let gpt = Target::Llm {
            provider: Provider::Openai,
        };
        assert_eq!(
            code(e.decide("https://api.anthropic.com/v1/messages", &claude, None)),
            429
        );
        assert_eq!(
            code(e.decide("https://api.openai.com/v1/chat/completions", &gpt, None)),
            0,
            "tool rules never hit LLM calls"
        );
    }

    #[test]
    fn after_calls_and_probability_are_reproducible_with_a_seed() {
        let yaml = "tool_faults:\n  - {tool: '*', mode: error, probability: 0.5, after_calls: 3}\n";
        let run = |seed| {
            let e = Engine::new(seed);
            e.set(&spec(yaml));
            (0..40)
                .map(|_| e.decide("http://x/", &Target::Other, None).fault.is_some())
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
        e.set(&spec("tool_faults: [{mode: malformed}]"));
        {
            let _g = e.install(&ChaosSpec::default(), None).unwrap();
            assert!(e.decide("http://x/", &Target::Other, None).fault.is_none());
        }
        assert!(e.decide("http://x/", &Target::Other, None).fault.is_some());
    }

    #[test]
    fn trace_rules_apply_to_their_trace_only_and_go_with_the_guard() {
        let e = Engine::new(5);
        e.set(&spec("tool_faults: [{mode: malformed}]"));
        let err = spec("tool_faults: [{mode: error, error_code: 503}]");
        let fault = |d: Decision| d.fault.map(|f| f.what);
        {
            let _a = e.install_for_trace("aaaa", &err, None);
            let _b = e.install_for_trace(
                "bbbb",
                &CompiledChaos::default(),
                Some(Arc::new(Canary::new(1))),
            );
            assert!(matches!(
                fault(e.decide("http://x/", &Target::Other, Some("aaaa"))),
                Some(crate::chaos::Fault::Tool(
                    crate::chaos::spec::ToolMode::Error { .. }
                ))
            ));
            let b = e.decide("http://x/", &Target::Other, Some("bbbb"));
            assert!(
                b.fault.is_none() && b.canary.is_some(),
                "its own (empty) rules"
            );
            assert!(
                matches!(
                    fault(e.decide("http://x/", &Target::Other, Some("cccc"))),
                    Some(crate::chaos::Fault::Tool(
                        crate::chaos::spec::ToolMode::Malformed {}
                    ))
                ),
                "unknown traces get the global rules"
            );
        }
        assert!(matches!(
            fault(e.decide("http://x/", &Target::Other, Some("aaaa"))),
            Some(crate::chaos::Fault::Tool(
                crate::chaos::spec::ToolMode::Malformed {}
            ))
        ));
    }

    #[test]
    fn no_rule_applies_to_embeddings_calls() {
        let e = Engine::new(3);
        e.set(&spec(
            r#"
tool_faults: [{tool: "*", mode: error, error_code: 500}]
llm_faults: [{mode: rate_limit}]
context_attacks:
  - {type: indirect_injection, payload: x}
  - {type: memory_poisoning, payload: y}
"#,
        ));
        let d = e.decide(
            "https://api.openai.com/v1/embeddings",
            &Target::Embeddings {
                provider: Provider::Openai,
            },
            None,
        );
        assert!(d.fault.is_none() && d.attacks.is_empty(), "{d:?}");
        let d = e.decide("https://api.openai.com/v1/files", &Target::Other, None);
        assert!(d.fault.is_some(), "`tool: \"*\"` still covers `other`");
    }
}
