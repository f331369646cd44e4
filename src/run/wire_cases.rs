//! Wire-level mutation cases: each attack sent raw to the agent's endpoint (one at a time,
//! so a crash is the attack's), judged on whether the agent survived it, then the agent's
//! normal request for the same prompt sent and required to be answered. An agent that
//! crashed or wedged fails that case with the reason, and the run goes on. These cases run
//! outside any chaos scenario: they attack the endpoint, not the agent's dependencies.

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
    let verdict = match wire::judge(&attack, &replies) {
        Err(why) => Verdict::Fail(format!("{}: {why}", attack.label)),
        Ok(()) => match ctx.agent.invoke(prompt, &Default::default()).await.answer {
            Ok(_) => Verdict::Pass(format!(
                "{}: survived, and answered its normal request right after",
                attack.label
            )),
            Err(e) => Verdict::Fail(format!(
                "{}: survived the attack, but its normal request right after failed: {e}",
                attack.label
            )),
        },
    };
    WireCase { sent, verdict }
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
