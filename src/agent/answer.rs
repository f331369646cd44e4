//! The request body the driver sends and the answer it reads back: the template with the
//! prompt JSON-escaped into it, and the answer at `response_path` (a non-JSON body is the
//! answer as is). Pure.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::ResponsePath;

use super::InvokeError;

/// The most top-level keys an answer that lacks `response_path` is remembered by.
const KEYS: usize = 20;

/// How much of a response an error quotes.
const HEAD: usize = 200;

/// The first 200 bytes of a body, for error messages.
pub(crate) fn head(body: &[u8]) -> String {
    let cut = body.len().min(HEAD);
    String::from_utf8_lossy(&body[..cut]).into_owned()
}

/// The template with `{prompt}` replaced by the prompt, JSON-escaped (quotes, newlines,
/// control characters), so `{"input": "{prompt}"}` stays valid JSON for any prompt.
pub fn render(template: &str, prompt: &str) -> String {
    let quoted = serde_json::to_string(prompt).unwrap_or_default();
    template.replace("{prompt}", &quoted[1..quoted.len().saturating_sub(1)])
}

/// The answer in a response body: the string at `path` (other JSON values as JSON text),
/// or the whole body when it is not JSON.
pub fn extract(body: &[u8], path: &ResponsePath) -> Result<String, InvokeError> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok(String::from_utf8_lossy(body).into_owned());
    };
    match path.get(&v) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        // `null` is no answer, not the text "null".
        Some(serde_json::Value::Null) => Err(InvokeError::PathNull {
            path: path.as_str().to_string(),
            head: head(body),
        }),
        Some(other) => Ok(other.to_string()),
        None => Err(InvokeError::PathNotFound {
            path: path.as_str().to_string(),
            head: head(body),
            keys: v
                .as_object()
                .map(|o| o.keys().take(KEYS).cloned().collect())
                .unwrap_or_default(),
        }),
    }
}

/// Where an agent's answers stood: how many were read at `response_path` (2xx bodies) and
/// how many of them lacked it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswersRead {
    pub read: u64,
    pub missed: u64,
}

/// What the answers read so far said of `response_path`, and the top-level keys of the
/// last one that lacked it. A path that no answer has is the config's error, not the
/// agent's: a run asks whether that was so of every answer it read.
#[derive(Debug, Default)]
pub(crate) struct PathTally {
    read: AtomicU64,
    missed: AtomicU64,
    keys: Mutex<Vec<String>>,
}

impl PathTally {
    /// Counts an answer read at the path.
    pub fn note(&self, answer: &Result<String, InvokeError>) {
        self.read.fetch_add(1, Ordering::Relaxed);
        if let Err(InvokeError::PathNotFound { keys, .. }) = answer {
            self.missed.fetch_add(1, Ordering::Relaxed);
            *self.keys.lock().unwrap_or_else(|p| p.into_inner()) = keys.clone();
        }
    }

    pub fn now(&self) -> AnswersRead {
        AnswersRead {
            read: self.read.load(Ordering::Relaxed),
            missed: self.missed.load(Ordering::Relaxed),
        }
    }

    /// Why `path` is a config error: every answer read since `since` (one at least)
    /// lacked it. Answers that have it, or answer in words (not JSON), make it no error.
    pub fn missing_since(&self, since: AnswersRead, path: &ResponsePath) -> Option<String> {
        let now = self.now();
        let (read, missed) = (now.read - since.read, now.missed - since.missed);
        if read == 0 || missed < read {
            return None;
        }
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let has = match keys.as_slice() {
            [] => "they are not JSON objects".to_string(),
            keys => {
                let keys: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
                format!("their top-level keys are {}", keys.join(", "))
            }
        };
        Some(format!(
            "config error: agent.response_path `{}` is in none of the agent's {read} \
             answer(s); {has}: set agent.response_path to where the answer is",
            path.as_str()
        ))
    }
}

/// The root cause of a client error, e.g. "Connection refused (os error 111)".
pub(crate) fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_json_escaped_into_the_template() {
        let body = render(
            r#"{"input": "{prompt}", "n": 1}"#,
            "say \"hi\"\nthen\tstop \\",
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["input"], "say \"hi\"\nthen\tstop \\");
    }

    #[test]
    fn answers_by_path_or_as_text() {
        let path = ResponsePath::parse("data.answer").unwrap();
        assert_eq!(
            extract(br#"{"data": {"answer": "42"}}"#, &path),
            Ok("42".into())
        );
        assert_eq!(
            extract(br#"{"data": {"answer": {"n": 4}}}"#, &path),
            Ok(r#"{"n":4}"#.into())
        );
        assert_eq!(extract(b"plain words", &path), Ok("plain words".into()));
        assert_eq!(
            extract(br#"{"data": {"answer": null}}"#, &path)
                .unwrap_err()
                .to_string(),
            r#"path `data.answer` is null in response: {"data": {"answer": null}}"#,
            "null is no answer"
        );
        let err = extract(br#"{"result": "x"}"#, &path)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            r#"path `data.answer` not found in response: {"result": "x"}"#
        );
        assert!(matches!(
            extract(br#"{"result": "x", "usage": 3}"#, &path),
            Err(InvokeError::PathNotFound { keys, .. }) if keys == ["result", "usage"]
        ));
        let long = format!(r#"{{"pad": "{}"}}"#, "y".repeat(500));
        let err = extract(long.as_bytes(), &path).unwrap_err().to_string();
        assert_eq!(
            err.len(),
            "path `data.answer` not found in response: ".len() + 200
        );
    }

    /// A path no answer has is the config's error, naming the keys the answers have; one
    /// answer that has it (or answers in words) makes the misses the agent's.
    #[test]
    fn a_path_missing_from_every_answer_is_a_config_error() {
        let path = ResponsePath::parse("data.answer").unwrap();
        let tally = PathTally::default();
        let start = tally.now();
        assert_eq!(tally.missing_since(start, &path), None, "nothing read");
        for _ in 0..2 {
            tally.note(&extract(br#"{"output": "sunny", "id": 7}"#, &path));
        }
        assert_eq!(
            tally.missing_since(start, &path).as_deref(),
            Some(
                "config error: agent.response_path `data.answer` is in none of the agent's 2 \
                 answer(s); their top-level keys are `output`, `id`: set agent.response_path \
                 to where the answer is"
            )
        );
        let later = tally.now();
        tally.note(&extract(br#"{"data": {"answer": "rain"}}"#, &path));
        tally.note(&extract(br#"{"output": "sunny"}"#, &path));
        assert_eq!(tally.missing_since(start, &path), None, "one answer has it");
        assert_eq!(tally.missing_since(later, &path), None);
        let words = tally.now();
        tally.note(&extract(b"plain words", &path));
        assert_eq!(
            tally.missing_since(words, &path),
            None,
            "an answer in words"
        );
        let arrays = tally.now();
        tally.note(&extract(b"[1, 2]", &path));
        let why = tally.missing_since(arrays, &path).unwrap();
        assert!(
            why.contains("1 answer(s); they are not JSON objects"),
            "{why}"
        );
    }
}
