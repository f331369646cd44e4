//! LangSmith import against a local LangSmith API serving runs in the v1 schema: a root chain
//! run, an llm run, tool runs (one errored with a 504) under a LangGraph-style `tools` chain.
//! The imported session's errored tool call reaches the agent as recorded when it is
//! replayed; a missing key, a refused key, an unknown run and a schema difference are one
//! line and exit 2 with nothing written; a project's root runs are imported by status,
//! page by page; `replays.sources` are imported by `replay run`.

mod common;
#[path = "common/langsmith.rs"]
mod fake_langsmith;

use common::cli::{closed_port, flakestorm_env, incident_config};
use common::origin;
use fake_langsmith::{self as ls, KEY, PROJECT, PROJECT_ID, run};
use serde_json::{Value, json};

const R1: &str = "00000000-0000-0000-0000-0000000000a1";
const T1: &str = R1;
const R2: &str = "00000000-0000-0000-0000-0000000000b1";
const R3: &str = "00000000-0000-0000-0000-0000000000c1";
const W3: &str = "00000000-0000-0000-0000-0000000000c2";
const PROMPT: &str = "What was ACME's Q3 revenue?";

fn lc(class: &str, kwargs: Value) -> Value {
    json!({"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", class], "kwargs": kwargs})
}

/// Three traces: the incident (errored root), a success, and one whose tool run lacks its
/// output (in another project). Served in reverse order: the import sorts by call order.
fn runs() -> Vec<Value> {
    let tools = "00000000-0000-0000-0000-0000000000a3";
    let mut llm = run(
        "00000000-0000-0000-0000-0000000000a2",
        T1,
        Some(R1),
        "ChatOpenAI",
        "llm",
        "1",
        json!({"messages": [[lc("HumanMessage", json!({"content": PROMPT}))]]}),
        json!({"generations": [[{"text": "", "message": lc("AIMessage", json!({"content": "",
            "tool_calls": [{"id": "call_1", "name": "web_search", "args": {"q": "acme"}}]}))}]]}),
        None,
    );
    llm["extra"] = json!({"metadata": {"ls_provider": "openai", "ls_model_name": "gpt-4o-mini"}});
    llm["prompt_tokens"] = json!(12);
    llm["completion_tokens"] = json!(7);
    let mut local = run(
        "00000000-0000-0000-0000-0000000000a6",
        T1,
        Some(R1),
        "ChatOllama",
        "llm",
        "6",
        json!({"messages": []}),
        json!({"generations": [[{"text": "sorry"}]]}),
        None,
    );
    local["extra"] = json!({"metadata": {"ls_provider": "ollama"}});
    let mut other = run(
        R3,
        R3,
        None,
        "research_agent",
        "chain",
        "0",
        json!({"input": PROMPT}),
        json!({}),
        None,
    );
    other["session_id"] = json!("0000bbbb-0000-0000-0000-000000000002");
    let mut broken = run(
        W3,
        R3,
        Some(R3),
        "web_search",
        "tool",
        "1",
        json!({"input": "acme"}),
        json!({}),
        None,
    );
    broken["session_id"] = other["session_id"].clone();
    let mut all = vec![
        run(
            R1,
            T1,
            None,
            "research_agent",
            "chain",
            "0",
            json!({"input": PROMPT, "chat_history": []}),
            json!({}),
            Some(
                "Traceback (most recent call last):\n  File \"agent.py\", line 9\nRuntimeError: search failed",
            ),
        ),
        llm,
        run(
            tools,
            T1,
            Some(R1),
            "tools",
            "chain",
            "2",
            json!({}),
            json!({}),
            None,
        ),
        run(
            "00000000-0000-0000-0000-0000000000a4",
            T1,
            Some(tools),
            "web_search",
            "tool",
            "3",
            json!({"input": "acme"}),
            json!({}),
            Some(
                "HTTPError('504 Server Error: Gateway Timeout for url: http://search.example/search?q=acme')",
            ),
        ),
        run(
            "00000000-0000-0000-0000-0000000000a5",
            T1,
            Some(tools),
            "calculator",
            "tool",
            "4",
            json!({"input": "6*7"}),
            json!({"output": lc("ToolMessage", json!({"content": "42", "tool_call_id": "call_2"}))}),
            None,
        ),
        local,
        run(
            R2,
            R2,
            None,
            "research_agent",
            "chain",
            "7",
            json!({"question": "ACME Q3?"}),
            json!({"output": "fine"}),
            None,
        ),
        run(
            "00000000-0000-0000-0000-0000000000b2",
            R2,
            Some(R2),
            "web_search",
            "tool",
            "8",
            json!({"input": "acme"}),
            json!({"output": {"results": ["ACME Q3 revenue was $1.2B"]}}),
            None,
        ),
        other,
        broken,
    ];
    all.reverse();
    all
}

/// `flakestorm` in `dir` with the API's endpoint and `key`.
async fn cli(
    dir: &std::path::Path,
    server: &ls::Server,
    key: &str,
    args: &[&str],
) -> (i32, String, String) {
    let (dir, url, key) = (dir.to_path_buf(), server.url(), key.to_string());
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // The SDK's older names are read when these are empty: kept empty here.
        let env = [
            ("LANGSMITH_API_KEY", key.as_str()),
            ("LANGSMITH_ENDPOINT", url.as_str()),
            ("LANGCHAIN_API_KEY", ""),
            ("LANGCHAIN_ENDPOINT", ""),
        ];
        flakestorm_env(&args, &dir, &env)
    })
    .await
    .unwrap()
}

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn an_imported_incident_replays_its_504_to_the_agent() {
    let server = ls::start(runs(), 2).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (code, out, err) = cli(
        d,
        &server,
        KEY,
        &[
            "replay",
            "run",
            "--from-langsmith",
            R1,
            "-o",
            "incident.json",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out, "session: incident.json\n");
    assert_eq!(
        err,
        "flakestorm: note: llm run 00000000-0000-0000-0000-0000000000a6 (ChatOllama): no tape \
         entry: provider `ollama` (flakestorm rebuilds OpenAI and Anthropic answers only)\n"
    );

    let s = read_json(&d.join("incident.json"));
    assert_eq!(s["id"], format!("langsmith-{R1}"));
    assert_eq!(
        (&s["name"], &s["source"]),
        (&json!("research_agent"), &json!("langsmith"))
    );
    assert_eq!(s["input"], PROMPT);
    assert_eq!(
        s["expected_failure"], "RuntimeError: search failed",
        "a traceback's exception"
    );
    assert_eq!(
        s["tool_responses"],
        json!([
            {"tool": "web_search", "status": 504, "latency_ms": 20,
             "response": {"error": "HTTPError('504 Server Error: Gateway Timeout for url: http://search.example/search?q=acme')"}},
            {"tool": "calculator", "status": 200, "response": "42", "latency_ms": 20},
        ]),
        "tool runs in call order, the errored one as its status"
    );
    assert_eq!(s["tape"], "incident.har");
    assert_eq!(s["context"]["langsmith"]["trace_id"], T1);

    let har = flakestorm::tape::read(&d.join("incident.har")).unwrap();
    assert_eq!(
        har.log.entries.len(),
        1,
        "the openai llm run; the ollama one has none"
    );
    let e = &har.log.entries[0];
    assert_eq!(e.target.as_deref(), Some("openai"));
    assert_eq!(
        (e.request.method.as_str(), e.request.url.as_str()),
        ("POST", "https://api.openai.com/v1/chat/completions")
    );
    let req: Value = serde_json::from_str(&e.request.post_data.as_ref().unwrap().text).unwrap();
    assert_eq!(
        req,
        json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT}]})
    );
    let answer: Value = serde_json::from_str(e.response.content.text.as_ref().unwrap()).unwrap();
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"],
        json!({"name": "web_search", "arguments": "{\"q\":\"acme\"}"})
    );
    assert_eq!(answer["usage"]["total_tokens"], 19);

    // GET the run, then its trace page by page (2 runs a page, 6 runs): with the key, by
    // `trace`, never asking for the deprecated child_run_ids.
    let seen = server.seen();
    assert_eq!(seen[0].0, format!("GET /runs/{R1}"));
    let queries: Vec<&Value> = seen[1..]
        .iter()
        .map(|(what, body)| {
            assert_eq!(what, "POST /runs/query");
            body
        })
        .collect();
    let cursors: Vec<&Value> = queries.iter().map(|b| &b["cursor"]).collect();
    assert_eq!(cursors, [&Value::Null, &json!("2"), &json!("4")]);
    for b in &queries {
        assert_eq!(b["trace"], T1);
        let select = b["select"].as_array().unwrap();
        assert!(
            select.contains(&json!("parent_run_id")) && !select.contains(&json!("child_run_ids")),
            "{b}"
        );
    }

    // The replay: the agent's own search call receives the recorded 504; the real tool
    // origin receives nothing. Imported and run in one go (no -o), then the fixed agent
    // passes the written session file.
    let tool = origin::search_tool().await;
    let invariants = "invariants: [{type: regex, pattern: \"(?i)unavailable\"}]\n";
    incident_config(d, tool.addr, false, invariants);
    let (code, out, err) = cli(d, &server, KEY, &["replay", "run", "--from-langsmith", R1]).await;
    assert_eq!(
        code, 1,
        "the unfixed agent fails the incident\n{out}\n{err}"
    );
    assert!(
        d.join(format!(".flakestorm/langsmith/langsmith-{R1}.json"))
            .is_file()
    );
    let report = read_json(&d.join("reports/replay.json"));
    let case = &report["cases"][0];
    assert!(
        case["error"]
            .as_str()
            .unwrap()
            .contains("the search tool answered HTTP 504"),
        "{case}"
    );
    assert_eq!(report["sessions"][0]["served"], 1);
    incident_config(d, tool.addr, true, invariants);
    let (code, out, err) = cli(
        d,
        &server,
        KEY,
        &["replay", "run", "incident.json", "-o", "fixed.json"],
    )
    .await;
    assert_eq!(code, 0, "the fixed agent passes\n{out}\n{err}");
    let answer = read_json(&d.join("fixed.json"))["cases"][0]["answer"].clone();
    assert!(answer.as_str().unwrap().contains("(HTTP 504)"), "{answer}");
    assert_eq!(tool.log.len(), 0, "the real tool origin received nothing");
}

#[tokio::test]
async fn langsmith_errors_are_one_line_exit_2_and_write_nothing() {
    let server = ls::start(runs(), 2).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let import = |id: &'static str| ["replay", "run", "--from-langsmith", id, "-o", "s.json"];
    let cases: [(&str, &str, String); 4] = [
        ("", R1, "flakestorm: LangSmith import needs an API key: set LANGSMITH_API_KEY (it is read from the environment only, never from the config)\n".into()),
        ("wrong", R1, format!("flakestorm: LangSmith run {R1}: GET /runs/{R1}: LangSmith answered HTTP 401: LangSmith refused the API key (check LANGSMITH_API_KEY) (Invalid token)\n")),
        (KEY, "00000000-0000-0000-0000-0000000000ff", "flakestorm: LangSmith run 00000000-0000-0000-0000-0000000000ff: GET /runs/00000000-0000-0000-0000-0000000000ff: LangSmith answered HTTP 404: not found (Run not found)\n".into()),
        (KEY, R3, format!("flakestorm: LangSmith run {R3}: run {W3}: outputs.output missing\n")),
    ];
    for (key, id, expected) in cases {
        let (code, out, err) = cli(d, &server, key, &import(id)).await;
        assert_eq!(
            (code, out.as_str(), err.as_str()),
            (2, "", expected.as_str())
        );
        let written: Vec<_> = std::fs::read_dir(d).unwrap().collect();
        assert!(written.is_empty(), "nothing written: {written:?}");
    }
    // The SDK's older names, when the new ones are not set.
    let url = server.url();
    let args = ["replay", "run", "--from-langsmith", R2, "-o", "legacy.json"];
    let dir2 = d.to_path_buf();
    let (code, _, err) = tokio::task::spawn_blocking(move || {
        let env = [
            ("LANGSMITH_API_KEY", ""),
            ("LANGSMITH_ENDPOINT", ""),
            ("LANGCHAIN_API_KEY", KEY),
            ("LANGCHAIN_ENDPOINT", url.as_str()),
        ];
        flakestorm_env(&args, &dir2, &env)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(d.join("legacy.json").is_file());
    let (code, _, err) = cli(
        d,
        &server,
        KEY,
        &[
            "replay",
            "run",
            "--from-langsmith-project",
            "nobody",
            "-o",
            "out",
        ],
    )
    .await;
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "flakestorm: LangSmith project `nobody`: LangSmith has no project named `nobody`\n"
        )
    );
    assert!(!d.join("out").exists());
}

#[tokio::test]
async fn a_projects_root_runs_are_imported_by_status_page_by_page() {
    let server = ls::start(runs(), 1).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let project = [
        "replay",
        "run",
        "--from-langsmith-project",
        PROJECT,
        "--filter-status",
    ];
    let (code, out, err) = cli(
        d,
        &server,
        KEY,
        &[&project[..], &["error", "-o", "errors"]].concat(),
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out, format!("session: errors/langsmith-{R1}.json\n"));
    assert!(d.join(format!("errors/langsmith-{R1}.har")).is_file());
    let seen = server.seen();
    assert_eq!(seen[0].0, format!("GET /sessions?name={PROJECT}"));
    let roots = &seen[1].1;
    assert_eq!(
        (&roots["session"], &roots["is_root"], &roots["error"]),
        (&json!([PROJECT_ID]), &json!(true), &json!(true)),
        "{roots}"
    );
    assert!(roots.get("cursor").is_none());

    server.fake.seen.lock().unwrap().clear();
    let (code, out, err) = cli(
        d,
        &server,
        KEY,
        &[&project[..], &["all", "-o", "all"]].concat(),
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    // In the API's order (the fake serves the newest first, as LangSmith does).
    assert_eq!(
        out,
        format!("session: all/langsmith-{R2}.json\nsession: all/langsmith-{R1}.json\n")
    );
    let seen = server.seen();
    let root_pages: Vec<&Value> = seen
        .iter()
        .filter(|(_, b)| b.get("session").is_some())
        .map(|(_, b)| b)
        .collect();
    assert_eq!(
        root_pages.len(),
        2,
        "one root a page, the second asked for by its cursor"
    );
    assert!(
        root_pages.iter().all(|b| b.get("error").is_none()),
        "{root_pages:?}"
    );
    assert_eq!(root_pages[1]["cursor"], "1");
    let s2 = read_json(&d.join(format!("all/langsmith-{R2}.json")));
    assert_eq!(
        s2["input"], "ACME Q3?",
        "`question` when there is no `input`"
    );
    assert_eq!(
        s2["tool_responses"],
        json!([{"tool": "web_search", "status": 200, "response": {"results": ["ACME Q3 revenue was $1.2B"]}, "latency_ms": 20}])
    );
    assert!(s2["tape"].is_null(), "no llm run, no tape: {s2}");
    // One run into a folder: named as in a project's.
    let (code, out, err) = cli(
        d,
        &server,
        KEY,
        &["replay", "run", "--from-langsmith", R2, "-o", "all/"],
    )
    .await;
    assert_eq!(
        (code, out),
        (0, format!("session: all/langsmith-{R2}.json\n")),
        "{err}"
    );
}

/// `replays.sources`: `replay run` imports a `langsmith_run` and replays it with the
/// config's sessions; a project without `auto_import` is named, not imported.
#[tokio::test]
async fn replay_run_imports_the_configs_sources() {
    let server = ls::start(runs(), 2).await;
    let tool = origin::search_tool().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let extra = format!(
        "invariants: [{{type: contains, value: \"According to search: ACME Q3 revenue was $1.2B\"}}]\n\
         replays:\n  sources:\n    - {{type: langsmith_run, run_id: {R2}}}\n    - {{type: langsmith, project: {PROJECT}}}\n"
    );
    incident_config(d, tool.addr, true, &extra);
    let (code, out, err) = cli(d, &server, KEY, &["replay", "run", "-o", "replay.json"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains(
            "LangSmith project `my-agent` is not imported by replay runs (auto_import: false)"
        ),
        "{err}"
    );
    let r = read_json(&d.join("replay.json"));
    assert_eq!(r["sessions"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(
        (&r["sessions"][0]["id"], &r["sessions"][0]["verdict"]),
        (&json!(format!("langsmith-{R2}")), &json!("pass"))
    );
    assert_eq!(tool.log.len(), 0, "the recorded search answer was served");
    assert!(
        server
            .seen()
            .iter()
            .all(|(what, _)| !what.starts_with("GET /sessions"))
    );
    // A source that cannot be imported stops the run before it starts.
    let (code, _, err) = cli(d, &server, "wrong", &["replay", "run", "-o", "again.json"]).await;
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!(
            "replays.sources: run {R2}: GET /runs/{R2}: LangSmith answered HTTP 401"
        )),
        "{err}"
    );
    assert!(!d.join("again.json").exists());
    // A --server run does not import them, and says so (no daemon here: the warning comes
    // first, and LangSmith hears nothing).
    server.fake.seen.lock().unwrap().clear();
    let nowhere = format!("http://127.0.0.1:{}", closed_port());
    let (code, _, err) = cli(d, &server, KEY, &["replay", "run", "--server", &nowhere]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("warning: replays.sources are imported by local runs only"),
        "{err}"
    );
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    // ci imports them too and runs its replay phase with them (its mutation phase, with a
    // golden prompt now, is judged on its own).
    incident_config(
        d,
        tool.addr,
        true,
        &format!("golden_prompts: [\"{PROMPT}\"]\n{extra}"),
    );
    let (code, out, err) = cli(d, &server, KEY, &["ci", "-o", "ci.json"]).await;
    let ci = read_json(&d.join("ci.json"));
    let replay = &ci["replay"]["sessions"][0];
    assert_eq!(
        (&replay["id"], &replay["verdict"]),
        (&json!(format!("langsmith-{R2}")), &json!("pass")),
        "exit {code}\n{out}\n{err}\n{ci}"
    );
}

/// An API that accepts and never answers: the import gives up after its timeout (paused
/// time: no wall-clock wait).
#[tokio::test(start_paused = true)]
async fn a_silent_api_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let _hold = tokio::spawn(async move {
        let mut held = vec![];
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let client = flakestorm::langsmith::Client::new(&url, KEY).unwrap();
    let Err(e) = flakestorm::langsmith::import_run(&client, R1).await else {
        panic!("a silent API answered")
    };
    assert_eq!(
        e.to_string(),
        format!("GET /runs/{R1}: LangSmith at {url} did not answer within 30 s")
    );
}
