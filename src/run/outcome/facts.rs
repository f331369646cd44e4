//! Facts in text: the numbers (with their unit family), amounts, dates, years and
//! identifiers an answer states, each with the precision it was written at, so that a
//! fact can be told supported by a value a tool returned (`21°C` by `"temp": 21.4`, `$4.2M`
//! by `4213000`) or not. A hand-written scanner, not a model: the same text always gives
//! the same facts (docs/outcomes.md, "Facts"). Pure.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

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
    let mut taken: Vec<(usize, usize)> = vec![];
    let mut out: Vec<(usize, Fact)> = vec![];
    for (start, end, fact) in dates(text) {
        taken.push((start, end));
        out.push((start, fact));
    }
    for n in numbers(text) {
        if taken.iter().any(|&(s, e)| n.start < e && n.end > s) {
            continue;
        }
        taken.push((n.start, n.end));
        if let Some(fact) = n.fact(text) {
            out.push((n.start, fact));
        }
    }
    for (start, end) in words(text) {
        let word = &text[start..end];
        let overlaps = taken.iter().any(|&(s, e)| start < e && end > s);
        if !overlaps && identifier(word) {
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

/// Whether `v` (a value a source gave) supports `fact`'s number: equal once rounded to the
/// precision the fact was written at; a percentage also as a fraction (0.45 for 45 %), a
/// temperature also in the other scale.
pub fn num_supports(v: f64, fact_v: f64, step: f64, kind: &Kind) -> bool {
    let near = |x: f64| (x - fact_v).abs() <= step / 2.0 + 1e-9 * fact_v.abs().max(1.0);
    near(v)
        || (kind.0 == "percent" && v.abs() <= 1.0 && near(v * 100.0))
        || (kind.0 == "temperature" && (near(v * 9.0 / 5.0 + 32.0) || near((v - 32.0) * 5.0 / 9.0)))
}

/// A number found in text: where, its digits, and what follows it.
struct Number {
    start: usize,
    end: usize,
    digits: String,
    decimals: u32,
    /// Set by a currency sign or code before it, or a currency word after it.
    currency: bool,
    multiplier: f64,
    family: Option<&'static str>,
}

impl Number {
    fn value(&self) -> f64 {
        self.digits.parse::<f64>().unwrap_or(0.0) * self.multiplier
    }

    fn fact(&self, text: &str) -> Option<Fact> {
        let v = self.value();
        let step = 10f64.powi(-(self.decimals as i32)) * self.multiplier;
        let whole = self.decimals == 0 && self.multiplier == 1.0;
        let kind = match (self.currency, self.family) {
            (true, _) => "amount",
            (false, Some(f)) => f,
            (false, None) if whole && (1900.0..=2100.0).contains(&v) => "year",
            // A list item's number, a small count: everyone's, no one's fact.
            (false, None) if whole && v.abs() < 10.0 => return None,
            (false, None) => "number",
        };
        Some(Fact {
            text: text[self.start..self.end].trim().to_string(),
            kind: Kind(kind.into()),
            value: Value::Num { v, step },
        })
    }
}

/// Unit words and symbols after a number, by family (lower case).
const UNITS: &[(&str, &[&str])] = &[
    (
        "temperature",
        &[
            "°c",
            "°f",
            "°",
            "degrees",
            "degree",
            "celsius",
            "fahrenheit",
            "ºc",
            "ºf",
        ],
    ),
    ("percent", &["%", "percent", "per cent", "pct"]),
    (
        "distance",
        &[
            "km",
            "kilometers",
            "kilometres",
            "m",
            "meters",
            "metres",
            "cm",
            "mm",
            "mi",
            "miles",
            "mile",
            "ft",
            "feet",
        ],
    ),
    ("speed", &["km/h", "kmh", "kph", "mph", "m/s", "knots"]),
    (
        "mass",
        &[
            "kg", "g", "grams", "lb", "lbs", "pounds", "oz", "tons", "tonnes",
        ],
    ),
    (
        "duration",
        &[
            "ms", "s", "sec", "secs", "seconds", "second", "min", "mins", "minutes", "minute", "h",
            "hr", "hrs", "hours", "hour", "days", "day", "weeks", "week", "months", "month",
            "years", "year",
        ],
    ),
    ("data", &["kb", "mb", "gb", "tb", "bytes"]),
    ("energy", &["kwh", "kw", "w", "watts", "mw"]),
    ("volume", &["l", "ml", "liters", "litres", "gallons"]),
    ("frequency", &["hz", "khz", "mhz", "ghz"]),
];

const MULTIPLIERS: &[(&str, f64)] = &[
    ("thousand", 1e3),
    ("k", 1e3),
    ("million", 1e6),
    ("mn", 1e6),
    ("m", 1e6),
    ("billion", 1e9),
    ("bn", 1e9),
    ("b", 1e9),
    ("trillion", 1e12),
    ("tn", 1e12),
];

const CURRENCY_BEFORE: &[&str] = &[
    "us$", "$", "€", "£", "¥", "₹", "usd", "eur", "gbp", "jpy", "chf", "cad", "aud",
];
const CURRENCY_AFTER: &[&str] = &[
    "€",
    "£",
    "$",
    "usd",
    "eur",
    "gbp",
    "jpy",
    "chf",
    "cad",
    "aud",
    "dollars",
    "dollar",
    "euros",
    "euro",
    "pounds sterling",
    "yen",
];

/// The numbers of `text`: digits with thousands separators and a decimal part, a sign,
/// a currency before, a multiplier and a unit after.
fn numbers(text: &str) -> Vec<Number> {
    let b = text.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        // `ORD-4821`: digits after a hyphen inside a word are that word's.
        let in_word = i > 1 && b[i - 1] == b'-' && b[i - 2].is_ascii_alphanumeric();
        if !b[i].is_ascii_digit() || (i > 0 && glued(b[i - 1])) || in_word {
            // Skip the rest of a word or number this digit is glued to.
            if b[i].is_ascii_alphanumeric() {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
            } else {
                i += 1;
            }
            continue;
        }
        let (end, digits, decimals) = scan_digits(b, i);
        // Glued to letters (`3rd`, `A1`, `v2`, a decade's `1990s`): a word, not a number.
        let decade = digits.len() == 4 && b.get(end) == Some(&b's');
        if end < b.len() && b[end].is_ascii_alphabetic() && (decade || !unit_glued(&text[end..])) {
            i = end;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            continue;
        }
        let negative = i > 0 && b[i - 1] == b'-' && (i == 1 || !b[i - 2].is_ascii_alphanumeric());
        let start = if negative { i - 1 } else { i };
        let (start, currency) = currency_before(text, start);
        let mut n = Number {
            start,
            end,
            digits: if negative {
                format!("-{digits}")
            } else {
                digits
            },
            decimals,
            currency,
            multiplier: 1.0,
            family: None,
        };
        after(text, &mut n);
        i = n.end.max(end);
        out.push(n);
    }
    out
}

/// A byte a number cannot follow directly and still be one (`v2`, `1.2.3`).
fn glued(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'.' || c == b'_'
}

/// Whether letters right after digits are a unit or multiplier (`5km`, `$4.2M`, `10ms`).
fn unit_glued(rest: &str) -> bool {
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '/')
        .collect::<String>()
        .to_lowercase();
    MULTIPLIERS.iter().any(|(m, _)| *m == word)
        || UNITS.iter().any(|(_, us)| us.contains(&word.as_str()))
}

/// The end of the number starting at `i`, its digits (separators dropped) and decimals.
fn scan_digits(b: &[u8], i: usize) -> (usize, String, u32) {
    let mut j = i;
    let mut digits = String::new();
    while j < b.len() && b[j].is_ascii_digit() {
        digits.push(b[j] as char);
        j += 1;
        // A thousands separator: `,` and exactly three digits.
        if j + 3 < b.len() + 1
            && b.get(j) == Some(&b',')
            && b.get(j + 1..j + 4)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && b.get(j + 4).is_none_or(|c| !c.is_ascii_digit())
        {
            j += 1;
        }
    }
    let mut decimals = 0;
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        digits.push('.');
        j += 1;
        while j < b.len() && b[j].is_ascii_digit() {
            digits.push(b[j] as char);
            decimals += 1;
            j += 1;
        }
    }
    (j, digits, decimals)
}

/// A currency sign or code right before `start` (spaces between allowed): where the
/// amount starts then.
fn currency_before(text: &str, start: usize) -> (usize, bool) {
    let trimmed = text[..start].trim_end_matches(' ');
    for c in CURRENCY_BEFORE {
        let Some(at) = trimmed.len().checked_sub(c.len()) else {
            continue;
        };
        if !trimmed.is_char_boundary(at) || !trimmed[at..].eq_ignore_ascii_case(c) {
            continue;
        }
        let head = &trimmed[..at];
        let sign = !c.chars().all(|ch| ch.is_ascii_alphabetic());
        // A code is a word of its own (`USD 5`, not `xusd5`).
        if sign || head.chars().last().is_none_or(|ch| !ch.is_alphanumeric()) {
            return (at, true);
        }
    }
    (start, false)
}

/// Reads what follows a number: a multiplier, then a currency word or a unit.
fn after(text: &str, n: &mut Number) {
    let mut at = n.end;
    if let Some((len, m)) = word_after(text, at, MULTIPLIERS.iter().map(|(w, m)| (*w, *m))) {
        // A bare `m`/`b` is a multiplier only on money (`$4.2M`); else `m` is metres.
        let bare = text[at..at + len].trim().len() == 1;
        if !bare || n.currency {
            n.multiplier = m;
            at += len;
            n.end = at;
        }
    }
    if let Some((len, ())) = word_after(text, at, CURRENCY_AFTER.iter().map(|w| (*w, ()))) {
        n.currency = true;
        n.end = at + len;
        return;
    }
    let all = UNITS
        .iter()
        .flat_map(|(family, units)| units.iter().map(move |u| (*u, *family)));
    if let Some((len, family)) = word_after(text, at, all) {
        n.family = Some(family);
        n.end = at + len;
    }
}

/// The longest of `words` right after `at` (one space allowed before it), ending where a
/// word ends; its length with the space, and its tag.
fn word_after<T: Copy>(
    text: &str,
    at: usize,
    words: impl Iterator<Item = (&'static str, T)>,
) -> Option<(usize, T)> {
    let rest = &text[at..];
    let skip = match rest.as_bytes().first() {
        Some(b' ') => 1,
        _ => 0,
    };
    // The longest unit is short: look no further (keeps a long text's scan linear).
    let mut cut = rest.len().min(skip + 20);
    while !rest.is_char_boundary(cut) {
        cut -= 1;
    }
    let lower = rest[skip..cut].to_lowercase();
    let mut best: Option<(usize, T)> = None;
    for (w, tag) in words {
        if !lower.starts_with(w) {
            continue;
        }
        let tail = &lower[w.len()..];
        let ends = tail.chars().next().is_none_or(|c| !c.is_alphanumeric());
        let symbol = !w.chars().any(|c| c.is_ascii_alphabetic());
        if (ends || symbol) && best.is_none_or(|(l, _)| w.len() + skip > l) {
            // Lower-casing keeps these ASCII words' lengths; `°` and `€` are the only
            // multi-byte ones and are their own lower case.
            best = Some((skip + w.len(), tag));
        }
    }
    best
}

static ISO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(\d{4})[-/](\d{2})[-/](\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
    )
    .expect("a valid regex")
});
static MONTH_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b({MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"
    ))
    .expect("a valid regex")
});
static DAY_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTHS})\.?,?\s+(\d{{4}})\b"
    ))
    .expect("a valid regex")
});
const MONTHS: &str = "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?";

fn month(name: &str) -> Option<u32> {
    let n = name.to_lowercase();
    let all = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    all.iter()
        .position(|m| n.starts_with(m))
        .map(|i| i as u32 + 1)
}

fn date(y: &str, m: u32, d: &str, text: &str) -> Option<Fact> {
    let (y, d): (i32, u32) = (y.parse().ok()?, d.parse().ok()?);
    let valid = (1..=12).contains(&m) && (1..=31).contains(&d);
    valid.then(|| Fact {
        text: text.to_string(),
        kind: Kind("date".into()),
        value: Value::Date { y, m, d },
    })
}

/// The dates of `text` (ISO, `Nov 28, 2026`, `28 November 2026`) with their spans.
fn dates(text: &str) -> Vec<(usize, usize, Fact)> {
    let mut out = vec![];
    for c in ISO.captures_iter(text) {
        let whole = c.get(0).expect("a match");
        let m = c[2].parse().unwrap_or(0);
        if let Some(f) = date(&c[1], m, &c[3], whole.as_str()) {
            out.push((whole.start(), whole.end(), f));
        }
    }
    for c in MONTH_FIRST.captures_iter(text) {
        let whole = c.get(0).expect("a match");
        if let Some(f) = month(&c[1]).and_then(|m| date(&c[3], m, &c[2], whole.as_str())) {
            out.push((whole.start(), whole.end(), f));
        }
    }
    for c in DAY_FIRST.captures_iter(text) {
        let whole = c.get(0).expect("a match");
        if let Some(f) = month(&c[2]).and_then(|m| date(&c[3], m, &c[1], whole.as_str())) {
            out.push((whole.start(), whole.end(), f));
        }
    }
    out
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
