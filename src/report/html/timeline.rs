//! A case's timeline: the agent's tool and LLM calls as the proxy saw them, one row per
//! exchange, bars placed by start time and sized by duration, the calls the case's
//! outcome evidence names marked (`marks`). Geometry only; the page template draws it as
//! SVG (so every text on it goes through the template's escaping).

use serde::Serialize;

use super::marks::{self, Marks};
use crate::exchange::{Exchange, Outcome, Target};
use crate::report::text;

/// Page units: the label column, the bars' span, the details after them.
const BARS_X: f64 = 140.0;
const BARS_W: f64 = 300.0;
const ROW_H: u32 = 18;
/// Characters of details that fit after the bars (11 px monospace, 1040 units wide).
const DETAIL_CHARS: usize = 88;
/// The axis under the rows.
const AXIS_H: u32 = 16;
/// Where the details start; a marked row's glyphs come first, this wide each.
const DETAIL_X: u32 = 448;
const GLYPH_W: u32 = 11;

#[derive(Debug, Serialize)]
pub struct Timeline {
    pub height: u32,
    /// The time the rows span, in words (`105.3 ms`), printed at the axis' end.
    pub span: String,
    pub rows: Vec<Row>,
    /// What each glyph on it means, when a row is marked.
    pub legend: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Row {
    /// The row's baseline.
    pub y: u32,
    /// The bar's top.
    pub bar_y: u32,
    pub x: String,
    pub w: String,
    /// `LLM openai`, `tool web_search`.
    pub label: String,
    /// `#4 · 503 · 1.1 ms · fault search-down (error) · retry 1`.
    pub detail: String,
    /// `GET https://…`, shown on hover.
    pub title: String,
    /// `ok`, `err` or `fault`: the bar's colour.
    pub class: &'static str,
    /// Where the details start (after the glyphs of a marked row).
    pub detail_x: u32,
    /// A call the case's outcome evidence names: its glyphs and what they mean.
    pub mark: Option<RowMark>,
}

#[derive(Debug, Serialize)]
pub struct RowMark {
    pub glyphs: String,
    pub title: String,
}

/// What a call is, in a few words (an MCP message by its tool, else its method).
pub fn target(e: &Exchange) -> String {
    if let Some(m) = &e.mcp {
        return format!("MCP {}", text::line(m.tool_call().unwrap_or(&m.method), 24));
    }
    match &e.target {
        Target::Llm { provider } => format!("LLM {}", provider.as_str()),
        Target::Embeddings { provider } => format!("embeddings {}", provider.as_str()),
        Target::Tool { name } => format!("tool {}", text::line(name, 24)),
        Target::Other => text::line(host(&e.request.url), 28),
    }
}

fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest)
}

/// The call failed: an error, or a status of 400 or more.
pub fn failed(e: &Exchange) -> bool {
    matches!(e.outcome, Outcome::Error { .. }) || e.status().is_some_and(|s| s >= 400)
}

/// `exchanges` in the order they started (the journal's id breaks ties).
pub fn in_order(exchanges: &[std::sync::Arc<Exchange>]) -> Vec<&Exchange> {
    let mut sorted: Vec<&Exchange> = exchanges.iter().map(AsRef::as_ref).collect();
    sorted.sort_by_key(|e| (e.timings.started_at_ms, e.id));
    sorted
}

/// For each call in `calls` (in order), how many times in a row it repeats a failed call:
/// a call to the previous call's target, method and URL after that one failed is a retry.
pub fn retries(calls: &[&Exchange]) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(calls.len());
    for (i, e) in calls.iter().enumerate() {
        let n = match i.checked_sub(1).map(|p| (calls[p], out[p])) {
            Some((prev, n))
                if failed(prev)
                    && prev.target == e.target
                    && prev.request.method == e.request.method
                    && prev.request.url == e.request.url =>
            {
                n + 1
            }
            _ => 0,
        };
        out.push(n);
    }
    out
}

fn detail(e: &Exchange, retry: u32) -> String {
    // The journal id first: outcome evidence names calls by it.
    let mut parts = vec![format!("#{}", e.id)];
    match &e.outcome {
        Outcome::Response { response, .. } => parts.push(response.status.to_string()),
        Outcome::Error { error, status } => parts.push(match status {
            Some(s) => format!("{s} {}", error.kind),
            None => error.kind.to_string(),
        }),
    }
    parts.push(text::duration(e.timings.total_ms));
    if let Some(f) = &e.fault {
        let applied = if f.applied { "" } else { ", not applied" };
        parts.push(format!(
            "fault {} ({}{applied})",
            text::line(&f.rule, 32),
            f.mode
        ));
    }
    for a in &e.attacks {
        parts.push(format!("attack {}", a.mode));
    }
    if !e.llm_tool_calls.is_empty() {
        let asked: Vec<String> = e.llm_tool_calls.iter().map(|t| text::line(t, 24)).collect();
        parts.push(format!("asks {}", asked.join(", ")));
    }
    if retry > 0 {
        parts.push(format!("retry {retry}"));
    }
    parts.join(" · ")
}

/// The timeline of `exchanges`, with the calls `marks` names marked; None when there are
/// none.
pub fn of(exchanges: &[std::sync::Arc<Exchange>], marks: &Marks) -> Option<Timeline> {
    let calls = in_order(exchanges);
    let first = calls.first()?.timings.started_at_ms;
    let end = calls
        .iter()
        .map(|e| (e.timings.started_at_ms - first) as f64 + e.timings.total_ms.max(0.0))
        .fold(0.0_f64, f64::max);
    // A span of at least 1 ms: calls that took no measurable time still get a bar.
    let span = end.max(1.0);
    let scale = BARS_W / span;
    let rows = calls
        .iter()
        .zip(retries(&calls))
        .enumerate()
        .map(|(i, (e, retry))| {
            let start = (e.timings.started_at_ms - first) as f64;
            let w = (e.timings.total_ms.max(0.0) * scale).max(2.0);
            let x = (BARS_X + start * scale).min(BARS_X + BARS_W - 2.0);
            row(e, retry, i as u32 * ROW_H, (x, w), marks)
        })
        .collect::<Vec<_>>();
    let shown: String = rows
        .iter()
        .filter_map(|r| r.mark.as_ref())
        .map(|m| m.glyphs.as_str())
        .collect();
    Some(Timeline {
        height: rows.len() as u32 * ROW_H + AXIS_H,
        span: text::duration(span),
        legend: marks::ORDER
            .into_iter()
            .filter(|g| shown.contains(*g))
            .map(|g| format!("{g} {}", marks::legend(g)))
            .collect(),
        rows,
    })
}

/// One call's row: `top` of the row, its bar's `x` and width.
fn row(e: &Exchange, retry: u32, top: u32, (x, w): (f64, f64), marks: &Marks) -> Row {
    let mark = marks.get(e.id);
    let glyphs = mark.map_or(0, |m| m.glyphs.chars().count());
    // The details after the bar fit the SVG's width; cut ones are whole on hover.
    let full = detail(e, retry);
    let shown = text::line(&full, DETAIL_CHARS.saturating_sub(glyphs * 2));
    let mut title = format!("{} {}", e.request.method, text::line(&e.request.url, 200));
    if shown != full {
        title = format!("{title}\n{full}");
    }
    if let Some(m) = mark {
        title = format!("{title}\n{}", m.notes.join("\n"));
    }
    Row {
        y: top + 13,
        bar_y: top + 4,
        x: format!("{x:.1}"),
        w: format!("{:.1}", w.min(BARS_X + BARS_W - x)),
        label: target(e),
        detail: shown,
        title,
        class: if e.fault.as_ref().is_some_and(|f| f.applied) || !e.attacks.is_empty() {
            "fault"
        } else if failed(e) {
            "err"
        } else {
            "ok"
        },
        detail_x: DETAIL_X + glyphs as u32 * GLYPH_W,
        mark: mark.map(|m| RowMark {
            glyphs: m.glyphs.clone(),
            title: m.notes.join("\n"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::exchange::tests_support::{Builder, exchange};
    use crate::exchange::{FaultRecord, Provider};

    fn llm() -> Target {
        Target::Llm {
            provider: Provider::Openai,
        }
    }

    fn at(b: Builder, id: u64, ms: u64) -> Arc<Exchange> {
        Arc::new(b.id(id).timed(ms, 10.0).build())
    }

    #[test]
    fn a_repeat_of_a_failed_call_is_a_retry_and_a_repeat_of_a_success_is_not() {
        let url = "https://api.example/v1/chat/completions";
        let other = "https://api.example/other";
        let calls = [
            at(exchange(llm(), url).response(429, &[]), 1, 0),
            at(exchange(llm(), url).response(429, &[]), 2, 100),
            at(exchange(llm(), url), 3, 200),
            at(exchange(llm(), url), 4, 300),
            at(exchange(llm(), other).response(500, &[]), 5, 400),
            at(exchange(llm(), other).method("GET"), 6, 500),
        ];
        let order = in_order(&calls);
        assert_eq!(retries(&order), vec![0, 1, 2, 0, 0, 0]);
    }

    #[test]
    fn bars_are_placed_by_start_and_sized_by_duration() {
        let tool = Target::Tool {
            name: "web_search".into(),
        };
        let faulted = exchange(tool, "https://search/q")
            .response(503, &[])
            .id(2)
            .timed(1_050, 50.0)
            .fault(FaultRecord {
                rule: "search-down".into(),
                mode: crate::exchange::FaultKind::Error,
                applied: true,
                note: None,
            })
            .build();
        // Out of order on purpose: the timeline sorts by start.
        let calls = vec![
            Arc::new(faulted),
            at(exchange(llm(), "https://llm/"), 1, 1_000),
        ];
        let t = of(&calls, &Marks::default()).unwrap();
        assert_eq!(t.span, "100.0 ms");
        assert_eq!(t.rows[0].label, "LLM openai");
        assert_eq!(
            (t.rows[0].x.as_str(), t.rows[0].w.as_str()),
            ("140.0", "30.0")
        );
        assert_eq!(t.rows[1].label, "tool web_search");
        assert_eq!(
            (t.rows[1].x.as_str(), t.rows[1].w.as_str()),
            ("290.0", "150.0")
        );
        assert_eq!(t.rows[1].class, "fault");
        assert_eq!(
            t.rows[1].detail,
            "#2 · 503 · 50.0 ms · fault search-down (error)"
        );
        assert_eq!(t.rows[1].title, "POST https://search/q");
        assert!(of(&[], &Marks::default()).is_none());

        let mut chatty = exchange(llm(), "https://llm/").build();
        chatty.llm_tool_calls = vec!["a_tool_with_a_long_name".into(); 6];
        let t = of(&[Arc::new(chatty)], &Marks::default()).unwrap();
        assert_eq!(t.rows[0].detail.chars().count(), DETAIL_CHARS);
        assert!(t.rows[0].detail.ends_with('…'));
        assert!(
            t.rows[0]
                .title
                .starts_with("POST https://llm/\n#1 · 200 · 0.00 ms · asks a_tool")
        );
    }
}
