//! `/v1/runs` end to end on a real daemon with real in-process agents: a contract run
//! started over HTTP, followed on `/events` to `done`, its report fetched and the run found
//! in `GET /v1/runs` and in `flakestorm runs list` (the same SQLite file); `Last-Event-ID`
//! resuming; cancelling a queued and a running run; a follower that disconnects.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::agents::research;
use common::cli::flakestorm;
use common::origin::{self, Origin, text};
use common::*;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, mpsc};

const CONTRACT: &str = r#"
golden_prompts: ["What was ACME's Q3 revenue?", "Who is ACME's CEO?"]
contract:
  name: Research agent
  invariants:
    - {id: cites-source, type: regex, pattern: "(?i)according to", severity: critical, when: no_chaos}
    - {id: admits-outage, type: contains, value: unavailable, severity: high, when: tool_faults_active}
    - {id: answers, type: completes, severity: medium}
  chaos_matrix:
    - name: no-chaos
    - name: search-down
      tool_faults: [{id: search-down, tool: web_search, mode: error, error_code: 503}]
"#;

/// A daemon whose proxy knows the `web_search` tool, and that tool.
struct Bench {
    p: TestProxy,
    tool: Origin,
    http: reqwest::Client,
}

impl Bench {
    async fn start() -> Bench {
        let tool = origin::fixed(None, "revenue was $4.1B").await;
        let p = start_proxy(&tools(&tool)).await;
        let http = p.control();
        Bench { p, tool, http }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.p.daemon.control_addr)
    }

    fn data_dir(&self) -> std::path::PathBuf {
        self.p.dir.path().join(".flakestorm")
    }

    /// Submits a run; its id (after checking the 202 and its `Location`).
    async fn submit(&self, body: Value) -> String {
        submit(&self.http, &self.url("/v1/runs"), body).await
    }

    async fn get(&self, path: &str) -> Value {
        let r = self.http.get(self.url(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        json_of(r).await
    }

    async fn events(&self, id: &str, last: Option<u64>) -> Events {
        Events::open(
            &self.http,
            &self.url(&format!("/v1/runs/{id}/events")),
            last,
        )
        .await
    }

    /// An agent run through this daemon's proxy (see [`gated`]).
    async fn gated(&self, permits: usize) -> Gated {
        gated(
            client_via(&self.p, H1),
            self.tool.http_url("/search"),
            permits,
        )
        .await
    }
}

fn tools(tool: &Origin) -> String {
    format!(
        "tools:\n  - {{name: web_search, match_url: 'http://{}/*'}}\n",
        tool.addr
    )
}

async fn submit(http: &reqwest::Client, url: &str, body: Value) -> String {
    let r = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let location = r.headers()["location"].to_str().unwrap().to_string();
    let run = json_of(r).await;
    let id = run["id"].as_str().unwrap().to_string();
    assert_eq!(location, format!("/v1/runs/{id}"));
    id
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_str(&r.text().await.unwrap()).unwrap()
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
struct Ev {
    id: u64,
    kind: String,
    data: Value,
}

/// A `/events` stream, read event by event (keep-alive comments skipped).
struct Events {
    resp: reqwest::Response,
    buf: String,
}

impl Events {
    async fn open(http: &reqwest::Client, url: &str, last: Option<u64>) -> Events {
        let mut req = http.get(url);
        if let Some(n) = last {
            req = req.header("last-event-id", n.to_string());
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        Events {
            resp,
            buf: String::new(),
        }
    }

    /// The next event, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Ev> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                // Comments (keep-alive) and the stream's opening `retry:` are no events.
                if block.starts_with(':') || block.starts_with("retry: ") {
                    continue;
                }
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .unwrap_or_else(|| panic!("no {name} in {block:?}"))
                        .to_string()
                };
                return Some(Ev {
                    id: field("id: ").parse().unwrap(),
                    kind: field("event: "),
                    data: serde_json::from_str(&field("data: ")).unwrap(),
                });
            }
            let chunk = self.resp.chunk().await.unwrap()?;
            self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }

    /// Events up to the first of `kind` (included).
    async fn until(&mut self, kind: &str) -> Vec<Ev> {
        within(&format!("a `{kind}` event"), async {
            let mut seen = vec![];
            loop {
                let e = self
                    .next()
                    .await
                    .unwrap_or_else(|| panic!("the stream ended before `{kind}`: {seen:?}"));
                let found = e.kind == kind;
                seen.push(e);
                if found {
                    return seen;
                }
            }
        })
        .await
    }

    /// Every event to `done`, then the end of the stream.
    async fn through_done(&mut self) -> Vec<Ev> {
        let events = self.until("done").await;
        let after = within("the stream ends after done", self.next()).await;
        assert_eq!(after, None, "nothing after done");
        events
    }
}

/// An agent that takes a permit per call (waiting for one when there is none), asks its
/// search tool through the proxy, and answers; it counts its calls, says when each
/// starts, and says when a call it was still serving is abandoned by the caller.
struct Gated {
    agent: Origin,
    permits: Arc<Semaphore>,
    calls: Arc<AtomicUsize>,
    called: mpsc::UnboundedReceiver<usize>,
    abandoned: mpsc::UnboundedReceiver<usize>,
}

async fn gated(client: reqwest::Client, tool_url: String, permits: usize) -> Gated {
    let sem = Arc::new(Semaphore::new(permits));
    let calls = Arc::new(AtomicUsize::new(0));
    let (called_tx, called) = mpsc::unbounded_channel();
    let (abandoned_tx, abandoned) = mpsc::unbounded_channel();
    let (sem2, calls2) = (sem.clone(), calls.clone());
    let agent = origin::start(None, move |_req| {
        let (sem, client, tool_url) = (sem2.clone(), client.clone(), tool_url.clone());
        let n = calls2.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = called_tx.send(n);
        let guard = Abandoned(Some((abandoned_tx.clone(), n)));
        async move {
            sem.acquire().await.unwrap().forget();
            let answer = match client.get(&tool_url).send().await {
                Ok(r) if r.status().is_success() => "According to search: ok".to_string(),
                _ => "Sorry, search is unavailable.".to_string(),
            };
            guard.defuse();
            text(&json!({"result": answer}).to_string())
        }
    })
    .await;
    Gated {
        agent,
        permits: sem,
        calls,
        called,
        abandoned,
    }
}

/// Sends the call's number when dropped before it answered.
struct Abandoned(Option<(mpsc::UnboundedSender<usize>, usize)>);

impl Abandoned {
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some((tx, n)) = self.0.take() {
            let _ = tx.send(n);
        }
    }
}

/// A chaos run of `prompts` against `agent`, one case at a time.
fn chaos_run(agent: &Origin, tool: &Origin, prompts: usize) -> Value {
    let golden: Vec<String> = (1..=prompts).map(|i| format!("question {i}")).collect();
    let config = format!(
        "agent: {{endpoint: '{}'}}\n{}golden_prompts: {golden:?}\n\
         invariants: [{{type: contains, value: unavailable}}]\n\
         chaos: {{tool_faults: [{{tool: web_search, mode: error, error_code: 503}}]}}\n\
         advanced: {{concurrency: 1}}\n",
        agent.http_url("/invoke"),
        tools(tool),
    );
    json!({"kind": "chaos", "config": config})
}

fn of<'a>(events: &'a [Ev], kind: &str) -> Vec<&'a Ev> {
    events.iter().filter(|e| e.kind == kind).collect()
}

#[tokio::test]
async fn a_contract_run_over_http_streams_to_done_and_lands_in_history() {
    let b = Bench::start().await;
    let agent = research(client_via(&b.p, H1), b.tool.http_url("/search")).await;
    let config = format!(
        "agent: {{endpoint: '{}'}}\n{}{CONTRACT}",
        agent.http_url("/invoke"),
        tools(&b.tool)
    );
    let id = b
        .submit(json!({"kind": "contract", "config": config, "seed": 5}))
        .await;
    let events = b.events(&id, None).await.through_done().await;

    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events[0].kind, "queued");
    assert_eq!(events[1].kind, "started");
    // 2 scenarios × 2 prompts, then a (baseline) pass of the 2 prompts the fault reached:
    // the no-chaos cases ran together (concurrency 10, exclusive attribution), so their
    // tool responses could not be told apart for the outcome classes (docs/outcomes.md).
    let cases = of(&events, "case");
    assert_eq!(cases.len(), 6, "{events:?}");
    assert_eq!(of(&events, "case_started").len(), 6);
    for (i, c) in cases.iter().enumerate() {
        let baseline = i >= 4;
        assert_eq!(c.data["done"], i as u64 + 1, "{c:?}");
        assert_eq!(c.data["total"], if baseline { 6 } else { 4 }, "{c:?}");
        assert_eq!(c.data["scenario"] == "(baseline)", baseline, "{c:?}");
        assert_eq!(c.data["answered"], true, "{c:?}");
    }
    let phases = of(&events, "phase");
    assert_eq!(phases.len(), 1);
    assert_eq!(phases[0].data["phase"], "contract");
    assert_eq!(of(&events, "cell").len(), 6, "3 invariants × 2 scenarios");
    let done = &events.last().unwrap().data;
    assert_eq!(done["status"], "passed", "{done}");
    assert_eq!(
        (done["done"].as_u64(), done["total"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(done["seed"], 5);
    assert_eq!(done["scores"]["contract"], phases[0].data["score"]);

    let report = b.get(&format!("/v1/runs/{id}/report")).await;
    assert_eq!(report["verdict"], "pass", "status passed ⇔ verdict pass");
    assert_eq!(report["seed"], 5);
    assert_eq!(report["cases"].as_array().unwrap().len(), 6);
    let classes: Vec<&serde_json::Value> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.get("outcome"))
        .collect();
    assert_eq!(classes.len(), 2, "the search-down cases have a class");
    assert!(
        classes.iter().all(|o| o["class"] == "degraded_honest"),
        "{classes:?}"
    );

    let run = b.get(&format!("/v1/runs/{id}")).await;
    assert_eq!(run["status"], "passed");
    let list = b.get("/v1/runs?kind=contract&status=passed").await;
    assert_eq!(list["runs"][0]["id"], id.as_str(), "{list}");

    // The CLI reads the same SQLite file while the daemon has it open.
    let data_dir = b.data_dir();
    let (code, out, err) = tokio::task::spawn_blocking(move || {
        let d = data_dir.to_str().unwrap();
        flakestorm(&["runs", "list", "--data-dir", d, "--json"], &data_dir)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    let listed: Value = serde_json::from_str(&out).unwrap();
    let stored = listed["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not in {out}"));
    assert_eq!(stored["status"], "passed");
    assert_eq!(stored["done"], 6, "4 cases and the (baseline) pass's 2");

    // Reconnecting after event N gives exactly the events after N.
    for n in [0, 3, events.len() as u64 - 1] {
        let again = b.events(&id, Some(n)).await.through_done().await;
        assert_eq!(again, events[n as usize..], "after {n}");
    }
    let none = b.events(&id, Some(events.len() as u64)).await;
    let none = within("an empty stream ends", none.resp.text())
        .await
        .unwrap();
    // Only the stream's opening `retry:`, no event.
    assert_eq!(none, "retry: 1000\n\n", "nothing after the last event");
}

#[tokio::test]
async fn cancelling_a_queued_and_a_running_run() {
    let b = Bench::start().await;
    let mut a = b.gated(0).await;
    let running = b.submit(chaos_run(&a.agent, &b.tool, 3)).await;
    let mut events = b.events(&running, None).await;
    events.until("case_started").await;
    within("the agent is called", a.called.recv())
        .await
        .unwrap();

    // Exclusive attribution: the second run waits its turn.
    let queued = b.submit(chaos_run(&a.agent, &b.tool, 3)).await;
    assert_eq!(
        b.get(&format!("/v1/runs/{queued}")).await["status"],
        "queued"
    );
    let r = b
        .http
        .delete(b.url(&format!("/v1/runs/{queued}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let q = b.events(&queued, None).await.through_done().await;
    let kinds: Vec<&str> = q.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["queued", "done"], "it never started");
    assert_eq!(q[1].data["status"], "cancelled");

    let r = b
        .http
        .delete(b.url(&format!("/v1/runs/{running}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let rest = events.through_done().await;
    let done = &rest.last().unwrap().data;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert_eq!(done["done"], 0);
    let gone = within("the in-flight call is abandoned", a.abandoned.recv()).await;
    assert_eq!(gone, Some(1));
    // Free the agent: a run that went on would call it again; this one is over.
    a.permits.add_permits(10);
    assert_eq!(a.calls.load(Ordering::SeqCst), 1, "no call after the first");
    assert!(a.called.try_recv().is_err());

    let run = b.get(&format!("/v1/runs/{running}")).await;
    assert_eq!(run["status"], "cancelled");
    let again = b
        .http
        .delete(b.url(&format!("/v1/runs/{running}")))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    let stored = b.get("/v1/runs?status=cancelled").await;
    assert_eq!(stored["runs"].as_array().unwrap().len(), 2, "{stored}");
}

#[tokio::test]
async fn a_follower_that_disconnects_does_not_stop_the_run() {
    let b = Bench::start().await;
    let mut a = b.gated(1).await;
    let id = b.submit(chaos_run(&a.agent, &b.tool, 2)).await;
    let mut events = b.events(&id, None).await;
    let seen = events.until("case").await;
    let last = seen.last().unwrap().id;
    within("first call", a.called.recv()).await.unwrap();
    within("second call", a.called.recv()).await.unwrap();
    drop(events); // the follower goes away while the second case is in flight

    a.permits.add_permits(1);
    let rest = b.events(&id, Some(last)).await.through_done().await;
    assert_eq!(rest[0].id, last + 1, "resumed where it left");
    let done = &rest.last().unwrap().data;
    assert_eq!(
        (done["done"].as_u64(), done["total"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(done["status"], "passed", "{done}");
    assert_eq!(a.calls.load(Ordering::SeqCst), 2);
    assert!(a.abandoned.try_recv().is_err(), "no call was abandoned");
}

/// A run with nothing to tell for longer than `proxy.header_timeout_ms` (its agent is
/// thinking): the follower gets keep-alive comments and keeps its stream, although the
/// control listener closes connections whose reads wait that long.
#[tokio::test(start_paused = true)]
async fn a_quiet_run_keeps_its_followers_past_the_control_read_deadline() {
    let tool = origin::fixed(None, "ok").await;
    let p = start_proxy(&format!(
        "proxy: {{header_timeout_ms: 2000}}\n{}",
        tools(&tool)
    ))
    .await;
    let http = p.control();
    let a = gated(client_via(&p, H1), tool.http_url("/search"), 0).await;
    let base = format!("http://{}", p.daemon.control_addr);
    let id = submit(
        &http,
        &format!("{base}/v1/runs"),
        chaos_run(&a.agent, &tool, 1),
    )
    .await;
    let mut resp = http
        .get(format!("{base}/v1/runs/{id}/events"))
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    // Virtual time: the agent never answers, so only keep-alives can come.
    while text.matches(": keep-alive").count() < 3 {
        match resp.chunk().await {
            Ok(Some(chunk)) => text.push_str(std::str::from_utf8(&chunk).unwrap()),
            end => panic!("the stream ended ({end:?}) after {text:?}"),
        }
    }
    assert!(text.contains("event: case_started"), "{text}");
    assert!(!text.contains("event: done"), "{text}");
    a.permits.add_permits(1);
}

/// A daemon's run writes the failed cases' tapes (`output.tapes`, default `failed`) beside
/// its report, and the store names them among the run's artifacts.
#[tokio::test]
async fn a_daemon_run_writes_its_failed_cases_tapes() {
    let b = Bench::start().await;
    let agent = research(client_via(&b.p, H1), b.tool.http_url("/search")).await;
    let config = format!(
        "agent: {{endpoint: '{}'}}\n{}golden_prompts: [q1, q2]\n\
         invariants: [{{type: contains, value: According}}]\n\
         chaos: {{tool_faults: [{{tool: web_search, mode: error, error_code: 503}}]}}\n\
         advanced: {{concurrency: 1}}\n",
        agent.http_url("/invoke"),
        tools(&b.tool),
    );
    let id = b.submit(json!({"kind": "chaos", "config": config})).await;
    let done = b.events(&id, None).await.through_done().await;
    assert_eq!(done.last().unwrap().data["status"], "failed", "{done:?}");
    let run = b.p.daemon.store.get(&id).unwrap().unwrap();
    let dir = std::path::PathBuf::from(&run.artifacts["tapes"]);
    assert!(dir.starts_with(b.data_dir()), "{}", dir.display());
    let mut tapes: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    tapes.sort();
    assert_eq!(tapes, ["chaos-0.har", "chaos-1.har"], "{}", dir.display());
    let har = flakestorm::tape::read(&dir.join("chaos-0.har")).unwrap();
    let statuses: Vec<u16> = har.log.entries.iter().map(|e| e.response.status).collect();
    assert_eq!(statuses, [503], "the search call and its fault");
    assert!(
        !b.p.daemon.journal.keeps_bodies(),
        "bodies kept only during the run"
    );
}

/// A run that fixes no seed records the daemon's from its submission on, even while an
/// exclusive run has swapped the engine's seed for its own; once its turn comes it runs
/// with exactly that seed.
#[tokio::test]
async fn a_queued_run_without_a_seed_shows_the_seed_it_then_uses() {
    let b = Bench::start().await;
    let base = b.get("/v1/chaos").await["seed"].as_u64().unwrap();
    let mut a = b.gated(0).await;
    let mut holder = chaos_run(&a.agent, &b.tool, 1);
    holder["seed"] = json!(base.wrapping_add(1));
    let running = b.submit(holder).await;
    b.events(&running, None).await.until("case_started").await;
    within("the agent is called", a.called.recv())
        .await
        .unwrap();
    let held = b.get("/v1/chaos").await["seed"].as_u64();
    assert_eq!(held, Some(base.wrapping_add(1)), "the run holds the engine");

    let queued = [
        b.submit(chaos_run(&a.agent, &b.tool, 1)).await,
        b.submit(chaos_run(&a.agent, &b.tool, 1)).await,
    ];
    for id in &queued {
        let run = b.get(&format!("/v1/runs/{id}")).await;
        assert_eq!(run["status"], "queued", "{run}");
        assert_eq!(
            run["seed"].as_u64(),
            Some(base),
            "the daemon's, not the holder's: {run}"
        );
    }
    a.permits.add_permits(100);
    for id in &queued {
        let events = b.events(id, None).await.through_done().await;
        let done = &events.last().unwrap().data;
        assert_eq!(done["seed"].as_u64(), Some(base), "{done}");
        let report = b.get(&format!("/v1/runs/{id}/report")).await;
        assert_eq!(report["seed"].as_u64(), Some(base), "the run used it");
    }
    b.events(&running, None).await.through_done().await;
}
