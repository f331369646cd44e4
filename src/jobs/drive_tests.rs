//! Runs that end however their driving goes: one submitted while the daemon stops, one
//! whose driving panics. Each ends with `done`, so its followers' streams end.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::ends_anyway;
use crate::jobs::{Job, Jobs, Submission};
use crate::run::{RunKind, RunRequest};

/// A chaos run against an agent nobody listens for (its pre-flight would fail).
fn submission() -> Submission {
    let text = "agent: {endpoint: 'http://127.0.0.1:9/invoke'}\ngolden_prompts: [hi]\n\
                invariants: [{type: output_not_empty}]\n\
                chaos: {tool_faults: [{tool: '*', mode: error, error_code: 503}]}\n";
    let vars = Default::default();
    let loaded = crate::config::load_text(text, "test", Path::new("."), &Default::default(), &vars)
        .expect("a valid config");
    Submission {
        loaded,
        request: RunRequest {
            kind: RunKind::Chaos,
            under_chaos: false,
            profile: None,
        },
        seed: None,
        min_score: None,
        trial: None,
    }
}

/// `job`'s events up to `done`, and `done`'s data.
async fn done(job: &Job) -> (Vec<&'static str>, Value) {
    let mut changed = job.events.watch();
    let ended = async {
        while !job.events.ended() {
            changed.changed().await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(20), ended)
        .await
        .expect("the run ends");
    let events = job.events.after(0);
    let data = serde_json::from_str(&events.last().unwrap().event.data()).unwrap();
    let kinds = events.iter().map(|e| e.event.kind().as_str()).collect();
    (kinds, data)
}

#[tokio::test]
async fn a_run_submitted_while_the_daemon_stops_ends_interrupted_before_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = Jobs::for_tests(dir.path());
    jobs.interrupt_all();
    let job = jobs.submit(submission()).unwrap();
    let (kinds, data) = done(&job).await;
    assert_eq!(kinds, ["queued", "done"], "it never started");
    assert_eq!(data["status"], "interrupted", "{data}");
}

#[tokio::test]
async fn a_run_whose_driving_panics_ends_in_error() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = Jobs::for_tests(dir.path());
    let job = jobs.submit(submission()).unwrap();
    done(&job).await; // the real driving, over
    // A job of the same store whose driving panics.
    let panicking: Arc<Job> = Arc::new(Job {
        id: "panicking".into(),
        state: std::sync::Mutex::new(job.record()),
        recorder: crate::store::Recorder::begin(
            jobs.store(),
            RunKind::Chaos,
            None,
            None,
            crate::jobs::Status::Running,
        ),
        metrics: crate::telemetry::Metrics::new(),
        events: Default::default(),
        cancel: Default::default(),
    });
    panicking.events.push(crate::jobs::RunEvent::Started {
        id: "panicking".into(),
    });
    ends_anyway(&panicking, async { panic!("a bug") }).await;
    let (kinds, data) = done(&panicking).await;
    assert_eq!(kinds, ["started", "done"]);
    assert_eq!(data["status"], "error", "{data}");
    let reason = data["reason"].as_str().unwrap();
    assert!(
        reason.contains("panicked") && reason.contains("a bug"),
        "{reason}"
    );
}
