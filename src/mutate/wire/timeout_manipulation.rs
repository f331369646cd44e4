//! `timeout_manipulation`: the normal request written as a slow client would, 1–10 bytes
//! every 100–500 ms, paced so the whole write takes at most half the agent's timeout
//! (chunks grow when it would not): a correct agent waits for the rest and answers.

use std::time::Duration;

use super::request::Normal;
use super::{Built, Pattern};
use crate::mutate::Draw;

pub(super) fn attack(n: &Normal, _index: u32, d: &mut Draw, timeout: Duration) -> Built {
    let bytes = n.request().bytes();
    let mut chunk = 1 + d.below(10);
    let every = Duration::from_millis(100 + d.below(401) as u64);
    // Writes that fit in half the timeout (the first write needs no pause).
    let fit = (timeout.as_millis() / 2 / every.as_millis()).max(1) as usize + 1;
    chunk = chunk.max(bytes.len().div_ceil(fit));
    let writes = bytes.len().div_ceil(chunk);
    (
        format!(
            "the request written {chunk} bytes every {} ms ({writes} writes)",
            every.as_millis()
        ),
        vec![bytes],
        Pattern::Slow { chunk, every },
    )
}
