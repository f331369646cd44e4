//! Canaries for short strings (2..=32 characters, at most four words, not a URL, an email
//! address or a date): one with digits keeps its shape with new digits (`ORD-4821` →
//! `ORD-7093`; a time of day stays a valid time); an alphabetic one gets made-up,
//! pronounceable words of about its words' lengths, capitalised as they were (`Paris` →
//! `Velmor`, `NEW YORK` → `KASO DIRLA`).

use super::canary::Canaries;

/// Whether `s` is a short string a `corrupt` fault changes by default.
pub(super) fn is_short(s: &str) -> bool {
    let n = s.chars().count();
    (2..=32).contains(&n)
        && s.split_whitespace().count() <= 4
        && s.chars().any(char::is_alphanumeric)
        && !s.contains("://")
        && !s.starts_with("www.")
        && !is_email(s)
        && !super::date::is_date(s)
        && super::date::find(s).is_empty()
}

fn is_email(s: &str) -> bool {
    s.split_once('@')
        .is_some_and(|(user, host)| !user.is_empty() && host.contains('.') && !s.contains(' '))
}

impl Canaries {
    /// The canary of a short string; `None` when `s` is not one or nothing in it can change
    /// (single letters, punctuation).
    pub(super) fn short_string(&mut self, s: &str) -> Option<String> {
        if !is_short(s) {
            return None;
        }
        self.memo('s', s, |c| {
            (0..16).find_map(|_| {
                let out = if let Some(t) = c.time_of_day(s) {
                    t
                } else if s.chars().any(|ch| ch.is_ascii_digit()) {
                    c.digits(s)
                } else {
                    c.words(s)
                };
                (out != s).then_some(out)
            })
        })
    }

    /// `HH:MM` or `HH:MM:SS` as another valid time, zero-padded as it was.
    fn time_of_day(&mut self, s: &str) -> Option<String> {
        let parts: Vec<&str> = s.split(':').collect();
        let numeric =
            |p: &&str| !p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit());
        if !(2..=3).contains(&parts.len()) || !parts.iter().all(numeric) {
            return None;
        }
        let hour = self.below(24);
        let width = parts[0].len();
        let mut out = format!("{hour:0width$}");
        for _ in 1..parts.len() {
            out.push_str(&format!(":{:02}", self.below(60)));
        }
        Some(out)
    }

    /// Every digit replaced; a run's first digit stays non-zero when it was.
    fn digits(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut prev_digit = false;
        for ch in s.chars() {
            if ch.is_ascii_digit() {
                let first_nonzero = !prev_digit && ch != '0';
                let d = if first_nonzero {
                    1 + self.below(9)
                } else {
                    self.below(10)
                };
                out.push(char::from(b'0' + d as u8));
            } else {
                out.push(ch);
            }
            prev_digit = ch.is_ascii_digit();
        }
        out
    }

    /// Each run of two letters or more replaced by a made-up word cased as it was.
    fn words(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 8);
        let mut run = String::new();
        for ch in s.chars().chain(std::iter::once('\0')) {
            if ch.is_alphabetic() {
                run.push(ch);
                continue;
            }
            if run.chars().count() >= 2 {
                let word = self.made_up(run.chars().count());
                out.push_str(&cased_as(&word, &run));
            } else {
                out.push_str(&run);
            }
            run.clear();
            if ch != '\0' {
                out.push(ch);
            }
        }
        out
    }

    /// A pronounceable word of about `len` letters: consonants and vowels taking turns,
    /// now and then a pair of consonants that sits well between two vowels.
    fn made_up(&mut self, len: usize) -> String {
        const CONSONANTS: &[u8] = b"bcdfgklmnprstvz";
        const VOWELS: &[u8] = b"aeiou";
        const PAIRS: &[&str] = &["nd", "nt", "rl", "rm", "lv", "st", "rt", "mb", "nk", "ld"];
        let len = match len {
            0..=3 => len,
            _ => len + self.below(3) as usize - 1,
        };
        let mut out = String::with_capacity(len);
        let mut vowel = self.below(4) == 0;
        while out.len() < len {
            let set = if vowel { VOWELS } else { CONSONANTS };
            out.push(char::from(set[self.below(set.len() as u64) as usize]));
            if vowel && out.len() + 2 < len && self.below(4) == 0 {
                out.push_str(PAIRS[self.below(PAIRS.len() as u64) as usize]);
                continue;
            }
            vowel = !vowel;
        }
        out
    }
}

/// `word` (lowercase ASCII) with the capitalisation of `like`: all capitals, or each
/// letter's case at its place (the last one's past `like`'s end).
fn cased_as(word: &str, like: &str) -> String {
    let upper: Vec<bool> = like.chars().map(char::is_uppercase).collect();
    if upper.len() > 1 && upper.iter().all(|u| *u) {
        return word.to_ascii_uppercase();
    }
    word.chars()
        .enumerate()
        .map(|(i, c)| match upper.get(i) {
            Some(true) => c.to_ascii_uppercase(),
            Some(false) | None => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_told_from_urls_emails_dates_and_prose() {
        for yes in ["Paris", "ORD-4821", "New York", "10:30", "USD", "v1.2.3"] {
            assert!(is_short(yes), "{yes}");
        }
        for no in [
            "x",
            "https://example.com/a",
            "www.example.com",
            "ann@example.com",
            "2026-11-28",
            "due 2026-11-28",
            "one two three four five",
            "--",
            "a string much longer than thirty-two characters",
        ] {
            assert!(!is_short(no), "{no}");
        }
    }

    #[test]
    fn capitalisation_follows_the_original() {
        assert_eq!(cased_as("velmor", "Paris"), "Velmor");
        assert_eq!(cased_as("kaso", "NYC"), "KASO");
        assert_eq!(cased_as("bitoma", "iPhone"), "bItoma");
        assert_eq!(cased_as("dun", "low"), "dun");
    }
}
