//! Text from a report made safe and short for every format: terminal escape sequences
//! removed, other control characters shown inert (as characters HTML, XML 1.0 and Markdown
//! all hold), long texts capped. Escaping is each format's job (the HTML template's
//! auto-escape, junit.rs, markdown.rs); this only decides which characters reach it.

use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

/// Texts longer than this (in characters) are cut in the page; the JSON has them whole.
pub const CAP: usize = 2000;

/// `s` without ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, and
/// two-byte `ESC x`), other control characters but newline and tab replaced by their
/// visible Control Pictures (U+2400 + c), so nothing in a report drives a terminal or
/// hides in the page.
pub fn inert(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte in @..~.
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('\u{2421}'),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `inert(s)`, cut to `cap` characters; the second value is how many were left off.
pub fn capped(s: &str, cap: usize) -> (String, usize) {
    let clean = inert(s);
    let total = clean.chars().count();
    if total <= cap {
        return (clean, 0);
    }
    (clean.chars().take(cap).collect(), total - cap)
}

/// `inert(s)` cut to `cap` characters, saying how many more the JSON report has.
pub fn clip(s: &str, cap: usize) -> String {
    match capped(s, cap) {
        (text, 0) => text,
        (text, more) => format!("{text}… ({more} more characters)"),
    }
}

/// One line of at most `cap` characters, for summaries: whitespace runs become one space,
/// an ellipsis marks a cut.
pub fn line(s: &str, cap: usize) -> String {
    let clean = inert(s);
    let mut words = clean.split_whitespace();
    let mut out = String::new();
    if let Some(w) = words.next() {
        out.push_str(w);
    }
    for w in words {
        out.push(' ');
        out.push_str(w);
    }
    if out.chars().count() > cap {
        let mut cut: String = out.chars().take(cap.saturating_sub(1)).collect();
        cut.push('…');
        return cut;
    }
    out
}

/// Milliseconds in words: `850 ms`, `1.8 s`, `2 min 5 s`.
pub fn duration(ms: f64) -> String {
    if ms < 1.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else if ms < 60_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        let s = (ms / 1000.0).round() as u64;
        format!("{} min {} s", s / 60, s % 60)
    }
}

/// Unix milliseconds as `2026-11-24 03:36:15 UTC`.
pub fn utc(ms: u64) -> String {
    const UTC: &[BorrowedFormatItem<'_>] =
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    let secs = i64::try_from(ms / 1000).unwrap_or(i64::MAX);
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| t.format(UTC).ok())
        .unwrap_or_else(|| format!("{ms} ms after the Unix epoch"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_are_removed_and_other_controls_shown_inert() {
        assert_eq!(inert("\u{1b}[31mQ3\u{1b}[0m & x"), "Q3 & x");
        assert_eq!(inert("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(inert("a\u{1b}]8;;http://x\u{1b}\\b"), "ab");
        assert_eq!(
            inert("bell\u{7} cr\r nul\0"),
            "bell\u{2407} cr\u{240d} nul\u{2400}"
        );
        assert_eq!(inert("two\nlines\tok"), "two\nlines\tok");
        assert_eq!(inert("c1\u{9b}x"), "c1\u{fffd}x");
    }

    #[test]
    fn long_texts_are_capped_and_say_how_much_is_left_off() {
        assert_eq!(capped("héllo", 10), ("héllo".into(), 0));
        assert_eq!(capped("héllo", 2), ("hé".into(), 3));
        assert_eq!(line("a  b\n c", 10), "a b c");
        assert_eq!(line("abcdef", 4), "abc…");
        assert_eq!(clip("héllo wörld", 5), "héllo… (6 more characters)");
    }

    #[test]
    fn durations_and_times_read_plainly() {
        assert_eq!(duration(0.42), "0.42 ms");
        assert_eq!(duration(92.15), "92.2 ms");
        assert_eq!(duration(1834.5), "1.8 s");
        assert_eq!(duration(125_000.0), "2 min 5 s");
        assert_eq!(utc(1_795_491_375_000), "2026-11-24 03:36:15 UTC");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        let far = 253_402_300_800_000; // 10000-01-01
        assert_eq!(utc(far), format!("{far} ms after the Unix epoch"));
    }
}
