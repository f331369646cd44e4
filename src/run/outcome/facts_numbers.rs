//! The numbers of a text for `facts`: digits with thousands separators and a decimal
//! part, a sign, a currency before, a multiplier (`4.2M`, `3 billion`) and a unit after,
//! each unit by its family (`°C` and `°F` are both `temperature`). Pure.

use super::{Fact, Kind, Value};

/// A number found in text: where, its digits, and what follows it.
pub(super) struct Number {
    pub start: usize,
    pub end: usize,
    digits: String,
    decimals: u32,
    /// Set by a currency sign or code before it, or a currency word after it.
    currency: bool,
    multiplier: f64,
    family: Option<&'static str>,
}

impl Number {
    pub fn value(&self) -> f64 {
        self.digits.parse::<f64>().unwrap_or(0.0) * self.multiplier
    }

    pub fn fact(&self, text: &str) -> Option<Fact> {
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
pub(super) fn numbers(text: &str) -> Vec<Number> {
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
