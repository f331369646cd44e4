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

/// Whether `s` may be a credential: a known prefix, or a long unbroken run of letters and
/// digits (tokens, keys, passwords), as opposed to words, paths and addresses.
pub fn looks_secret(s: &str) -> bool {
    SECRET_PREFIXES.iter().any(|p| s.starts_with(p))
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

/// serde's messages quote the rejected value (`invalid type: string "sk-…", expected u64`,
/// `unknown variant `sk-…``); this replaces the quote with `preview` where needed.
pub fn serde_message(message: &str) -> String {
    let mut out = message.to_string();
    for marker in ["invalid type: string ", "invalid value: string "] {
        if let Some(start) = out.find(marker).map(|i| i + marker.len())
            && let Some(len) = debug_string_len(&out[start..])
            && let Ok(value) = serde_json::from_str::<String>(&out[start..start + len])
        {
            out.replace_range(start..start + len, &preview(&value));
        }
    }
    let marker = "unknown variant `";
    if let Some(start) = out.find(marker).map(|i| i + marker.len())
        && let Some(len) = out[start..].find("`, expected")
    {
        let value = out[start..start + len].to_string();
        if value.chars().count() > MAX_SHOWN || looks_secret(&value) {
            let shown = preview(&value);
            out.replace_range(start - 1..start + len + 1, &shown);
        }
    }
    out
}

/// Length of the `"…"` (Rust debug string, escapes included) at the start of `s`.
fn debug_string_len(s: &str) -> Option<usize> {
    let mut chars = s.char_indices();
    if chars.next()?.1 != '"' {
        return None;
    }
    let mut escaped = false;
    for (i, c) in chars {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i + 1),
            _ => {}
        }
    }
    None
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
}
