//! A replay session's tape answering one call: the request body is read (bounded), the
//! request keyed as the tape's were (redacted the same way first), and the recorded
//! response played back at the recorded pace — headers at the recorded wait, each event
//! of a streamed body at its offset, on tokio time — or the miss handled by `on_miss`
//! (`live`: the call goes upstream with the body read; `error`/`strict`: a 599 naming the
//! request). Recorded as fault rule `replay` (`replayed` or `replay_miss`).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::{BodyExt, Empty};
use tokio::time::{Instant, Sleep};

use super::body::ObservedBody;
use super::fault::{Action, Plan};
use super::pending::Pending;
use super::recorder::Recorder;
use super::replay::MISS_STATUS;
use super::request_body::{read_head, rejoin};
use super::{BoxError, Proxy, ProxyBody};
use crate::chaos::replay::RULE;
use crate::chaos::respond::Synthetic;
use crate::config::replays::OnMiss;
use crate::exchange::FaultKind;
use crate::exchange::ResponseHead;
use crate::tape::{Answer, MAX_BODY, RequestKey, TapeTable};

/// What the exchange does next: play a recorded answer, or go on with this request body
/// (to the upstream, or to the action `plan` now holds).
pub enum Next {
    Play(Answer),
    Body(ProxyBody),
}

/// Before the upstream: a session's tape answers the calls no session entry or fault took
/// (a miss sets `plan.action` when `on_miss` answers it). While tapes are kept, the body is
/// collected as it goes, and a body of an exchange answered without its upstream is still
/// read whole (a replay keys on it).
pub async fn consult(
    proxy: &Proxy,
    rec: &mut Recorder,
    parts: &http::request::Parts,
    body: ProxyBody,
    plan: &mut Plan,
    upgrade: bool,
) -> Next {
    let body = match rec.capture().cloned() {
        Some(c) if !upgrade => tee(c, body),
        _ => body,
    };
    let body = match plan.tape.take() {
        Some(tape) if plan.action.is_none() && !upgrade => {
            match from_tape(proxy, rec, parts, body, &tape).await {
                Taped::Answer(a) => return Next::Play(a),
                Taped::Miss(action) => {
                    plan.action = Some(action);
                    return Next::Body(empty_body());
                }
                Taped::Live(body) => body,
            }
        }
        _ => body,
    };
    let answered = matches!(
        plan.action,
        Some(Action::Respond { .. } | Action::Drop { .. })
    );
    if answered && rec.capture().is_some() {
        drain(body).await;
        return Next::Body(empty_body());
    }
    Next::Body(body)
}

/// The request body on its way upstream, each piece also collected for the tape.
fn tee(capture: crate::tape::Capture, body: ProxyBody) -> ProxyBody {
    body.map_frame(move |f| {
        if let Some(d) = f.data_ref() {
            capture.request(d);
        }
        f
    })
    .boxed()
}

/// What the tape does with a call.
enum Taped {
    Answer(Answer),
    /// No recorded answer, and `on_miss` answers it.
    Miss(Action),
    /// No recorded answer: forwarded live, with the body read so far.
    Live(ProxyBody),
}

/// An empty request body.
fn empty_body() -> ProxyBody {
    Empty::new().map_err(|n| match n {}).boxed()
}

/// Reads a request body to its end (its tee collects it for the tape), up to `MAX_BODY`;
/// what is left is dropped with the connection's request.
async fn drain(mut body: ProxyBody) {
    let mut read = 0;
    while let Some(Ok(frame)) = body.frame().await {
        read += frame.data_ref().map_or(0, Bytes::len);
        if read > MAX_BODY {
            break;
        }
    }
}

async fn from_tape(
    proxy: &Proxy,
    rec: &mut Recorder,
    parts: &http::request::Parts,
    body: ProxyBody,
    (tape, on_miss): &(std::sync::Arc<TapeTable>, OnMiss),
) -> Taped {
    let (bytes, rest) = read_head(body, MAX_BODY).await;
    let key = key(proxy, rec, parts, &bytes, tape.ignored());
    // A broken upload, or one over MAX_BODY (a tape keeps no more of one), is a miss;
    // forwarded live, a broken one is answered 400 as any other.
    if rest.is_none()
        && let Some(mut answer) = tape.answer(&key)
    {
        if let Some(id) = rec.exchange().mcp.as_ref().and_then(|m| m.id.clone()) {
            with_live_id(&mut answer, id);
        }
        return Taped::Answer(answer);
    }
    let whole = || rejoin(bytes.clone(), rest);
    match on_miss {
        OnMiss::Live => Taped::Live(whole()),
        OnMiss::Error | OnMiss::Strict => {
            rec.set_fault(RULE, FaultKind::ReplayMiss);
            let ex = rec.exchange();
            let policy = if *on_miss == OnMiss::Strict {
                "strict"
            } else {
                "error"
            };
            let message = format!(
                "flakestorm replay: no recorded answer on the session's tape for {} {} \
                 ({} entries; replays.on_miss: {policy})\n",
                ex.request.method,
                proxy.journal().redactor().url(&ex.request.url),
                tape.entries()
            );
            Taped::Miss(Action::Respond {
                delay: Duration::ZERO,
                synthetic: Synthetic {
                    status: MISS_STATUS,
                    headers: vec![("content-type", "text/plain; charset=utf-8".into())],
                    body: Bytes::from(message),
                },
            })
        }
    }
}

/// A recorded MCP answer given the live request's JSON-RPC id (the tape is keyed without
/// it): in a stream, the answer event (wherever the recorded chunks split it), sent when
/// its last byte was recorded, every other byte at its own time; a JSON body whole, at
/// the time its last piece was recorded. A body that is no JSON-RPC answer plays as it is.
fn with_live_id(answer: &mut Answer, id: serde_json::Value) {
    let ct = answer
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let edit = crate::mcp::Edit::Id(id);
    let whole: Vec<u8> = answer.pieces.iter().flat_map(|(_, p)| p.to_vec()).collect();
    if crate::exchange::is_event_stream(&ct) {
        let mut at = 0;
        while let Some(end) = crate::mcp::next_event(&whole[at..]) {
            if let Some(edited) = edit.event(&whole[at..at + end]) {
                answer.pieces = splice(&answer.pieces, at..at + end, edited);
                return;
            }
            at += end;
        }
        return;
    }
    let last = answer.pieces.last().map(|(t, _)| *t);
    if let (Ok(b), Some(last)) = (crate::mcp::apply(&whole, &ct, &edit), last) {
        answer.pieces = vec![(last, b)];
    }
}

/// `pieces` with the bytes in `range` (of their concatenation) replaced by `new`, which is
/// sent with the piece the range ended in; every other byte keeps its piece and time.
fn splice(
    pieces: &[(Duration, Bytes)],
    range: std::ops::Range<usize>,
    new: Bytes,
) -> Vec<(Duration, Bytes)> {
    let mut out = vec![];
    let mut offset = 0;
    for (t, p) in pieces {
        let (s, e) = (offset, offset + p.len());
        offset = e;
        let before = range.start.clamp(s, e);
        if before > s {
            out.push((*t, p.slice(..before - s)));
        }
        if range.end > s && range.end <= e {
            out.push((*t, new.clone()));
        }
        let after = range.end.clamp(s, e);
        if e > after {
            out.push((*t, p.slice(after - s..)));
        }
    }
    out
}

/// The live request's key, after the journal's redaction (as the tape's requests had).
fn key(
    proxy: &Proxy,
    rec: &Recorder,
    parts: &http::request::Parts,
    body: &[u8],
    ignore: &[String],
) -> RequestKey {
    let r = proxy.journal().redactor();
    let mut raw = rec.exchange().clone();
    raw.request.headers = super::headers::header_list(&parts.headers);
    let secrets = r.secrets(&raw);
    let body = r.body(body, &secrets);
    let key = match raw.mcp {
        Some(_) => RequestKey::mcp,
        None => RequestKey::new,
    };
    key(&raw.request.method, &r.url(&raw.request.url), &body, ignore)
}

/// Plays a recorded answer: headers after the recorded wait, the body's pieces at their
/// recorded offsets from the request's arrival.
/// The exchange stays pending through the wait, so a client that leaves is recorded.
pub async fn play(
    mut pending: Pending,
    answer: Answer,
) -> Result<Response<ProxyBody>, super::fault::Dropped> {
    pending.rec().set_fault(RULE, FaultKind::Replayed);
    let start = pending.rec().started();
    // A recorded wait of 0 does not go through the timer (its 1 ms resolution).
    if !answer.head_after.is_zero() {
        tokio::time::sleep_until(start + answer.head_after).await;
    }
    let rec = pending.take();
    if answer.refused {
        super::fault::dropped(
            rec,
            "closed with no response: the tape recorded no response (status 0)",
        );
        return Err(super::fault::Dropped);
    }
    let mut resp = Response::new(empty_body());
    *resp.status_mut() = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    for (name, value) in &answer.headers {
        if let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            resp.headers_mut().append(n, v);
        }
    }
    let head = ResponseHead {
        status: resp.status().as_u16(),
        version: "HTTP/1.1".into(),
        headers: super::headers::header_list(resp.headers()),
    };
    let pieces = answer
        .pieces
        .into_iter()
        .map(|(after, data)| (start + after, data))
        .collect();
    let body = Paced {
        pieces,
        sleep: None,
    };
    let (parts, _) = resp.into_parts();
    Ok(Response::from_parts(
        parts,
        ObservedBody::new(body, rec, head, false).boxed(),
    ))
}

/// A body whose pieces are sent no earlier than their instants. Not a `StreamBody` over
/// timed pieces: it says when it has ended (`is_end_stream`), so an empty recorded body
/// is recorded at once (`ObservedBody`) and framed as empty, and the last piece ends the
/// stream (no empty end frame after it).
pub struct Paced {
    pieces: VecDeque<(Instant, Bytes)>,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Body for Paced {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let Some((at, _)) = this.pieces.front() else {
            return Poll::Ready(None);
        };
        let at = *at;
        if Instant::now() < at {
            let sleep = this
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        this.sleep = None;
        match this.pieces.pop_front() {
            Some((_, data)) => Poll::Ready(Some(Ok(Frame::data(data)))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replayed answer event split across recorded chunks still gets the live id, sent
    /// when its last byte was recorded; the notification before it keeps its own time.
    #[test]
    fn a_split_answer_event_takes_the_live_id_at_its_recorded_end() {
        let ms = Duration::from_millis;
        let piece = |t: u64, s: &'static str| (ms(t), Bytes::from_static(s.as_bytes()));
        let mut answer = Answer {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces: vec![
                piece(
                    5,
                    "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,",
                ),
                piece(9, "\"result\":{}}\n\n"),
            ],
            head_after: ms(1),
            refused: false,
            target: None,
        };
        with_live_id(&mut answer, serde_json::json!(42));
        let got: Vec<(u64, String)> = answer
            .pieces
            .iter()
            .map(|(t, b)| (t.as_millis() as u64, String::from_utf8(b.to_vec()).unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    5,
                    "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n".to_string()
                ),
                (
                    9,
                    "data: {\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}\n\n".to_string()
                ),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn pieces_come_at_their_recorded_offsets() {
        let start = Instant::now();
        let mut body = Paced {
            pieces: [(10, "a"), (30, "b"), (30, "c")]
                .into_iter()
                .map(|(ms, d)| (start + Duration::from_millis(ms), Bytes::from(d)))
                .collect(),
            sleep: None,
        };
        let mut seen = vec![];
        while let Some(f) = body.frame().await {
            let d = f.unwrap().into_data().unwrap();
            seen.push((start.elapsed().as_millis(), d));
        }
        assert_eq!(
            seen,
            [
                (10, Bytes::from("a")),
                (30, Bytes::from("b")),
                (30, Bytes::from("c"))
            ]
        );
        assert!(body.is_end_stream());
    }
}
