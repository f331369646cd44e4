//! `request_method_attack`: the normal request and body under another method (GET, PUT,
//! PATCH, OPTIONS, HEAD, DELETE) or an unknown one: the agent should answer, or refuse with
//! a 4xx (e.g. 405), not fail with a 5xx or hang.

use super::request::Normal;
use super::{Built, one};
use crate::mutate::Draw;

pub(super) const FAMILIES: u32 = 7;

const METHODS: [&str; 6] = ["GET", "PUT", "PATCH", "OPTIONS", "HEAD", "DELETE"];
const UNKNOWN: [&str; 3] = ["BREW", "FLAKESTORM", "XYZZY"];

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let unknown = *d.pick(&UNKNOWN);
    let method = |i: u32| match METHODS.get(i as usize) {
        Some(m) => *m,
        None => unknown,
    };
    let mut m = method(index % FAMILIES);
    // The agent's own method is no attack: take the next one.
    if m.eq_ignore_ascii_case(&n.method) {
        m = method((index + 1) % FAMILIES);
    }
    let mut req = n.request();
    req.method = m.to_string();
    let label = if UNKNOWN.contains(&m) {
        format!("an unknown method ({m}) with the body")
    } else {
        format!("{m} with the body")
    };
    one(label, req.bytes())
}
