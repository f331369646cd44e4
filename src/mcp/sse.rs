//! The MCP messages inside a `text/event-stream` body: each event's `data:` lines are one
//! JSON-RPC message. Events are found by their byte ranges and an edited event is written
//! anew (its other fields, `event:` and `id:`, kept); every other byte stays as it came,
//! so a stream can be edited as it flows (`next_event`) or whole (`map_events`).

use bytes::Bytes;
use serde_json::Value;

/// The end (exclusive, after its blank line) of the first complete event in `buf`, if one
/// has arrived. Line ends may be `\n`, `\r\n` or `\r`.
pub fn next_event(buf: &[u8]) -> Option<usize> {
    next_event_from(buf, &mut Scan::default())
}

/// Where a search for an event stopped in a buffer that only grows: the start of the line
/// being read and the next byte to look at. A stream edited as it flows resumes there, so
/// each byte is looked at once however small its chunks come.
#[derive(Debug, Default, Clone, Copy)]
pub struct Scan {
    line_start: usize,
    at: usize,
}

/// `next_event`, resuming at `scan` (left where this search stopped when no event ended).
pub fn next_event_from(buf: &[u8], scan: &mut Scan) -> Option<usize> {
    let Scan {
        mut line_start,
        at: mut i,
    } = *scan;
    while i < buf.len() {
        let end = match buf[i] {
            b'\n' => i + 1,
            // A lone `\r` ends a line; `\r\n` is one line end (wait for the `\n` to know).
            b'\r' if i + 1 < buf.len() => i + 1 + usize::from(buf[i + 1] == b'\n'),
            b'\r' => break,
            _ => {
                i += 1;
                continue;
            }
        };
        if i == line_start && line_start > 0 {
            *scan = Scan::default();
            return Some(end);
        }
        // A blank line before any field (nothing to dispatch yet) or a field line.
        line_start = end;
        i = end;
    }
    *scan = Scan { line_start, at: i };
    None
}

/// An event's lines, without their line ends.
fn lines(event: &str) -> impl Iterator<Item = &str> {
    event
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .flat_map(|l| l.split('\r'))
        .filter(|l| !l.is_empty())
}

/// An event's data: its `data:` lines joined (the SSE spec's one optional space dropped).
fn data(event: &str) -> Option<String> {
    let parts: Vec<&str> = lines(event)
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// The event written anew with `data` as its data, its other fields kept, `\n` line ends.
fn rewrite(event: &str, data: &str) -> String {
    let mut out = String::with_capacity(event.len() + data.len());
    let mut wrote = false;
    for l in lines(event) {
        match (l.starts_with("data:"), wrote) {
            (true, false) => {
                out.push_str("data: ");
                out.push_str(data);
                out.push('\n');
                wrote = true;
            }
            (true, true) => {}
            (false, _) => {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out.push('\n');
    out
}

/// One complete event's data as text (its `data:` lines joined), if it has any.
pub fn event_data(event: &[u8]) -> Option<String> {
    data(&String::from_utf8_lossy(event))
}

/// One complete event's data, parsed as JSON, if it is.
pub fn event_json(event: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(event).ok()?;
    serde_json::from_str::<Value>(&data(text)?).ok()
}

/// One complete event with `f` applied to its JSON data; `None` when it has none or `f`
/// left it alone (then the event goes on as it came).
pub fn edit_event(event: &[u8], f: &mut dyn FnMut(&mut Value) -> bool) -> Option<Bytes> {
    let mut v = event_json(event)?;
    let text = std::str::from_utf8(event).ok()?;
    f(&mut v).then(|| Bytes::from(rewrite(text, &v.to_string())))
}

/// The stream with `f` applied to each complete event whose data is JSON; `None` when `f`
/// changed no event. A cut-off last event is kept as it came.
pub(super) fn map_events(body: &[u8], f: &mut dyn FnMut(&mut Value) -> bool) -> Option<Bytes> {
    let mut out = Vec::with_capacity(body.len() + 256);
    let mut rest = body;
    let mut changed = false;
    while let Some(end) = next_event(rest) {
        match edit_event(&rest[..end], f) {
            Some(e) => {
                out.extend_from_slice(&e);
                changed = true;
            }
            None => out.extend_from_slice(&rest[..end]),
        }
        rest = &rest[end..];
    }
    out.extend_from_slice(rest);
    changed.then(|| Bytes::from(out))
}

/// The stream with its last message's data cut at 60% and ending in bytes no JSON parser
/// accepts, the event still framed: the client reads an event and fails to parse it (a
/// malformed message, not a cut stream). `None` when no complete event has data.
pub fn corrupt_last_event(body: &[u8]) -> Option<Bytes> {
    let mut ranges = vec![];
    let mut at = 0;
    while let Some(end) = next_event(&body[at..]) {
        ranges.push((at, at + end));
        at += end;
    }
    let text = |(s, e): (usize, usize)| std::str::from_utf8(&body[s..e]).ok();
    let &(s, e) = ranges
        .iter()
        .rev()
        .find(|r| text(**r).and_then(data).is_some())?;
    let d = data(text((s, e))?)?;
    let mut keep = d.len() * 6 / 10;
    while !d.is_char_boundary(keep) {
        keep -= 1;
    }
    let bad = format!("{}\"\u{fffd}{{", &d[..keep]);
    let mut out = body[..s].to_vec();
    out.extend_from_slice(rewrite(text((s, e))?, &bad).as_bytes());
    out.extend_from_slice(&body[e..]);
    Some(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n\r\n\
                          : ping\r\n\r\n\
                          event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";

    #[test]
    fn events_end_at_their_blank_line_whatever_the_line_ends() {
        let s = STREAM.as_bytes();
        let first = next_event(s).unwrap();
        assert_eq!(
            &STREAM[..first],
            "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\r\n\r\n"
        );
        let second = next_event(&s[first..]).unwrap();
        assert_eq!(&STREAM[first..first + second], ": ping\r\n\r\n");
        assert_eq!(next_event(b"data: x\n"), None, "not ended yet");
        // Resumed byte by byte, the same event ends at the same place.
        let whole = b"\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\nnext";
        let mut scan = Scan::default();
        let first = (1..=whole.len()).find_map(|n| next_event_from(&whole[..n], &mut scan));
        assert_eq!(first, next_event(whole));
        assert_eq!(first, Some(whole.len() - "next".len()));
        assert_eq!(
            next_event(b"data: x\r\n\r"),
            None,
            "a `\\r` may be half of `\\r\\n`"
        );
        assert_eq!(
            next_event(b"data: x\r\r"),
            None,
            "the second `\\r` may still be `\\r\\n`"
        );
        assert_eq!(next_event(b"data: x\r\rz"), Some(9));
    }

    #[test]
    fn only_the_edited_event_changes_and_every_other_byte_stays() {
        let out = map_events(STREAM.as_bytes(), &mut |v| {
            v.get("id").is_some() && {
                v["id"] = 9.into();
                true
            }
        })
        .unwrap();
        let head = STREAM.rfind("event: message\n").unwrap();
        assert_eq!(
            &out[..head],
            &STREAM.as_bytes()[..head],
            "untouched events as they came"
        );
        assert_eq!(
            std::str::from_utf8(&out[head..]).unwrap(),
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n"
        );
        assert!(map_events(STREAM.as_bytes(), &mut |_| false).is_none());
        let cut = format!("{STREAM}event: message\ndata: {{\"id\"");
        let out = map_events(cut.as_bytes(), &mut |v| v.get("id").is_some()).unwrap();
        assert!(
            out.ends_with(b"data: {\"id\""),
            "a cut-off last event is kept"
        );
    }

    #[test]
    fn a_corrupted_stream_keeps_its_framing_and_breaks_the_last_message() {
        let out = corrupt_last_event(STREAM.as_bytes()).unwrap();
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.ends_with("\n\n"), "{text}");
        let last = text.rfind("event: message\n").unwrap();
        let d = data(&text[last..]).unwrap();
        assert!(serde_json::from_str::<Value>(&d).is_err(), "{d}");
        assert!(text.starts_with(&STREAM[..STREAM.rfind("event: message\n").unwrap()]));
        assert!(corrupt_last_event(b": keep-alive\n\n").is_none());
    }
}
