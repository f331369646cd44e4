//! The proxy's live traffic for the chaos page: the journal's most recent exchanges, newest
//! first, filtered by tool, provider or fault, each as the journal holds it (redacted at
//! its boundary: secrets in headers, query values and bodies never reach it), with its
//! bodies when the journal kept them (while a run or a recording wants them).

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use super::UiState;
use crate::api::ApiError;
use crate::exchange::{Exchange, Target};

/// Exchanges looked at per request, and the most a page shows; body text shown per side.
const SCAN: usize = 2000;
const MAX_LIMIT: usize = 200;
const BODY_CHARS: usize = 4000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficQuery {
    /// A tool's name (`tools:`), exactly.
    tool: Option<String>,
    /// An LLM provider (`openai`, `anthropic`, …).
    provider: Option<String>,
    /// `any` (a fault or attack applied), or a rule's name or a mode, exactly.
    fault: Option<String>,
    limit: Option<usize>,
}

/// `GET /ui/api/traffic`: the matching recent exchanges, newest first.
pub async fn recent(
    State(s): State<UiState>,
    q: Result<Query<TrafficQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = crate::api::query(q)?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::InvalidParam {
            field: "limit".into(),
            message: format!("{limit} is outside 1..={MAX_LIMIT}"),
        });
    }
    let shown: Vec<Value> = s
        .journal
        .recent(SCAN)
        .iter()
        .rev()
        .filter(|e| matches(e, &q))
        .take(limit)
        .map(|e| shown(&s, e))
        .collect();
    Ok(Json(json!({"exchanges": shown})))
}

fn matches(e: &Exchange, q: &TrafficQuery) -> bool {
    let tool = q.tool.as_deref().is_none_or(|t| match &e.target {
        Target::Tool { name } => name == t,
        Target::Llm { .. } | Target::Embeddings { .. } | Target::Other => false,
    });
    let provider = q.provider.as_deref().is_none_or(|p| match &e.target {
        Target::Llm { provider } | Target::Embeddings { provider } => provider.as_str() == p,
        Target::Tool { .. } | Target::Other => false,
    });
    let faults: Vec<_> = e.fault.iter().chain(&e.attacks).collect();
    let fault = q.fault.as_deref().is_none_or(|f| {
        faults
            .iter()
            .any(|r| r.applied && (f == "any" || r.rule == f || r.mode.to_string() == f))
    });
    tool && provider && fault
}

/// One exchange as the page shows it: the journal's record, a short target name, and the
/// bodies when kept.
fn shown(s: &UiState, e: &Exchange) -> Value {
    let mut v = json!(e);
    v["target_name"] = json!(crate::report::html::target_name(e));
    if let Some(b) = s.journal.bodies(e.id) {
        v["request_body"] = json!(text(std::iter::once(&b.request[..])));
        v["response_body"] = json!(text(b.response.iter().map(|ev| &ev.data[..])));
    }
    v
}

/// The first `BODY_CHARS` characters of a body given in pieces, decoded from no more of
/// its bytes than they can take (a body may be 16 MiB, and a poll shows 200 of them): a
/// character is at most 4 bytes, and an incomplete one at the cut (at most 3) falls past
/// the characters shown, so the text is the same as the whole body's.
fn text<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> String {
    const MAX_BYTES: usize = 4 * BODY_CHARS + 4;
    let mut head = Vec::new();
    for piece in pieces {
        let room = MAX_BYTES - head.len();
        head.extend_from_slice(&piece[..piece.len().min(room)]);
        if head.len() == MAX_BYTES {
            break;
        }
    }
    crate::text::cut(&String::from_utf8_lossy(&head), BODY_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(pieces: &[&[u8]]) -> String {
        crate::text::cut(&String::from_utf8_lossy(&pieces.concat()), BODY_CHARS)
    }

    #[test]
    fn a_bodys_text_is_the_whole_bodys_from_a_bounded_prefix() {
        let ascii = "a".repeat(20 * BODY_CHARS);
        let wide = "é€😀".repeat(2 * BODY_CHARS);
        let short = "short é body";
        let bad: Vec<u8> = (0..5 * BODY_CHARS)
            .map(|i| [0xff, b'x', 0xe2][i % 3])
            .collect();
        for body in [
            ascii.as_bytes(),
            wide.as_bytes(),
            short.as_bytes(),
            &bad[..],
        ] {
            // In pieces that split characters, and whole.
            let pieces: Vec<&[u8]> = body.chunks(7).collect();
            assert_eq!(text(pieces.iter().copied()), whole(&pieces));
            assert_eq!(text(std::iter::once(body)), whole(&[body]));
        }
        assert_eq!(text(std::iter::empty()), "");
        assert_eq!(
            text(wide.as_bytes().chunks(5)).chars().count(),
            BODY_CHARS + 1
        );
    }
}
