//! The metrics of the agent's LLM spend: tokens the answers reported
//! (`flakestorm_llm_tokens_total{provider,model,kind}`, kind `input` or `output`), their
//! cost at the daemon's `pricing:` (`flakestorm_llm_cost_total{provider,model,currency}`,
//! in the currency its label names), and answers that reported no usage
//! (`flakestorm_llm_usage_unknown_total{provider}`: their tokens are in neither counter,
//! and a dashboard should say so rather than show a spend too low). Counted once per LLM
//! answer, when its body ends. Model names come from upstream answers: at most
//! `MAX_MODELS` distinct ones are labels, the rest are counted as `other`.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Distinct model labels kept, so an upstream cannot grow the series without bound.
const MAX_MODELS: usize = 64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TokenLabels {
    pub provider: &'static str,
    pub model: String,
    /// `input` or `output`.
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CostLabels {
    pub provider: &'static str,
    pub model: String,
    /// The ISO 4217 code the cost is in (`pricing.currency`).
    pub currency: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderLabels {
    pub provider: &'static str,
}

pub(super) struct LlmFamilies {
    tokens: Family<TokenLabels, Counter>,
    cost: Family<CostLabels, Counter<f64, AtomicU64>>,
    unknown: Family<ProviderLabels, Counter>,
    models: Mutex<Vec<String>>,
}

impl LlmFamilies {
    pub(super) fn register(registry: &mut Registry) -> LlmFamilies {
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "llm_tokens",
            "Tokens the agent's LLM answers reported, by provider, model and kind (input, output)",
            tokens.clone(),
        );
        let cost = Family::<CostLabels, Counter<f64, AtomicU64>>::default();
        registry.register(
            "llm_cost",
            "Cost of the agent's LLM answers at the pricing: table's prices, in units of the \
             currency label (e.g. USD); answers without usage or price are not in it",
            cost.clone(),
        );
        let unknown = Family::<ProviderLabels, Counter>::default();
        registry.register(
            "llm_usage_unknown",
            "LLM answers that reported no token usage (not counted in llm_tokens or llm_cost)",
            unknown.clone(),
        );
        LlmFamilies {
            tokens,
            cost,
            unknown,
            models: Mutex::new(vec![]),
        }
    }

    /// `model` as a label: itself while fewer than `MAX_MODELS` are known, else `other`.
    fn label(&self, model: Option<&str>) -> String {
        let model = model.unwrap_or("unknown");
        let mut known = self.models.lock().unwrap_or_else(|p| p.into_inner());
        if known.iter().any(|m| m == model) {
            return model.to_string();
        }
        if known.len() < MAX_MODELS {
            known.push(model.to_string());
            return model.to_string();
        }
        "other".into()
    }
}

impl super::Metrics {
    /// One LLM answer's reported usage, and its cost in `currency` when it was priced.
    pub fn llm_usage(
        &self,
        provider: &'static str,
        usage: &crate::exchange::Usage,
        cost: Option<(f64, &str)>,
    ) {
        let f = &self.inner.llm;
        if !usage.known() {
            f.unknown.get_or_create(&ProviderLabels { provider }).inc();
        }
        if usage.input_tokens.is_none() && usage.output_tokens.is_none() {
            return;
        }
        let model = f.label(usage.model.as_deref());
        for (kind, n) in [
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
        ] {
            if let Some(n) = n {
                let labels = TokenLabels {
                    provider,
                    model: model.clone(),
                    kind,
                };
                f.tokens.get_or_create(&labels).inc_by(n);
            }
        }
        if let Some((c, currency)) = cost {
            let labels = CostLabels {
                provider,
                model,
                currency: currency.to_string(),
            };
            f.cost.get_or_create(&labels).inc_by(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Metrics;
    use crate::exchange::Usage;

    #[test]
    fn tokens_and_cost_are_counted_per_provider_model_and_kind() {
        let m = Metrics::new();
        let u = Usage {
            input_tokens: Some(12),
            output_tokens: Some(5),
            model: Some("gpt-4o-mini".into()),
        };
        m.llm_usage("openai", &u, Some((0.5, "USD")));
        m.llm_usage("openai", &u, Some((0.25, "USD")));
        m.llm_usage("ollama", &Usage::default(), None);
        let text = m.encode();
        for line in [
            "flakestorm_llm_tokens_total{provider=\"openai\",model=\"gpt-4o-mini\",kind=\"input\"} 24\n",
            "flakestorm_llm_tokens_total{provider=\"openai\",model=\"gpt-4o-mini\",kind=\"output\"} 10\n",
            "flakestorm_llm_cost_total{provider=\"openai\",model=\"gpt-4o-mini\",currency=\"USD\"} 0.75\n",
            "flakestorm_llm_usage_unknown_total{provider=\"ollama\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        assert!(
            text.contains("# TYPE flakestorm_llm_cost counter\n"),
            "{text}"
        );
    }

    #[test]
    fn model_labels_are_bounded() {
        let m = Metrics::new();
        for i in 0..(super::MAX_MODELS + 5) {
            let u = Usage {
                input_tokens: Some(1),
                output_tokens: Some(1),
                model: Some(format!("m{i}")),
            };
            m.llm_usage("openai", &u, None);
        }
        let text = m.encode();
        assert!(
            text.contains("model=\"other\",kind=\"input\"} 5\n"),
            "{text}"
        );
    }
}
