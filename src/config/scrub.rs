//! Credentials taken out of free text the config holds, for the config a shard report
//! carries (`carried`): the user and password of URLs and their query values named or
//! looking like credentials, path segments that look like tokens, and the words of a
//! command line that are keys (`sk-…`, `--token X`, `DB_PASSWORD=…`). Paths, file names
//! and host lists stay as written: the merge reads some of them (`agent.command`'s stack,
//! `NO_PROXY`).

use super::redact::{has_secret_prefix, looks_secret};

/// What stands where a credential was.
pub const REDACTED: &str = "(redacted)";

/// Field, header, flag and query names whose values are credentials.
pub const CREDENTIAL_NAMES: &[&str] = &[
    "token",
    "password",
    "passwd",
    "secret",
    "api_key",
    "api-key",
    "apikey",
    "authorization",
    "cookie",
];

/// Whether a field, flag or variable named `name` holds a credential.
pub fn credential_name(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    name == "key" || CREDENTIAL_NAMES.iter().any(|f| name.contains(f))
}

/// Whether a word with no `/` or `.` (not a path, a file or a host) is a token.
fn token_word(w: &str) -> bool {
    has_secret_prefix(w) || (looks_secret(w) && !w.contains(['/', '.']))
}

/// `s` with each URL's user and password, its credential query values and its token-like
/// path segments replaced by `REDACTED`; `paths`: path segments too (an agent's URLs,
/// not a provider's base URL, whose path is its API's).
pub fn urls(s: &str, paths: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(tail.len());
        let (url, after) = tail.split_at(end);
        out.push_str(&url_cleaned(url, paths));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A URL after its `scheme://`, cleaned as `urls` says.
fn url_cleaned(url: &str, paths: bool) -> String {
    let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
    let (authority, rest) = url.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_string(),
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let path = match paths {
        true => path
            .split('/')
            .map(|seg| if token_word(seg) { REDACTED } else { seg })
            .collect::<Vec<_>>()
            .join("/"),
        false => path.to_string(),
    };
    let Some(query) = query else {
        return format!("{authority}{path}");
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, format!("#{f}")),
        None => (query, String::new()),
    };
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if credential_name(k) || token_word(v) => format!("{k}={REDACTED}"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{authority}{path}?{}{fragment}", pairs.join("&"))
}

/// `s` (a command line, a request template) with each word that is a key replaced, the
/// spacing kept: a token-like word, the value of `NAME=value` or `--flag=value` whose name
/// is a credential's, and the word after such a flag (`--api-key X`).
pub fn words(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let mut after_flag = false;
    let mut flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let shown = match (after_flag, word.split_once('=')) {
            (true, _) => REDACTED.to_string(),
            // `NAME=value`, `--flag=value`: the name and the value are judged apart.
            (false, Some((k, v))) if credential_name(k) || token_word(v) => {
                format!("{k}={REDACTED}")
            }
            (false, Some(_)) => word.clone(),
            (false, None) if token_word(word) => REDACTED.to_string(),
            (false, None) => word.clone(),
        };
        after_flag = word.starts_with('-') && !word.contains('=') && credential_name(word);
        out.push_str(&shown);
        word.clear();
    };
    for c in s.chars() {
        if c.is_whitespace() {
            flush(&mut word, &mut out);
            out.push(c);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_go_paths_and_hosts_stay() {
        let r = REDACTED;
        assert_eq!(
            words("/usr/bin/python3 agent_2024.py --key sk-abcdef0123456789 --model=gpt-4o-mini"),
            format!("/usr/bin/python3 agent_2024.py --key {r} --model=gpt-4o-mini")
        );
        assert_eq!(
            words("DB_PASSWORD=hunter2 python a.py --password correcthorse --token=abc -v"),
            format!("DB_PASSWORD={r} python a.py --password {r} --token={r} -v")
        );
        assert_eq!(
            words("node x.mjs ghp_0123456789abcdefABCD"),
            format!("node x.mjs {r}")
        );
        assert_eq!(
            urls(
                "http://u:pw@127.0.0.1:9/bot123456:ABCdef0123456789xyz/send?api_key=k1&q=ok#f",
                true
            ),
            format!("http://{r}@127.0.0.1:9/{r}/send?api_key={r}&q=ok#f")
        );
        // A provider's base URL keeps its path; its host list stays whole.
        assert_eq!(
            urls("https://llm.example/v1beta2024abcdefgh/models", false),
            "https://llm.example/v1beta2024abcdefgh/models"
        );
        assert_eq!(
            words("localhost,127.0.0.1,.internal"),
            "localhost,127.0.0.1,.internal"
        );
    }
}
