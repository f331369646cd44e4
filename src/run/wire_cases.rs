//! Wire-level mutation cases: each attack sent raw to the agent's endpoint (one at a time,
//! so a crash is the attack's), judged on whether the agent survived it, then the agent's
//! normal request for the same prompt sent and required to be answered. An agent that
//! crashed or wedged fails that case with the reason, and the run goes on. These cases run
//! outside any chaos scenario: they attack the endpoint, not the agent's dependencies.

use crate::agent::{InvokeError, RawReply};
use crate::checks::Verdict;
use crate::config::MutationType;
use crate::mutate::{Draw, wire};

use super::RunContext;

/// A wire case's outcome.
pub(super) struct WireCase {
    /// What was sent: the attack, its first request line, its size.
    pub sent: String,
    pub verdict: Verdict,
}

/// Sends variant `index` of `kind` on `prompt` and judges the agent.
pub(super) async fn run_wire_case(
    ctx: &RunContext,
    seed: u64,
    kind: MutationType,
    prompt: &str,
    index: u32,
) -> WireCase {
    let target = ctx.agent.target();
    let mut d = Draw::new(seed, kind, prompt, index);
    let Some(attack) = wire::generate(kind, prompt, index, &mut d, target) else {
        return WireCase {
            sent: format!("{kind} #{index}"),
            verdict: Verdict::NotTested(format!("{kind} is not a wire-level type")),
        };
    };
    let sent = describe(&attack);
    let replies = wire::send(&attack, target).await;
    // Only an attack the agent got is followed by its normal request.
    let delivered = replies.iter().all(|r| r.delivered);
    let survived = delivered.then(|| wire::judge(&attack, &replies));
    let after = match survived {
        Some(Ok(())) => Some(ctx.agent.invoke(prompt, &Default::default()).await.answer),
        Some(Err(_)) | None => None,
    };
    WireCase {
        sent,
        verdict: verdict(&attack.label, &replies, survived, after),
    }
}

/// A wire case's verdict. An attack flakestorm could not deliver (the endpoint could not be
/// reached or its TLS failed before a byte was written) judges nothing about the agent:
/// not tested. Otherwise the agent must survive the attack and then answer its normal
/// request.
fn verdict(
    label: &str,
    replies: &[RawReply],
    survived: Option<Result<(), String>>,
    after: Option<Result<String, InvokeError>>,
) -> Verdict {
    match (survived, after) {
        (None, _) => {
            let why = replies
                .iter()
                .find(|r| !r.delivered)
                .and_then(|r| r.error.as_deref())
                .unwrap_or("the endpoint could not be reached");
            Verdict::NotTested(format!("{label}: the attack could not be delivered: {why}"))
        }
        (Some(Err(why)), _) => Verdict::Fail(format!("{label}: {why}")),
        (Some(Ok(())), Some(Ok(_))) => Verdict::Pass(format!(
            "{label}: survived, and answered its normal request right after"
        )),
        (Some(Ok(())), Some(Err(e))) => Verdict::Fail(format!(
            "{label}: survived the attack, but its normal request right after failed: {e}"
        )),
        (Some(Ok(())), None) => Verdict::NotTested(format!(
            "{label}: survived, but its normal request was not sent"
        )),
    }
}

/// The attack in one line: label, first request line (cut), size and count.
fn describe(attack: &wire::WireAttack) -> String {
    let first = attack.requests.first().map_or(&[][..], Vec::as_slice);
    let line_end = first
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(first.len());
    let line = String::from_utf8_lossy(&first[..line_end]);
    let line: String = line.trim_end_matches('\r').chars().take(160).collect();
    let bytes: usize = attack.requests.iter().map(Vec::len).sum();
    let count = match attack.requests.len() {
        1 => String::new(),
        n => format!(", {n} requests"),
    };
    format!("{}: {line:?} ({bytes} bytes{count})", attack.label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(delivered: bool, status: Option<u16>, error: Option<&str>) -> RawReply {
        RawReply {
            status,
            head: String::new(),
            body: bytes::Bytes::new(),
            elapsed: std::time::Duration::ZERO,
            error: error.map(str::to_string),
            delivered,
        }
    }

    #[test]
    fn an_attack_that_never_reached_the_agent_is_not_its_failure() {
        let tls = reply(
            false,
            None,
            Some("TLS handshake with agent:443: bad certificate"),
        );
        let v = verdict("CRLF in a header value", &[tls], None, None);
        assert_eq!(
            v,
            Verdict::NotTested(
                "CRLF in a header value: the attack could not be delivered: TLS handshake with \
                 agent:443: bad certificate"
                    .into()
            )
        );
        let ok = reply(true, Some(200), None);
        let crashed = InvokeError::Unreachable {
            url: "http://agent/".into(),
            cause: "connection refused".into(),
        };
        let v = verdict(
            "x",
            std::slice::from_ref(&ok),
            Some(Ok(())),
            Some(Err(crashed)),
        );
        assert!(
            matches!(&v, Verdict::Fail(why) if why.contains("normal request right after failed")),
            "{v:?}"
        );
        let v = verdict(
            "x",
            std::slice::from_ref(&ok),
            Some(Ok(())),
            Some(Ok("fine".into())),
        );
        assert!(v.passed());
        let v = verdict("x", &[ok], Some(Err("the agent failed: 500".into())), None);
        assert!(matches!(&v, Verdict::Fail(why) if why == "x: the agent failed: 500"));
    }
}
