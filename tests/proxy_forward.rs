//! The proxy relays real traffic faithfully: plain HTTP (absolute-form), intercepted HTTPS,
//! passthrough tunnels, HTTP/2 on either side, reverse routes, proxy auth, WebSocket; and
//! records every exchange, redacted, with its target.

mod common;

use common::origin;
use common::*;
use flakestorm::exchange::{BodyEnd, Outcome, Provider, Route, Target};
use http::Version;

#[tokio::test]
async fn plain_http_is_forwarded_with_host_kept_and_hop_headers_stripped() {
    let o = origin::fixed(None, "hello").await;
    let tools = format!(
        "tools:\n  - name: search\n    match_url: 'http://{}/search*'\n",
        o.addr
    );
    let p = start_proxy(&tools).await;
    let resp = client_via(&p, H1)
        .get(o.http_url("/search?q=rust&key=AIzaSECRET"))
        .header("authorization", "Bearer sk-secret")
        .header("connection", "x-hop")
        .header("x-hop", "must-not-cross")
        .header("x-end", "crosses")
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello");

    let seen = &o.log.all()[0];
    assert_eq!(
        seen.uri, "/search?q=rust&key=AIzaSECRET",
        "origin-form upstream, query intact"
    );
    assert_eq!(seen.headers["host"], o.addr.to_string());
    assert_eq!(
        seen.headers["authorization"], "Bearer sk-secret",
        "end-to-end headers cross"
    );
    assert_eq!(seen.headers["x-end"], "crosses");
    for hop in ["x-hop", "proxy-authorization", "proxy-connection"] {
        assert!(!seen.headers.contains_key(hop), "{hop} must be stripped");
    }

    p.daemon.journal.wait_for(1).await;
    let ex = &p.daemon.journal.all()[0];
    assert_eq!(ex.route, Route::Forward);
    assert_eq!(
        ex.target,
        Target::Tool {
            name: "search".into()
        }
    );
    assert_eq!(
        ex.request.url,
        format!("http://{}/search?q=rust&key=[REDACTED]", o.addr)
    );
    let auth = ex
        .request
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .unwrap();
    assert_eq!(auth.1, "[REDACTED]");
    let Outcome::Response { response, body } = &ex.outcome else {
        panic!("{ex:?}")
    };
    assert_eq!((response.status, body), (200, &BodyEnd::Complete));
    assert_eq!(ex.response_bytes, 5);
    assert_eq!(
        ex.trace_id.as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736"),
        "header attribution"
    );
    assert!(ex.timings.upstream_headers_ms.is_some());
    p.stop().await;
}

#[tokio::test]
async fn https_is_intercepted_with_a_leaf_from_our_ca() {
    let o = origin::fixed(Some(H1), r#"{"choices":[]}"#).await;
    let p = start_proxy("").await;
    // The client trusts only the flakestorm CA: success proves the TLS was intercepted.
    let resp = client_via(&p, H1)
        .post(o.https_url("/v1/chat/completions"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), r#"{"choices":[]}"#);
    assert_eq!(o.log.all()[0].uri, "/v1/chat/completions");
    assert_eq!(
        o.log.all()[0].headers["host"],
        format!("localhost:{}", o.addr.port())
    );

    p.daemon.journal.wait_for(1).await;
    let ex = &p.daemon.journal.all()[0];
    assert_eq!(ex.route, Route::Intercepted);
    assert_eq!(
        ex.request.url,
        format!("https://localhost:{}/v1/chat/completions", o.addr.port())
    );
    assert_eq!(
        ex.target,
        Target::Llm {
            provider: Provider::Openai
        }
    );
    let metrics = p.daemon.metrics.encode();
    assert!(
        metrics.contains(r#"flakestorm_requests_total{target="llm",status_class="2xx"} 1"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"flakestorm_tls_handshakes_total{result="ok"} 1"#));
    assert!(metrics.contains("flakestorm_leaf_cache_size 1"));
    p.stop().await;
}

#[tokio::test]
async fn passthrough_hosts_are_tunnelled_without_decryption() {
    let o = origin::fixed(Some(H1), "real cert").await;
    let p = start_proxy("proxy:\n  passthrough: ['localhost']\n").await;
    // Trusting only the origin's own CA works only if the proxy did not intercept.
    let client = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(p.url()).unwrap())
        .use_preconfigured_tls(tls_client(
            &std::fs::read_to_string(fixture("test-ca.pem")).unwrap(),
            H1,
        ))
        .build()
        .unwrap();
    let resp = client.get(o.https_url("/")).send().await.unwrap();
    assert_eq!(resp.text().await.unwrap(), "real cert");
    assert!(
        p.daemon.journal.all().is_empty(),
        "opaque tunnels are not exchanges"
    );
    assert!(
        p.daemon
            .metrics
            .encode()
            .contains("flakestorm_tunnels_total 1")
    );
    // An open tunnel is opaque, so a drain waits for it: close the client first.
    drop(client);
    p.stop().await;
}

/// ALPN is chosen independently on each side: every client/origin combination works and
/// each side speaks what it negotiated.
#[tokio::test]
async fn http2_and_http1_on_either_side() {
    let p = start_proxy("").await;
    for (client_alpn, origin_alpn, client_ver, origin_ver) in [
        (H2, &[&b"h2"[..]][..], Version::HTTP_2, Version::HTTP_2),
        (H2, H1, Version::HTTP_2, Version::HTTP_11),
        (H1, &[&b"h2"[..]][..], Version::HTTP_11, Version::HTTP_2),
    ] {
        let o = origin::fixed(Some(origin_alpn), "v").await;
        let resp = client_via(&p, client_alpn)
            .get(o.https_url("/v"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.version(), client_ver);
        assert_eq!(resp.text().await.unwrap(), "v");
        assert_eq!(o.log.all()[0].version, origin_ver);
    }
    p.stop().await;
}

#[tokio::test]
async fn reverse_routes_serve_clients_that_ignore_proxy_variables() {
    let o = origin::fixed(None, "pong").await;
    let p = start_proxy(&format!(
        "proxy:\n  reverse:\n    - prefix: /ollama\n      upstream: 'http://{}'\n",
        o.addr
    ))
    .await;
    let direct = direct_client();
    let resp = direct
        .post(format!("{}/ollama/api/chat?x=1", p.url()))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.text().await.unwrap(), "pong");
    let seen = &o.log.all()[0];
    assert_eq!(seen.uri, "/api/chat?x=1");
    assert_eq!(seen.headers["host"], o.addr.to_string());
    p.daemon.journal.wait_for(1).await;
    let ex = &p.daemon.journal.all()[0];
    assert_eq!(
        (ex.route, &ex.target),
        (
            Route::Reverse,
            &Target::Llm {
                provider: Provider::Ollama
            }
        )
    );

    // Anything else that is not a proxy request gets a 400 that says what to do.
    let resp = direct
        .get(format!("{}/elsewhere", p.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(
        resp.headers()[flakestorm::proxy::ERROR_HEADER],
        "bad_request"
    );
    assert!(resp.text().await.unwrap().contains("HTTP_PROXY"));
    p.stop().await;
}

#[tokio::test]
async fn a_reverse_route_is_served_to_a_client_that_uses_the_proxy_variables() {
    // An Ollama client at OLLAMA_HOST=http://127.0.0.1:<proxy>/ollama with HTTP_PROXY
    // exported sends its request to the proxy in absolute form, naming the proxy itself.
    let o = origin::fixed(None, "pong").await;
    let p = start_proxy(&format!(
        "proxy:\n  reverse:\n    - prefix: /ollama\n      upstream: 'http://{}'\n",
        o.addr
    ))
    .await;
    let via = client_via(&p, H1);
    for host in [
        p.addr().to_string(),
        format!("localhost:{}", p.addr().port()),
    ] {
        let resp = via
            .post(format!("http://{host}/ollama/api/chat?x=1"))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{host}");
        assert_eq!(resp.text().await.unwrap(), "pong");
    }
    assert_eq!(o.log.all()[0].uri, "/api/chat?x=1");
    p.daemon.journal.wait_for(2).await;
    assert!(
        p.daemon
            .journal
            .all()
            .iter()
            .all(|e| e.route == Route::Reverse)
    );
    // Any other path on the proxy's own listener is still a loop, refused.
    let resp = via
        .get(format!("http://{}/elsewhere", p.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
    assert_eq!(
        resp.headers()[flakestorm::proxy::ERROR_HEADER],
        "forbidden_target"
    );
    p.stop().await;
}

#[tokio::test]
async fn proxy_users_must_authenticate() {
    let o = origin::fixed(Some(H1), "in").await;
    let plain_origin = origin::fixed(None, "in").await;
    let p = start_proxy("proxy:\n  users: [{name: agent, password: pw}]\n").await;
    let with = |user: Option<(&str, &str)>| {
        let mut proxy = reqwest::Proxy::all(p.url()).unwrap();
        if let Some((u, pw)) = user {
            proxy = proxy.basic_auth(u, pw);
        }
        reqwest::Client::builder()
            .proxy(proxy)
            .use_preconfigured_tls(tls_client(&p.ca_pem(), H1))
            .build()
            .unwrap()
    };
    let plain = plain_origin.http_url("/");
    let resp = with(None).get(&plain).send().await.unwrap();
    assert_eq!(resp.status(), 407);
    assert_eq!(
        resp.headers()["proxy-authenticate"],
        "Basic realm=\"flakestorm\""
    );
    assert_eq!(
        with(Some(("agent", "nope")))
            .get(&plain)
            .send()
            .await
            .unwrap()
            .status(),
        407
    );
    assert!(
        with(None).get(o.https_url("/")).send().await.is_err(),
        "CONNECT without credentials is refused"
    );
    assert_eq!(o.log.len() + plain_origin.log.len(), 0);

    let good = with(Some(("agent", "pw")));
    assert_eq!(good.get(&plain).send().await.unwrap().status(), 200);
    assert_eq!(get_text(&good, o.https_url("/")).await, "in");
    assert!(
        !o.log.all()[0].headers.contains_key("proxy-authorization"),
        "credentials never reach the origin"
    );
    p.daemon.journal.wait_for(5).await;
    let users: Vec<_> = p
        .daemon
        .journal
        .all()
        .iter()
        .map(|e| e.client_user.clone())
        .collect();
    let agent = Some("agent".to_string());
    assert_eq!(
        users,
        [None, None, None, agent.clone(), agent],
        "rejected attempts are recorded anonymously"
    );
    p.stop().await;
}

#[tokio::test]
async fn websocket_echo_through_an_intercepted_connect() {
    use futures_util::{SinkExt, StreamExt};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::Message;

    // A TLS WebSocket echo origin.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(origin::server_tls(H1));
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let ws = tokio_tungstenite::accept_async(acceptor.accept(tcp).await.unwrap())
            .await
            .unwrap();
        let (tx, rx) = ws.split();
        rx.forward(tx).await.ok();
    });

    let p = start_proxy("").await;
    let mut tcp = tokio::net::TcpStream::connect(p.addr()).await.unwrap();
    tcp.write_all(
        format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut head = vec![0u8; 1024];
    let n = tcp.read(&mut head).await.unwrap();
    assert!(
        head[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head[..n])
    );
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(tls_client(&p.ca_pem(), H1)))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let (mut ws, resp) = tokio_tungstenite::client_async(format!("wss://localhost:{port}/ws"), tls)
        .await
        .unwrap();
    assert_eq!(resp.status(), 101);
    for msg in [
        Message::text("hello"),
        Message::binary(vec![0u8, 1, 2, 255]),
    ] {
        ws.send(msg.clone()).await.unwrap();
        assert_eq!(within("echo", ws.next()).await.unwrap().unwrap(), msg);
    }
    p.daemon.journal.wait_for(1).await;
    let ex = &p.daemon.journal.all()[0];
    let Outcome::Response { response, body } = &ex.outcome else {
        panic!()
    };
    assert_eq!((response.status, body), (101, &BodyEnd::Upgraded));
    p.stop().await;
}

#[tokio::test]
async fn control_listener_serves_health_metrics_and_the_ca_but_not_the_key() {
    let p = start_proxy("").await;
    let c = p.control();
    let base = format!("http://{}", p.daemon.control_addr);
    assert_eq!(
        c.get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let pem = get_text(&c, format!("{base}/v1/ca.pem")).await;
    assert_eq!(pem, p.ca_pem());
    assert!(!pem.contains("PRIVATE KEY"));
    let metrics = get_text(&c, format!("{base}/metrics")).await;
    assert!(
        metrics.contains("flakestorm_active_connections"),
        "{metrics}"
    );
    p.stop().await;
}

/// Bytes after CONNECT that are neither TLS nor an HTTP request (another protocol) are
/// relayed as they are: here the origin's own answer to them comes back, and nothing is
/// journaled.
#[tokio::test]
async fn non_tls_non_http_bytes_after_connect_are_tunnelled() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let o = origin::fixed(None, "plain through a tunnel").await;
    let p = start_proxy("").await;
    let mut tcp = tokio::net::TcpStream::connect(p.addr()).await.unwrap();
    let target = o.addr;
    tcp.write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = vec![0u8; 256];
    let n = tcp.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200"));
    tcp.write_all(b"NOT-HTTP hello\r\n\r\n").await.unwrap();
    let mut reply = String::new();
    within(
        "origin reply through the tunnel",
        tcp.read_to_string(&mut reply),
    )
    .await
    .unwrap();
    assert!(
        reply.starts_with("HTTP/1.1 400"),
        "the origin's own parser answered: {reply}"
    );
    assert!(
        p.daemon
            .metrics
            .encode()
            .contains("flakestorm_tunnels_total 1")
    );
    assert!(
        p.daemon.journal.all().is_empty(),
        "a blind tunnel records nothing"
    );
    drop(tcp); // a tunnel ends when both sides have closed
    p.stop().await;
}

/// A client that tunnels its `http://` calls (Node's undici `EnvHttpProxyAgent` sends
/// `CONNECT host:80` and then plain HTTP) is served like an absolute-form request: the
/// exchange is journaled with its `http://` URL and target, and its tool's faults apply.
#[tokio::test]
async fn plain_http_inside_a_connect_tunnel_is_recorded_and_faulted() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let o = origin::fixed(None, "hello").await;
    let yaml = format!(
        "tools:\n  - name: search\n    match_url: 'http://{}/search*'\nchaos:\n  tool_faults: [{{tool: search, mode: error, error_code: 503}}]\n",
        o.addr
    );
    let p = start_proxy(&yaml).await;
    let through = |path: &'static str| {
        let (proxy, target) = (p.addr(), o.addr);
        async move {
            let mut s = tokio::net::TcpStream::connect(proxy).await.unwrap();
            let connect = format!("CONNECT {target} HTTP/1.1\r\nhost: {target}\r\n\r\n");
            s.write_all(connect.as_bytes()).await.unwrap();
            let mut head = vec![];
            while !head.ends_with(b"\r\n\r\n") {
                head.push(s.read_u8().await.unwrap());
            }
            assert!(
                head.starts_with(b"HTTP/1.1 200"),
                "{:?}",
                String::from_utf8_lossy(&head)
            );
            let req = format!("GET {path} HTTP/1.1\r\nhost: {target}\r\nconnection: close\r\n\r\n");
            s.write_all(req.as_bytes()).await.unwrap();
            let mut all = String::new();
            s.read_to_string(&mut all).await.unwrap();
            all
        }
    };
    let plain = within("a plain request in the tunnel", through("/other")).await;
    assert!(
        plain.starts_with("HTTP/1.1 200") && plain.ends_with("hello"),
        "{plain}"
    );
    let faulted = within("a faulted one", through("/search?q=x")).await;
    assert!(faulted.starts_with("HTTP/1.1 503"), "{faulted}");
    assert_eq!(o.log.len(), 1, "the faulted call never reached the origin");
    p.daemon.journal.wait_for(2).await;
    let all = p.daemon.journal.all();
    let urls: Vec<(&str, &Target, Route)> = all
        .iter()
        .map(|e| (e.request.url.as_str(), &e.target, e.route))
        .collect();
    let other = format!("http://{}/other", o.addr);
    let search = format!("http://{}/search?q=x", o.addr);
    assert_eq!(urls[0], (other.as_str(), &Target::Other, Route::Forward));
    let tool = Target::Tool {
        name: "search".into(),
    };
    assert_eq!(urls[1], (search.as_str(), &tool, Route::Forward));
    assert!(
        all[1].fault.as_ref().is_some_and(|f| f.applied),
        "{:?}",
        all[1].fault
    );
    p.stop().await;
}
