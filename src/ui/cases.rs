//! `GET /ui/api/runs/{id}/cases`: a run's cases as the store keeps them, newest first, a
//! page at a time, each with its wire timeline drawn by the HTML report's own code from
//! the calls the store kept for it (`store::timeline`). What the run page shows for an
//! ended run, whose events and journal calls the daemon may no longer have (a restart, an
//! older run, a CLI run on the same store).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use super::UiState;
use crate::api::{self, ApiError, store_error};
use crate::store::{CaseCalls, RUN_CALLS};

/// Cases per page.
const PAGE: usize = 50;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CasesQuery {
    /// Cases before this one (its `seq`): the next page.
    before: Option<u64>,
}

/// A page of run `id`'s stored cases with their timelines, and the cursor of the next.
pub async fn cases(
    State(s): State<UiState>,
    Path(id): Path<String>,
    q: Result<Query<CasesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = api::query(q)?;
    let store = s.api.jobs.store().clone();
    store.flush().await.map_err(store_error)?;
    let run = id.clone();
    let page = store
        .blocking(move |st| st.case_calls(&run, q.before, PAGE + 1))
        .await
        .map_err(store_error)?
        .ok_or(ApiError::RunNotFound(id))?;
    let more = page.len() > PAGE;
    let shown: Vec<Value> = page.into_iter().take(PAGE).map(shown).collect();
    let next = more.then(|| shown.last().map(|c| c["seq"].clone()));
    Ok(Json(json!({"cases": shown, "next_before": next.flatten()})))
}

/// One case as the page draws it: what its live `case` event said, and its timeline.
fn shown(c: CaseCalls) -> Value {
    let case = c.case.case;
    let rules: Vec<Value> = case
        .faults
        .as_array()
        .map(|fs| fs.iter().filter_map(|f| f.get("rule").cloned()).collect())
        .unwrap_or_default();
    let calls: Option<Vec<Arc<crate::exchange::Exchange>>> =
        c.calls.map(|v| v.into_iter().map(Arc::new).collect());
    let timeline = calls.as_deref().and_then(crate::report::html::timeline_svg);
    // Why there is none: no calls seen, or calls seen but none kept (the run had kept its
    // bound by then, or it was recorded before cases kept their calls: NULL says either).
    let none = match (&timeline, case.exchanges.as_array()) {
        (Some(_), _) => None,
        (None, Some(seen)) if !seen.is_empty() => Some(format!(
            "its calls were not kept: the run had kept its {RUN_CALLS} calls before it, or \
             it was recorded before runs kept their cases' calls (the report has them)"
        )),
        (None, Some(_)) => Some("it made no calls through the proxy".to_string()),
        (None, None) => Some("its calls could not be attributed to it".to_string()),
    };
    json!({
        "seq": c.case.seq,
        "phase": case.phase,
        "scenario": case.scenario,
        "input": case.input,
        "error": case.error,
        "verdict": case.verdict,
        "outcome": case.outcome,
        "trial": case.trial,
        "latency_ms": case.latency_ms,
        "fault_rules": rules,
        "timeline": timeline,
        "no_timeline": none,
    })
}
