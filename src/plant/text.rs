//! Data faults on plain text (a `text/*` body, an MCP text item that is not JSON, a long
//! string a `fields:` path names): its ISO dates and its numbers, found by their shape,
//! replaced where they stand; every other character stays. A number is a run of digits
//! (thousands grouped with commas, a decimal part) not inside a word, a version (`1.2.3`),
//! a time (`10:30`) or a date; units may follow it (`4.1B`, `12km`).

use super::canary::Canaries;
use super::date;

/// One value of a text replaced: its byte range and what goes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Replacement {
    pub start: usize,
    pub end: usize,
    pub new: String,
}

/// `corrupt` on `s`: its dates moved 3..=400 days, its numbers replaced by canaries.
pub(super) fn corrupt(s: &str, c: &mut Canaries) -> Vec<Replacement> {
    let dates = date::find(s);
    let mut out: Vec<Replacement> = dates
        .iter()
        .filter_map(|d| {
            let new = c.date(d.date)?;
            Some(Replacement {
                start: d.start,
                end: d.end,
                new,
            })
        })
        .collect();
    for (start, end) in numbers(s) {
        let token = &s[start..end];
        if let Some(new) = grouped(token, |plain| c.number(plain)) {
            out.push(Replacement { start, end, new });
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

/// `stale` on `s`: its dates moved back `days`.
pub(super) fn stale(s: &str, days: u32) -> Vec<Replacement> {
    date::find(s)
        .into_iter()
        .filter_map(|d| {
            let new = date::shift(d.date, -i64::from(days))?;
            Some(Replacement {
                start: d.start,
                end: d.end,
                new,
            })
        })
        .collect()
}

/// `s` with `reps` (in order, not overlapping) made.
pub(super) fn apply(s: &str, reps: &[Replacement]) -> String {
    let mut out = String::with_capacity(len_after(s, reps));
    let mut at = 0;
    for r in reps {
        out.push_str(&s[at..r.start]);
        out.push_str(&r.new);
        at = r.end;
    }
    out.push_str(&s[at..]);
    out
}

/// The length of `apply(s, reps)`, known before it is built.
pub(super) fn len_after(s: &str, reps: &[Replacement]) -> usize {
    reps.iter().fold(s.len(), |n, r| {
        n.saturating_add(r.new.len())
            .saturating_sub(r.end - r.start)
    })
}

/// The values of every number in `s` (to keep canaries apart from them).
pub(super) fn values(s: &str) -> impl Iterator<Item = f64> + '_ {
    numbers(s)
        .into_iter()
        .filter_map(|(a, b)| s[a..b].replace(',', "").parse().ok())
}

/// A number written with thousands commas planted as `plant` says of it without them, and
/// grouped again.
fn grouped(token: &str, plant: impl FnOnce(&str) -> Option<String>) -> Option<String> {
    if !token.contains(',') {
        return plant(token);
    }
    let new = plant(&token.replace(',', ""))?;
    let (sign, rest) = new.split_at(usize::from(new.starts_with('-')));
    let (int, frac) = rest.split_at(rest.find(['.', 'e']).unwrap_or(rest.len()));
    let mut out = String::from(sign);
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out.push_str(frac);
    Some(out)
}

/// The byte ranges of the numbers in `s`, outside its dates.
fn numbers(s: &str) -> Vec<(usize, usize)> {
    let dates = date::find(s);
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let end = number_end(b, i);
        let prev = s[..i].chars().next_back();
        let next = s[end..].chars().next();
        let glued_before = prev.is_some_and(|c| c.is_alphanumeric() || "_.:".contains(c));
        let glued_after = next.is_some_and(|c| c.is_ascii_digit() || "_:".contains(c))
            || (next == Some('.') && b.get(end + 1).is_some_and(u8::is_ascii_digit));
        let in_date = dates.iter().any(|d| i < d.end && end > d.start);
        if !glued_before && !glued_after && !in_date {
            out.push((signed_start(s, i), end));
        }
        i = end;
    }
    out
}

/// Where a number starting at `i` ends: digits, `,ddd` groups after at most three leading
/// digits, then `.digits`.
fn number_end(b: &[u8], i: usize) -> usize {
    let digits = |mut j: usize| {
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    if j - i <= 3 {
        while b.get(j) == Some(&b',')
            && b.get(j + 1..j + 4)
                .is_some_and(|g| g.iter().all(u8::is_ascii_digit))
            && !b.get(j + 4).is_some_and(u8::is_ascii_digit)
        {
            j += 4;
        }
    }
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits(j + 1);
    }
    j
}

/// A minus sign before a number is its own when nothing word-like is glued before it
/// (`-5°C`, not the hyphen of `ORD-4821`).
fn signed_start(s: &str, i: usize) -> usize {
    let minus = i > 0 && s.as_bytes()[i - 1] == b'-';
    let word_before = s[..i.saturating_sub(1)]
        .chars()
        .next_back()
        .is_some_and(char::is_alphanumeric);
    if minus && !word_before { i - 1 } else { i }
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
