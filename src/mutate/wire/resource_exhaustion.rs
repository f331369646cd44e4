//! `resource_exhaustion`: bodies that are cheap to send and costly to parse: JSON nested
//! ~10,000 levels deep, a ~1 MB string of combining characters or emoji, an object with
//! ~100,000 keys, each beside the prompt in the normal body.

use super::request::{Normal, insert_field};
use super::{Built, one};
use crate::mutate::Draw;

pub(super) const FAMILIES: u32 = 3;

/// Units repeated into ~1 MB: stacked combining marks, ZWJ emoji sequences, flags.
const UNICODE: [(&str, &str); 4] = [
    (
        "\u{0301}\u{0300}\u{0302}\u{0303}\u{0308}\u{0336}",
        "combining marks",
    ),
    (
        "Z\u{0351}\u{0352}\u{0357}\u{035b}\u{0363}\u{0364}",
        "zalgo text",
    ),
    (
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}\u{200D}\u{1F466}",
        "ZWJ emoji",
    ),
    (
        "\u{1F1FA}\u{1F1F3}\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}",
        "flag emoji",
    ),
];

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let (body, label) = match index % FAMILIES {
        0 => {
            let depth = 9_000 + d.below(2_001);
            let (open, close) = *d.pick(&[("[", "]"), ("{\"a\":", "}")]);
            let mut v = String::with_capacity(depth * (open.len() + 1) + 1);
            for _ in 0..depth {
                v.push_str(open);
            }
            v.push('1');
            for _ in 0..depth {
                v.push_str(close);
            }
            let field = format!("\"nested\":{v}");
            (
                insert_field(&n.body(), field.as_bytes()),
                format!("JSON nested {depth} levels deep"),
            )
        }
        1 => {
            let (unit, what) = *d.pick(&UNICODE);
            let size = (1 << 20) - d.below(64 * 1024);
            (
                n.body_padded(unit, size),
                format!("a ~1 MB string of {what} in the prompt"),
            )
        }
        _ => {
            let count = 90_000 + d.below(20_001);
            let prefix = *d.pick(&["k", "key_", "a"]);
            let mut f = String::with_capacity(count * 16);
            for i in 0..count {
                if i > 0 {
                    f.push(',');
                }
                f.push_str(&format!("\"{prefix}{i}\":{i}"));
            }
            (
                insert_field(&n.body(), f.as_bytes()),
                format!("{count} keys in one object"),
            )
        }
    };
    one(label, n.request_with(body).bytes())
}
