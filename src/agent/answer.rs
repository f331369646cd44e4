//! The request body the driver sends and the answer it reads back: the template with the
//! prompt JSON-escaped into it, and the answer at `response_path` (a non-JSON body is the
//! answer as is). Pure.

use crate::config::ResponsePath;

use super::InvokeError;

/// How much of a response an error quotes.
const HEAD: usize = 200;

/// The first 200 bytes of a body, for error messages.
pub(crate) fn head(body: &[u8]) -> String {
    let cut = body.len().min(HEAD);
    String::from_utf8_lossy(&body[..cut]).into_owned()
}

/// At most `chars` characters of `s`, with `…` when it was longer: a prompt (a mutated one
/// can be 100 KB) or an answer shown on one line.
pub fn cut(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
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
        }),
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
    fn cut_keeps_whole_characters_and_marks_what_it_left_out() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("héllo", 5), "héllo");
        assert_eq!(cut("", 3), "");
    }

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
        let long = format!(r#"{{"pad": "{}"}}"#, "y".repeat(500));
        let err = extract(long.as_bytes(), &path).unwrap_err().to_string();
        assert_eq!(
            err.len(),
            "path `data.answer` not found in response: ".len() + 200
        );
    }
}
