//! Recording through the real proxy: live traffic written as a HAR tape with its bodies,
//! streamed events timed on paused tokio time, and secrets (a canary in `Authorization`,
//! `x-api-key`, a `?key=` query and the bodies) in no file the recording wrote.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{H1, client_via, origin, start_proxy, within};
use flakestorm::recording::Recording;

const CANARY: &str = "sk-canary-7f3a9c51";

/// Every file under `dir`, with its bytes.
fn files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

#[tokio::test]
async fn a_canary_secret_reaches_no_file_the_recording_wrote() {
    let llm = origin::echo().await;
    let yaml = format!(
        "llm:\n  - {{provider: openai, match_url: ['http://{}/v1/*']}}\n",
        llm.addr
    );
    let p = start_proxy(&yaml).await;
    let dir = tempfile::tempdir().unwrap();
    let rec = Recording::start(p.daemon.journal.clone(), dir.path()).unwrap();
    let body = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"my key is {CANARY}"}}],"api_key":"{CANARY}"}}"#
    );
    let r = client_via(&p, H1)
        .post(llm.http_url(&format!("/v1/chat/completions?key={CANARY}&alt=json")))
        .header("authorization", format!("Bearer {CANARY}"))
        .header("x-api-key", CANARY)
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.text().await.unwrap(),
        body,
        "the echo saw the real request"
    );
    p.daemon.journal.wait_for(1).await;
    let n = within("the recording's last save", rec.finish())
        .await
        .unwrap();
    assert_eq!(n, 1);
    let written = files(dir.path());
    assert_eq!(written.len(), 1, "one tape, no temporary file left");
    for (path, bytes) in &written {
        let text = String::from_utf8_lossy(bytes);
        assert!(
            !text.contains(CANARY),
            "{} holds the canary:\n{text}",
            path.display()
        );
        assert!(
            !text.contains("canary-7f3a"),
            "{} holds part of it",
            path.display()
        );
    }
    let har = flakestorm::tape::read(&written[0].0).unwrap();
    let e = &har.log.entries[0];
    assert_eq!(e.target.as_deref(), Some("openai"));
    assert!(
        e.request.url.ends_with("?key=[REDACTED]&alt=json"),
        "{}",
        e.request.url
    );
    let auth = e.request.headers.iter().find(|h| h.name == "authorization");
    assert_eq!(auth.unwrap().value, "[REDACTED]");
    let sent = &e.request.post_data.as_ref().unwrap().text;
    assert!(
        sent.contains(r#""content":"my key is [REDACTED]""#),
        "{sent}"
    );
    assert!(sent.contains(r#""api_key":"[REDACTED]""#), "{sent}");
    let got = e.response.content.text.as_deref().unwrap();
    assert!(got.contains("my key is [REDACTED]"), "{got}");
    assert_eq!(e.response.status, 200);
    p.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streamed_events_are_kept_with_their_offsets() {
    let (o, mut senders) = origin::streaming(None, "text/event-stream").await;
    let p = start_proxy("").await;
    let dir = tempfile::tempdir().unwrap();
    let rec = Recording::start(p.daemon.journal.clone(), dir.path()).unwrap();
    let client = client_via(&p, H1);
    let url = o.http_url("/stream");
    let call = tokio::spawn(async move { client.get(url).send().await.unwrap().text().await });
    let tx = senders.recv().await.unwrap();
    tx.send(Bytes::from("data: a\n\n")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    tx.send(Bytes::from("data: b\n\ndata: c\n\n"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    tx.send(Bytes::from("data: [DONE]\n\n")).await.unwrap();
    drop(tx);
    let text = call.await.unwrap().unwrap();
    assert_eq!(text, "data: a\n\ndata: b\n\ndata: c\n\ndata: [DONE]\n\n");
    p.daemon.journal.wait_for(1).await;
    rec.finish().await.unwrap();
    let har = flakestorm::tape::read(&rec_file(dir.path())).unwrap();
    let events = &har.log.entries[0].response.content.events;
    let got: Vec<(&str, u64)> = events
        .iter()
        .map(|e| (e.text.as_str(), e.offset_ms as u64))
        .collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(got[0].1 < 100, "{got:?}");
    assert!(
        (100..350).contains(&got[1].1) && got[2].1 == got[1].1,
        "{got:?}"
    );
    assert!(got[3].1 >= 350, "{got:?}");
    assert_eq!(got[3].0, "data: [DONE]\n\n");
    p.stop().await;
}

fn rec_file(dir: &std::path::Path) -> std::path::PathBuf {
    files(dir).remove(0).0
}

/// A call a fault answers never reaches its upstream, but its tape still has the request
/// body it was sent with: a replay keys on it.
#[tokio::test]
async fn a_faulted_calls_request_body_is_still_kept() {
    let tool = origin::fixed(None, "live").await;
    let yaml = format!(
        "tools:\n  - {{name: search, match_url: 'http://{}/*'}}\nchaos:\n  tool_faults: [{{tool: search, mode: error, error_code: 503}}]\n",
        tool.addr
    );
    let p = start_proxy(&yaml).await;
    p.daemon.journal.set_keep_bodies(true);
    let r = client_via(&p, H1)
        .post(tool.http_url("/q"))
        .body(r#"{"query":"acme"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let answered = r.bytes().await.unwrap();
    p.daemon.journal.wait_for(1).await;
    let ex = p.daemon.journal.all()[0].clone();
    let har = flakestorm::recording::tape_of(&p.daemon.journal, &[ex], Some("c"));
    let e = &har.log.entries[0];
    assert_eq!(
        e.request.post_data.as_ref().unwrap().text,
        r#"{"query":"acme"}"#
    );
    assert_eq!(e.fault.as_deref(), Some("tool_faults[0]/error"));
    assert_eq!(
        e.response.content.text.as_deref().map(str::as_bytes),
        Some(&answered[..])
    );
    assert_eq!(tool.log.len(), 0);
    p.stop().await;
}

/// Many agents' calls at once, through the proxy, while the recording runs: each call is on
/// the tape exactly once (the recorder takes exchanges by the journal's sequence numbers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_are_each_on_the_tape_exactly_once() {
    const CALLS: usize = 200;
    let o = origin::echo().await;
    let p = start_proxy("").await;
    let dir = tempfile::tempdir().unwrap();
    let rec = Recording::start(p.daemon.journal.clone(), dir.path()).unwrap();
    let client = client_via(&p, H1);
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            let (client, url) = (client.clone(), o.http_url(&format!("/call/{i}")));
            tokio::spawn(async move { client.post(url).body(format!("n={i}")).send().await })
        })
        .collect();
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap().status(), 200);
    }
    within(
        "every exchange recorded",
        p.daemon.journal.wait_for(CALLS as u64),
    )
    .await;
    let n = within("the recording's last save", rec.finish())
        .await
        .unwrap();
    assert_eq!(n, CALLS);
    let har = flakestorm::tape::read(&rec_file(dir.path())).unwrap();
    let mut got: Vec<String> = har
        .log
        .entries
        .iter()
        .map(|e| e.request.post_data.as_ref().unwrap().text.clone())
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..CALLS).map(|i| format!("n={i}")).collect();
    want.sort();
    assert_eq!(got, want);
    p.stop().await;
}
