//! `--server URL`: a run command as a client of a running daemon. It submits the run to
//! `POST /v1/runs` (the config file's path when the daemon is on this machine's loopback,
//! else its text), follows `/v1/runs/{id}/events` (resuming with `Last-Event-ID` when the
//! stream drops), prints progress as a local run does, saves the JSON report where a local
//! run would, and exits with the same codes. Ctrl-C cancels the run on the daemon.

use std::path::Path;
use std::process::ExitCode;

use http::Method;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::baseline::{Baseline, dropped, on_daemon};
use super::report_path;
use super::runs::Show;
use crate::config::Loaded;
use crate::jobs::{EventError, EventKind, RunEvent};
use crate::llm::frame::{Event, Framing, Splitter};
use crate::run::{Report, RunRequest};
use crate::store::{RunRecord, RunStatus};

pub use super::daemon_client::Server;
use super::daemon_client::{RESUMES, api_error};

/// Runs `req` on the daemon at `server`: submits, follows, saves the report, exit code.
pub async fn run(
    server: Server,
    loaded: &Loaded,
    req: &RunRequest,
    args: &super::ReportArgs,
    show: Show,
) -> ExitCode {
    let file = req.kind.report_file();
    let out = args.output.as_deref();
    let path = match report_path::resolve(out, &loaded.config.output.path, &file) {
        Ok(p) => p,
        Err(e) => return usage(e.to_string()),
    };
    let baseline = match &args.baseline {
        Some(b) => match on_daemon(
            &server,
            &Baseline::parse(b),
            (req.kind, (args.trials, args.trial)),
            loaded,
            show,
        )
        .await
        {
            Ok(found) => found,
            Err(e) => return usage(e),
        },
        None => None,
    };
    let run = match submit(&server, loaded, req, args).await {
        Ok(v) => v,
        Err(e) => return usage(e),
    };
    let Some(id) = run["id"].as_str().map(String::from) else {
        return usage(format!("the daemon answered without a run id: {run}"));
    };
    if show.summary() {
        eprintln!("flakestorm: run {id} submitted to {}", server.base);
    }
    warn_from_daemon(&run, loaded);
    let followed = tokio::select! {
        r = follow(&server, &id, show) => r,
        Ok(()) = super::commands::wait_for_signal() => {
            let cancelled = server.json(Method::DELETE, &format!("/v1/runs/{id}"), None).await;
            match cancelled {
                Ok(_) => eprintln!("flakestorm: interrupted: run {id} was cancelled on the daemon"),
                Err(e) => eprintln!("flakestorm: interrupted; cancelling run {id} failed: {e}"),
            }
            return ExitCode::from(130);
        }
    };
    let done = match followed {
        Ok(d) => d,
        Err(e) => {
            eprintln!("flakestorm: {e}; the run goes on on the daemon: `GET /v1/runs/{id}`");
            return ExitCode::from(2);
        }
    };
    let formats = &loaded.config.output.format;
    finish(&server, &id, &done, &path, formats, show).await;
    let verdict = done.status.verdict();
    let now: Vec<(String, f64)> = done.scores.into_iter().collect();
    let max_drop = args.max_drop.unwrap_or(0.0);
    let dropped = dropped(baseline, &now, done.trials.as_ref(), max_drop);
    let code = ExitCode::from(verdict.exit_code());
    super::runs::gate(code, verdict, &dropped)
}

/// Submits the run (`POST /v1/runs`) and returns the daemon's answer: the config by path
/// for a daemon on this machine, inline when the daemon cannot read that path.
async fn submit(
    server: &Server,
    loaded: &Loaded,
    req: &RunRequest,
    args: &super::ReportArgs,
) -> Result<Value, String> {
    let body = submission(
        server,
        loaded,
        req,
        args.min_score,
        (args.trials, args.trial),
    )?;
    let by_path = body.get("config_path").is_some();
    match server
        .json(Method::POST, "/v1/runs", Some(body.clone()))
        .await
    {
        Ok(v) => Ok(v),
        // A loopback address that is not this machine's file system: a sidecar sharing a
        // pod's or a compose service's network namespace, listening off loopback too. It
        // reads no path for a client: the config goes inline instead.
        Err(e) if by_path && e.contains("config_path:") => {
            let inline = inline(body, loaded)?;
            server.json(Method::POST, "/v1/runs", Some(inline)).await
        }
        Err(e) => Err(e),
    }
}

/// Prints the warnings the daemon gave about the run, but those already printed here.
fn warn_from_daemon(run: &Value, loaded: &Loaded) {
    // The config's own warnings were printed when it was loaded here.
    let said = |w: &&str| loaded.warnings.iter().any(|l| l == w);
    for w in run["warnings"].as_array().into_iter().flatten() {
        match w.as_str() {
            Some(w) if !said(&w) => eprintln!("flakestorm: warning (daemon): {w}"),
            Some(_) | None => {}
        }
    }
}

fn usage(message: String) -> ExitCode {
    eprintln!("flakestorm: {message}");
    ExitCode::from(2)
}

/// `body` with the config's text in place of its path.
fn inline(mut body: Value, loaded: &Loaded) -> Result<Value, String> {
    let file = loaded.file.as_ref().ok_or("--server needs a config file")?;
    let text = crate::files::read_to_string(file, crate::files::Limit::Config)
        .map_err(|e| e.to_string())?;
    if let Some(map) = body.as_object_mut() {
        map.remove("config_path");
        map.insert("config".into(), json!(text));
    }
    Ok(body)
}

/// The `POST /v1/runs` body: the config by path for a daemon on this machine, else inline.
fn submission(
    server: &Server,
    loaded: &Loaded,
    req: &RunRequest,
    min_score: Option<f64>,
    trials: (Option<u32>, Option<u32>),
) -> Result<Value, String> {
    let Some(file) = &loaded.file else {
        return Err("--server needs a config file (-c FILE) to send to the daemon".into());
    };
    let mut body = json!({"kind": req.kind, "chaos": req.under_chaos});
    let text = crate::files::read_to_string(file, crate::files::Limit::Config)
        .map_err(|e| e.to_string())?;
    if server.local() {
        let abs = std::fs::canonicalize(file).map_err(|e| format!("{}: {e}", file.display()))?;
        body["config_path"] = json!(abs);
    } else {
        body["config"] = json!(text);
    }
    // The daemon never expands a config from its own environment: the `${NAME}`s the file
    // uses travel with it, from this one, as a local run would read them.
    let env: serde_json::Map<String, Value> = crate::config::referenced_vars(&text)
        .into_iter()
        .filter_map(|name| Some((name.clone(), json!(std::env::var(&name).ok()?))))
        .collect();
    if !env.is_empty() {
        body["env"] = Value::Object(env);
    }
    if let Some(p) = &req.profile {
        body["profile"] = json!(p);
    }
    if let Some(m) = min_score {
        body["min_score"] = json!(m);
    }
    if let Some(n) = trials.0 {
        body["trials"] = json!(n);
    }
    if let Some(t) = trials.1 {
        body["trial"] = json!(t);
    }
    Ok(body)
}

/// Follows the run's events to `done` (its data: the run's record), printing progress.
async fn follow(server: &Server, id: &str, show: Show) -> Result<RunRecord, String> {
    let (mut last, mut resumes) = (0u64, 0);
    loop {
        let path = format!("/v1/runs/{id}/events");
        let resp = server
            .send(Method::GET, &path, None, (last > 0).then_some(last))
            .await;
        let mut body = match resp {
            Ok(r) if r.status().is_success() => r.into_body(),
            Ok(r) => return Err(api_error(r.status(), &Value::Null)),
            Err(e) if resumes < RESUMES => {
                resumes += 1;
                tracing::debug!("events stream: {e}; resuming");
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut frames = Splitter::new(Framing::Sse);
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { break };
            let Some(data) = frame.data_ref() else {
                continue;
            };
            for (n, event) in events(&mut frames, data) {
                last = n;
                match event {
                    Ok(RunEvent::Done(record)) => return Ok(*record),
                    Ok(event) => print_event(&event, show),
                    // Without the run's record there is no end to report.
                    Err(e) if e.kind() == Some(EventKind::Done) => return Err(e.to_string()),
                    // A newer daemon's event, or data this build reads otherwise: only
                    // progress is lost.
                    Err(e) => tracing::debug!("events of run {id}: {e}"),
                }
            }
        }
        // The stream ended before `done`: the connection dropped; pick up where it stopped.
        resumes += 1;
        if resumes > RESUMES {
            return Err(format!("the event stream of run {id} kept dropping"));
        }
    }
}

/// The numbered events whole in the stream so far, given its next chunk: SSE as the crate
/// frames it (`llm::frame`: either line ending, a field's space after `:` optional).
fn events(frames: &mut Splitter, chunk: &[u8]) -> Vec<(u64, Result<RunEvent, EventError>)> {
    let messages = frames.push(chunk);
    messages.iter().filter_map(|m| parse_event(m)).collect()
}

/// The number and event of one SSE message; None for a comment (keep-alive).
fn parse_event(message: &[u8]) -> Option<(u64, Result<RunEvent, EventError>)> {
    let event = Event::parse(message, Framing::Sse);
    let id = event.id?.trim().parse().ok()?;
    let kind = event.name.unwrap_or_default();
    Some((
        id,
        RunEvent::parse(&kind, event.json.unwrap_or(Value::Null)),
    ))
}

/// Prints a progress line for a case (`done` is the caller's).
fn print_event(event: &RunEvent, show: Show) {
    let c = match event {
        RunEvent::Case(c) if show.summary() => c,
        RunEvent::Warning { message } => return eprintln!("flakestorm: warning: {message}"),
        RunEvent::Case(_)
        | RunEvent::Queued { .. }
        | RunEvent::Started { .. }
        | RunEvent::CaseStarted { .. }
        | RunEvent::Phase { .. }
        | RunEvent::Cell(_)
        | RunEvent::Done(_) => return,
    };
    eprintln!("flakestorm: {}", case_line(c));
}

/// A case's progress line, as a run here says it (`progress::CaseHow`).
fn case_line(c: &crate::jobs::CaseEnded) -> String {
    let how = super::progress::CaseHow {
        not_judged: c.not_judged.as_deref(),
        answered: c.answered,
        error: c.error.as_deref(),
        latency_ms: c.latency_ms,
        faults: c.faults,
    };
    format!(
        "[{}/{}] {}: {:?}: {}",
        c.done,
        c.total,
        c.scenario,
        c.input,
        how.said(c.so_far)
    )
}

/// Saves the report (in the config's formats) and prints the outcome as an in-process
/// run would; a report this build cannot read is saved as it came, with a short summary.
async fn finish(
    server: &Server,
    id: &str,
    done: &RunRecord,
    path: &Path,
    formats: &[crate::config::ReportFormat],
    show: Show,
) {
    let raw = match done.artifacts.contains_key("json") {
        true => server
            .json(Method::GET, &format!("/v1/runs/{id}/report"), None)
            .await
            .ok(),
        false => None,
    };
    let typed = raw
        .as_ref()
        .map(|r| Report::from_json(&r.to_string()).map_err(|e| e.to_string()));
    if let Some(Ok(report)) = typed {
        let ended = crate::session::write(report, formats.to_vec(), path, None).await;
        let from = format!("run {id} on {}", server.base);
        ended.told(show, Some(&from)).print();
        return;
    }
    if let (Some(r), Some(Err(why))) = (&raw, typed) {
        eprintln!("flakestorm: the daemon's report: {why}; saved as it came");
        if let Err(e) = write(path, r) {
            eprintln!("flakestorm: {e}");
        }
        if show.json {
            println!("{}", serde_json::to_string_pretty(r).unwrap_or_default());
        }
    }
    let score = done
        .scores
        .get("overall")
        .or_else(|| done.scores.values().next());
    let label = done.status.as_str().to_uppercase().replace('_', " ");
    if show.quiet || show.score_only {
        println!("{}", quiet_line(done, score));
    } else if !show.json {
        println!("run {id} on {}: {label}", server.base);
        if let Some(s) = score {
            println!("score {s:.1}/100");
        }
        let reason = done.reason.as_deref().unwrap_or("");
        for r in reason.split("; ").filter(|r| !r.is_empty()) {
            println!("  - {r}");
        }
        if raw.is_some() {
            println!("report: {}", path.display());
        }
    }
}

/// The `--quiet` line of a run whose report is not read here: its kind and verdict, and
/// its score when it passed or failed (a run that tested nothing, or could not judge, has
/// no score to print).
fn quiet_line(done: &RunRecord, score: Option<&f64>) -> String {
    let label = done.status.as_str().to_uppercase().replace('_', " ");
    match done.status {
        RunStatus::Passed | RunStatus::Failed => {
            format!("{} {label}: {:.1}/100", done.kind, score.unwrap_or(&0.0))
        }
        RunStatus::Queued
        | RunStatus::Running
        | RunStatus::NotTested
        | RunStatus::Cancelled
        | RunStatus::Interrupted
        | RunStatus::Error => format!("{} {label}", done.kind),
    }
}

fn write(path: &Path, report: &Value) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn a_case_line_from_the_daemon_reads_as_a_local_one_with_its_faults() {
        let c: crate::jobs::CaseEnded = serde_json::from_value(json!({
            "done": 3, "total": 8, "scenario": "search-down", "input": "hi",
            "answered": true, "error": null, "not_judged": null, "latency_ms": 120.4,
            "faults": 2, "so_far": "failed"
        }))
        .unwrap();
        assert_eq!(
            case_line(&c),
            "[3/8] search-down: \"hi\": answered in 120 ms, 2 fault(s): failed"
        );
    }

    #[test]
    fn sse_messages_parse_and_comments_are_skipped() {
        let e = parse_event(b"id: 7\nevent: queued\ndata: {\"id\":\"r1\"}\n\n").unwrap();
        assert_eq!(
            (e.0, e.1.unwrap()),
            (7, RunEvent::Queued { id: "r1".into() })
        );
        assert!(parse_event(b": keep-alive\n\n").is_none());
        // The stream's first message sets the browser's reconnection delay: no event.
        assert!(parse_event(b"retry: 1000\n\n").is_none());
        // A newer daemon's kind is an error of its own, which `follow` passes over.
        let e = parse_event(b"id: 8\nevent: paused\ndata: {}\n\n").unwrap();
        assert_eq!((e.0, e.1.unwrap_err().kind()), (8, None));
    }

    #[test]
    fn fields_without_a_space_and_events_across_chunks_are_read() {
        let mut frames = Splitter::new(Framing::Sse);
        let mut got = events(
            &mut frames,
            b": keep-alive\n\nid:3\nevent:started\ndata:{\"i",
        );
        assert!(got.is_empty());
        got.extend(events(
            &mut frames,
            b"d\":\"r1\"}\r\n\r\nid: 4\nevent: case_started\ndata:{\"scenario\":\"s\",",
        ));
        got.extend(events(
            &mut frames,
            "\ndata: \"input\":\"é\"}\n\n".as_bytes(),
        ));
        // A message without a number is no event.
        got.extend(events(&mut frames, b"event: done\ndata: {}\n\n"));
        let got: Vec<(u64, RunEvent)> = got.into_iter().map(|(n, e)| (n, e.unwrap())).collect();
        assert_eq!(
            got,
            [
                (3, RunEvent::Started { id: "r1".into() }),
                (4, RunEvent::case_started("s", "é"))
            ]
        );
    }

    #[test]
    fn the_daemons_errors_are_listed_with_their_paths() {
        let v = json!({"error": {"code": "invalid_config", "message": "config has 2 errors",
            "errors": [{"path": "agent.endpoint", "message": "missing"}]}});
        let text = api_error(StatusCode::BAD_REQUEST, &v);
        assert_eq!(
            text,
            "the daemon refused the run: config has 2 errors\n  - agent.endpoint: missing"
        );
        let s = Server::new("http://127.0.0.1:1", None).unwrap();
        let s = s.token_from(Path::new("/nonexistent-data-dir"));
        let text = s.unauthorized();
        assert!(
            text.contains("--token") && text.contains("/nonexistent-data-dir/control.token"),
            "{text}"
        );
    }

    /// A passed or failed run's quiet line has its score; one that tested nothing has none.
    #[test]
    fn the_quiet_line_scores_only_a_judged_run() {
        use crate::store::RunKind;
        let line = |status| {
            quiet_line(
                &RunRecord::for_test("r", RunKind::Chaos, status),
                Some(&87.5),
            )
        };
        assert_eq!(line(RunStatus::Passed), "chaos PASSED: 87.5/100");
        assert_eq!(line(RunStatus::Failed), "chaos FAILED: 87.5/100");
        assert_eq!(line(RunStatus::NotTested), "chaos NOT TESTED");
        assert_eq!(line(RunStatus::Error), "chaos ERROR");
    }

    #[test]
    fn only_a_loopback_daemon_reads_the_file_itself() {
        for (url, local) in [
            ("http://127.0.0.1:8081", true),
            ("http://localhost:8081/", true),
            ("http://[::1]:8081", true),
            ("http://10.0.0.5:8081", false),
            ("https://flakestorm.internal", false),
        ] {
            assert_eq!(Server::new(url, None).unwrap().local(), local, "{url}");
        }
        assert!(Server::new("ftp://x", None).is_err());
        assert!(Server::new("not a url", None).is_err());
    }
}
