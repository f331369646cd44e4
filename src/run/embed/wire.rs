//! The OpenAI embeddings wire format: the request body `{"model", "input": [...]}` and the
//! vectors of a response, `data[].embedding` put back in input order by `data[].index`.
//! Pure: `Embedder` does the I/O.

use serde::Deserialize;

use crate::agent::body_head;

/// Why a request got no vectors (`EmbedError` adds the endpoint).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Cause {
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("no answer within {0} ms")]
    Timeout(u64),
    #[error("HTTP {status}: {head}")]
    Status { status: u16, head: String },
    #[error("malformed response: {0}")]
    Malformed(String),
    #[error("{got} embeddings for {sent} inputs")]
    Count { got: usize, sent: usize },
}

pub fn request_body(model: &str, input: &[&str]) -> Vec<u8> {
    let body = serde_json::json!({ "model": model, "input": input });
    serde_json::to_vec(&body).unwrap_or_default()
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

/// One vector per input, in input order, all of one (non-zero) dimension.
pub fn parse(body: &[u8], sent: usize) -> Result<Vec<Vec<f32>>, Cause> {
    let resp: Response = serde_json::from_slice(body)
        .map_err(|e| Cause::Malformed(format!("{e}: {}", body_head(body))))?;
    if resp.data.len() != sent {
        return Err(Cause::Count {
            got: resp.data.len(),
            sent,
        });
    }
    let dim = resp.data.first().map_or(0, |i| i.embedding.len());
    let mut out: Vec<Vec<f32>> = vec![vec![]; sent];
    for item in resp.data {
        let bad = |what: String| {
            Err(Cause::Malformed(format!(
                "data[].index {}: {what}",
                item.index
            )))
        };
        if item.embedding.is_empty() || item.embedding.len() != dim {
            let got = item.embedding.len();
            return bad(format!("embedding of {got} numbers, expected {dim}"));
        }
        match out.get_mut(item.index) {
            Some(slot) if slot.is_empty() => *slot = item.embedding,
            Some(_) => return bad("appears twice".into()),
            None => return bad(format!("out of range for {sent} inputs")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_is_the_model_and_an_input_array() {
        let body: serde_json::Value =
            serde_json::from_slice(&request_body("m", &["a \"b\"", "c"])).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model": "m", "input": ["a \"b\"", "c"]})
        );
    }

    #[test]
    fn vectors_come_back_in_input_order_by_index() {
        let body = br#"{"object": "list", "model": "m", "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
            {"object": "embedding", "index": 0, "embedding": [1.0, 0.5]}]}"#;
        assert_eq!(parse(body, 2), Ok(vec![vec![1.0, 0.5], vec![0.0, 1.0]]));
    }

    #[test]
    fn wrong_counts_and_shapes_are_errors() {
        let one = br#"{"data": [{"index": 0, "embedding": [1.0]}]}"#;
        assert_eq!(parse(one, 2), Err(Cause::Count { got: 1, sent: 2 }));
        let twice =
            br#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}"#;
        assert_eq!(
            parse(twice, 2),
            Err(Cause::Malformed("data[].index 0: appears twice".into()))
        );
        let far = br#"{"data": [{"index": 5, "embedding": [1]}]}"#;
        assert_eq!(
            parse(far, 1),
            Err(Cause::Malformed(
                "data[].index 5: out of range for 1 inputs".into()
            ))
        );
        let ragged =
            br#"{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1]}]}"#;
        assert_eq!(
            parse(ragged, 2),
            Err(Cause::Malformed(
                "data[].index 1: embedding of 1 numbers, expected 2".into()
            ))
        );
        let Err(Cause::Malformed(m)) = parse(br#"{"error": "no model"}"#, 1) else {
            panic!("not JSON of the right shape")
        };
        assert!(m.starts_with("missing field `data`"), "{m}");
        assert!(
            m.ends_with(r#"{"error": "no model"}"#),
            "quotes the body: {m}"
        );
    }
}
