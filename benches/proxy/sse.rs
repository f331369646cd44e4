//! SSE time to first byte: one streamed request timed at headers, first body chunk and end
//! of stream, and the interleaved direct/proxied comparison.

use std::time::{Duration, Instant};

use hyper::header::CONTENT_TYPE;

use crate::client::{Endpoint, Proto, error_chain};
use crate::format::{ms, proto_name};
use crate::origins::sse_event;
use crate::stats::{Errors, median_duration};
use crate::{SSE_EVENTS, Settings};

struct SseSample {
    headers: Duration,
    first_byte: Duration,
    total: Duration,
    /// The first chunk already held the whole stream.
    coalesced: bool,
}

async fn sse_once(client: &reqwest::Client, url: &str) -> Result<SseSample, String> {
    let started = Instant::now();
    let mut response = client.get(url).send().await.map_err(|e| error_chain(&e))?;
    let headers = started.elapsed();
    if response.status() != reqwest::StatusCode::OK {
        return Err(format!("status {}", response.status()));
    }
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    if content_type.as_ref().and_then(|v| v.to_str().ok()) != Some("text/event-stream") {
        return Err(format!("content-type {content_type:?}"));
    }
    let mut body = Vec::new();
    let first = response.chunk().await.map_err(|e| error_chain(&e))?;
    let first_byte = started.elapsed();
    let first = first.ok_or("empty SSE body")?;
    body.extend_from_slice(&first);
    while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e))? {
        body.extend_from_slice(&chunk);
    }
    let total = started.elapsed();
    let expected: Vec<u8> = (0..SSE_EVENTS)
        .flat_map(|i| sse_event(i).to_vec())
        .collect();
    if body != expected {
        return Err(format!("wrong SSE body ({} bytes)", body.len()));
    }
    Ok(SseSample {
        headers,
        first_byte,
        total,
        coalesced: first.len() == expected.len(),
    })
}

pub struct SseSummary {
    pub headers: Duration,
    pub first_byte: Duration,
    pub total: Duration,
    pub coalesced: usize,
    pub samples: usize,
    pub errors: Errors,
}

fn summarize_sse(samples: Vec<Result<SseSample, String>>) -> SseSummary {
    let mut errors = Errors::default();
    let mut ok = Vec::new();
    for s in samples {
        match s {
            Ok(s) => ok.push(s),
            Err(e) => errors.add(e),
        }
    }
    SseSummary {
        headers: median_duration(ok.iter().map(|s| s.headers).collect()),
        first_byte: median_duration(ok.iter().map(|s| s.first_byte).collect()),
        total: median_duration(ok.iter().map(|s| s.total).collect()),
        coalesced: ok.iter().filter(|s| s.coalesced).count(),
        samples: ok.len(),
        errors,
    }
}

pub struct SseRow {
    pub proto: Proto,
    pub direct: SseSummary,
    pub proxied: SseSummary,
}

pub async fn compare_sse(
    settings: &Settings,
    proto: Proto,
    direct: &Endpoint,
    proxied: &Endpoint,
) -> SseRow {
    let (d_url, p_url) = (
        format!("{}/sse", direct.base),
        format!("{}/sse", proxied.base),
    );
    for _ in 0..2 {
        let _ = sse_once(&direct.client, &d_url).await;
        let _ = sse_once(&proxied.client, &p_url).await;
    }
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for i in 0..settings.sse_samples {
        if i % 2 == 0 {
            d.push(sse_once(&direct.client, &d_url).await);
            p.push(sse_once(&proxied.client, &p_url).await);
        } else {
            p.push(sse_once(&proxied.client, &p_url).await);
            d.push(sse_once(&direct.client, &d_url).await);
        }
    }
    let row = SseRow {
        proto,
        direct: summarize_sse(d),
        proxied: summarize_sse(p),
    };
    eprintln!(
        "SSE {:<36} direct TTFB {} ms | proxied TTFB {} ms | errors {}/{}",
        proto_name(proto),
        ms(row.direct.first_byte),
        ms(row.proxied.first_byte),
        row.direct.errors.count,
        row.proxied.errors.count,
    );
    row
}
