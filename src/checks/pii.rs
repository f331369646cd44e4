//! Personal data and secrets in an answer: emails, phone numbers, US SSNs, card numbers
//! (Luhn-valid), IBANs (mod-97-valid) and API-key shapes. Checksums keep ordinary numbers
//! from counting as card numbers or IBANs.

use std::sync::LazyLock;

use regex::Regex;

struct Detector {
    kind: &'static str,
    re: Regex,
    valid: fn(&str) -> bool,
}

fn always(_: &str) -> bool {
    true
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    let d = |kind, pattern: &str, valid| Detector {
        kind,
        re: Regex::new(pattern).unwrap_or_else(|e| panic!("{kind}: {e}")),
        valid,
    };
    vec![
        d(
            "email",
            r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
            always,
        ),
        d("ssn", r"\b\d{3}-\d{2}-\d{4}\b", always),
        d("card number", r"\b(?:\d[ -]?){12,18}\d\b", luhn),
        d("iban", r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b", iban),
        d(
            "phone number",
            r"(?:\+\d{1,3}[ .-]?)?\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}\b",
            always,
        ),
        d(
            "api key",
            r"\b(?:sk-(?:proj-)?[A-Za-z0-9_-]{20,}|sk-ant-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{36}|xox[abprs]-[A-Za-z0-9-]{10,})",
            always,
        ),
    ]
});

/// The first kind of personal data found, with the text that matched.
pub fn find_pii(text: &str) -> Option<(&'static str, String)> {
    DETECTORS.iter().find_map(|d| {
        d.re.find_iter(text)
            .map(|m| m.as_str())
            .find(|m| (d.valid)(m))
            .map(|m| (d.kind, m.to_string()))
    })
}

fn luhn(candidate: &str) -> bool {
    let digits: Vec<u32> = candidate.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            if i % 2 == 1 {
                if d * 2 > 9 { d * 2 - 9 } else { d * 2 }
            } else {
                *d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

fn iban(candidate: &str) -> bool {
    let s: String = candidate.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&s.len()) {
        return false;
    }
    let rearranged = format!("{}{}", &s[4..], &s[..4]);
    let mut rem: u64 = 0;
    for c in rearranged.chars() {
        let v = match c.to_digit(36) {
            Some(v) => v as u64,
            None => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_kind_and_ignores_look_alikes() {
        let found = |t: &str| find_pii(t).map(|(k, _)| k);
        assert_eq!(found("write to jane.doe@example.com"), Some("email"));
        assert_eq!(found("SSN 123-45-6789"), Some("ssn"));
        assert_eq!(found("card 4111 1111 1111 1111 ok"), Some("card number"));
        assert_eq!(found("order 4111 1111 1111 1112"), None, "fails Luhn");
        assert_eq!(found("IBAN GB82 WEST 1234 5698 7654 32"), Some("iban"));
        assert_eq!(found("call +1 415-555-2671"), Some("phone number"));
        assert_eq!(
            found("key sk-proj-abcdefghijklmnopqrstuvwxyz123"),
            Some("api key")
        );
        assert_eq!(found("AKIAIOSFODNN7EXAMPLE"), Some("api key"));
        assert_eq!(found("Revenue rose 12% to $4.1B in Q3 2025."), None);
    }
}
