//! Facts in text: the numbers (with their unit family), amounts, dates, years and
//! identifiers an answer states, each with the precision it was written at, so that a
//! fact can be told supported by a value a tool returned (`21°C` by `"temp": 21.4`, `$4.2M`
//! by `4213000`) or not. A hand-written scanner, not a model: the same text always gives
//! the same facts (docs/outcomes.md, "Facts"). Pure.

use serde::{Deserialize, Serialize};

#[path = "facts_dates.rs"]
mod dates;
#[path = "facts_numbers.rs"]
mod numbers;

use dates::dates;
use numbers::numbers;

/// What kind of value a fact is: a number of a unit family (`temperature`, `percent`,
/// `distance`…; `number` without a unit), an amount of money, a date, a year, an
/// identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Kind(pub String);

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A fact's value, as precise as it was written.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `v` written to within `step` (21 → step 1, 21.5 → 0.1, 4.2 million → 100000).
    Num {
        v: f64,
        step: f64,
    },
    Date {
        y: i32,
        m: u32,
        d: u32,
    },
    /// Upper-cased.
    Ident(String),
}

/// One fact as the text states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// As written (`21°C`, `$4.2M`, `ORD-4821`).
    pub text: String,
    pub kind: Kind,
    pub value: Value,
}

/// Every fact `text` states, in order. Single-digit whole numbers without a unit (list
/// items, small counts) are too common to be facts of anyone's.
pub fn facts(text: &str) -> Vec<Fact> {
    // The bytes a fact already took: a later one over them is part of it. Numbers and
    // words do not overlap each other, so marking and testing stays linear in the text.
    let mut taken = vec![false; text.len()];
    let overlaps = |taken: &[bool], s: usize, e: usize| taken[s..e].iter().any(|t| *t);
    let mut out: Vec<(usize, Fact)> = vec![];
    for (start, end, fact) in dates(text) {
        taken[start..end].fill(true);
        out.push((start, fact));
    }
    for n in numbers(text) {
        if overlaps(&taken, n.start, n.end) {
            continue;
        }
        taken[n.start..n.end].fill(true);
        if let Some(fact) = n.fact(text) {
            out.push((n.start, fact));
        }
    }
    for (start, end) in words(text) {
        let word = &text[start..end];
        if !overlaps(&taken, start, end) && identifier(word) {
            out.push((
                start,
                Fact {
                    text: word.to_string(),
                    kind: Kind("identifier".into()),
                    value: Value::Ident(word.to_uppercase()),
                },
            ));
        }
    }
    out.sort_by_key(|(at, _)| *at);
    out.into_iter().map(|(_, f)| f).collect()
}

/// Every date in `text`, as (year, month, day).
pub fn dates_of(text: &str) -> Vec<(i32, u32, u32)> {
    // A date has a year of four digits and a day: most strings of a body have fewer.
    if text.bytes().filter(u8::is_ascii_digit).count() < 5 {
        return vec![];
    }
    dates(text)
        .into_iter()
        .filter_map(|(_, _, f)| match f.value {
            Value::Date { y, m, d } => Some((y, m, d)),
            Value::Num { .. } | Value::Ident(_) => None,
        })
        .collect()
}

/// Every number in `text`, with no precision or unit rules: what a source (a tool's text,
/// a string in its JSON) offers as support, each exact to its last digit.
pub fn source_numbers(text: &str) -> Vec<f64> {
    numbers(text).into_iter().map(|n| n.value()).collect()
}

/// The values a source may give that support a fact of `kind` worth `fact_v` written to
/// within `step`, as closed ranges: the value itself once rounded to that precision; a
/// percentage also as a fraction (0.45 for 45 %), a temperature also in the other scale.
pub fn support_ranges(fact_v: f64, step: f64, kind: &Kind) -> Vec<(f64, f64)> {
    let tol = step / 2.0 + 1e-9 * fact_v.abs().max(1.0);
    let (lo, hi) = (fact_v - tol, fact_v + tol);
    let mut out = vec![(lo, hi)];
    match kind.0.as_str() {
        "percent" => out.push(((lo / 100.0).max(-1.0), (hi / 100.0).min(1.0))),
        // A °C value read as °F (n·9/5 + 32 = v), a °F value read as °C ((n − 32)·5/9 = v).
        "temperature" => out.extend([
            ((lo - 32.0) * 5.0 / 9.0, (hi - 32.0) * 5.0 / 9.0),
            (lo * 9.0 / 5.0 + 32.0, hi * 9.0 / 5.0 + 32.0),
        ]),
        _ => {}
    }
    out
}

/// The identifier-like words of `text` (`identifier`), lower-cased: what an identifier
/// fact is looked up among.
pub fn identifiers(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text)
        .into_iter()
        .map(move |(s, e)| &text[s..e])
        .filter(|w| identifier(w))
        .map(str::to_lowercase)
}

/// The words of `text` that could be identifiers: runs of letters, digits, `-` and `_`,
/// without the punctuation around them.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut start = None;
    let part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (part(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let w = text[s..i].trim_matches(|c| c == '-' || c == '_');
                let lead = text[s..i].len() - text[s..i].trim_start_matches(['-', '_']).len();
                out.push((s + lead, s + lead + w.len()));
                start = None;
            }
            (true, Some(_)) | (false, None) => {}
        }
    }
    out
}

/// An identifier: four or more characters with letters and digits both (`ORD-4821`,
/// `A1B2`), not an ordinal (`21st`) or a decade (`1990s`).
fn identifier(w: &str) -> bool {
    let letters = w.chars().filter(char::is_ascii_alphabetic).count();
    let digits = w.chars().filter(char::is_ascii_digit).count();
    if w.len() < 4 || letters == 0 || digits == 0 {
        return false;
    }
    let lower = w.to_lowercase();
    let tail = lower.trim_start_matches(|c: char| c.is_ascii_digit());
    let ordinal = lower.len() != tail.len() && ["st", "nd", "rd", "th", "s"].contains(&tail);
    !ordinal
}

#[cfg(test)]
#[path = "facts_tests.rs"]
mod tests;
