//! Wire-level mutation cases: each attack sent raw to the agent's endpoint (one at a time,
//! so a crash is the attack's), judged on whether the agent survived it, then the agent's
//! normal request for the same prompt sent and required to be answered. An agent that
//! crashed or wedged fails that case with the reason, and the run goes on. These cases run
//! outside any chaos scenario: they attack the endpoint, not the agent's dependencies.

use crate::agent::InvokeError;
use crate::checks::Verdict;
use crate::mutate::kind::MutationType;
use crate::mutate::{Draw, wire};

use super::cases::CaseResult;
use super::{RunContext, SoFar};

/// Scenario name of wire cases in reports and progress.
pub(super) const SCENARIO: &str = "wire-level";

/// A wire case's outcome.
pub(super) struct WireCase {
    /// What was sent: the attack, its first request line, its size.
    pub sent: String,
    pub verdict: Verdict,
    /// The case as reports list it: `prompt` is what was sent, `answer` the answer to the
    /// normal request sent after it.
    pub case: CaseResult,
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
    let started = tokio::time::Instant::now();
    let mut d = Draw::new(seed, kind, prompt, index);
    let Some(attack) = wire::generate(kind, prompt, index, &mut d, target) else {
        let sent = format!("{kind} #{index}");
        let verdict = Verdict::NotTested(format!("{kind} is not a wire-level type"));
        return WireCase {
            case: case(&sent, None, &verdict, started),
            sent,
            verdict,
        };
    };
    let sent = describe(&attack);
    let replies = wire::send(&attack, target).await;
    let outcome = match replies.iter().find(|r| !r.delivered) {
        Some(r) => Outcome::Undelivered(r.error.clone()),
        None => match wire::judge(&attack, &replies) {
            Err(why) => Outcome::Fell(why.to_string()),
            // Only an agent that survived is asked its normal request.
            Ok(()) => Outcome::Survived(ctx.agent.invoke(prompt, &Default::default()).await.answer),
        },
    };
    let answer = match &outcome {
        Outcome::Survived(Ok(a)) => Some(a.clone()),
        Outcome::Survived(Err(_)) | Outcome::Fell(_) | Outcome::Undelivered(_) => None,
    };
    let verdict = verdict(&attack.label, outcome);
    WireCase {
        case: case(&sent, answer, &verdict, started),
        sent,
        verdict,
    }
}

/// The wire case as a case: no chaos, no traffic of its own through the proxy.
fn case(
    sent: &str,
    answer: Option<String>,
    verdict: &Verdict,
    started: tokio::time::Instant,
) -> CaseResult {
    let (error, not_judged) = match verdict {
        Verdict::Fail(why) => (Some(why.clone()), None),
        Verdict::NotTested(why) => (None, Some(why.clone())),
        Verdict::Pass(_) | Verdict::NotApplicable(_) => (None, None),
    };
    CaseResult {
        answer,
        error,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        attempts: 1,
        not_judged,
        ..CaseResult::blank(SCENARIO, sent)
    }
}

/// How a wire case stands, for progress.
pub(super) fn so_far(v: &Verdict) -> SoFar {
    match v {
        Verdict::Pass(_) => SoFar::Passed,
        Verdict::Fail(_) => SoFar::Failed,
        Verdict::NotTested(_) | Verdict::NotApplicable(_) => SoFar::NotJudged,
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
