//! The wire attacks as bytes: seeded, one family per index, the prompt kept, framing exact.

use std::time::Duration;

use memchr::memmem;

use super::*;
use crate::agent::RawReply;
use crate::config::AgentSpec;
use crate::mutate::kind::Family;

use MutationType as M;

const PROMPT: &str = "What is the capital of France?";

fn target(timeout_ms: u64) -> AgentTarget {
    let spec: AgentSpec = serde_json::from_value(serde_json::json!({
        "endpoint": "http://agent.test:8790/invoke",
        "headers": {"x-team": "red"},
        "timeout": timeout_ms,
    }))
    .unwrap();
    spec.compile().unwrap()
}

fn wire_types() -> Vec<MutationType> {
    MutationType::all()
        .filter(|t| t.family() == Family::Wire)
        .collect()
}

fn attack(kind: MutationType, seed: u64, index: u32) -> WireAttack {
    let mut d = Draw::new(seed, kind, PROMPT, index);
    generate(kind, PROMPT, index, &mut d, &target(30_000)).unwrap()
}

/// How many families a type cycles through.
fn families(kind: MutationType) -> u32 {
    [
        (M::HttpHeaderInjection, http_header_injection::FAMILIES),
        (M::PayloadSizeAttack, payload_size_attack::FAMILIES),
        (M::ContentTypeConfusion, content_type_confusion::FAMILIES),
        (
            M::QueryParameterPoisoning,
            query_parameter_poisoning::FAMILIES,
        ),
        (M::RequestMethodAttack, request_method_attack::FAMILIES),
        (M::ProtocolLevelAttack, protocol_level_attack::FAMILIES),
        (M::ResourceExhaustion, resource_exhaustion::FAMILIES),
    ]
    .into_iter()
    .find(|(t, _)| *t == kind)
    .map_or(1, |(_, n)| n)
}

/// Head and body of a request (the head up to the first empty line, CRLF or LF).
fn split(req: &[u8]) -> (String, &[u8]) {
    let crlf = memmem::find(req, b"\r\n\r\n").map(|i| (i, i + 4));
    let lf = memmem::find(req, b"\n\n").map(|i| (i, i + 2));
    let (end, body) = match (crlf, lf) {
        (Some(a), Some(b)) if b.0 < a.0 => b,
        (Some(a), _) => a,
        (None, Some(b)) => b,
        (None, None) => panic!("no head end"),
    };
    (
        String::from_utf8_lossy(&req[..end]).into_owned(),
        &req[body..],
    )
}

/// A chunked body's data (extensions ignored; stops at a bad size or the end).
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = vec![];
    loop {
        let Some(eol) = memmem::find(body, b"\r\n") else {
            return out;
        };
        let line = String::from_utf8_lossy(&body[..eol]).into_owned();
        let Ok(n) = usize::from_str_radix(line.split(';').next().unwrap(), 16) else {
            return out;
        };
        if n == 0 || body.len() < eol + 2 + n {
            return out;
        }
        out.extend_from_slice(&body[eol + 2..eol + 2 + n]);
        body = &body[eol + 2 + n + 2..];
    }
}

#[test]
fn only_wire_types_are_generated() {
    for kind in MutationType::all() {
        let mut d = Draw::new(1, kind, PROMPT, 0);
        let got = generate(kind, PROMPT, 0, &mut d, &target(30_000));
        assert_eq!(got.is_some(), kind.family() == Family::Wire, "{kind}");
    }
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_each_index_a_new_family() {
    for kind in wire_types() {
        let n = families(kind);
        let mut labels = std::collections::BTreeSet::new();
        for index in 0..n.max(3) {
            let a = attack(kind, 7, index);
            assert_eq!(
                a,
                attack(kind, 7, index),
                "{kind} #{index} is not reproducible"
            );
            assert_eq!(a.kind, kind);
            assert!(!a.requests.is_empty() && !a.label.is_empty());
            if index < n {
                // Labels name the family, so a repeated label is a repeated family.
                let family = a.label.split('(').next().unwrap().trim().to_string();
                assert!(
                    labels.insert(family.clone()) || n == 1,
                    "{kind} #{index}: {family} twice"
                );
            }
        }
        // Some detail comes from the seed: another seed changes some variant.
        let differs =
            (8..20).any(|s| (0..n.max(3)).any(|i| attack(kind, 7, i) != attack(kind, s, i)));
        assert!(differs, "{kind}: the seed changes nothing");
    }
}

#[test]
fn the_prompt_is_in_every_body_the_attack_keeps() {
    for kind in wire_types() {
        for index in 0..families(kind) {
            let a = attack(kind, 3, index);
            for req in &a.requests {
                let (head, body) = split(req);
                let body = if head
                    .to_ascii_lowercase()
                    .contains("transfer-encoding: chunked")
                    && !a.label.contains("bad chunk size")
                {
                    dechunk(body)
                } else {
                    body.to_vec()
                };
                let text = String::from_utf8_lossy(&body);
                assert!(
                    text.contains(PROMPT),
                    "{kind} #{index} ({}) lost the prompt",
                    a.label
                );
                assert!(head.contains("Host: agent.test:8790") || a.label.contains("without Host"));
                assert!(
                    head.contains("x-team: red"),
                    "{kind} #{index}: agent headers lost"
                );
            }
        }
    }
}

fn content_length(head: &str) -> Vec<usize> {
    head.lines()
        .filter_map(|l| l.strip_prefix("Content-Length: "))
        .map(|v| v.trim().parse().unwrap())
        .collect()
}

#[test]
fn lengths_are_correct_unless_the_attack_is_about_them() {
    for kind in wire_types() {
        for index in 0..families(kind) {
            let a = attack(kind, 5, index);
            for req in &a.requests {
                let (head, body) = split(req);
                let lengths = content_length(&head);
                if a.label.contains("Content-Length") {
                    continue;
                }
                if head.contains("Transfer-Encoding: chunked") {
                    assert!(lengths.is_empty(), "{kind} #{index}");
                } else {
                    assert_eq!(lengths, [body.len()], "{kind} #{index} ({})", a.label);
                }
            }
        }
    }
}

#[test]
fn each_type_sends_what_it_says() {
    let text = |kind, index| {
        let a = attack(kind, 11, index);
        (String::from_utf8_lossy(&a.requests[0]).into_owned(), a)
    };
    let (t, _) = text(M::HttpHeaderInjection, 0);
    let injected = [
        "\r\nX-Injected: 1\r\n",
        "\r\nX-Forwarded-For: 127.0.0.1\r\n",
        "\r\nSet-Cookie: session=attacker\r\n",
        "\r\nX-Admin: true\r\n",
    ];
    assert!(
        t.contains("\r\nX-Note: ") && injected.iter().any(|i| t.contains(i)),
        "{t}"
    );
    let (t, _) = text(M::HttpHeaderInjection, 1);
    assert!(t.matches("\r\nHost: ").count() == 2 || t.matches("\r\nContent-Type: ").count() == 2);
    let (t, a) = text(M::HttpHeaderInjection, 2);
    let big = t
        .lines()
        .find(|l| l.starts_with("X-Padding: "))
        .unwrap()
        .len()
        - 11;
    assert!((8 * 1024..=64 * 1024).contains(&big), "{}", a.label);
    let (t, _) = text(M::HttpHeaderInjection, 3);
    assert!((180..=220).contains(&t.matches("\r\nX-Flood-").count()));
    let (t, _) = text(M::HttpHeaderInjection, 4);
    assert!(t.contains("\r\n ") || t.contains("\r\n\t"));

    let sizes: Vec<usize> = (0..2)
        .map(|i| {
            split(&attack(M::PayloadSizeAttack, 1, i).requests[0])
                .1
                .len()
        })
        .collect();
    assert_eq!(sizes, [1 << 20, 10 << 20]);
    let body = split(&attack(M::PayloadSizeAttack, 1, 0).requests[0])
        .1
        .to_vec();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(v["input"].as_str().unwrap().starts_with(PROMPT));

    let cts: Vec<String> = (0..5)
        .map(|i| {
            let (t, _) = text(M::ContentTypeConfusion, i);
            t.lines()
                .find(|l| l.starts_with("Content-Type: "))
                .unwrap_or("none")
                .to_string()
        })
        .collect();
    assert!(cts[0].starts_with("Content-Type: text/plain"));
    assert_eq!(cts[1], "Content-Type: application/x-www-form-urlencoded");
    assert_eq!(cts[2], "Content-Type: application/xml");
    assert!(cts[3].starts_with("Content-Type: multipart/form-data; boundary="));
    assert_eq!(cts[4], "none");

    let targets: Vec<String> = (0..6)
        .map(|i| {
            text(M::QueryParameterPoisoning, i)
                .0
                .split(' ')
                .nth(1)
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(targets.iter().all(|t| t.starts_with("/invoke?")));
    assert!(targets[0].contains("What%20is%20the%20capital"));
    assert!(targets[3].contains("%00"));
    assert!(
        ["%ff%fe", "%c0%af", "%ed%a0%80", "%fe%ff%00"]
            .iter()
            .any(|b| targets[4].contains(b))
    );
    assert!((14 * 1024..=18 * 1024 + 16).contains(&targets[5].len()));

    let methods: Vec<String> = (0..7)
        .map(|i| {
            text(M::RequestMethodAttack, i)
                .0
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        methods[..6],
        ["GET", "PUT", "PATCH", "OPTIONS", "HEAD", "DELETE"]
    );
    assert!(["BREW", "FLAKESTORM", "XYZZY"].contains(&methods[6].as_str()));

    let (t, _) = text(M::ProtocolLevelAttack, 0);
    assert!(t.starts_with("POST /invoke HTTP/1.0\r\n"));
    let (t, _) = text(M::ProtocolLevelAttack, 1);
    assert!(
        t.contains("Transfer-Encoding: chunked")
            && content_length(&split(t.as_bytes()).0).len() == 1
    );
    let (t, _) = text(M::ProtocolLevelAttack, 2);
    let l = content_length(&split(t.as_bytes()).0);
    assert!(l.len() == 2 && l[0] != l[1]);
    let (t, _) = text(M::ProtocolLevelAttack, 3);
    assert!(t.contains(";") && t.ends_with("\r\n\r\n"));
    let (t, a) = text(M::ProtocolLevelAttack, 5);
    assert!(!t.ends_with("0\r\n\r\n") && a.pattern == Pattern::HalfClose);
    let (t, _) = text(M::ProtocolLevelAttack, 6);
    assert!(!t.contains('\r') && t.contains("\nHost: "));

    let body = split(&attack(M::ResourceExhaustion, 2, 0).requests[0])
        .1
        .to_vec();
    let depth = body.iter().filter(|b| **b == b'[' || **b == b'{').count();
    assert!((9_000..=11_002).contains(&depth), "{depth}");
    let body = split(&attack(M::ResourceExhaustion, 2, 1).requests[0])
        .1
        .to_vec();
    assert!(body.len() > 900_000 && serde_json::from_slice::<serde_json::Value>(&body).is_ok());
    let body = split(&attack(M::ResourceExhaustion, 2, 2).requests[0])
        .1
        .to_vec();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let keys = v.as_object().unwrap().len();
    assert!(
        (90_001..=110_001).contains(&keys) && v["input"] == PROMPT,
        "{keys}"
    );

    let a = attack(M::ConcurrentRequestPattern, 1, 0);
    assert!((10..=20).contains(&a.requests.len()));
    assert!(a.requests.iter().all(|r| *r == a.requests[0]));
    assert!(matches!(a.pattern, Pattern::Burst { .. }));
}

#[test]
fn a_slow_write_fits_in_half_the_agent_timeout() {
    for (timeout, seed) in [(30_000, 1), (1_000, 2), (200, 3)] {
        let kind = M::TimeoutManipulation;
        let mut d = Draw::new(seed, kind, PROMPT, 0);
        let a = generate(kind, PROMPT, 0, &mut d, &target(timeout)).unwrap();
        let Pattern::Slow { chunk, every } = a.pattern else {
            panic!("{:?}", a.pattern)
        };
        let writes = a.requests[0].len().div_ceil(chunk) as u32;
        assert!(every >= Duration::from_millis(100) && every <= Duration::from_millis(500));
        assert!(
            every * (writes - 1) <= Duration::from_millis(timeout / 2).max(every),
            "{timeout}: {chunk} × {every:?}"
        );
        assert!(chunk >= 1 && (timeout < 30_000 || chunk <= 10));
    }
}

fn reply(status: Option<u16>, body: &str, error: Option<&str>) -> RawReply {
    RawReply {
        status,
        head: status
            .map(|s| format!("HTTP/1.1 {s} X"))
            .unwrap_or_default(),
        body: bytes::Bytes::from(body.to_string()),
        elapsed: Duration::ZERO,
        error: error.map(str::to_string),
        delivered: true,
    }
}

#[test]
fn survival_is_an_answer_or_a_refusal() {
    let one = attack(M::HttpHeaderInjection, 1, 0);
    let protocol = attack(M::ProtocolLevelAttack, 1, 2);
    assert_eq!(judge(&one, &[reply(Some(200), "{}", None)]), Ok(()));
    assert_eq!(judge(&one, &[reply(Some(431), "", None)]), Ok(()));
    let e = judge(&one, &[reply(Some(500), "", None)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("the agent failed") && e.contains("500"), "{e}");
    assert!(
        judge(&one, &[reply(Some(302), "", None)])
            .unwrap_err()
            .to_string()
            .contains("neither an answer")
    );
    let closed = reply(None, "", Some("connection closed before a response"));
    assert!(judge(&one, std::slice::from_ref(&closed)).is_err());
    assert_eq!(judge(&protocol, &[closed]), Ok(()));
    let hang = reply(None, "", Some("timed out after 300 ms"));
    assert_eq!(
        judge(&protocol, &[hang]).map_err(|e| e.to_string()),
        Err("timed out after 300 ms".into())
    );
    let cut = reply(
        Some(200),
        "",
        Some("connection closed after 2 of 5 body bytes"),
    );
    assert!(
        judge(&one, &[cut])
            .unwrap_err()
            .to_string()
            .contains("then connection closed")
    );
    let capped = reply(Some(200), "", Some(crate::agent::RAW_BODY_CAPPED));
    assert_eq!(judge(&one, &[capped]), Ok(()));
    let junk = reply(None, "", Some("the reply is not HTTP: it starts \"SSH\""));
    assert!(judge(&protocol, &[junk]).is_err());
    assert!(
        judge(&one, &[])
            .unwrap_err()
            .to_string()
            .contains("1 requests sent but 0 replies")
    );
}

#[test]
fn a_burst_must_agree() {
    let a = attack(M::ConcurrentRequestPattern, 1, 0);
    let n = a.requests.len();
    let same: Vec<_> = (0..n)
        .map(|_| reply(Some(200), r#"{"result":"Paris","id":1}"#, None))
        .collect();
    assert_eq!(judge(&a, &same), Ok(()));
    let mut other = same.clone();
    other[3] = reply(Some(200), r#"{"result":"Lyon","id":2}"#, None);
    let e = judge(&a, &other).unwrap_err().to_string();
    assert!(
        e.contains("disagree at `result`") && e.contains("Lyon") && e.contains("request 4"),
        "{e}"
    );
    let mut limited = same.clone();
    limited[n - 1] = reply(Some(429), "", None);
    assert!(
        judge(&a, &limited)
            .unwrap_err()
            .to_string()
            .contains("got HTTP 429")
    );
    let refusals: Vec<_> = (0..n)
        .map(|i| reply(Some(400), &i.to_string(), None))
        .collect();
    assert_eq!(judge(&a, &refusals), Ok(()));
}
