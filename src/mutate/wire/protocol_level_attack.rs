//! `protocol_level_attack`: HTTP/1.1 framing edge cases: an HTTP/1.0 request, conflicting
//! Content-Length and Transfer-Encoding, two different Content-Lengths, chunk extensions, a
//! bad chunk size, a missing final chunk, bare LF line endings. The agent should answer,
//! refuse with a 4xx, or close (RFC 9112 lets a server close on a malformed message).

use super::request::{Normal, chunked};
use super::{Built, Pattern, one};
use crate::mutate::Draw;

pub(super) const FAMILIES: u32 = 7;

const BAD_SIZES: [&str; 5] = ["zz", "-1", "ffffffffffffffffffff", "0x10", "1 0"];

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let mut req = n.request();
    let body = req.body.clone();
    let chunk = 16 + d.below(241);
    let label = match index % FAMILIES {
        0 => {
            req.version = "HTTP/1.0";
            req.remove("Connection");
            if d.chance(0.5) {
                req.remove("Host");
                "an HTTP/1.0 request without Host".to_string()
            } else {
                "an HTTP/1.0 request".to_string()
            }
        }
        1 => {
            req.content_length = false;
            req.body = chunked(&body, chunk, "", true);
            let fields = [
                ("Content-Length", body.len().to_string()),
                ("Transfer-Encoding", "chunked".to_string()),
            ];
            let first = d.below(2);
            req.push(fields[first].0, fields[first].1.clone());
            req.push(fields[1 - first].0, fields[1 - first].1.clone());
            "both Content-Length and Transfer-Encoding: chunked".to_string()
        }
        2 => {
            req.content_length = false;
            let extra = 1 + d.below(64);
            let mut lengths = [body.len(), body.len() + extra];
            if d.chance(0.5) {
                lengths.swap(0, 1);
            }
            for l in lengths {
                req.push("Content-Length", l.to_string());
            }
            format!(
                "two different Content-Lengths ({} and {})",
                lengths[0], lengths[1]
            )
        }
        3 => {
            req.content_length = false;
            req.push("Transfer-Encoding", "chunked");
            let ext = *d.pick(&[";note=1", ";a=\"b c\"", ";x", ";name=value;other=1"]);
            req.body = chunked(&body, chunk, ext, true);
            format!("a chunked body with chunk extensions ({ext})")
        }
        4 => {
            req.content_length = false;
            req.push("Transfer-Encoding", "chunked");
            let bad = *d.pick(&BAD_SIZES);
            let mut b = format!("{bad}\r\n").into_bytes();
            b.extend_from_slice(&body);
            b.extend_from_slice(b"\r\n0\r\n\r\n");
            req.body = b;
            format!("a bad chunk size ({bad:?})")
        }
        5 => {
            req.content_length = false;
            req.push("Transfer-Encoding", "chunked");
            req.body = chunked(&body, chunk, "", false);
            // Without the end of input the agent would rightly wait for the last chunk.
            return (
                "a chunked body without its final chunk, then the end of input".to_string(),
                vec![req.bytes()],
                Pattern::HalfClose,
            );
        }
        _ => {
            req.eol = "\n";
            "bare LF line endings".to_string()
        }
    };
    one(label, req.bytes())
}
