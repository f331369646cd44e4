//! `payload_size_attack`: the normal request with a 1 MiB or 10 MiB body, the prompt padded
//! inside the JSON string, with a correct Content-Length: does the agent answer, refuse
//! (413), or fall over?

use super::request::Normal;
use super::{Built, one};
use crate::mutate::Draw;

pub(super) const FAMILIES: u32 = 2;

const SIZES: [(usize, &str); 2] = [(1 << 20, "1 MiB"), (10 << 20, "10 MiB")];
/// ASCII padding: nothing in it needs JSON escaping, so the size is exact.
const FILLERS: [&str; 4] = [
    " lorem ipsum dolor sit amet",
    " A",
    " 0123456789",
    "          ",
];

pub(super) fn attack(n: &Normal, index: u32, d: &mut Draw) -> Built {
    let (size, name) = SIZES[(index % FAMILIES) as usize];
    let filler = d.pick(&FILLERS);
    let body = n.body_padded(filler, size);
    let label = format!("a {name} body (the prompt padded inside the JSON string)");
    one(label, n.request_with(body).bytes())
}
