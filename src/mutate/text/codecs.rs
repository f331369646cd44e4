//! The reversible encodings `encoding_attacks` hides a prompt in: base64, hex, ROT13, URL
//! (percent) encoding and HTML numeric entities. Each round-trips (tested by decoding).

use base64::Engine;

pub(super) fn base64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

pub(super) fn hex(s: &str, sep: &str) -> String {
    let bytes: Vec<String> = s.bytes().map(|b| format!("{b:02x}")).collect();
    bytes.join(sep)
}

pub(super) fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => ((c as u8 - b'a' + 13) % 26 + b'a') as char,
            'A'..='Z' => ((c as u8 - b'A' + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

/// Every byte but the unreserved ones (RFC 3986) as `%XX`.
pub(super) fn url(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, crate::exchange::URL_UNRESERVED).to_string()
}

/// Every char as a numeric entity, decimal or hexadecimal.
pub(super) fn html(s: &str, hexa: bool) -> String {
    s.chars()
        .map(|c| {
            if hexa {
                format!("&#x{:x};", c as u32)
            } else {
                format!("&#{};", c as u32)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPTS: [&str; 4] = [
        "What is the capital of France?",
        "Book a flight from Paris to Tokyo on March 3 & pay 100% <now>",
        "Ünïcödé 東京 🚀 a+b=c /?#[]@!$'()*,;",
        "",
    ];

    fn unhex(s: &str) -> String {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        let bytes: Vec<u8> = (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect();
        String::from_utf8(bytes).unwrap()
    }

    fn unurl(s: &str) -> String {
        let decoded = percent_encoding::percent_decode_str(s).decode_utf8();
        decoded.unwrap().into_owned()
    }

    fn unhtml(s: &str) -> String {
        s.split(';')
            .filter(|e| !e.is_empty())
            .map(|e| {
                let n = e.strip_prefix("&#").unwrap();
                let n = match n.strip_prefix('x') {
                    Some(h) => u32::from_str_radix(h, 16).unwrap(),
                    None => n.parse().unwrap(),
                };
                char::from_u32(n).unwrap()
            })
            .collect()
    }

    #[test]
    fn encoders_round_trip() {
        let b64 = base64::engine::general_purpose::STANDARD;
        for p in PROMPTS {
            let decoded = b64.decode(base64(p)).unwrap();
            assert_eq!(String::from_utf8(decoded).unwrap(), p);
            assert_eq!(unhex(&hex(p, "")), p);
            assert_eq!(unhex(&hex(p, " ")), p);
            assert_eq!(rot13(&rot13(p)), p);
            assert_eq!(unurl(&url(p)), p);
            assert!(url(p).bytes().all(|b| b.is_ascii_graphic()));
            assert_eq!(unhtml(&html(p, false)), p);
            assert_eq!(unhtml(&html(p, true)), p);
        }
        assert_eq!(rot13("Hello, World"), "Uryyb, Jbeyq");
        assert_eq!(hex("Hi", " "), "48 69");
        assert_eq!(url("a b/é"), "a%20b%2F%C3%A9");
    }
}
