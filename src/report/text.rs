//! Text from the report made safe for every format: terminal escape sequences removed
//! (an agent's answer may carry colours), control characters XML 1.0 cannot hold
//! replaced, long text clipped on a character boundary.

/// `s` without ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, and
/// two-byte `ESC x`), and with the other control characters but tab and newline shown as
/// U+FFFD, so no format carries a byte a terminal, browser or XML parser would act on.
pub fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    // Parameters and intermediates, then one final byte in @..=~.
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
                Some(_) | None => {}
            },
            '\t' | '\n' => out.push(c),
            '\r' => {}
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `s` cut to at most `max` characters, with how much was left out.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            format!("{}… ({rest} more characters)", &s[..at])
        }
    }
}

/// `s` on one line: runs of whitespace become one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A duration for people: `840 ms`, `1.8 s`, `2 min 5 s`.
pub fn duration(ms: f64) -> String {
    match ms {
        ms if ms < 1000.0 => format!("{ms:.0} ms"),
        ms if ms < 60_000.0 => format!("{:.1} s", ms / 1000.0),
        ms => {
            let s = (ms / 1000.0).round() as u64;
            format!("{} min {} s", s / 60, s % 60)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_controls_are_removed() {
        assert_eq!(plain("\u{1b}[31mred\u{1b}[0m ok"), "red ok");
        assert_eq!(plain("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(plain("a\u{1b}]8;;http://x\u{1b}\\b"), "ab");
        assert_eq!(
            plain("nul\u{0}bell\u{7}\r\n\tend"),
            "nul\u{fffd}bell\u{fffd}\n\tend"
        );
        assert_eq!(plain("<script>"), "<script>");
    }

    #[test]
    fn clipping_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 10), "héllo");
        assert_eq!(clip("héllo wörld", 5), "héllo… (6 more characters)");
        assert_eq!(one_line(" a\n\n b\tc "), "a b c");
        assert_eq!(duration(11.4), "11 ms");
        assert_eq!(duration(1834.5), "1.8 s");
        assert_eq!(duration(125_400.0), "2 min 5 s");
    }
}
