//! Reading a tape: a HAR file whose every entry has what a replay needs. A malformed file
//! fails with its path, the field (`log.entries[3].response.status`) and the line.

use std::path::{Path, PathBuf};

use super::har::Har;
use crate::config::redact::{clip, describe, preview, serde_message};

/// Why a tape could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", file.display())]
pub struct TapeError {
    pub file: PathBuf,
    pub message: String,
}

/// The largest tape read (a tape is loaded whole): `files::MAX_TAPE`.
pub const MAX_TAPE: u64 = crate::files::MAX_TAPE;

/// The longest a recorded answer may be held back (the cap a session's `latency_ms` has).
pub const MAX_WAIT_MS: f64 = 600_000.0;

/// Reads and checks the HAR file at `path` (a regular file of at most `MAX_TAPE` bytes).
pub fn read(path: &Path) -> Result<Har, TapeError> {
    let fail = |message: String| TapeError {
        file: path.to_path_buf(),
        message,
    };
    let bytes =
        crate::files::read(path, crate::files::Limit::Tape).map_err(|e| fail(e.reason()))?;
    parse(&bytes).map_err(fail)
}

/// Parses HAR text; the error names the field and the line.
pub fn parse(bytes: &[u8]) -> Result<Har, String> {
    top_level(bytes)?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let har: Har = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let (line, column) = (inner.line(), inner.column());
        // serde_json's message ends with its own "at line L column C", and may quote a
        // value of any length.
        let message = inner.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(&*message, |(m, _)| m);
        let message = serde_message(message);
        match path.as_str() {
            "." => format!("not a HAR file: {message} (line {line}, column {column})"),
            p => format!("{p}: {message} (line {line}, column {column})"),
        }
    })?;
    if !matches!(har.log.version.as_str(), "1.1" | "1.2") {
        return Err(format!(
            "log.version: {} is not a HAR version this reads (1.1 or 1.2)",
            preview(&har.log.version)
        ));
    }
    for (i, e) in har.log.entries.iter().enumerate() {
        check_entry(e).map_err(|why| format!("log.entries[{i}].{why}"))?;
    }
    Ok(har)
}

/// A tape whose top level is not an object (a file given as a tape by mistake): said
/// without quoting it.
fn top_level(bytes: &[u8]) -> Result<(), String> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, None | Some(b'{')) {
        return Ok(());
    }
    // Not an object: valid JSON is described, anything else gets serde_json's syntax error.
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(v) => Err(format!(
            "not a HAR file: the top level is {}, expected a JSON object ({{\"log\": …}})",
            describe(&v)
        )),
        Err(_) => Ok(()),
    }
}

/// What a replay plays of an entry: a URL to key on, times it can wait, a status it can
/// send, bodies it can decode.
fn check_entry(e: &super::har::Entry) -> Result<(), String> {
    if let Err(why) = e.request.url.parse::<http::Uri>() {
        return Err(format!(
            "request.url: `{}`: {why}",
            clip(&e.request.url, 200)
        ));
    }
    let time = |field: &str, v: f64| match v.is_finite() && v <= MAX_WAIT_MS {
        true => Ok(()),
        false => Err(format!(
            "{field}: {v} ms is not a time a replay can wait (at most {MAX_WAIT_MS} ms)"
        )),
    };
    time("time", e.time)?;
    time("timings.wait", e.timings.wait)?;
    for (j, ev) in e.response.content.events.iter().enumerate() {
        time(
            &format!("response.content._events[{j}].offsetMs"),
            ev.offset_ms,
        )?;
    }
    let status = e.response.status;
    if status != 0 && !(100..=999).contains(&status) {
        return Err(format!(
            "response.status: {status} is not an HTTP status (0 for no response)"
        ));
    }
    let decodes = |field: &str, text: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(|_| ())
            .map_err(|why| format!("{field}: not base64: {why}"))
    };
    if let Some(p) = &e.request.post_data
        && p.encoding.as_deref() == Some("base64")
    {
        decodes("request.postData.text", &p.text)?;
    }
    if let (Some(t), Some("base64")) = (
        &e.response.content.text,
        e.response.content.encoding.as_deref(),
    ) {
        decodes("response.content.text", t)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_field_is_named_with_its_line() {
        let text = br#"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"},
  "entries": [{"startedDateTime": "2024-01-01T00:00:00Z", "time": 1,
    "request": {"method": "GET", "url": "http://h/", "httpVersion": "HTTP/1.1",
      "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 0},
    "response": {"status": "200"}}]}}"#;
        let err = parse(text).unwrap_err();
        assert!(
            err.starts_with("log.entries[0].response.status: invalid type"),
            "{err}"
        );
        assert!(err.contains("line 5"), "{err}");
        let err = parse(b"[]").unwrap_err();
        assert!(err.starts_with("not a HAR file"), "{err}");
    }

    #[test]
    fn what_a_file_holds_is_not_quoted_back() {
        let err = parse(b"\"build-runner-07\"\n").unwrap_err();
        assert_eq!(
            err,
            "not a HAR file: the top level is a string of 15 characters, expected a JSON \
             object ({\"log\": …})"
        );
        assert!(
            parse(b"build-runner-07\n")
                .unwrap_err()
                .starts_with("not a HAR file: expected value")
        );
        let long = "v".repeat(10_000_000);
        let text = tape(|e| e["response"]["status"] = long.clone().into());
        let err = parse(&text).unwrap_err();
        assert!(err.len() < 300, "{} bytes", err.len());
        assert!(err.starts_with("log.entries[0].response.status: invalid type: string (10000000 characters, not shown)"), "{err}");
        let text = tape(|e| e["request"]["url"] = format!("http://h/{long} x").into());
        assert!(parse(&text).unwrap_err().len() < 400);
        let err = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(
            err.starts_with("/dev/zero: a character device, not a regular file"),
            "{err}"
        );
    }

    /// A one-entry tape with `edit` applied to its entry.
    fn tape(edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
        let mut entry = serde_json::json!({"startedDateTime": "2024-01-01T00:00:00.000Z",
          "time": 5,
          "request": {"method": "POST", "url": "http://h/x", "httpVersion": "HTTP/1.1",
            "cookies": [], "headers": [], "queryString": [], "headersSize": -1, "bodySize": 2,
            "postData": {"mimeType": "application/json", "text": "e30=", "_encoding": "base64"}},
          "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
            "cookies": [], "headers": [],
            "content": {"size": 2, "mimeType": "text/event-stream", "text": "ok",
              "_events": [{"offsetMs": 1, "text": "data: 1\n\n"}]},
            "redirectURL": "", "headersSize": -1, "bodySize": 2},
          "cache": {}, "timings": {"send": 0, "wait": 1, "receive": 0}});
        edit(&mut entry);
        serde_json::json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
            "entries": [entry]}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn what_a_replay_could_not_play_is_refused_by_field() {
        assert!(parse(&tape(|_| {})).is_ok(), "the template is a good tape");
        let refused = |edit: fn(&mut serde_json::Value), field: &str, what: &str| {
            let err = parse(&tape(edit)).unwrap_err();
            assert!(
                err.starts_with(&format!("log.entries[0].{field}: ")) && err.contains(what),
                "{err}"
            );
        };
        // Waits a replay would panic on, overflow with, or hang for.
        refused(
            |e| e["timings"]["wait"] = 1e23.into(),
            "timings.wait",
            "at most 600000 ms",
        );
        refused(
            |e| e["time"] = 7e8.into(),
            "time",
            "not a time a replay can wait",
        );
        refused(
            |e| e["response"]["content"]["_events"][0]["offsetMs"] = 1e300.into(),
            "response.content._events[0].offsetMs",
            "at most",
        );
        refused(
            |e| e["response"]["status"] = 1000.into(),
            "response.status",
            "not an HTTP status",
        );
        refused(
            |e| e["request"]["postData"]["text"] = "not base64!".into(),
            "request.postData.text",
            "not base64",
        );
    }
}
