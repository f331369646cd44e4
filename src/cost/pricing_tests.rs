//! The shipped table, model matching, and bad tables refused naming the model and field.

use serde_json::json;

use super::*;

fn errors(v: serde_json::Value) -> Vec<String> {
    parse_table(&v)
        .unwrap_err()
        .into_iter()
        .map(|e| format!("{}: {}", e.path, e.message))
        .collect()
}

#[test]
fn the_shipped_table_is_dated_usd_and_prices_common_models() {
    let p = Pricing::default();
    assert_eq!(p.currency, "USD");
    assert!(p.as_of.as_deref().is_some_and(|d| d.starts_with("20")));
    for m in ["gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash"] {
        assert!(p.price(m).is_some(), "{m}");
    }
}

#[test]
fn a_dated_model_name_takes_the_longest_entry_it_starts_with() {
    let p = Pricing::default();
    let mini = p.price("gpt-4o-mini").unwrap();
    assert_eq!(p.price("gpt-4o-mini-2024-07-18"), Some(mini));
    assert_ne!(p.price("gpt-4o-2024-08-06"), Some(mini));
    assert_eq!(
        p.price("models/gemini-2.5-flash"),
        p.price("gemini-2.5-flash")
    );
    // `gpt-4` is no entry, and `gpt-4o` does not start `gpt-4omni`.
    assert_eq!(p.price("gpt-4omni"), None);
    assert_eq!(p.price("llama3.2"), None);
}

#[test]
fn a_config_overrides_a_model_and_adds_its_own() {
    let t = parse_table(&json!({"models": {"gpt-4o-mini": {"input": 1, "output": 2}, "llama3.2": {"input": 0, "output": 0}}})).unwrap();
    let p = Pricing::of(None, true, &[&t]);
    assert_eq!(
        p.price("gpt-4o-mini"),
        Some(Price {
            input: 1.0,
            output: 2.0
        })
    );
    assert_eq!(
        p.price("llama3.2:latest"),
        Some(Price {
            input: 0.0,
            output: 0.0
        })
    );
    assert!(
        p.price("claude-sonnet-4-5").is_some(),
        "the rest of the shipped table stays"
    );
    assert_eq!(p.overridden, 2);
    // Another currency: the shipped USD prices are not used.
    let eur = Pricing::of(Some("EUR"), true, &[&t]);
    assert_eq!((eur.currency.as_str(), eur.as_of.as_ref()), ("EUR", None));
    assert!(eur.price("claude-sonnet-4-5").is_none());
}

#[test]
fn cost_is_per_million_tokens_and_says_why_it_is_unknown() {
    let p = Pricing::default();
    let u = |i, o, m: &str| crate::exchange::Usage {
        input_tokens: i,
        output_tokens: o,
        model: Some(m.into()),
    };
    let c = p
        .cost(&u(Some(1_000_000), Some(1_000_000), "gpt-4o-mini"))
        .unwrap();
    assert!((c - 0.75).abs() < 1e-9, "{c}");
    assert_eq!(p.cost(&u(None, Some(3), "gpt-4o")), Err(Unpriced::NoUsage));
    assert_eq!(
        p.cost(&u(Some(1), Some(1), "llama3.2")),
        Err(Unpriced::Model("llama3.2".into()))
    );
}

#[test]
fn a_negative_or_non_numeric_price_is_an_error_naming_the_model_and_field() {
    let got = errors(json!({"models": {"gpt-4o": {"input": -1, "output": "abc"}}}));
    assert_eq!(
        got,
        [
            "models.gpt-4o.input: model `gpt-4o`: `input` price -1 is negative; a price per million tokens is 0 or more",
            "models.gpt-4o.output: model `gpt-4o`: `output` price \"abc\" is not a number",
        ]
    );
    let got = errors(json!({"models": {"m": {"input": 1, "cached": 2}}}));
    assert_eq!(
        got,
        [
            "models.m.cached: model `m`: unknown field `cached`, expected `input` or `output`",
            "models.m.output: model `m`: `output` price is missing",
        ]
    );
    let got = errors(json!({"models": {"m": 3}}));
    assert!(
        got[0].starts_with("models.m: model `m`: expected {input"),
        "{got:?}"
    );
}

#[test]
fn an_unknown_currency_is_an_error() {
    let got = errors(json!({"currency": "UDS", "models": {}}));
    assert_eq!(
        got,
        ["currency: `UDS` is not a known ISO 4217 currency code (e.g. USD, EUR, GBP)"]
    );
    assert_eq!(
        errors(json!({"currency": 5}))[0],
        "currency: 5 is not a currency code (e.g. USD)"
    );
    assert_eq!(currency(&json!("eur"), "c").unwrap(), "EUR");
}
