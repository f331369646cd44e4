//! `query_parameter_poisoning`: the normal request to the endpoint's path with a hostile
//! query: the prompt itself, SQL/shell/path-traversal strings, repeated keys, a
//! percent-encoded NUL, invalid UTF-8 (`%ff%fe`), a ~16 KB query.

use super::request::{Normal, percent};
use super::{Built, one};
use crate::mutate::Draw;

pub(super) const FAMILIES: u32 = 6;

const KEYS: [&str; 4] = ["q", "prompt", "input", "query"];
const HOSTILE: [&str; 8] = [
    "' OR '1'='1",
    "1; DROP TABLE users--",
    "$(id)",
    "`cat /etc/passwd`",
    "; rm -rf / #",
    "../../../../etc/passwd",
    "..%2f..%2f..%2fetc%2fpasswd",
    "{{7*7}}${7*7}",
];
const INVALID_UTF8: [&str; 4] = ["%ff%fe", "%c0%af", "%ed%a0%80", "%fe%ff%00"];

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let key = *d.pick(&KEYS);
    let prompt = percent(n.prompt.as_bytes());
    let (query, label) = match index % FAMILIES {
        0 => (
            format!("{key}={prompt}"),
            "the prompt in the query".to_string(),
        ),
        1 => {
            let s = *d.pick(&HOSTILE);
            (
                format!("{key}={}", percent(s.as_bytes())),
                format!("an injection string in the query ({s})"),
            )
        }
        2 => {
            let count = 3 + d.below(8);
            let mut q: Vec<String> = (1..count).map(|i| format!("{key}={i}")).collect();
            q.push(format!("{key}={prompt}"));
            (
                q.join("&"),
                format!("the key `{key}` repeated {count} times"),
            )
        }
        3 => {
            let tail = *d.pick(&[".json", "admin", "", "/../x"]);
            (
                format!("{key}={prompt}%00{}", percent(tail.as_bytes())),
                "a percent-encoded NUL in the query".to_string(),
            )
        }
        4 => {
            let bad = *d.pick(&INVALID_UTF8);
            (
                format!("{key}={bad}{prompt}"),
                format!("invalid UTF-8 ({bad}) in the query"),
            )
        }
        _ => {
            let size = 14 * 1024 + d.below(4 * 1024 + 1);
            let mut q = format!("{key}={prompt}&pad=");
            let fill = *d.pick(&["A", "%41", "x"]);
            while q.len() + fill.len() <= size {
                q.push_str(fill);
            }
            let label = format!("a {}-byte query", q.len());
            (q, label)
        }
    };
    let mut req = n.request();
    req.target = match &n.query {
        Some(existing) => format!("{}?{existing}&{query}", n.path),
        None => format!("{}?{query}", n.path),
    };
    one(label, req.bytes())
}
