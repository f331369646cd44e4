//! The dates of a text for `facts`: ISO dates and datetimes, `Nov 28, 2026` and
//! `28 November 2026`, with their spans. Pure.

use std::sync::LazyLock;

use regex::Regex;

use super::{Fact, Kind, Value};

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
pub(super) fn dates(text: &str) -> Vec<(usize, usize, Fact)> {
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
