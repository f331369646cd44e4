//! `http_header_injection`: header fields no client library would send (CRLF inside a value,
//! a duplicated Host or Content-Type, an 8–64 KB value, ~200 fields, an obs-fold
//! continuation line), on the normal request, so a surviving agent still answers or
//! refuses cleanly.

use super::request::Normal;
use super::{Built, one};
use crate::mutate::Draw;

pub(super) const FAMILIES: u32 = 5;

/// Fields smuggled in after a CRLF.
const INJECTED: [(&str, &str); 4] = [
    ("X-Injected", "1"),
    ("X-Forwarded-For", "127.0.0.1"),
    ("Set-Cookie", "session=attacker"),
    ("X-Admin", "true"),
];
const NOTES: [&str; 3] = ["note", "a", "trace"];

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let mut req = n.request();
    let label = match index % FAMILIES {
        0 => {
            let (name, value) = *d.pick(&INJECTED);
            let note = d.pick(&NOTES);
            req.push("X-Note", format!("{note}\r\n{name}: {value}"));
            format!("CRLF in a header value (injects {name})")
        }
        1 if d.chance(0.5) => {
            let host = *d.pick(&["evil.example", "localhost:1", "127.0.0.1:9"]);
            req.push("Host", host);
            format!("a second Host header ({host})")
        }
        1 => {
            let ct = *d.pick(&["text/plain", "application/xml", "text/html"]);
            req.push("Content-Type", ct);
            format!("a second Content-Type header ({ct})")
        }
        2 => {
            let size = 8 * 1024 + d.below(56 * 1024 + 1);
            let fill = *d.pick(b"Ax7");
            req.push("X-Padding", vec![fill; size]);
            format!("a {size}-byte header value")
        }
        3 => {
            let count = 180 + d.below(41);
            for i in 0..count {
                req.push(&format!("X-Flood-{i}"), i.to_string());
            }
            format!("{count} extra header fields")
        }
        _ => {
            let (first, rest) = *d.pick(&[("first", "continued"), ("a", "b: c"), ("x", "y")]);
            let fold = *d.pick(&[" ", "\t"]);
            req.push("X-Note", format!("{first}\r\n{fold}{rest}"));
            "an obs-fold continuation line".to_string()
        }
    };
    one(label, req.bytes())
}
