//! OpenAI's legacy Completions API (`/v1/completions`, `object: "text_completion"`), which
//! gateways and OpenAI-compatible servers still serve: the answer is `choices[].text`, in
//! the whole answer and in every stream chunk alike. What differs from Chat Completions is
//! the shape of a chunk that only finishes, and of a filtered choice.

use serde_json::{Value, json};

/// Whether `v` (a whole answer or a stream chunk) is a legacy completion.
pub fn is_completion(v: &Value) -> bool {
    v["object"] == "text_completion"
}

/// The paths of the text in a completion or its chunks.
pub const TEXT: &[crate::llm::path::Seg] = &[
    crate::llm::path::K("choices"),
    crate::llm::path::All,
    crate::llm::path::K("text"),
];

/// A chunk like `last` whose one choice only finishes with `reason` (no text).
pub fn finish_chunk(last: &Value, reason: &str) -> Value {
    let mut c = last.clone();
    c["choices"] = json!([{"text": "", "index": 0, "logprobs": null, "finish_reason": reason}]);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finish_chunk_keeps_the_completion_and_ends_its_choice() {
        let last = json!({"id": "cmpl-1", "object": "text_completion", "model": "m",
            "choices": [{"text": "fox", "index": 0, "logprobs": null, "finish_reason": null}]});
        let c = finish_chunk(&last, "length");
        assert!(is_completion(&c));
        assert_eq!(c["id"], "cmpl-1");
        assert_eq!(
            c["choices"],
            json!([{"text": "", "index": 0, "logprobs": null, "finish_reason": "length"}])
        );
        assert!(!is_completion(&json!({"object": "chat.completion.chunk"})));
    }
}
