//! Each case's calls as its wire timeline draws them, kept with the case (`cases.timeline`)
//! so a run's page draws them once the daemon's journal and the run's events are gone, as
//! after a restart (docs/web.md). Kept as the case ends, from the journal's exchange,
//! already redacted there: what the drawing shows (method, URL without its query, target,
//! status or error, timings, fault and attacks, the tools an LLM answer asked for). The
//! headers, the client's address and proxy name, the trace id, canaries, MCP messages,
//! planted values and token counts are dropped. Bounded: a case keeps its first
//! `CASE_CALLS` calls, and a run keeps cases' calls until `RUN_CALLS` are kept; cases
//! after that keep none (the run's report has them all).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::OptionalExtension;

use super::record::StoredCase;
use super::{Store, StoreError};
use crate::exchange::{Exchange, Outcome};

/// The calls one case keeps (its first, by start).
pub const CASE_CALLS: usize = 400;
/// The calls one run keeps over all its cases: about 5 MB of the store at most.
pub const RUN_CALLS: usize = 10_000;

/// A run's count of kept calls, shared by the hooks that record its cases.
#[derive(Clone, Default)]
pub struct Budget(Arc<AtomicUsize>);

impl Budget {
    /// What a case whose calls are `traffic` keeps: `None` when it has none, or when the
    /// run has already kept `RUN_CALLS`.
    pub fn keep(&self, traffic: &[Arc<Exchange>]) -> Option<Vec<Exchange>> {
        let mut calls: Vec<&Exchange> = traffic.iter().map(AsRef::as_ref).collect();
        calls.sort_by_key(|e| (e.timings.started_at_ms, e.id));
        calls.truncate(CASE_CALLS);
        let n = calls.len();
        let fits = |kept: usize| (kept + n <= RUN_CALLS).then_some(kept + n);
        if n == 0
            || self
                .0
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, fits)
                .is_err()
        {
            return None;
        }
        Some(calls.into_iter().map(kept).collect())
    }
}

/// What of `e` a timeline keeps.
fn kept(e: &Exchange) -> Exchange {
    let mut k = e.clone();
    k.client_addr = String::new();
    k.client_user = None;
    k.request.url = without_query(&e.request.url).to_string();
    k.request.headers.clear();
    if let Outcome::Response { response, .. } = &mut k.outcome {
        response.headers.clear();
    }
    k.trace_id = None;
    k.canary = None;
    k.canary_leaks.clear();
    k.mcp = None;
    k.tcp = None;
    k.planted.clear();
    k.usage = None;
    k
}

/// `url` up to its query or fragment: scheme, host and path.
fn without_query(url: &str) -> &str {
    url.find(['?', '#']).map_or(url, |i| &url[..i])
}

/// A stored case with its kept calls (none: not known, or past the run's bound).
pub struct CaseCalls {
    pub case: StoredCase,
    pub calls: Option<Vec<Exchange>>,
}

impl Store {
    /// Run `id`'s cases, newest first, `limit` of them before case `before` (a `seq`),
    /// each with its kept calls; `None` when there is no such run.
    pub fn case_calls(
        &self,
        id: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Option<Vec<CaseCalls>>, StoreError> {
        let sql = "SELECT seq, phase, scenario, input, answer, error, verdict, checks, faults,
                          exchanges, latency_ms, trial, outcome, timeline
                   FROM cases WHERE run_id = ?1 AND (?2 IS NULL OR seq < ?2)
                   ORDER BY seq DESC LIMIT ?3";
        let before = before.map(|s| i64::try_from(s).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.query(|c| {
            let run: Option<String> = c
                .prepare_cached("SELECT id FROM runs WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            if run.is_none() {
                return Ok(None);
            }
            let mut stmt = c.prepare_cached(sql)?;
            let rows = stmt.query_map(rusqlite::params![id, before, limit], |r| {
                let text: Option<String> = r.get(13)?;
                Ok(CaseCalls {
                    case: super::read::case_row(r)?,
                    // A timeline this build cannot read is none, not a failed page.
                    calls: text.and_then(|t| serde_json::from_str::<Vec<Exchange>>(&t).ok()),
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Target;
    use crate::exchange::tests_support::exchange;
    use crate::store::{CaseRecord, NewRun, RunKind, RunStatus};

    fn calls(n: u64) -> Vec<Arc<Exchange>> {
        (0..n)
            .map(|i| {
                let b = exchange(Target::Other, "https://api.example/v1/x?key=sk-live-1#f");
                Arc::new(b.id(n - i).timed(100 + (n - i), 5.0).build())
            })
            .collect()
    }

    #[test]
    fn a_case_keeps_its_first_calls_and_a_run_stops_keeping_at_its_bound() {
        let budget = Budget::default();
        let first = budget.keep(&calls(CASE_CALLS as u64 + 5)).unwrap();
        assert_eq!(first.len(), CASE_CALLS);
        let ids: Vec<u64> = first.iter().take(3).map(|e| e.id).collect();
        assert_eq!(ids, [1, 2, 3], "in start order, the first ones");
        assert_eq!(budget.keep(&[]), None);
        let per_case = calls(CASE_CALLS as u64);
        let fit = RUN_CALLS / CASE_CALLS - 1;
        for _ in 0..fit {
            assert!(budget.keep(&per_case).is_some());
        }
        assert_eq!(budget.keep(&per_case), None, "past {RUN_CALLS} calls");
        assert_eq!(budget.keep(&calls(1)), None, "exactly at the bound");
    }

    #[test]
    fn what_is_kept_has_no_query_headers_or_client() {
        let mut e = exchange(Target::Other, "https://api.example/v1/x?key=sk-live-1#f")
            .response(200, &[("set-cookie", "s=1")])
            .build();
        e.request.headers = vec![("authorization".into(), "Bearer sk-live-2".into())];
        e.client_addr = "10.0.0.9:5000".into();
        e.client_user = Some("alice".into());
        e.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
        let k = Budget::default().keep(&[Arc::new(e)]).unwrap();
        let text = serde_json::to_string(&k).unwrap();
        for secret in ["sk-live", "s=1", "10.0.0.9", "alice", "4bf92f35", "#f"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(k[0].request.url, "https://api.example/v1/x");
    }

    fn case(input: &str, timeline: Option<Vec<Exchange>>) -> CaseRecord {
        CaseRecord {
            phase: RunKind::Chaos,
            scenario: "s".into(),
            input: input.into(),
            answer: None,
            error: None,
            verdict: None,
            checks: serde_json::json!([]),
            faults: serde_json::json!([]),
            exchanges: serde_json::Value::Null,
            latency_ms: 1.0,
            trial: None,
            outcome: None,
            timeline,
        }
    }

    fn new_run() -> NewRun {
        NewRun {
            kind: RunKind::Chaos,
            config_digest: None,
            seed: None,
            status: RunStatus::Running,
        }
    }

    /// A store written by the build before (schema 5: no `runs.shards`, no
    /// `cases.timeline`) opens, is migrated, keeps its runs and cases, and takes both.
    #[tokio::test]
    async fn a_store_of_version_5_is_migrated_and_keeps_its_cases() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let old = store.begin_run(new_run());
        store.case_finished(&old, case("before", None));
        store.flush().await.unwrap();
        drop(store);
        {
            let conn = rusqlite::Connection::open(dir.path().join(crate::store::DB_FILE)).unwrap();
            conn.execute_batch(
                "ALTER TABLE runs DROP COLUMN shards; ALTER TABLE cases DROP COLUMN timeline;
                 PRAGMA user_version = 5;",
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let got = store.case_calls(old.as_str(), None, 10).unwrap().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].case.case.input, "before");
        assert!(got[0].calls.is_none());
        assert_eq!(store.get(old.as_str()).unwrap().unwrap().shards, None);

        let merged = store.begin_run(new_run());
        let calls = Budget::default().keep(&calls(2));
        store.case_finished(&merged, case("one", calls.clone()));
        store.case_finished(&merged, case("two", None));
        store.set_shards(&merged, 3);
        store.flush().await.unwrap();
        let run = store.get(merged.as_str()).unwrap().unwrap();
        assert_eq!(run.shards, Some(3));
        assert_eq!(serde_json::to_value(&run).unwrap()["shards"], 3);
        let got = store
            .case_calls(merged.as_str(), None, 10)
            .unwrap()
            .unwrap();
        let inputs: Vec<&str> = got.iter().map(|c| c.case.case.input.as_str()).collect();
        assert_eq!(inputs, ["two", "one"], "newest first");
        assert_eq!(got[1].calls, calls);
        let older = store.case_calls(merged.as_str(), Some(got[0].case.seq), 10);
        assert_eq!(older.unwrap().unwrap().len(), 1, "before the newest: one");
        assert!(store.case_calls("no-such-run", None, 10).unwrap().is_none());
    }
}
