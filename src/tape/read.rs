//! Reading a tape: a HAR file whose every entry has what a replay needs. A malformed file
//! fails with its path, the field (`log.entries[3].response.status`) and the line.

use std::path::{Path, PathBuf};

use super::har::Har;

/// Why a tape could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {message}", file.display())]
pub struct TapeError {
    pub file: PathBuf,
    pub message: String,
}

/// The largest tape read (a tape is loaded whole).
const MAX_TAPE: u64 = 512 << 20;

/// Reads and checks the HAR file at `path`.
pub fn read(path: &Path) -> Result<Har, TapeError> {
    let fail = |message: String| TapeError {
        file: path.to_path_buf(),
        message,
    };
    let size = std::fs::metadata(path)
        .map_err(|e| fail(e.to_string()))?
        .len();
    if size > MAX_TAPE {
        return Err(fail(format!(
            "{size} bytes is over the {MAX_TAPE}-byte limit for a tape"
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    parse(&bytes).map_err(fail)
}

/// Parses HAR text; the error names the field and the line.
pub fn parse(bytes: &[u8]) -> Result<Har, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let har: Har = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let (line, column) = (inner.line(), inner.column());
        // serde_json's message ends with its own "at line L column C".
        let message = inner.to_string();
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string();
        match path.as_str() {
            "." => format!("not a HAR file: {message} (line {line}, column {column})"),
            p => format!("{p}: {message} (line {line}, column {column})"),
        }
    })?;
    if !matches!(har.log.version.as_str(), "1.1" | "1.2") {
        return Err(format!(
            "log.version: `{}` is not a HAR version this reads (1.1 or 1.2)",
            har.log.version
        ));
    }
    for (i, e) in har.log.entries.iter().enumerate() {
        if let Err(why) = e.request.url.parse::<http::Uri>() {
            return Err(format!(
                "log.entries[{i}].request.url: `{}`: {why}",
                e.request.url
            ));
        }
    }
    Ok(har)
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
}
