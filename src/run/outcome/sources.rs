//! What a response the agent received offers as support for an answer's facts: its
//! numbers, dates and text, read from a JSON body (every leaf; JSON carried in a string,
//! as MCP results carry it, read too), an event stream's data, or plain text. Values a
//! fault planted are left out: they support nothing, they are traced on their own. Pure.

use std::collections::HashSet;

use super::facts::{self, Fact, Value};
use crate::exchange::Planted;

/// One source of support: a good tool response (by exchange and tool), or the prompt. Kept
/// as sets, so that each fact is looked up, not searched for: an answer and a body can both
/// be large.
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// Sorted, once the source is read (`done`).
    nums: Vec<f64>,
    dates: HashSet<(i32, u32, u32)>,
    /// Its identifier-like words, lower-cased.
    idents: HashSet<String>,
}

impl Source {
    /// The prompt (or any text) as a source.
    pub fn of_text(text: &str) -> Source {
        let mut s = Source::default();
        s.add_text(text);
        s.done(&[])
    }

    /// A response body of content type `content_type`, less the values `planted` in it.
    pub fn of_body(body: &[u8], content_type: &str, planted: &[Planted]) -> Source {
        let body = String::from_utf8_lossy(body);
        let mut s = Source::default();
        let ct = content_type.to_ascii_lowercase();
        if ct.contains("event-stream") {
            for line in body.lines() {
                let data = line.strip_prefix("data:").map(str::trim);
                match data.map(serde_json::from_str::<serde_json::Value>) {
                    Some(Ok(v)) => s.walk(&v, 0),
                    Some(Err(_)) => s.add_text(data.unwrap_or_default()),
                    None => {}
                }
            }
        } else {
            match serde_json::from_str::<serde_json::Value>(&body) {
                Ok(v) => s.walk(&v, 0),
                Err(_) => s.add_text(&body),
            }
        }
        s.done(planted)
    }

    /// Whether this source gives `fact`: a number equal at the fact's precision (a binary
    /// search per `facts::support_ranges`), the same date, or the identifier.
    pub fn supports(&self, fact: &Fact) -> bool {
        match &fact.value {
            Value::Num { v, step } => facts::support_ranges(*v, *step, &fact.kind)
                .into_iter()
                .any(|(lo, hi)| {
                    let at = self.nums.partition_point(|n| *n < lo);
                    self.nums.get(at).is_some_and(|n| *n <= hi)
                }),
            Value::Date { y, m, d } => self.dates.contains(&(*y, *m, *d)),
            Value::Ident(id) => self.idents.contains(&id.to_lowercase()),
        }
    }

    fn add_text(&mut self, s: &str) {
        self.nums.extend(facts::source_numbers(s));
        self.dates.extend(facts::dates_of(s));
        self.idents.extend(facts::identifiers(s));
    }

    /// Every leaf of `v`; a string holding JSON is read as JSON (to a bounded depth).
    fn walk(&mut self, v: &serde_json::Value, depth: usize) {
        use serde_json::Value as J;
        match v {
            J::Number(n) => self.nums.extend(n.as_f64()),
            J::String(s) => {
                let t = s.trim_start();
                let nested = (t.starts_with('{') || t.starts_with('[')) && depth < 4;
                match nested.then(|| serde_json::from_str::<J>(s).ok()).flatten() {
                    Some(inner) => self.walk(&inner, depth + 1),
                    None => self.add_text(s),
                }
            }
            J::Array(items) => items.iter().for_each(|i| self.walk(i, depth)),
            J::Object(map) => map.values().for_each(|i| self.walk(i, depth)),
            J::Bool(_) | J::Null => {}
        }
    }

    /// The source read: the values `planted` in it left out (they support nothing, they
    /// are traced on their own), its numbers sorted for lookups.
    fn done(mut self, planted: &[Planted]) -> Source {
        let values: Vec<&str> = planted
            .iter()
            .filter(|p| p.original.is_some())
            .map(|p| p.planted.trim())
            .collect();
        let nums: HashSet<u64> = values
            .iter()
            .filter_map(|v| v.parse::<f64>().ok())
            .map(f64::to_bits)
            .collect();
        let dates: HashSet<(i32, u32, u32)> =
            values.iter().flat_map(|v| facts::dates_of(v)).collect();
        let words: HashSet<String> = values.iter().map(|v| v.to_lowercase()).collect();
        self.nums.retain(|n| !nums.contains(&n.to_bits()));
        self.nums.sort_by(f64::total_cmp);
        self.dates.retain(|d| !dates.contains(d));
        self.idents.retain(|w| !words.contains(w));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(text: &str) -> Fact {
        facts::facts(text).remove(0)
    }

    #[test]
    fn json_leaves_json_in_strings_and_text_support_facts() {
        let body = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"temp_c\": 21.4, \"order\": \"ORD-4821\"}"}]}}"#;
        let s = Source::of_body(body, "application/json", &[]);
        assert!(s.supports(&fact("21 °C")));
        assert!(s.supports(&fact("order ORD-4821")));
        assert!(!s.supports(&fact("25 °C")));
        let t = Source::of_body(b"Updated 2026-11-28: 64% humid", "text/plain", &[]);
        assert!(t.supports(&fact("on Nov 28, 2026")) && t.supports(&fact("64 percent")));
        let sse = b"event: message\ndata: {\"result\":{\"structuredContent\":{\"temp\":12.5}}}\n\n";
        let e = Source::of_body(sse, "text/event-stream", &[]);
        assert!(e.supports(&fact("12.5 degrees")));
    }

    /// A planted value supports nothing: it is the fault's, traced on its own.
    #[test]
    fn planted_values_are_left_out() {
        let planted = [Planted {
            path: "$.temp_c".into(),
            original: Some("21.4".into()),
            planted: "37.9".into(),
        }];
        let s = Source::of_body(
            br#"{"temp_c": 37.9, "wind": 12}"#,
            "application/json",
            &planted,
        );
        assert!(!s.supports(&fact("37.9 °C")));
        assert!(s.supports(&fact("12 km/h")));
    }
}
