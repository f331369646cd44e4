//! Structure-aware edits for targets whose inputs are JSON (or YAML, which they are read
//! as): a seed as a value, a few nodes replaced, dropped, repeated or swapped for a node of
//! another seed, written back. Byte edits alone mostly break the syntax, so few inputs get
//! past a typed parser to the checks behind it; these stay well-formed and reach them.

use serde_json::{Value, json};

use crate::mutate::Rng;

/// Seeds as values: JSON, else YAML (figment, as the readers do); others are left out.
pub fn values(corpus: &[Vec<u8>]) -> Vec<Value> {
    use figment::providers::Format;
    use flakestorm::config::Yaml;
    corpus
        .iter()
        .filter_map(|seed| {
            serde_json::from_slice(seed).ok().or_else(|| {
                let text = std::str::from_utf8(seed).ok()?;
                figment::Figment::from(Yaml::string(text)).extract().ok()
            })
        })
        .collect()
}

/// Strings at the edges of what readers check and renderers escape.
fn string(rng: &mut Rng) -> Value {
    let pick = [
        "",
        "\u{0}\u{7f}\u{85}\u{2028}\u{feff}",
        "\u{202e}<script>{{x}}</script>&amp;%s\u{1F600}",
        "../../../../etc/passwd",
        "]]><!--",
        "1e400",
        "pass",
        "openai",
        "base64",
        "AAAA",
    ];
    match rng.chance(8) {
        true => json!("x".repeat(1 + rng.below(4096))),
        false => json!(pick[rng.below(pick.len())]),
    }
}

/// Numbers at the edges of what readers check (statuses, waits, scores, counts).
fn number(rng: &mut Rng) -> Value {
    let pick = [
        json!(0),
        json!(-1),
        json!(1),
        json!(0.5),
        json!(-0.0),
        json!(1e308),
        json!(-1e308),
        json!(5e-324),
        json!(99),
        json!(100),
        json!(599),
        json!(600),
        json!(999),
        json!(1000),
        json!(65535),
        json!(65536),
        json!(600000.0),
        json!(600000.1),
        json!(u64::MAX),
        json!(i64::MIN),
    ];
    pick[rng.below(pick.len())].clone()
}

/// `seed` with one to three structural edits, written as JSON. Most edits keep a node's
/// kind (a number for a number), so that typed readers accept the input and the checks
/// behind them run; some do not.
pub fn mutate(rng: &mut Rng, values: &[Value]) -> Vec<u8> {
    let mut v = values[rng.below(values.len())].clone();
    for _ in 0..1 + rng.below(3) {
        let target = rng.below(count(&v));
        let node = nth_mut(&mut v, target);
        let graft = graft(rng, values, node);
        edit(rng, node, graft);
    }
    serde_json::to_vec(&v).unwrap_or_default()
}

/// A node of another seed, of the same kind as `like` when one turns up in a few tries.
fn graft(rng: &mut Rng, values: &[Value], like: &Value) -> Value {
    let kind = std::mem::discriminant(like);
    let mut found = &Value::Null;
    for _ in 0..8 {
        let donor = &values[rng.below(values.len())];
        found = nth(donor, rng.below(count(donor)));
        if std::mem::discriminant(found) == kind {
            break;
        }
    }
    found.clone()
}

fn edit(rng: &mut Rng, node: &mut Value, graft: Value) {
    match (rng.below(6), &mut *node) {
        (0, Value::Array(items)) if !items.is_empty() => {
            // Repeat an item: many entries, cases, calls for one key.
            let i = rng.below(items.len());
            let times = if rng.chance(8) { 64 } else { 1 + rng.below(3) };
            for _ in 0..times {
                items.insert(i, items[i].clone());
            }
        }
        (0, Value::Object(map)) if !map.is_empty() => {
            let key = map.keys().nth(rng.below(map.len())).cloned();
            map.shift_remove(&key.unwrap_or_default());
        }
        (0 | 1, Value::String(s)) if rng.chance(2) => {
            let cut = s.char_indices().nth(rng.below(s.chars().count() + 1));
            s.truncate(cut.map_or(s.len(), |(i, _)| i));
            s.push_str(["\u{85}", "\u{7f}", "\n", "\"", "{{", "=", "\u{1F600}"][rng.below(7)]);
        }
        (0 | 1, Value::String(_)) => *node = string(rng),
        (0 | 1, Value::Number(_)) => *node = number(rng),
        (0 | 1, Value::Bool(b)) => *b = !*b,
        (1, Value::Array(items)) if !items.is_empty() => {
            items.remove(rng.below(items.len()));
        }
        (1, Value::Object(map)) => {
            map.insert(format!("_{}", rng.below(4)), graft);
        }
        (2, _) => *node = graft,
        (3, _) => {
            *node = if rng.chance(2) {
                string(rng)
            } else {
                number(rng)
            }
        }
        (4, _) => *node = [json!(null), json!([]), json!({}), json!(true)][rng.below(4)].clone(),
        _ => *node = Value::Array(vec![node.take()]),
    }
}

fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(map) => map.values().map(count).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
    }
}

/// The `i`-th node in pre-order (0: `v` itself).
fn nth(v: &Value, mut i: usize) -> &Value {
    if i == 0 {
        return v;
    }
    i -= 1;
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => return v,
    };
    for child in children {
        let n = count(child);
        if i < n {
            return nth(child, i);
        }
        i -= n;
    }
    v
}

fn nth_mut(v: &mut Value, mut i: usize) -> &mut Value {
    if i == 0 {
        return v;
    }
    i -= 1;
    let mut at = None;
    let counts: Vec<usize> = match &*v {
        Value::Array(items) => items.iter().map(count).collect(),
        Value::Object(map) => map.values().map(count).collect(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => vec![],
    };
    for (k, n) in counts.into_iter().enumerate() {
        if i < n {
            at = Some((k, i));
            break;
        }
        i -= n;
    }
    let Some((k, i)) = at else { return v };
    match v {
        Value::Array(items) => nth_mut(&mut items[k], i),
        Value::Object(map) => match map.values_mut().nth(k) {
            Some(child) => nth_mut(child, i),
            None => unreachable!("k < the object's length"),
        },
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => v,
    }
}
