//! A replay session's answer to one tool call (decided by `chaos::ReplayTable`) as the
//! proxy's action: the recorded response, a closed connection for a recorded refusal, or a
//! 599 naming the request when no recorded answer is left. Each is recorded on the
//! exchange as a fault (rule `replay`, mode `replayed` or `replay_miss`), so coverage and
//! the journal show it. The tool's real origin receives nothing in any of these cases.

use std::time::Duration;

use bytes::Bytes;

use super::fault::Action;
use super::recorder::Recorder;
use crate::chaos::Replay;
use crate::chaos::replay::RULE;
use crate::chaos::respond::Synthetic;
use crate::config::replays::OnMiss;
use crate::exchange::FaultKind;

/// A recorded tool answer given to an MCP `tools/call`: a result with its text (an error
/// result when the recorded status was one), with the request's id. `resultType` is set:
/// the sessionless era's clients need it, the session-based era's ignore it.
fn as_mcp_result(recorded: Synthetic, id: &serde_json::Value) -> Synthetic {
    let text = String::from_utf8_lossy(&recorded.body);
    let body = crate::mcp::tool_result(id, &text, recorded.status >= 400, true);
    Synthetic {
        status: 200,
        headers: vec![("content-type", "application/json".into())],
        body: Bytes::from(body),
    }
}

/// The status a call with no recorded answer gets (`on_miss: error | strict`).
pub const MISS_STATUS: u16 = 599;

pub fn action(rec: &mut Recorder, replay: Replay) -> Action {
    match replay {
        Replay::Answer { synthetic, delay } => {
            rec.set_fault(RULE, FaultKind::Replayed);
            let id = rec.exchange().mcp.as_ref().and_then(|m| m.id.clone());
            let synthetic = match id {
                Some(id) => as_mcp_result(synthetic, &id),
                None => synthetic,
            };
            Action::Respond { delay, synthetic }
        }
        Replay::Refused { delay } => {
            rec.set_fault(RULE, FaultKind::Replayed);
            Action::Drop {
                delay,
                why: "closed with no response: the session recorded a refused connection \
                      (status 0)",
            }
        }
        Replay::Miss {
            tool,
            call,
            recorded,
            on_miss,
        } => {
            rec.set_fault(RULE, FaultKind::ReplayMiss);
            let ex = rec.exchange();
            let policy = match on_miss {
                OnMiss::Strict => "strict",
                OnMiss::Error | OnMiss::Live => "error",
            };
            let message = format!(
                "flakestorm replay: no recorded answer for {} {} (tool `{tool}`, call {call}; \
                 the session records {recorded} answer(s) for it; replays.on_miss: {policy})\n",
                ex.request.method, ex.request.url
            );
            Action::Respond {
                delay: Duration::ZERO,
                synthetic: Synthetic {
                    status: MISS_STATUS,
                    headers: vec![("content-type", "text/plain; charset=utf-8".into())],
                    body: Bytes::from(message),
                },
            }
        }
    }
}
