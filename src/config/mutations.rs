//! The `mutations:` section (config.md): which adversarial variants of each golden prompt a
//! mutation run sends, how many, and how each type weighs in the robustness score. The
//! types are `mutate::kind::MutationType`; `mutate/` generates them.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use crate::mutate::kind::{Family, MutationType};

/// Largest `count` and `max_per_run`: a mutation run is a test, not a load test.
pub const MAX_COUNT: u32 = 100;
pub const MAX_PER_RUN: u32 = 10_000;

/// The raw section, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default = "default_count")]
    count: u32,
    #[serde(default)]
    types: Option<Vec<String>>,
    #[serde(default)]
    weights: BTreeMap<String, f64>,
    #[serde(default)]
    custom_templates: BTreeMap<String, String>,
    #[serde(default = "default_max_per_run")]
    max_per_run: u32,
    /// `noise`: the share of characters changed (0–1).
    #[serde(default = "default_noise_rate")]
    noise_rate: f64,
    #[serde(default)]
    with_model: Vec<String>,
}

fn default_count() -> u32 {
    20
}
fn default_max_per_run() -> u32 {
    50
}
fn default_noise_rate() -> f64 {
    0.1
}

/// A checked `mutations:` section.
#[derive(Debug, Clone, PartialEq)]
pub struct MutationsSpec {
    /// Variants per golden prompt.
    pub count: u32,
    /// In the order written, each once.
    pub types: Vec<MutationType>,
    /// Every type's weight (the default where the file names none).
    pub weights: BTreeMap<MutationType, f64>,
    /// Template name → text with `{prompt}`, in name order (the order variants cycle).
    pub custom_templates: Vec<(String, String)>,
    /// Mutated cases per run at most.
    pub max_per_run: u32,
    pub noise_rate: f64,
    /// Template types whose variants the `model:` LLM writes, from the template's variant
    /// (richer, but only as reproducible as the model).
    pub with_model: Vec<MutationType>,
}

impl Default for MutationsSpec {
    fn default() -> Self {
        MutationsSpec {
            count: default_count(),
            types: MutationType::DEFAULT.to_vec(),
            weights: MutationType::all()
                .map(|t| (t, t.default_weight()))
                .collect(),
            custom_templates: vec![],
            max_per_run: default_max_per_run(),
            noise_rate: default_noise_rate(),
            with_model: vec![],
        }
    }
}

impl MutationsSpec {
    pub fn weight(&self, t: MutationType) -> f64 {
        self.weights
            .get(&t)
            .copied()
            .unwrap_or_else(|| t.default_weight())
    }

    /// The `model:` LLM writes this template type's variants (`with_model`).
    pub fn model_writes(&self, t: MutationType) -> bool {
        self.with_model.contains(&t)
    }
}

fn valid_names() -> String {
    MutationType::all()
        .map(MutationType::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses and checks `mutations:`; every problem at its path. `model`: the config has a
/// `model:` section.
pub(super) fn mutations_section(
    v: serde_json::Value,
    model: bool,
    errors: &mut Vec<ConfigError>,
) -> MutationsSpec {
    let Some(raw) = super::de::section::<Raw>(v, "mutations", errors) else {
        return MutationsSpec::default();
    };
    let mut spec = MutationsSpec {
        count: raw.count,
        max_per_run: raw.max_per_run,
        noise_rate: raw.noise_rate,
        custom_templates: raw.custom_templates.into_iter().collect(),
        ..MutationsSpec::default()
    };
    let mut err = |path: String, msg: String| errors.push(ConfigError::new(path, msg));
    if !(1..=MAX_COUNT).contains(&raw.count) {
        err(
            "mutations.count".into(),
            format!("{} is outside 1..={MAX_COUNT}", raw.count),
        );
    }
    if !(1..=MAX_PER_RUN).contains(&raw.max_per_run) {
        err(
            "mutations.max_per_run".into(),
            format!("{} is outside 1..={MAX_PER_RUN}", raw.max_per_run),
        );
    }
    if !(0.0..=1.0).contains(&raw.noise_rate) {
        err(
            "mutations.noise_rate".into(),
            format!("{} is outside 0..=1", raw.noise_rate),
        );
    }
    if let Some(names) = raw.types {
        spec.types = types(&names, &mut err);
    } else if !spec.custom_templates.is_empty() {
        spec.types.push(MutationType::Custom);
    }
    spec.weights.extend(weights(&raw.weights, &mut err));
    let custom = spec.types.contains(&MutationType::Custom);
    if custom && spec.custom_templates.is_empty() {
        err(
            "mutations.custom_templates".into(),
            "`custom` is in mutations.types but no template is given; add e.g. \
             custom_templates: {polite: \"Please, {prompt}\"}"
                .into(),
        );
    }
    for (name, t) in &spec.custom_templates {
        if !t.contains("{prompt}") {
            err(
                format!("mutations.custom_templates.{name}"),
                "has no `{prompt}` placeholder, so every variant would ignore the prompt".into(),
            );
        }
    }
    spec.with_model = with_model(&raw.with_model, &spec.types, model, &mut err);
    spec
}

/// `types:`: each name a mutation type, listed once, and at least one.
fn types(names: &[String], err: &mut impl FnMut(String, String)) -> Vec<MutationType> {
    let mut types = vec![];
    for (i, name) in names.iter().enumerate() {
        match MutationType::parse(name) {
            Some(t) if !types.contains(&t) => types.push(t),
            Some(_) => err(
                format!("mutations.types[{i}]"),
                format!("`{name}` is listed twice"),
            ),
            None => err(
                format!("mutations.types[{i}]"),
                format!(
                    "unknown mutation type `{name}`; valid types: {}",
                    valid_names()
                ),
            ),
        }
    }
    if names.is_empty() {
        err(
            "mutations.types".into(),
            "is empty; leave it out for the default types, or name at least one".into(),
        );
    }
    types
}

/// `weights:`: each key a mutation type, each weight a number ≥ 0.
fn weights<'a>(
    raw: impl IntoIterator<Item = (&'a String, &'a f64)>,
    err: &mut impl FnMut(String, String),
) -> BTreeMap<MutationType, f64> {
    let mut out = BTreeMap::new();
    for (name, w) in raw {
        match MutationType::parse(name) {
            None => err(
                format!("mutations.weights.{name}"),
                format!(
                    "unknown mutation type `{name}`; valid types: {}",
                    valid_names()
                ),
            ),
            Some(_) if !w.is_finite() || *w < 0.0 => err(
                format!("mutations.weights.{name}"),
                format!("{w} is not a weight (a number ≥ 0)"),
            ),
            Some(t) => {
                out.insert(t, *w);
            }
        }
    }
    out
}

/// `with_model`: template types that are requested, each once, with a `model:` to write them.
fn with_model(
    names: &[String],
    types: &[MutationType],
    model: bool,
    err: &mut impl FnMut(String, String),
) -> Vec<MutationType> {
    let mut out = vec![];
    for (i, name) in names.iter().enumerate() {
        let at = format!("mutations.with_model[{i}]");
        let Some(t) = MutationType::parse(name) else {
            err(
                at,
                format!(
                    "unknown mutation type `{name}`; types a model can write: {}",
                    rewritable_names()
                ),
            );
            continue;
        };
        let why = match t.family() {
            Family::Text if !t.model_can_rewrite() => Some(format!(
                "`{name}` is made for its exact bytes, which a model would not reproduce; types \
                 a model can write: {}",
                rewritable_names()
            )),
            Family::Text if out.contains(&t) => Some(format!("`{name}` is listed twice")),
            Family::Text if !types.contains(&t) => Some(format!(
                "`{name}` is not in mutations.types, so no variant of it is made; add it there"
            )),
            Family::Text => None,
            Family::Model => Some(format!(
                "`{name}` is always written by the model; leave it out here"
            )),
            Family::Wire => Some(format!(
                "`{name}` is a wire-level attack, not text a model can write; types a model \
                 can write: {}",
                rewritable_names()
            )),
        };
        match why {
            Some(why) => err(at, why),
            None => out.push(t),
        }
    }
    if !out.is_empty() && !model {
        err(
            "mutations.with_model".into(),
            "needs a `model:` section to write the variants, e.g. model: {provider: ollama, \
             name: qwen3:8b}"
                .into(),
        );
    }
    out
}

fn rewritable_names() -> String {
    let names: Vec<&str> = MutationType::all()
        .filter(|t| t.model_can_rewrite())
        .map(MutationType::name)
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    fn load(v: serde_json::Value) -> (MutationsSpec, Vec<String>) {
        let mut errors = vec![];
        let spec = mutations_section(v, true, &mut errors);
        (spec, errors.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn names_round_trip_and_every_type_has_a_family_and_weight() {
        for t in MutationType::all() {
            assert_eq!(MutationType::parse(t.name()), Some(t));
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{}\"", t.name()));
            assert!(t.default_weight() > 0.0);
        }
        let text = MutationType::all()
            .filter(|t| t.family() == Family::Text)
            .count();
        let wire = MutationType::all()
            .filter(|t| t.family() == Family::Wire)
            .count();
        assert_eq!((text, wire), (13, 9));
    }

    #[test]
    fn defaults_and_custom_templates_add_custom() {
        let (s, e) = load(json!({}));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!((s.count, s.max_per_run), (20, 50));
        assert_eq!(s.types, MutationType::DEFAULT);
        let (s, e) = load(json!({"custom_templates": {"polite": "Please, {prompt}"}}));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(s.types.last(), Some(&MutationType::Custom));
        let (s, _) = load(json!({"weights": {"noise": 3}}));
        assert_eq!(s.weight(MutationType::Noise), 3.0);
        assert_eq!(s.weight(MutationType::AdvancedJailbreak), 2.0);
    }

    #[test]
    fn every_bad_value_is_an_error_at_its_path() {
        let (_, e) = load(json!({
            "count": 0, "max_per_run": 0, "types": ["noise", "nosie", "noise", "custom"],
            "weights": {"tone": 1, "noise": -1}, "custom_templates": {}
        }));
        let want = [
            "mutations.count: 0 is outside 1..=100",
            "mutations.max_per_run: 0 is outside 1..=10000",
            "mutations.types[1]: unknown mutation type `nosie`; valid types: paraphrase, noise,",
            "mutations.types[2]: `noise` is listed twice",
            "mutations.weights.noise: -1 is not a weight",
            "mutations.weights.tone: unknown mutation type `tone`",
            "mutations.custom_templates: `custom` is in mutations.types but no template",
        ];
        for w in want {
            assert!(
                e.iter().any(|got| got.starts_with(w)),
                "missing {w:?} in {e:#?}"
            );
        }
        assert_eq!(e.len(), want.len(), "{e:#?}");
        let (_, e) = load(json!({"custom_templates": {"bad": "no placeholder"}}));
        assert_eq!(
            e,
            [
                "mutations.custom_templates.bad: has no `{prompt}` placeholder, so every variant would ignore the prompt"
            ]
        );
    }

    #[test]
    fn with_model_takes_requested_template_types_and_needs_a_model() {
        let (s, e) = load(json!({
            "types": ["prompt_injection", "tone_shift", "noise"],
            "with_model": ["tone_shift", "prompt_injection"]
        }));
        assert!(e.is_empty(), "{e:?}");
        assert!(s.model_writes(MutationType::ToneShift));
        assert!(!s.model_writes(MutationType::Noise));
        let (_, e) = load(json!({
            "types": ["tone_shift", "paraphrase", "payload_size_attack", "noise"],
            "with_model": ["tone", "paraphrase", "payload_size_attack", "advanced_jailbreak",
                           "tone_shift", "tone_shift", "noise"]
        }));
        let want = [
            "mutations.with_model[0]: unknown mutation type `tone`; types a model can write: \
             tone_shift, prompt_injection,",
            "mutations.with_model[1]: `paraphrase` is always written by the model",
            "mutations.with_model[2]: `payload_size_attack` is a wire-level attack",
            "mutations.with_model[3]: `advanced_jailbreak` is not in mutations.types",
            "mutations.with_model[5]: `tone_shift` is listed twice",
            "mutations.with_model[6]: `noise` is made for its exact bytes",
        ];
        for (w, got) in want.iter().zip(&e) {
            assert!(got.starts_with(w), "{got:?} does not start with {w:?}");
        }
        assert_eq!(e.len(), want.len(), "{e:#?}");
        let mut errors = vec![];
        mutations_section(
            json!({"types": ["tone_shift"], "with_model": ["tone_shift"]}),
            false,
            &mut errors,
        );
        let e: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("mutations.with_model: needs a `model:` section"),
            "{e:?}"
        );
    }
}
