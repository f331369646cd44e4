//! `concurrent_request_pattern`: a burst of 10–20 identical normal requests, all at once,
//! each on its own connection; the agent survives if every one is answered or refused and
//! the answers agree.

use super::request::Normal;
use super::{Built, Pattern};
use crate::config::ResponsePath;
use crate::mutate::Draw;

pub(super) fn attack(n: &Normal, _index: u32, d: &mut Draw, answer_at: &ResponsePath) -> Built {
    let count = 10 + d.below(11);
    let bytes = n.request().bytes();
    (
        format!("{count} identical requests at once"),
        vec![bytes; count],
        Pattern::Burst {
            answer_at: answer_at.clone(),
        },
    )
}
