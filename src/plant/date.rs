//! ISO 8601 dates in text (`2026-11-28`, and the date of a datetime such as
//! `2026-11-28T10:00:00.5+01:00`): found by their shape, checked to be real days, and moved
//! by whole days, so the time, fraction and offset after them stay as they were written.

use time::{Date, Duration, Month};

/// A date found in a text: the byte range of its `YYYY-MM-DD` and the day it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Found {
    pub start: usize,
    pub end: usize,
    pub date: Date,
}

/// Every date in `s`, in order: `YYYY-MM-DD` naming a real day, not inside a longer run of
/// digits.
pub(super) fn find(s: &str) -> Vec<Found> {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i + 10 <= b.len() {
        let alone = (i == 0 || !b[i - 1].is_ascii_digit())
            && b.get(i + 10).is_none_or(|c| !c.is_ascii_digit());
        if alone
            && shape(&b[i..i + 10])
            && let Some(date) = day(&s[i..i + 10])
        {
            out.push(Found {
                start: i,
                end: i + 10,
                date,
            });
            i += 10;
        } else {
            i += 1;
        }
    }
    out
}

/// `dddd-dd-dd`.
fn shape(b: &[u8]) -> bool {
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}

/// The day `YYYY-MM-DD` names, if it is one.
fn day(s: &str) -> Option<Date> {
    let year: i32 = s.get(0..4)?.parse().ok()?;
    let month: u8 = s.get(5..7)?.parse().ok()?;
    let day: u8 = s.get(8..10)?.parse().ok()?;
    Date::from_calendar_date(year, Month::try_from(month).ok()?, day).ok()
}

/// `date` moved by `days` (negative: back), as `YYYY-MM-DD`; `None` when that leaves the
/// four-digit years.
pub(super) fn shift(date: Date, days: i64) -> Option<String> {
    let d = date.checked_add(Duration::days(days))?;
    (1000..=9999)
        .contains(&d.year())
        .then(|| format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day()))
}

/// Whether all of `s` is a date or a datetime: `YYYY-MM-DD`, optionally `T` (or `t`, or a
/// space), `HH:MM`, `:SS`, `.fraction`, and `Z` or an offset.
pub(super) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && shape(&b[..10])
        && day(&s[..10]).is_some()
        && (b.len() == 10 || time_part(&b[10..]))
}

/// `THH:MM[:SS[.f…]][Z|±HH[:]MM]`, whole.
fn time_part(b: &[u8]) -> bool {
    let mut r = Reader { b, at: 0 };
    if !matches!(r.next(), Some(b'T' | b't' | b' ')) || !r.digits(2) || !r.eat(b':') {
        return false;
    }
    if !r.digits(2) {
        return false;
    }
    if r.eat(b':') && !r.digits(2) {
        return false;
    }
    if r.eat(b'.') && r.run() == 0 {
        return false;
    }
    match r.next() {
        None => true,
        Some(b'Z' | b'z') => r.done(),
        Some(b'+' | b'-') => {
            let hours = r.digits(2);
            r.eat(b':');
            hours && r.digits(2) && r.done()
        }
        Some(_) => false,
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> Option<u8> {
        let c = self.b.get(self.at).copied();
        self.at += usize::from(c.is_some());
        c
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.at) == Some(&c);
        self.at += usize::from(hit);
        hit
    }

    fn digits(&mut self, n: usize) -> bool {
        let ok = self
            .b
            .get(self.at..self.at + n)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit));
        self.at += if ok { n } else { 0 };
        ok
    }

    /// Digits from here; how many.
    fn run(&mut self) -> usize {
        let start = self.at;
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    fn done(&self) -> bool {
        self.at == self.b.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_found_by_shape_and_must_be_real_days() {
        let s = "due 2026-11-28, paid 2026-02-30, ref 12026-11-28, at 2026-11-28T10:00:00Z";
        let found: Vec<&str> = find(s).iter().map(|f| &s[f.start..f.end]).collect();
        assert_eq!(found, ["2026-11-28", "2026-11-28"]);
        assert!(find("no dates 2026-1-5").is_empty());
    }

    #[test]
    fn whole_dates_and_datetimes_are_told_from_other_strings() {
        for yes in [
            "2026-11-28",
            "2026-11-28T10:00",
            "2026-11-28T10:00:00Z",
            "2026-11-28T10:00:00.123456+01:00",
            "2026-11-28 10:00:00-0500",
        ] {
            assert!(is_date(yes), "{yes}");
        }
        for no in [
            "2026-11-28 is the day",
            "2026-13-01",
            "2026-11-28T",
            "2026-11-28T10",
            "2026-11-28T10:00:00.",
            "ORD-4821",
        ] {
            assert!(!is_date(no), "{no}");
        }
    }

    #[test]
    fn a_shift_crosses_months_and_years_and_keeps_four_digit_years() {
        let d = find("2026-11-28")[0].date;
        assert_eq!(shift(d, 40).as_deref(), Some("2027-01-07"));
        assert_eq!(shift(d, -400).as_deref(), Some("2025-10-24"));
        let far = find("9999-12-30")[0].date;
        assert_eq!(shift(far, 5), None);
    }
}
