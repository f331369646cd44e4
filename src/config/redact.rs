//! Keeping secrets out of config errors. A value pasted into the wrong field (an API key in
//! a number field) must not be printed back to a terminal or CI log: errors name the field
//! and what was expected, and show a value only when it is short and does not look like a
//! credential.

// Walks serde_json values: foreign enums, where a catch-all arm is the point.
#![allow(clippy::wildcard_enum_match_arm)]

use serde_json::Value;

/// Longest value an error may quote.
const MAX_SHOWN: usize = 40;

/// Prefixes of common credential formats (OpenAI, Anthropic, GitHub, GitLab, Slack, AWS,
/// Google, Hugging Face, JWTs, HTTP auth schemes).
const SECRET_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "pk_",
    "rk_",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "xox",
    "AKIA",
    "AIza",
    "eyJ",
    "hf_",
    "Bearer ",
    "Basic ",
    "bearer ",
    "basic ",
];

/// Whether `s` starts as a known credential format does (`sk-`, `ghp_`, `Bearer `…).
pub fn has_secret_prefix(s: &str) -> bool {
    SECRET_PREFIXES.iter().any(|p| s.starts_with(p))
}

/// Whether `s` may be a credential: a known prefix, or a long unbroken run of letters and
/// digits (tokens, keys, passwords), as opposed to words, paths and addresses.
pub fn looks_secret(s: &str) -> bool {
    has_secret_prefix(s)
        || (s.len() >= 16
            && !s.contains(char::is_whitespace)
            && !s.contains("://")
            && s.chars().any(|c| c.is_ascii_digit())
            && s.chars().any(|c| c.is_ascii_alphabetic()))
}

/// How an error may show `s`: quoted when short and harmless, else only its length.
pub fn preview(s: &str) -> String {
    if s.chars().count() <= MAX_SHOWN && !looks_secret(s) {
        format!("{s:?}")
    } else {
        format!("({} characters, not shown)", s.chars().count())
    }
}

/// Longest parser message shown: beyond it, whatever the message quotes is cut.
const MAX_MESSAGE: usize = 800;

/// serde's and figment's messages quote the rejected value (`invalid type: string "sk-…",
/// expected u64`, `unknown variant `sk-…``, `unknown field `…``); this replaces each quote
/// with `preview` where needed, and cuts what is still too long (a custom message quoting
/// a value of any length).
pub fn serde_message(message: &str) -> String {
    let mut out = message.to_string();
    let mut from = 0;
    while let Some(at) = out[from..]
        .find("string \"")
        .map(|i| from + i + "string ".len())
    {
        let Some(len) = debug_string_len(&out[at..]) else {
            break;
        };
        let quoted = &out[at + 1..at + len - 1];
        // Escapes are undone only where the value may be shown; a long one is only counted.
        let shown = match quoted.len() > 8 * MAX_SHOWN {
            true => format!("({} characters, not shown)", quoted.chars().count()),
            false => preview(&undebug(quoted)),
        };
        out.replace_range(at..at + len, &shown);
        from = at + shown.len();
    }
    for marker in ["unknown variant `", "unknown field `"] {
        if let Some(start) = out.find(marker).map(|i| i + marker.len())
            && let Some(len) = out[start..].find('`')
        {
            let value = out[start..start + len].to_string();
            if value.chars().count() > MAX_SHOWN || looks_secret(&value) {
                let shown = preview(&value);
                out.replace_range(start - 1..start + len + 1, &shown);
            }
        }
    }
    clip(&long_backquotes(&out), MAX_MESSAGE)
}

/// Each `` `…` `` span longer than an error may quote, replaced by its length.
fn long_backquotes(message: &str) -> String {
    let parts: Vec<&str> = message.split('`').collect();
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE * 2));
    for (i, part) in parts.iter().enumerate() {
        // Odd parts follow an opening backquote; closed when another part follows.
        let (inside, closed) = (i % 2 == 1, i + 1 < parts.len());
        let n = part.chars().count();
        match (inside, closed) {
            (true, true) if n > MAX_SHOWN => {
                out.push_str(&format!("`({n} characters, not shown)`"))
            }
            (true, true) => out.push_str(&format!("`{part}`")),
            (true, false) => out.push_str(&format!("`{part}")),
            (false, _) => out.push_str(part),
        }
    }
    out
}

/// The first `max` characters of `s`, saying how many were cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((end, _)) => format!(
            "{}… ({} more characters)",
            &s[..end],
            s[end..].chars().count()
        ),
    }
}

/// What a document's top level is, without quoting it: for errors about a file that is
/// not the mapping or object expected (`/etc/hostname` given as a session file).
pub fn describe(v: &Value) -> String {
    match v {
        Value::Null => "empty (null)".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(_) => "a number".into(),
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(items) if items.len() == 1 => "a list of 1 item".into(),
        Value::Array(items) => format!("a list of {} items", items.len()),
        Value::Object(_) => "a mapping".into(),
    }
}

/// A Rust debug string's text (without its quotes): the escapes `{:?}` writes undone,
/// enough to measure and show it.
fn undebug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('0') => out.push('\0'),
            Some('u') => {
                let hex: String = chars.by_ref().skip(1).take_while(|&c| c != '}').collect();
                let c = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                out.push(c.unwrap_or('\u{fffd}'));
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// Length of the `"…"` (Rust debug string, escapes included) at the start of `s`. Byte
/// search: the value may be megabytes.
fn debug_string_len(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut at = 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', &bytes[at..])?;
        match bytes[at] {
            b'"' => return Some(at + 1),
            _ => at += 2,
        }
        if at >= bytes.len() {
            return None;
        }
    }
}

/// Every string in `v` that looks like a credential (the catch-all list for `scrub`).
pub fn collect(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) if s.len() >= 8 && looks_secret(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect(i, out)),
        _ => {}
    }
}

/// Replaces any of `secrets` quoted in `message`, whichever check wrote it.
pub fn scrub(message: &mut String, secrets: &[String]) {
    for s in secrets {
        if message.contains(s.as_str()) {
            let shown = format!("<{} characters, not shown>", s.chars().count());
            *message = message.replace(s.as_str(), &shown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_do_not_quote_credentials() {
        let key = "sk-proj-Abc123def456GHI789jkl012";
        let m = serde_message(&format!("invalid type: string {key:?}, expected u64"));
        assert_eq!(
            m,
            "invalid type: string (32 characters, not shown), expected u64"
        );
        let m = serde_message("invalid type: string \"ten\", expected u64");
        assert_eq!(m, "invalid type: string \"ten\", expected u64");
        let m = serde_message(&format!(
            "unknown variant `{key}`, expected one of `a`, `b`"
        ));
        assert!(
            !m.contains(key) && m.ends_with("expected one of `a`, `b`"),
            "{m}"
        );
        let m = serde_message("unknown variant `magic`, expected `a`");
        assert_eq!(m, "unknown variant `magic`, expected `a`");
        for secret in ["ghp_x", "hunter2hunter2hunter2", "Bearer abc"] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in [
            "127.0.0.1:8080",
            "status_504",
            "https://api.openai.com/v1",
            "not a number",
        ] {
            assert!(!looks_secret(plain), "{plain}");
        }
    }

    #[test]
    fn long_values_are_cut_wherever_a_message_quotes_them() {
        let long = "x".repeat(50_000_000);
        let m = serde_message(&format!("invalid type: string {long:?}, expected f64"));
        assert_eq!(
            m,
            "invalid type: string (50000000 characters, not shown), expected f64"
        );
        // figment's spelling, and escapes serde_json would not read.
        let odd = format!("{}\\u{{1b}}\\'", "y".repeat(60));
        let m = serde_message(&format!(
            "invalid type: found string \"{odd}\", expected u16"
        ));
        assert_eq!(
            m,
            "invalid type: found string (62 characters, not shown), expected u16"
        );
        let m = serde_message(&format!("unknown field `{long}`, expected `a` or `b`"));
        assert_eq!(
            m,
            "unknown field (50000000 characters, not shown), expected `a` or `b`"
        );
        let m = serde_message(&format!("`{long}` is not contract or chaos"));
        assert_eq!(
            m,
            "`(50000000 characters, not shown)` is not contract or chaos"
        );
        let m = serde_message(&format!("custom: {long}"));
        assert!(
            m.len() < 900 && m.ends_with("(49999208 more characters)"),
            "{m}"
        );
        assert_eq!(serde_message("a `b` c `d"), "a `b` c `d");
        assert_eq!(
            describe(&serde_json::json!("myhost")),
            "a string of 6 characters"
        );
    }
}
