use super::*;

/// Whether `v` supports a fact of `kind` worth `fact_v` to within `step`.
fn num_supports(v: f64, fact_v: f64, step: f64, kind: &Kind) -> bool {
    support_ranges(fact_v, step, kind)
        .iter()
        .any(|(lo, hi)| (*lo..=*hi).contains(&v))
}

fn kinds(text: &str) -> Vec<(String, String)> {
    facts(text)
        .into_iter()
        .map(|f| (f.text, f.kind.0))
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn numbers_with_units_amounts_dates_and_identifiers() {
    let got = kinds(
        "It is 21°C in Paris (humidity 64 %), wind 12 km/h. Order ORD-4821 costs $1,234.50, \
         shipped on 2026-11-28; revenue was $4.2M in 2025 and 3 items remain.",
    );
    assert_eq!(
        got,
        [
            pair("21°C", "temperature"),
            pair("64 %", "percent"),
            pair("12 km/h", "speed"),
            pair("ORD-4821", "identifier"),
            pair("$1,234.50", "amount"),
            pair("2026-11-28", "date"),
            pair("$4.2M", "amount"),
            pair("2025", "year"),
        ]
    );
}

#[test]
fn values_carry_the_precision_they_were_written_at() {
    let f = facts("about 21.5 degrees, or $4.2 million, on Nov 28, 2026 and 1 December 2026");
    let nums: Vec<(f64, f64)> = f
        .iter()
        .filter_map(|f| match f.value {
            Value::Num { v, step } => Some((v, step)),
            Value::Date { .. } | Value::Ident(_) => None,
        })
        .collect();
    assert_eq!(nums.len(), 2);
    assert!((nums[0].0 - 21.5).abs() < 1e-9 && (nums[0].1 - 0.1).abs() < 1e-9);
    assert!((nums[1].0 - 4.2e6).abs() < 1e-3 && (nums[1].1 - 1e5).abs() < 1e-3);
    let dates: Vec<&Value> = f
        .iter()
        .map(|f| &f.value)
        .filter(|v| matches!(v, Value::Date { .. }))
        .collect();
    assert_eq!(
        dates,
        [
            &Value::Date {
                y: 2026,
                m: 11,
                d: 28
            },
            &Value::Date {
                y: 2026,
                m: 12,
                d: 1
            }
        ]
    );
}

#[test]
fn words_with_digits_glued_are_not_numbers_and_small_counts_are_no_facts() {
    assert!(kinds("the 3rd try, version v2, step 7 of 9, Q3").is_empty());
    assert_eq!(kinds("A1B2 and 1990s"), [pair("A1B2", "identifier")]);
    assert_eq!(kinds("-12.5 °F"), [pair("-12.5 °F", "temperature")]);
    assert_eq!(
        kinds("5km and 10ms"),
        [pair("5km", "distance"), pair("10ms", "duration")]
    );
}

#[test]
fn support_rounds_to_the_facts_precision_and_knows_percent_and_scales() {
    let t = Kind("temperature".into());
    assert!(num_supports(21.4, 21.0, 1.0, &t));
    assert!(!num_supports(21.6, 21.0, 1.0, &t));
    assert!(
        !num_supports(21.0, 21.34, 0.01, &t),
        "more precise than the source: invented"
    );
    assert!(num_supports(21.0, 69.8, 0.1, &t), "21 °C is 69.8 °F");
    let p = Kind("percent".into());
    assert!(num_supports(0.45, 45.0, 1.0, &p));
    assert!(num_supports(
        4_213_000.0,
        4.2e6,
        1e5,
        &Kind("amount".into())
    ));
}

#[test]
fn source_numbers_are_every_number_of_a_text() {
    assert_eq!(
        source_numbers("t=21.5, n: 3, total 1,200"),
        [21.5, 3.0, 1200.0]
    );
}

#[test]
fn multi_byte_text_around_numbers_is_safe() {
    let got = kinds("Température: 21 °C — coût 12 € et İstanbul 45 km");
    assert_eq!(
        got,
        [
            pair("21 °C", "temperature"),
            pair("12 €", "amount"),
            pair("45 km", "distance")
        ]
    );
}
