//! The price table: per model, what a million input and output tokens cost, in one
//! currency. The shipped table (pricing/default.yaml, dated, USD) is the base; a config's
//! `pricing:` (a file it names, then its own `models:`) overrides it model by model.
//! Reading a table checks every price and the currency, each error naming the model and
//! the field (`parse_table`); the result is what runs and the proxy price with.

use std::sync::OnceLock;

use serde_json::Value;

use crate::exchange::Usage;

/// The shipped table, embedded (checked by a test: it parses, and each price is sane).
const SHIPPED: &str = include_str!("../../pricing/default.yaml");

/// What a million tokens of a model cost, in the table's currency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
}

/// A problem in a price table: where (`models.gpt-4o.input`) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceError {
    pub path: String,
    pub message: String,
}

impl PriceError {
    fn new(path: impl Into<String>, message: impl Into<String>) -> PriceError {
        PriceError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// One table as written (the shipped one, a pricing file, a config's `pricing:`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub currency: Option<String>,
    pub as_of: Option<String>,
    pub models: Vec<(String, Price)>,
}

/// The prices a run or the proxy uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Pricing {
    /// ISO 4217 code every price and cost is in.
    pub currency: String,
    /// The shipped table's date, when its prices are in use.
    pub as_of: Option<String>,
    /// Models the config priced itself (over or besides the shipped table).
    pub overridden: usize,
    models: Vec<(String, Price)>,
}

impl Default for Pricing {
    fn default() -> Self {
        shipped().clone()
    }
}

/// The shipped table as `Pricing`, read once.
fn shipped() -> &'static Pricing {
    static TABLE: OnceLock<Pricing> = OnceLock::new();
    TABLE.get_or_init(|| {
        let v: Value = yaml_serde::from_str(SHIPPED).expect("pricing/default.yaml is YAML");
        let t = parse_table(&v).expect("pricing/default.yaml is a valid price table");
        Pricing {
            currency: t.currency.unwrap_or_else(|| "USD".into()),
            as_of: t.as_of,
            overridden: 0,
            models: t.models,
        }
    })
}

impl Pricing {
    /// The shipped table under `tables` (a file's, then the config's own), model by model.
    /// Its prices are USD: with another currency only the tables' own models are priced.
    pub fn of(currency: Option<&str>, defaults: bool, tables: &[&Table]) -> Pricing {
        let base = shipped();
        let currency = currency.unwrap_or(&base.currency).to_string();
        let keep = defaults && currency == base.currency;
        let mut p = Pricing {
            as_of: keep.then(|| base.as_of.clone()).flatten(),
            models: if keep { base.models.clone() } else { vec![] },
            overridden: 0,
            currency,
        };
        for (model, price) in tables.iter().flat_map(|t| &t.models) {
            p.overridden += 1;
            match p.models.iter_mut().find(|(m, _)| m == model) {
                Some((_, old)) => *old = *price,
                None => p.models.push((model.clone(), *price)),
            }
        }
        p
    }

    /// The price of `model`: its own entry, else the longest entry it starts with at a
    /// name boundary (`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`, not `gpt-4o`).
    pub fn price(&self, model: &str) -> Option<Price> {
        let model = model.strip_prefix("models/").unwrap_or(model);
        let bounded = |m: &str| {
            model
                .strip_prefix(m)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', ':', '@', '.', '/']))
        };
        self.models
            .iter()
            .filter(|(m, _)| bounded(m))
            .max_by_key(|(m, _)| m.len())
            .map(|(_, p)| *p)
    }

    /// What one answer cost, or why it cannot be said.
    pub fn cost(&self, u: &Usage) -> Result<f64, Unpriced> {
        let (Some(i), Some(o)) = (u.input_tokens, u.output_tokens) else {
            return Err(Unpriced::NoUsage);
        };
        let model = u.model.as_deref().unwrap_or_default();
        let p = self.price(model).ok_or_else(|| {
            Unpriced::Model(u.model.clone().unwrap_or_else(|| "(unnamed)".into()))
        })?;
        Ok((i as f64 * p.input + o as f64 * p.output) / 1_000_000.0)
    }
}

/// Why an answer has no cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpriced {
    /// Its token counts are unknown.
    NoUsage,
    /// No entry prices this model.
    Model(String),
}

/// Currencies a table may be in: ISO 4217 codes of the currencies model providers bill in
/// or users convert to. A typo (`UDS`) is an error, not a silent new currency.
pub const CURRENCIES: &[&str] = &[
    "USD", "EUR", "GBP", "JPY", "CNY", "INR", "CAD", "AUD", "NZD", "CHF", "SEK", "NOK", "DKK",
    "PLN", "CZK", "HUF", "BRL", "MXN", "ARS", "CLP", "COP", "KRW", "SGD", "HKD", "TWD", "THB",
    "IDR", "MYR", "PHP", "VND", "ZAR", "TRY", "ILS", "AED", "SAR", "NGN", "KES", "EGP", "UAH",
    "RON",
];

/// A currency code as written, checked against `CURRENCIES`.
pub fn currency(v: &Value, path: &str) -> Result<String, PriceError> {
    let Some(code) = v.as_str() else {
        return Err(PriceError::new(
            path,
            format!("{v} is not a currency code (e.g. USD)"),
        ));
    };
    let upper = code.trim().to_ascii_uppercase();
    match CURRENCIES.contains(&upper.as_str()) {
        true => Ok(upper),
        false => Err(PriceError::new(
            path,
            format!("`{code}` is not a known ISO 4217 currency code (e.g. USD, EUR, GBP)"),
        )),
    }
}

/// A table (`currency`, `as_of`, `models: {name: {input, output}}`), every problem found.
pub fn parse_table(v: &Value) -> Result<Table, Vec<PriceError>> {
    let Some(map) = v.as_object() else {
        return Err(vec![PriceError::new(
            "",
            "expected a mapping with `models:`",
        )]);
    };
    let (mut table, mut errors) = (Table::default(), vec![]);
    for (key, value) in map {
        match key.as_str() {
            "currency" => match currency(value, "currency") {
                Ok(c) => table.currency = Some(c),
                Err(e) => errors.push(e),
            },
            "as_of" => table.as_of = value.as_str().map(str::to_string),
            "models" => table.models = models(value, &mut errors),
            other => errors.push(PriceError::new(
                other,
                format!("unknown field `{other}`, expected `currency`, `as_of` or `models`"),
            )),
        }
    }
    match errors.is_empty() {
        true => Ok(table),
        false => Err(errors),
    }
}

fn models(v: &Value, errors: &mut Vec<PriceError>) -> Vec<(String, Price)> {
    let Some(map) = v.as_object() else {
        errors.push(PriceError::new(
            "models",
            "expected a mapping of model names to {input, output}",
        ));
        return vec![];
    };
    map.iter()
        .filter_map(|(model, entry)| match price(model, entry) {
            Ok(p) => Some((model.clone(), p)),
            Err(e) => {
                errors.extend(e);
                None
            }
        })
        .collect()
}

/// One model's `{input, output}`, per million tokens.
fn price(model: &str, v: &Value) -> Result<Price, Vec<PriceError>> {
    let at = |field: &str| format!("models.{model}.{field}");
    let Some(map) = v.as_object() else {
        return Err(vec![PriceError::new(
            format!("models.{model}"),
            format!(
                "model `{model}`: expected {{input: <price>, output: <price>}} per million tokens"
            ),
        )]);
    };
    let mut errors = vec![];
    for key in map
        .keys()
        .filter(|k| !matches!(k.as_str(), "input" | "output"))
    {
        errors.push(PriceError::new(
            at(key),
            format!("model `{model}`: unknown field `{key}`, expected `input` or `output`"),
        ));
    }
    let mut field = |name: &str| match map.get(name) {
        None => {
            errors.push(PriceError::new(
                at(name),
                format!("model `{model}`: `{name}` price is missing"),
            ));
            0.0
        }
        Some(v) => match v.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => x,
            Some(x) => {
                let why = format!(
                    "model `{model}`: `{name}` price {x} is negative; a price per million tokens is 0 or more"
                );
                errors.push(PriceError::new(at(name), why));
                0.0
            }
            None => {
                let why = format!("model `{model}`: `{name}` price {v} is not a number");
                errors.push(PriceError::new(at(name), why));
                0.0
            }
        },
    };
    let p = Price {
        input: field("input"),
        output: field("output"),
    };
    match errors.is_empty() {
        true => Ok(p),
        false => Err(errors),
    }
}

#[cfg(test)]
#[path = "pricing_tests.rs"]
mod tests;
