//! `pricing:` (config.md): the price table runs and the proxy cost LLM calls with. The
//! shipped table (`defaults: true`, USD), a file it names (`file:`, same shape as the
//! shipped table), then its own `models:`, each overriding the one before model by model;
//! `currency:` for all of them. Every problem is named by its path and the model
//! (`pricing.models.gpt-4o.input`); a file's problems name the file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ConfigError;
use crate::cost::{PriceError, Pricing, Table};

/// `pricing:` as read, before its file (relative to the config's folder) is.
#[derive(Debug, Clone, PartialEq)]
pub struct PricingSpec {
    pub currency: Option<String>,
    /// Whether the shipped table is the base (default true; its prices are USD).
    pub defaults: bool,
    pub file: Option<PathBuf>,
    pub table: Table,
}

impl Default for PricingSpec {
    fn default() -> Self {
        PricingSpec {
            currency: None,
            defaults: true,
            file: None,
            table: Table::default(),
        }
    }
}

fn errors_at(prefix: &str, errors: Vec<PriceError>) -> impl Iterator<Item = ConfigError> + '_ {
    errors.into_iter().map(move |e| {
        let path = match e.path.is_empty() {
            true => prefix.to_string(),
            false => format!("{prefix}.{}", e.path),
        };
        ConfigError::new(path, e.message)
    })
}

/// Reads the section; its file is read by `read_file` once paths are resolved.
pub(super) fn pricing_section(v: Value, errors: &mut Vec<ConfigError>) -> PricingSpec {
    let Value::Object(mut map) = v else {
        errors.push(ConfigError::new(
            "pricing",
            "expected a mapping (currency, defaults, file, models)",
        ));
        return PricingSpec::default();
    };
    let mut spec = PricingSpec::default();
    if let Some(d) = map.remove("defaults") {
        match d.as_bool() {
            Some(b) => spec.defaults = b,
            None => errors.push(ConfigError::new(
                "pricing.defaults",
                "expected true or false",
            )),
        }
    }
    if let Some(f) = map.remove("file") {
        match f.as_str().filter(|s| !s.is_empty()) {
            Some(s) => spec.file = Some(PathBuf::from(s)),
            None => errors.push(ConfigError::new("pricing.file", "expected a file path")),
        }
    }
    // What is left is a table of its own: `currency` and `models` (not `as_of`: the
    // date is the shipped table's).
    let unknown: Vec<String> = map
        .keys()
        .filter(|k| !matches!(k.as_str(), "currency" | "models"))
        .cloned()
        .collect();
    for k in unknown {
        map.remove(&k);
        errors.push(ConfigError::new(
            format!("pricing.{k}"),
            format!("unknown field `{k}`, expected `currency`, `defaults`, `file` or `models`"),
        ));
    }
    match crate::cost::parse_table(&Value::Object(map)) {
        Ok(t) => {
            spec.currency = t.currency.clone();
            spec.table = t;
        }
        Err(e) => errors.extend(errors_at("pricing", e)),
    }
    spec
}

/// The table a config's `pricing:` makes, its file read (`files`: 1 MiB at most) unless
/// `refused` says why that file may not be opened (a config sent to the daemon carries its
/// prices inline; a shard report's, `carried`, opens only files below the working folder).
pub(super) fn compile(
    spec: &PricingSpec,
    base: &Path,
    refused: fn(&Path) -> Option<&'static str>,
    errors: &mut Vec<ConfigError>,
) -> Pricing {
    let file = spec.file.as_ref().and_then(|f| {
        if let Some(why) = refused(f) {
            errors.push(ConfigError::new("pricing.file", why));
            return None;
        }
        let path = if f.is_relative() {
            base.join(f)
        } else {
            f.clone()
        };
        read_table(&path, spec.currency.as_deref(), errors)
    });
    let currency = spec
        .currency
        .as_deref()
        .or(file.as_ref().and_then(|t| t.currency.as_deref()));
    let tables: Vec<&Table> = file.iter().chain([&spec.table]).collect();
    Pricing::of(currency, spec.defaults, &tables)
}

/// A pricing file's table, every problem named `pricing.file` with the file and the path
/// inside it.
fn read_table(path: &Path, currency: Option<&str>, errors: &mut Vec<ConfigError>) -> Option<Table> {
    let shown = path.display().to_string();
    let fail = |errors: &mut Vec<ConfigError>, why: String| {
        errors.push(ConfigError::new("pricing.file", format!("{shown}: {why}")));
        None
    };
    let text = match crate::files::read_to_string(path, crate::files::Limit::Config) {
        Ok(t) => t,
        Err(e) => return fail(errors, e.reason()),
    };
    let v: Value = match yaml_serde::from_str(&text) {
        Ok(v) => v,
        Err(e) => return fail(errors, format!("not YAML: {e}")),
    };
    let t = match crate::cost::parse_table(&v) {
        Ok(t) => t,
        Err(es) => {
            for e in es {
                let _: Option<Table> = fail(errors, format!("`{}`: {}", e.path, e.message));
            }
            return None;
        }
    };
    if let (Some(mine), Some(theirs)) = (currency, t.currency.as_deref())
        && mine != theirs
    {
        return fail(
            errors,
            format!("its currency {theirs} is not pricing.currency {mine}"),
        );
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use crate::config::load_errors;

    #[test]
    fn bad_prices_and_currencies_are_named_by_path_model_and_field() {
        let errors = load_errors(
            "pricing:\n  currency: UDS\n  models:\n    gpt-4o: {input: -1, output: abc}\n  extra: 1\n",
        );
        assert_eq!(
            errors,
            [
                "pricing.extra: unknown field `extra`, expected `currency`, `defaults`, `file` or `models`",
                "pricing.currency: `UDS` is not a known ISO 4217 currency code (e.g. USD, EUR, GBP)",
                "pricing.models.gpt-4o.input: model `gpt-4o`: `input` price -1 is negative; a price per million tokens is 0 or more",
                "pricing.models.gpt-4o.output: model `gpt-4o`: `output` price \"abc\" is not a number",
            ]
        );
    }

    #[test]
    fn a_pricing_file_is_read_beside_the_config_and_its_errors_name_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("prices.yaml"),
            "currency: EUR\nmodels:\n  mine: {input: 1, output: nope}\n",
        )
        .unwrap();
        let cfg = dir.path().join("flakestorm.yaml");
        std::fs::write(&cfg, "pricing: {file: prices.yaml}\n").unwrap();
        let load = |p: &std::path::Path| {
            crate::config::load_with_env(Some(p), &Default::default(), &Default::default())
        };
        let e = load(&cfg).unwrap_err();
        let got: Vec<String> = e.errors.iter().map(ToString::to_string).collect();
        let file = dir.path().join("prices.yaml").display().to_string();
        assert_eq!(
            got,
            [format!(
                "pricing.file: {file}: `models.mine.output`: model `mine`: `output` price \"nope\" is not a number"
            )]
        );
        std::fs::write(
            dir.path().join("prices.yaml"),
            "currency: EUR\nmodels:\n  mine: {input: 1, output: 2}\n",
        )
        .unwrap();
        let p = load(&cfg).unwrap().config.pricing;
        assert_eq!((p.currency.as_str(), p.as_of.as_ref()), ("EUR", None));
        assert!(p.price("mine").is_some() && p.price("gpt-4o").is_none());
    }

    #[test]
    fn without_pricing_the_shipped_table_is_used() {
        let c = crate::config::Config::default();
        assert_eq!(c.pricing.currency, "USD");
        assert!(c.pricing.price("gpt-4o-mini").is_some());
    }
}
