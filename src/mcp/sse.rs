//! The MCP answers inside a `text/event-stream` body: each event's `data:` lines are one
//! JSON-RPC message. Events are rewritten in place, their other fields (`event:`, `id:`)
//! kept, so an SSE parser sees the same stream with the edited message.

use bytes::Bytes;
use serde_json::Value;

/// One event: its lines (without line ends), and whether a blank line ended it (the last
/// one may be cut off).
struct Event<'a> {
    lines: Vec<&'a str>,
    ended: bool,
}

fn events(text: &str) -> Vec<Event<'_>> {
    let mut out = vec![];
    let mut lines = vec![];
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.is_empty() && line.ends_with('\n') {
            if !lines.is_empty() {
                out.push(Event {
                    lines: std::mem::take(&mut lines),
                    ended: true,
                });
            }
            continue;
        }
        lines.push(bare);
    }
    if !lines.is_empty() {
        out.push(Event {
            lines,
            ended: false,
        });
    }
    out
}

/// An event's data: its `data:` lines joined (the SSE spec's one optional space dropped).
fn data(e: &Event<'_>) -> Option<String> {
    let parts: Vec<&str> = e
        .lines
        .iter()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

fn write(e: &Event<'_>, data: Option<&str>, out: &mut String) {
    let mut wrote = false;
    for l in &e.lines {
        match (l.starts_with("data:"), data) {
            (true, Some(d)) if !wrote => {
                out.push_str("data: ");
                out.push_str(d);
                out.push('\n');
                wrote = true;
            }
            (true, Some(_)) => {}
            (true, None) | (false, _) => {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    if e.ended {
        out.push('\n');
    }
}

/// The stream with `f` applied to each event whose data is JSON; `None` when the body is
/// not text or `f` changed no event.
pub(super) fn map_events(body: &[u8], f: &mut dyn FnMut(&mut Value) -> bool) -> Option<Bytes> {
    let text = std::str::from_utf8(body).ok()?;
    let mut out = String::with_capacity(body.len() + 256);
    let mut changed = false;
    for e in events(text) {
        let edited = data(&e)
            .and_then(|d| serde_json::from_str::<Value>(&d).ok())
            .and_then(|mut v| f(&mut v).then(|| v.to_string()));
        changed |= edited.is_some();
        write(&e, edited.as_deref(), &mut out);
    }
    changed.then(|| Bytes::from(out))
}

/// The stream with its last message's data cut at 60% and ending in bytes no JSON parser
/// accepts, the event still framed: the client reads an event and fails to parse it (a
/// malformed message, not a cut stream). `None` when no event has data.
pub fn corrupt_last_event(body: &[u8]) -> Option<Bytes> {
    let text = std::str::from_utf8(body).ok()?;
    let all = events(text);
    let last = all.iter().rposition(|e| data(e).is_some())?;
    let mut out = String::with_capacity(body.len() + 8);
    for (i, e) in all.iter().enumerate() {
        match i == last {
            true => {
                let d = data(e).unwrap_or_default();
                let mut keep = d.len() * 6 / 10;
                while !d.is_char_boundary(keep) {
                    keep -= 1;
                }
                let bad = format!("{}\"\u{fffd}{{", &d[..keep]);
                write(e, Some(&bad), &mut out);
            }
            false => write(e, None, &mut out),
        }
    }
    Some(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n\r\n\
                          event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";

    #[test]
    fn events_are_rewritten_in_place_with_their_fields() {
        let out = map_events(STREAM.as_bytes(), &mut |v| {
            v.get("id").is_some() && {
                v["id"] = 9.into();
                true
            }
        })
        .unwrap();
        let out = std::str::from_utf8(&out).unwrap();
        assert_eq!(
            out,
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n\
             event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n"
        );
        assert!(map_events(STREAM.as_bytes(), &mut |_| false).is_none());
    }

    #[test]
    fn a_corrupted_stream_keeps_its_framing_and_breaks_the_last_message() {
        let out = corrupt_last_event(STREAM.as_bytes()).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.ends_with("\n\n"), "{text}");
        let all = events(text);
        assert_eq!(all.len(), 2);
        let last = data(&all[1]).unwrap();
        assert!(serde_json::from_str::<Value>(&last).is_err(), "{last}");
        assert!(serde_json::from_str::<Value>(&data(&all[0]).unwrap()).is_ok());
        assert!(corrupt_last_event(b": keep-alive\n\n").is_none());
    }
}
