//! Whether the agent survived a wire attack: every reply a well-formed HTTP response with a
//! 2xx (an answer) or 4xx (a refusal); a 5xx, a hang or a reply that is not HTTP fails. For
//! `protocol_level_attack` a close without a response is also fine (RFC 9112 lets a server
//! close on a malformed message), and a burst's answers must agree.

use super::{Pattern, WireAttack};
use crate::agent::{RawReply, extract};
use crate::config::ResponsePath;
use crate::mutate::kind::MutationType;

/// Why the agent did not survive a wire attack, in one line: the words are all there is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Fell(String);

/// Ok, or the reason the agent did not survive.
pub fn judge(attack: &WireAttack, replies: &[RawReply]) -> Result<(), Fell> {
    judged(attack, replies).map_err(Fell)
}

fn judged(attack: &WireAttack, replies: &[RawReply]) -> Result<(), String> {
    if replies.len() != attack.requests.len() {
        return Err(format!(
            "{} requests sent but {} replies recorded",
            attack.requests.len(),
            replies.len()
        ));
    }
    for (i, reply) in replies.iter().enumerate() {
        survived(attack.kind, reply).map_err(|e| match replies.len() {
            1 => e,
            _ => format!("request {} of {}: {e}", i + 1, replies.len()),
        })?;
    }
    if let Pattern::Burst { answer_at } = &attack.pattern {
        agree(replies, answer_at)?;
    }
    Ok(())
}

fn survived(kind: MutationType, r: &RawReply) -> Result<(), String> {
    let Some(status) = r.status else {
        if kind == MutationType::ProtocolLevelAttack && r.closed_without_response() {
            return Ok(());
        }
        return Err(r.error.clone().unwrap_or_else(|| "no response".to_string()));
    };
    let status_line = r.head.lines().next().unwrap_or_default();
    if let Some(e) = &r.error
        && !r.body_capped()
    {
        return Err(format!("{status_line:?}, then {e}"));
    }
    if (200..300).contains(&status) || (400..500).contains(&status) {
        Ok(())
    } else if status >= 500 {
        Err(format!("the agent failed: {status_line:?}"))
    } else {
        Err(format!(
            "{status_line:?} is neither an answer (2xx) nor a refusal (4xx)"
        ))
    }
}

/// The replies of a burst: one status class, and one answer text when 2xx.
fn agree(replies: &[RawReply], at: &ResponsePath) -> Result<(), String> {
    let Some(first) = replies.first() else {
        return Ok(());
    };
    let class = |r: &RawReply| r.status.map(|s| s / 100);
    if let Some((i, r)) = replies
        .iter()
        .enumerate()
        .find(|(_, r)| class(r) != class(first))
    {
        return Err(format!(
            "burst answers disagree: request 1 got HTTP {}, request {} got HTTP {}",
            first.status.unwrap_or_default(),
            i + 1,
            r.status.unwrap_or_default()
        ));
    }
    if class(first) != Some(2) {
        return Ok(());
    }
    let answer = |r: &RawReply| extract(&r.body, at).unwrap_or_else(|e| format!("({e})"));
    let want = answer(first);
    for (i, r) in replies.iter().enumerate().skip(1) {
        let got = answer(r);
        if got != want {
            return Err(format!(
                "burst answers disagree at `{}`: request 1 got {:?}, request {} got {:?}",
                at.as_str(),
                crate::text::cut(&want, 80),
                i + 1,
                crate::text::cut(&got, 80)
            ));
        }
    }
    Ok(())
}
