//! Wire-level mutation cases: each attack sent raw to the agent's endpoint (one at a time,
//! so a crash is the attack's), judged on whether the agent survived it, then the agent's
//! normal request for the same prompt sent and required to be answered. An agent that
//! crashed or wedged fails that case with the reason, and the run goes on. These cases run
//! outside any chaos scenario: they attack the endpoint, not the agent's dependencies.

use crate::agent::InvokeError;
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
    let outcome = match replies.iter().find(|r| !r.delivered) {
        Some(r) => Outcome::Undelivered(r.error.clone()),
        None => match wire::judge(&attack, &replies) {
            Err(why) => Outcome::Fell(why),
            // Only an agent that survived is asked its normal request.
            Ok(()) => Outcome::Survived(ctx.agent.invoke(prompt, &Default::default()).await.answer),
        },
    };
    WireCase {
        sent,
        verdict: verdict(&attack.label, outcome),
    }
}

/// What became of one attack.
enum Outcome {
    /// flakestorm could not reach the endpoint (or its TLS failed) before a byte was
    /// written; the connection error, if any.
    Undelivered(Option<String>),
    /// The agent did not survive the attack: why.
    Fell(String),
    /// The agent survived; its answer to the normal request sent right after.
    Survived(Result<String, InvokeError>),
}

/// A wire case's verdict. An attack flakestorm could not deliver judges nothing about the
/// agent: not tested. Otherwise the agent must survive the attack and then answer its
/// normal request.
fn verdict(label: &str, outcome: Outcome) -> Verdict {
    match outcome {
        Outcome::Undelivered(why) => Verdict::NotTested(format!(
            "{label}: the attack could not be delivered: {}",
            why.as_deref()
                .unwrap_or("the endpoint could not be reached")
        )),
        Outcome::Fell(why) => Verdict::Fail(format!("{label}: {why}")),
        Outcome::Survived(Ok(_)) => Verdict::Pass(format!(
            "{label}: survived, and answered its normal request right after"
        )),
        Outcome::Survived(Err(e)) => Verdict::Fail(format!(
            "{label}: survived the attack, but its normal request right after failed: {e}"
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

    #[test]
    fn an_attack_that_never_reached_the_agent_is_not_its_failure() {
        let tls = Some("TLS handshake with agent:443: bad certificate".to_string());
        assert_eq!(
            verdict("CRLF in a header value", Outcome::Undelivered(tls)),
            Verdict::NotTested(
                "CRLF in a header value: the attack could not be delivered: TLS handshake with \
                 agent:443: bad certificate"
                    .into()
            )
        );
        let crashed = InvokeError::Unreachable {
            url: "http://agent/".into(),
            cause: "connection refused".into(),
        };
        let v = verdict("x", Outcome::Survived(Err(crashed)));
        assert!(
            matches!(&v, Verdict::Fail(why) if why.contains("normal request right after failed")),
            "{v:?}"
        );
        assert!(verdict("x", Outcome::Survived(Ok("fine".into()))).passed());
        let v = verdict("x", Outcome::Fell("the agent failed: 500".into()));
        assert!(matches!(&v, Verdict::Fail(why) if why == "x: the agent failed: 500"));
    }
}
