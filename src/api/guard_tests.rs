//! The browser-proof checks through the router (`oneshot`): what a page on another site,
//! a DNS-rebinding page and a body a page can send without a preflight get, before the
//! token is even looked at; and that the probes stay open.

use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::api::{router, test_state};

fn state(listen: IpAddr, allowed: &[&str]) -> ApiState {
    let dir = tempfile::tempdir().unwrap().keep();
    let mut s = test_state(crate::jobs::Jobs::for_tests(&dir));
    let allowed: Vec<String> = allowed.iter().map(|h| h.to_string()).collect();
    s.hosts = Hosts::new(listen, &allowed);
    s
}

fn loopback() -> ApiState {
    state(std::net::Ipv4Addr::LOCALHOST.into(), &[])
}

/// Sends `method uri` with `headers` and `body`; the status, `error.code` and the answer.
async fn send(
    s: &ApiState,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, Value) {
    let mut req = axum::http::Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Body::from(body.to_string())).unwrap();
    let resp = router(s.clone()).oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let code = v["error"]["code"].as_str().unwrap_or_default().to_string();
    (status, code, v)
}

/// The body a cross-site page would post: a run whose agent is a command.
fn pwn_body(marker: &std::path::Path) -> String {
    json!({"kind": "chaos", "config": format!(
        "agent: {{endpoint: 'http://127.0.0.1:9/invoke', command: 'touch {}'}}\n\
         golden_prompts: [hi]\ninvariants: [{{type: output_not_empty}}]\n",
        marker.display()
    )})
    .to_string()
}

const HOST: (&str, &str) = ("host", "127.0.0.1:8081");
const TOKEN: (&str, &str) = ("authorization", "Bearer t");

#[tokio::test]
async fn a_cross_site_text_plain_post_starts_nothing_even_with_the_token() {
    let s = loopback();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("PWNED");
    let body = pwn_body(&marker);
    // What `fetch(url, {method: "POST", mode: "no-cors", body})` sends, with and without a
    // token (a page cannot know it; the check does not depend on it).
    for auth in [None, Some(TOKEN)] {
        for ct in [
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
        ] {
            let mut headers = vec![HOST, ("content-type", ct)];
            headers.extend(auth);
            let (status, code, v) = send(&s, "POST", "/v1/runs", &headers, &body).await;
            assert_eq!(
                (status, code.as_str()),
                (415, "unsupported_media_type"),
                "{v}"
            );
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains("application/json"), "{message}");
            // The same with the page's Origin: refused as cross-site first.
            headers.push(("origin", "http://evil.example"));
            let (status, code, v) = send(&s, "POST", "/v1/runs", &headers, &body).await;
            assert_eq!((status, code.as_str()), (403, "forbidden_origin"), "{v}");
            assert_eq!(
                v["error"]["message"],
                "Origin http://evil.example is not allowed: the control API takes no \
                 cross-site requests"
            );
        }
        // A body with no type at all (`new Blob([...])`) is no better.
        let mut headers = vec![HOST];
        headers.extend(auth);
        let (status, code, _) = send(&s, "POST", "/v1/runs", &headers, &body).await;
        assert_eq!((status, code.as_str()), (415, "unsupported_media_type"));
    }
    let (_, _, list) = send(&s, "GET", "/v1/runs", &[HOST, TOKEN], "").await;
    assert_eq!(list["runs"], json!([]), "nothing was queued");
    assert!(!marker.exists(), "no command ran");
}

#[tokio::test]
async fn foreign_origins_and_cross_site_fetches_are_403_own_origin_passes() {
    let s = loopback();
    for (name, value) in [
        ("origin", "http://evil.example"),
        ("origin", "null"),
        ("origin", "http://127.0.0.1:8082"),
        ("origin", "http://localhost:8081"),
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
    ] {
        for (method, uri) in [("GET", "/v1/runs"), ("DELETE", "/v1/chaos")] {
            let headers = [HOST, TOKEN, (name, value)];
            let (status, code, v) = send(&s, method, uri, &headers, "").await;
            assert_eq!(
                (status, code.as_str()),
                (403, "forbidden_origin"),
                "{value}: {v}"
            );
        }
    }
    for (name, value) in [
        ("origin", "http://127.0.0.1:8081"),
        ("sec-fetch-site", "same-origin"),
        ("sec-fetch-site", "none"),
    ] {
        let (status, _, v) = send(&s, "GET", "/v1/runs", &[HOST, TOKEN, (name, value)], "").await;
        assert_eq!(status, 200, "{name}: {value}: {v}");
    }
}

#[tokio::test]
async fn a_rebinding_host_is_403_before_the_token_and_probes_stay_open() {
    let s = loopback();
    for host in ["evil.example", "evil.example:8081", "10.0.0.5:8081"] {
        let (status, code, v) = send(&s, "GET", "/v1/runs", &[("host", host), TOKEN], "").await;
        assert_eq!(
            (status, code.as_str()),
            (403, "forbidden_host"),
            "{host}: {v}"
        );
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("control.allowed_hosts"), "{message}");
    }
    // Without the token too: a rebinding page learns nothing, not even whether it is right.
    let (status, code, _) = send(&s, "GET", "/v1/ca.pem", &[("host", "evil.example")], "").await;
    assert_eq!((status, code.as_str()), (403, "forbidden_host"));
    for host in [
        "localhost:8081",
        "LOCALHOST",
        "127.0.0.5:1",
        "[::1]:8081",
        "127.0.0.1",
    ] {
        let (status, _, v) = send(&s, "GET", "/v1/runs", &[("host", host), TOKEN], "").await;
        assert_eq!(status, 200, "{host}: {v}");
    }
    for probe in ["/healthz", "/metrics"] {
        let headers = [("host", "evil.example"), ("origin", "http://evil.example")];
        let (status, _, _) = send(&s, "GET", probe, &headers, "").await;
        assert_eq!(status, 200, "{probe}");
    }
}

/// RFC 9112 §3.2: a request whose server is ambiguous or malformed is a 400 that closes
/// the connection, on every path (the probes too), before the token.
#[tokio::test]
async fn several_or_malformed_hosts_and_foreign_absolute_targets_are_400() {
    let s = loopback();
    let two = [("host", "127.0.0.1:8081"), ("host", "evil.example"), TOKEN];
    for path in ["/v1/runs", "/healthz"] {
        let (status, code, v) = send(&s, "GET", path, &two, "").await;
        assert_eq!((status, code.as_str()), (400, "bad_request"), "{path}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("several Host headers"), "{message}");
    }
    for host in [
        "127.0.0.1:99999",
        "127.0.0.1:0",
        "127.0.0.1:x",
        "user@127.0.0.1",
    ] {
        let (status, code, v) = send(&s, "GET", "/v1/runs", &[("host", host), TOKEN], "").await;
        assert_eq!((status, code.as_str()), (400, "bad_request"), "{host}: {v}");
    }
    // An absolute-form target names the server, whatever Host says (RFC 9112 §3.2.2).
    let host = [("host", "127.0.0.1:8081"), TOKEN];
    let (status, code, v) = send(&s, "GET", "http://evil.example/v1/runs", &host, "").await;
    assert_eq!((status, code.as_str()), (400, "bad_request"), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("evil.example"),
        "{v}"
    );
    let (status, _, v) = send(&s, "GET", "http://127.0.0.1:8081/v1/runs", &host, "").await;
    assert_eq!(status, 200, "{v}");
    let req = axum::http::Request::get("/v1/runs")
        .header("host", "127.0.0.1:99999")
        .body(Body::empty())
        .unwrap();
    let resp = router(s.clone()).oneshot(req).await.unwrap();
    assert_eq!(resp.headers()["connection"], "close");
}

#[tokio::test]
async fn off_loopback_ip_literals_and_allowed_names_pass_others_do_not() {
    let s = state(
        std::net::Ipv4Addr::UNSPECIFIED.into(),
        &["flakestorm.ci.svc", "*.example.com"],
    );
    for host in [
        "10.0.0.5:8081",
        "flakestorm.ci.svc:8081",
        "FLAKESTORM.ci.svc",
        "a.example.com",
        "b.a.example.com:1",
    ] {
        let (status, _, v) = send(&s, "GET", "/v1/runs", &[("host", host), TOKEN], "").await;
        assert_eq!(status, 200, "{host}: {v}");
    }
    for host in [
        "example.com",
        "evilexample.com",
        "flakestorm.ci.svc.evil.example",
        "x",
    ] {
        let (status, code, _) = send(&s, "GET", "/v1/runs", &[("host", host), TOKEN], "").await;
        assert_eq!((status, code.as_str()), (403, "forbidden_host"), "{host}");
    }
    // Bound to one address: that address and loopback, not another machine's.
    let s = state("192.0.2.7".parse().unwrap(), &[]);
    let ok = send(
        &s,
        "GET",
        "/v1/runs",
        &[("host", "192.0.2.7:8081"), TOKEN],
        "",
    )
    .await;
    assert_eq!(ok.0, 200);
    let other = send(
        &s,
        "GET",
        "/v1/runs",
        &[("host", "192.0.2.8:8081"), TOKEN],
        "",
    )
    .await;
    assert_eq!(other.0, 403);
}

#[tokio::test]
async fn json_and_yaml_bodies_pass_and_a_preflight_gets_no_cors() {
    let s = loopback();
    let rules = r#"{"tool_faults": []}"#;
    for ct in [
        "application/json",
        "application/json; charset=utf-8",
        "application/merge-patch+json",
        "application/yaml",
        "text/yaml",
    ] {
        let headers = [HOST, TOKEN, ("content-type", ct)];
        let (status, _, v) = send(&s, "PUT", "/v1/chaos", &headers, rules).await;
        assert_eq!(status, 200, "{ct}: {v}");
    }
    // Bodiless calls need no type.
    let (status, _, _) = send(&s, "POST", "/v1/reset", &[HOST, TOKEN], "").await;
    assert_eq!(status, 200);
    let headers = [
        HOST,
        ("origin", "http://127.0.0.1:8081"),
        ("access-control-request-method", "POST"),
    ];
    let req = axum::http::Request::builder()
        .method("OPTIONS")
        .uri("/v1/runs");
    let req = headers
        .iter()
        .fold(req, |r, (k, v)| r.header(*k, *v))
        .body(Body::empty())
        .unwrap();
    let resp = router(s.clone()).oneshot(req).await.unwrap();
    assert!(!resp.status().is_success(), "{}", resp.status());
    let cors: Vec<_> = resp
        .headers()
        .keys()
        .filter(|k| k.as_str().starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "{cors:?}");
}

#[test]
fn host_names_are_read_without_their_port() {
    use crate::api::strict::host_name;
    assert_eq!(host_name("[::1]:8081").ok().as_deref(), Some("::1"));
    assert_eq!(host_name("localhost").ok().as_deref(), Some("localhost"));
    assert!(host_name("a@b").is_err());
    assert!(host_name("not a host").is_err());
}
