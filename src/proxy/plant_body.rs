//! A response body under a data fault (`corrupt`, `empty`, `stale`: `Transform::Plant`):
//! held whole (bounded by `BUFFER_LIMIT`, past which it passes untouched), edited by
//! `plant` when the upstream ends, its new size checked against `proxy.max_rewrite_bytes`
//! before its bytes are built. The values planted go to the exchange's record through its
//! `SkipNote`; a body that cannot be planted in goes on as it came, the note saying why.

use std::collections::VecDeque;

use bytes::BytesMut;

use super::fault_body::SkipNote;
use crate::chaos::budget::Budget;
use crate::chaos::rewrite::Out;
use crate::plant::Plan;

/// A body held until the upstream ends.
pub struct PlantHeld {
    pub buf: BytesMut,
    plan: Plan,
    content_type: String,
}

impl PlantHeld {
    pub(super) fn new(plan: Plan, content_type: &str) -> Self {
        PlantHeld {
            buf: BytesMut::new(),
            plan,
            content_type: content_type.to_string(),
        }
    }

    /// The upstream ended: the body edited (or as it came, with why not).
    pub(super) fn end(&mut self, queue: &mut VecDeque<Out>, skip: &SkipNote) {
        let body = std::mem::take(&mut self.buf).freeze();
        let edited = match crate::plant::edit_body(&self.plan, &body, &self.content_type) {
            Ok(e) => e,
            Err(note) => {
                let _ = skip.set(note.into());
                queue.push_back(Out::Data(body));
                return;
            }
        };
        let mut budget = Budget::new(skip.max_rewrite, body.len());
        if let Err(e) = budget.replace(body.len(), edited.len()) {
            queue.push_back(Out::Fail(e.to_string()));
            return;
        }
        skip.plant(edited.planted.clone());
        queue.push_back(Out::Data(edited.into_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http_body::Frame;
    use http_body_util::BodyExt;

    use super::super::fault_body::{FaultBody, RewriteTooLarge, Transform};
    use super::*;

    /// The body `parts` make under a data fault, and whether it failed.
    async fn run(plan: Plan, parts: &[&'static str], ct: &str, skip: &SkipNote) -> (Vec<u8>, bool) {
        let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = parts
            .iter()
            .map(|p| Ok(Frame::data(Bytes::from_static(p.as_bytes()))))
            .collect();
        let upstream = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
        let mut body = FaultBody::new(upstream, Transform::Plant(plan), ct, skip.clone());
        let mut out = vec![];
        while let Some(f) = body.frame().await {
            match f {
                Ok(f) => out.extend_from_slice(&f.into_data().unwrap()),
                Err(e) => return (out, e.is::<RewriteTooLarge>()),
            }
        }
        (out, false)
    }

    #[tokio::test]
    async fn a_body_is_held_planted_and_its_values_noted() {
        let skip = SkipNote::default();
        let plan = Plan::corrupt(&[], 3).unwrap();
        let (out, failed) = run(
            plan,
            &["{\"price\": ", "129.99}"],
            "application/json",
            &skip,
        )
        .await;
        assert!(!failed && skip.get().is_none());
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let planted = skip.take_planted();
        assert_eq!(planted.len(), 1);
        assert_eq!(v["price"].to_string(), planted[0].planted);
    }

    #[tokio::test]
    async fn what_cannot_be_planted_goes_on_as_it_came_with_why() {
        let skip = SkipNote::default();
        let stale = Plan {
            mode: crate::plant::Mode::Stale { days: 3 },
            draw: 1,
        };
        let (out, _) = run(stale, &["{\"n\": 5}"], "application/json", &skip).await;
        assert_eq!(out, b"{\"n\": 5}");
        assert!(skip.get().unwrap().contains("no date"));
        assert!(skip.take_planted().is_empty());
    }

    /// One-digit numbers become two-digit canaries: a body at the cap grows past it, and
    /// fails instead of being built.
    #[tokio::test]
    async fn a_plant_that_would_go_over_the_cap_fails_the_body() {
        let skip = SkipNote::new(1100);
        let body: &'static str = Box::leak(format!("[{}2]", "2,".repeat(540)).into_boxed_str());
        let (_, failed) = run(
            Plan::corrupt(&[], 1).unwrap(),
            &[body],
            "application/json",
            &skip,
        )
        .await;
        assert!(failed);
        assert!(
            skip.get()
                .unwrap()
                .contains("over proxy.max_rewrite_bytes (1100)")
        );
        assert!(skip.take_planted().is_empty(), "nothing reached the client");
    }
}
