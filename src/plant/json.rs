//! Data faults on a JSON document: `corrupt` (the values `fields:` names, or by default
//! every number, date and short string, replaced by canaries), `stale` (ISO dates, and Unix
//! times under a key that names a time, moved back) and `empty` (an empty value of the
//! document's own kind). Keys, structure and every other value stay; each value replaced
//! is recorded with its path below `root`.

use serde_json::Value;

use super::canary::Canaries;
use super::path::{JsonPath, Seg, get_mut, render};
use super::{MAX_PLANTED, text};
use crate::exchange::Planted;

/// Where planted values are recorded: under `root` (`$`, `$.result.structuredContent`, …).
pub(super) struct Record<'a> {
    pub root: &'a str,
    pub out: &'a mut Vec<Planted>,
}

impl Record<'_> {
    fn push(&mut self, loc: &[Seg], original: &str, planted: &str) {
        self.out.push(Planted {
            path: render(self.root, loc),
            original: Some(original.to_string()),
            planted: planted.to_string(),
        });
    }

    fn full(&self) -> bool {
        self.out.len() >= MAX_PLANTED
    }
}

/// `corrupt` on `v`: the values `fields` name (every eligible leaf below one that names
/// an object or array), or with no `fields` the numbers, dates and short strings.
pub(super) fn corrupt(v: &mut Value, fields: &[JsonPath], c: &mut Canaries, rec: &mut Record) {
    if fields.is_empty() {
        return walk(v, &mut vec![], false, c, rec);
    }
    let mut seen = std::collections::HashSet::new();
    let mut locs: Vec<Vec<Seg>> = vec![];
    for path in fields {
        for loc in path.select(v) {
            if seen.insert(loc.clone()) {
                locs.push(loc);
            }
        }
    }
    // A location inside another selected one is corrupted with it, once.
    locs.retain(|l| !(0..l.len()).any(|n| seen.contains(&l[..n])));
    for mut loc in locs {
        if let Some(node) = get_mut(v, &loc) {
            walk(node, &mut loc, true, c, rec);
        }
    }
}

/// Replaces the eligible leaves below `v` (at `loc`); `named`: `fields:` chose them, so a
/// long string's numbers and dates are eligible too.
fn walk(v: &mut Value, loc: &mut Vec<Seg>, named: bool, c: &mut Canaries, rec: &mut Record) {
    if rec.full() {
        return;
    }
    match v {
        Value::Number(n) => {
            let text = n.to_string();
            let new = c.number(&text).and_then(|t| Some((t.parse().ok()?, t)));
            if let Some((num, t)) = new {
                rec.push(loc, &text, &t);
                *v = Value::Number(num);
            }
        }
        Value::String(s) => corrupt_string(s, loc, named, c, rec),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                loc.push(Seg::Index(i));
                walk(item, loc, named, c, rec);
                loc.pop();
            }
        }
        Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                loc.push(Seg::Key(k.clone()));
                walk(item, loc, named, c, rec);
                loc.pop();
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
}

/// A date (its day moved), a short string (a canary), or, when named, a longer string's
/// numbers and dates.
fn corrupt_string(s: &mut String, loc: &[Seg], named: bool, c: &mut Canaries, rec: &mut Record) {
    let new = if super::date::is_date(s) {
        let day = super::date::find(s)[0];
        c.date(day.date).map(|d| format!("{d}{}", &s[day.end..]))
    } else {
        c.short_string(s)
    };
    if let Some(new) = new {
        rec.push(loc, s, &new);
        *s = new;
    } else if named {
        let reps = text::corrupt(s, c);
        for r in &reps {
            rec.push(loc, &s[r.start..r.end], &r.new);
        }
        *s = text::apply(s, &reps);
    }
}

/// `stale` on `v`: every ISO date in its strings, and every Unix time (seconds or
/// milliseconds) under a key that names a time, moved back `days`.
pub(super) fn stale(v: &mut Value, days: u32, rec: &mut Record) {
    stale_walk(v, &mut vec![], None, days, rec);
}

fn stale_walk(v: &mut Value, loc: &mut Vec<Seg>, key: Option<&str>, days: u32, rec: &mut Record) {
    if rec.full() {
        return;
    }
    match v {
        Value::Number(n) if key.is_some_and(names_time) => {
            let text = n.to_string();
            let new = epoch_back(&text, days).and_then(|t| Some((t.parse().ok()?, t)));
            if let Some((num, t)) = new {
                rec.push(loc, &text, &t);
                *v = Value::Number(num);
            }
        }
        Value::String(s) => {
            let reps = text::stale(s, days);
            for r in &reps {
                rec.push(loc, &s[r.start..r.end], &r.new);
            }
            *s = text::apply(s, &reps);
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                loc.push(Seg::Index(i));
                stale_walk(item, loc, key, days, rec);
                loc.pop();
            }
        }
        Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                loc.push(Seg::Key(k.clone()));
                stale_walk(item, loc, Some(k), days, rec);
                loc.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Whether a key names a time: `*_at`, `*At`, `*_ts`, `*_on`, `*time*`, `*date*`,
/// `ts`, `timestamp`, `updated`, `created`, `expires`, `modified`, `published`, …
pub(super) fn names_time(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let words = [
        "time",
        "date",
        "updated",
        "created",
        "expire",
        "modified",
        "published",
        "issued",
    ];
    ["_at", "_ts", "_on"].iter().any(|s| k.ends_with(s))
        || key.ends_with("At")
        || words.iter().any(|w| k.contains(w))
        || ["ts", "since", "until", "when"].contains(&k.as_str())
}

/// A Unix time written `text` moved back `days`: seconds (1e9..4.2e9, 2001 to 2103) or
/// milliseconds (1e12..4.2e12), decimals kept; `None` for any other number.
pub(super) fn epoch_back(text: &str, days: u32) -> Option<String> {
    let v: f64 = text.parse().ok()?;
    let unit = if (1e9..4.2e9).contains(&v) {
        86_400.0
    } else if (1e12..4.2e12).contains(&v) {
        86_400_000.0
    } else {
        return None;
    };
    let new = v - f64::from(days) * unit;
    let decimals = match text.split_once('.') {
        Some((_, f)) if !text.contains(['e', 'E']) => f.len(),
        Some(_) | None => 0,
    };
    Some(format!("{new:.decimals$}"))
}

/// `v` emptied as its kind is: `[]`, `{}`, `""`; the error says why it cannot be.
pub(super) fn empty(v: &Value) -> Result<Value, String> {
    let already = |what: &str| Err(format!("the body is already empty ({what})"));
    match v {
        Value::Array(a) if a.is_empty() => already("[]"),
        Value::Object(m) if m.is_empty() => already("{}"),
        Value::String(s) if s.is_empty() => already("\"\""),
        Value::Array(_) => Ok(Value::Array(vec![])),
        Value::Object(_) => Ok(Value::Object(serde_json::Map::new())),
        Value::String(_) => Ok(Value::String(String::new())),
        Value::Null | Value::Bool(_) | Value::Number(_) => Err(format!(
            "the body is the JSON value `{v}`, which has no empty form"
        )),
    }
}

/// Every number in `v`, and in its strings (to keep canaries apart from them).
pub(super) fn numbers(v: &Value, out: &mut Vec<f64>) {
    match v {
        Value::Number(n) => out.extend(n.as_f64()),
        Value::String(s) => out.extend(text::values(s)),
        Value::Array(items) => items.iter().for_each(|i| numbers(i, out)),
        Value::Object(m) => m.values().for_each(|i| numbers(i, out)),
        Value::Null | Value::Bool(_) => {}
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
