//! The namespace's DNS, answered by flakestorm (pure): a query's header and single
//! question read by hand, and the answer built. A name asked for an `A` record gets a fake
//! address ([`Names`]) that the capture maps back to the name; `AAAA` and every other type
//! get an empty answer (NOERROR, no records), so clients use IPv4 and the name. Only what
//! a stub resolver sends is read: no compression in the question (a query has none), one
//! question. A packet that is not such a query is dropped (`None`) and counted by the
//! caller; an unsupported opcode is answered NOTIMP.

use std::net::Ipv4Addr;

use super::names::Names;

const HEADER: usize = 12;
const TYPE_A: u16 = 1;
const CLASS_IN: u16 = 1;
/// Seconds a fake address may be cached: the mapping holds for the namespace's life.
const TTL: u32 = 300;

/// DNS response codes used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Rcode {
    NoError = 0,
    FormErr = 1,
    ServFail = 2,
    NotImp = 4,
    Refused = 5,
}

/// A query's one question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Lower-case, dot-separated, without the root's trailing dot.
    pub name: String,
    pub qtype: u16,
    pub qclass: u16,
    /// The question's bytes as they came, echoed in the answer.
    raw: Vec<u8>,
}

/// Reads the name at the start of `bytes`: its text and how many bytes it took. `None`
/// when it is cut, compressed, or over the 255-byte limit.
fn read_name(bytes: &[u8]) -> Option<(String, usize)> {
    let mut at = 0;
    let mut labels: Vec<String> = vec![];
    loop {
        let len = usize::from(*bytes.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        // 0xC0: a compression pointer (no query has one); 0x40, 0x80: reserved label types.
        if len > 63 || at + len > bytes.len() || at > 255 {
            return None;
        }
        labels.push(String::from_utf8_lossy(&bytes[at..at + len]).to_ascii_lowercase());
        at += len;
    }
    Some((labels.join("."), at))
}

/// The query's id, flags and question; `None` for a packet that is not a query with one
/// readable question.
pub fn parse(packet: &[u8]) -> Option<(u16, u16, Option<Question>)> {
    let header = packet.get(..HEADER)?;
    let id = u16::from_be_bytes([header[0], header[1]]);
    let flags = u16::from_be_bytes([header[2], header[3]]);
    let qdcount = u16::from_be_bytes([header[4], header[5]]);
    if flags & 0x8000 != 0 {
        return None; // a response, not a query
    }
    if qdcount != 1 {
        return Some((id, flags, None));
    }
    let rest = &packet[HEADER..];
    let (name, n) = read_name(rest)?;
    let tail = rest.get(n..n + 4)?;
    let question = Question {
        name,
        qtype: u16::from_be_bytes([tail[0], tail[1]]),
        qclass: u16::from_be_bytes([tail[2], tail[3]]),
        raw: rest[..n + 4].to_vec(),
    };
    Some((id, flags, Some(question)))
}

/// Whether `name` can stand as the host of a URL authority: letters, digits, `-`, `_`.
fn hostname(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The answer to `packet`, with a fake address from `names` for an `A` question; `None`
/// when the packet is dropped (not a query, or cut short).
pub fn answer(packet: &[u8], names: &Names) -> Option<Vec<u8>> {
    let (id, flags, question) = parse(packet)?;
    let opcode = (flags >> 11) & 0xF;
    let Some(q) = question else {
        return Some(response(id, flags, None, Rcode::FormErr, None));
    };
    if opcode != 0 {
        return Some(response(id, flags, Some(&q), Rcode::NotImp, None));
    }
    if q.qclass != CLASS_IN || !hostname(&q.name) {
        return Some(response(id, flags, Some(&q), Rcode::Refused, None));
    }
    if q.qtype != TYPE_A {
        return Some(response(id, flags, Some(&q), Rcode::NoError, None));
    }
    let address = match q.name.as_str() {
        "localhost" => Some(Ipv4Addr::LOCALHOST),
        name if name.ends_with(".localhost") => Some(Ipv4Addr::LOCALHOST),
        name => names.address(name),
    };
    Some(match address {
        Some(a) => response(id, flags, Some(&q), Rcode::NoError, Some(a)),
        // The range is used up: no address to give, said as a server failure.
        None => response(id, flags, Some(&q), Rcode::ServFail, None),
    })
}

fn response(
    id: u16,
    query_flags: u16,
    q: Option<&Question>,
    rcode: Rcode,
    a: Option<Ipv4Addr>,
) -> Vec<u8> {
    // QR, the query's opcode and RD, AA and RA set, the code.
    let flags = 0x8000 | (query_flags & 0x7900) | 0x0400 | 0x0080 | rcode as u16;
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&u16::from(q.is_some()).to_be_bytes());
    out.extend_from_slice(&u16::from(a.is_some()).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    if let Some(q) = q {
        out.extend_from_slice(&q.raw);
    }
    if let Some(a) = a {
        // The name as a pointer to the question's (offset 12).
        out.extend_from_slice(&[0xC0, 0x0C]);
        out.extend_from_slice(&TYPE_A.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&TTL.to_be_bytes());
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&a.octets());
    }
    out
}

#[cfg(test)]
#[path = "dns_tests.rs"]
mod tests;
