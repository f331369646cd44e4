//! The reads the page needs beyond `/v1/*`: the runs list with where each run comes from,
//! two runs compared (`store::compare`, as `runs compare` does), cases' timelines drawn by
//! the HTML report's own code from the journal, and a run's tapes. Errors are `ApiError`s,
//! so they read as the API's do.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::UiState;
use crate::api::{self, ApiError, ListQuery, store_error};
use crate::exchange::Exchange;

/// Cases one `timelines` request may ask for, and calls per case it draws.
const MAX_CASES: usize = 200;
const MAX_CALLS: usize = 400;

/// `GET /ui/api/runs`: `/v1/runs`' page (same filters and paging), each run with its
/// `source`: this daemon, or elsewhere (the CLI or another daemon on the same store, an
/// import).
pub async fn runs(
    State(s): State<UiState>,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = api::query(q)?;
    let filter = q.filter()?;
    let page = s.api.jobs.list(&filter).await.map_err(store_error)?;
    let runs: Vec<Value> = page
        .runs
        .iter()
        .map(|r| {
            let mut v = json!(r);
            let here = s.api.jobs.get(&r.id).is_some();
            v["source"] = json!(if here { "this daemon" } else { "elsewhere" });
            v
        })
        .collect();
    Ok(Json(json!({"runs": runs, "next_cursor": page.next_cursor})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareQuery {
    base: String,
    head: String,
}

/// `GET /ui/api/compare?base=ID&head=ID`: `runs compare`'s comparison.
pub async fn compare(
    State(s): State<UiState>,
    q: Result<Query<CompareQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = api::query(q)?;
    s.api.jobs.store().flush().await.map_err(store_error)?;
    let (base, head) = (q.base.clone(), q.head.clone());
    let loaded = s
        .api
        .jobs
        .store()
        .blocking(move |store| Ok((store.load(&base)?, store.load(&head)?)))
        .await
        .map_err(store_error)?;
    match loaded {
        (Some(base), Some(head)) => Ok(Json(json!(crate::store::compare(&base, &head)))),
        (None, _) => Err(ApiError::RunNotFound(q.base)),
        (_, None) => Err(ApiError::RunNotFound(q.head)),
    }
}

/// `GET /ui/api/timelines?c=3,4,9&c=10`: each case's timeline (its calls by journal id)
/// as the HTML report draws it, or `null` when none of its calls is still in the
/// journal. The page asks for many cases at once as their events arrive: the journal is
/// read once for all of them (its lock is the one the proxy records under).
pub async fn timelines(
    State(s): State<UiState>,
    RawQuery(q): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let cases = parse_cases(q.as_deref().unwrap_or(""))?;
    let ids = cases.iter().flatten();
    let window = match (ids.clone().min(), ids.max()) {
        (Some(first), Some(last)) => s.journal.slice(*first, *last),
        _ => vec![],
    };
    let drawn: Vec<Value> = calls_of(&cases, window)
        .iter()
        .map(|calls| crate::report::html::timeline_svg(calls).map_or(Value::Null, Value::String))
        .collect();
    Ok(Json(json!({"timelines": drawn})))
}

/// Each case's calls among `window`, in the journal's order, in one pass over it.
fn calls_of(cases: &[Vec<u64>], window: Vec<Arc<Exchange>>) -> Vec<Vec<Arc<Exchange>>> {
    let mut wanted: HashMap<u64, Vec<usize>> = HashMap::new();
    for (case, ids) in cases.iter().enumerate() {
        for id in ids {
            let of = wanted.entry(*id).or_default();
            // An id listed twice in a case is still one call of it.
            if of.last() != Some(&case) {
                of.push(case);
            }
        }
    }
    let mut calls = vec![vec![]; cases.len()];
    for e in window {
        for case in wanted.get(&e.id).into_iter().flatten() {
            calls[*case].push(Arc::clone(&e));
        }
    }
    calls
}

/// `c=1,2,3` parameters, one per case; anything else is a 400 naming it.
fn parse_cases(query: &str) -> Result<Vec<Vec<u64>>, ApiError> {
    let bad = |why: String| ApiError::InvalidParam {
        field: "c".into(),
        message: why,
    };
    let mut cases = vec![];
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let value = pair
            .strip_prefix("c=")
            .ok_or_else(|| bad(format!("unknown parameter in {}", cut(pair))))?;
        let ids = value
            .split(',')
            .filter(|t| !t.is_empty())
            .map(|t| t.parse::<u64>())
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|_| bad(format!("{} is not a list of journal ids", cut(value))))?;
        if ids.len() > MAX_CALLS {
            return Err(bad(format!(
                "a case of {} calls (at most {MAX_CALLS})",
                ids.len()
            )));
        }
        cases.push(ids);
    }
    if cases.len() > MAX_CASES {
        return Err(bad(format!(
            "{} cases (at most {MAX_CASES} at once)",
            cases.len()
        )));
    }
    Ok(cases)
}

fn cut(s: &str) -> String {
    crate::text::cut(s, 40)
}

/// The folder of run `id`'s tapes, or `None` when it recorded none.
async fn tape_dir(s: &UiState, id: &str) -> Result<Option<PathBuf>, ApiError> {
    let record = api::record(&s.api, id).await?;
    Ok(record.artifacts.get("tapes").map(PathBuf::from))
}

/// `GET /ui/api/runs/{id}/tapes`: the run's tape files (HAR), by name; none when it
/// recorded none or they have been deleted since.
pub async fn tapes(
    State(s): State<UiState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let Some(dir) = tape_dir(&s, &id).await? else {
        return Ok(Json(json!({"tapes": []})));
    };
    let listed = tokio::task::spawn_blocking(move || tape_names(&dir))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let names = listed.map_err(|e| ApiError::Internal(format!("run {id}'s tapes: {e}")))?;
    Ok(Json(json!({"tapes": names})))
}

/// The `.har` files of `dir`, sorted; none when `dir` is gone.
fn tape_names(dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut names = vec![];
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        if let Some(n) = entry.file_name().to_str().filter(|n| n.ends_with(".har")) {
            names.push(n.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// `GET /ui/api/runs/{id}/tapes/{name}`: one tape, as a download.
pub async fn tape(
    State(s): State<UiState>,
    Path((id, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let plain = name.ends_with(".har")
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !plain {
        return Err(ApiError::BadBody(format!(
            "{} is not a tape's name",
            cut(&name)
        )));
    }
    let missing = || ApiError::TapeNotFound {
        id: id.clone(),
        name: name.clone(),
    };
    let path = tape_dir(&s, &id).await?.ok_or_else(missing)?.join(&name);
    let read =
        tokio::task::spawn_blocking(move || crate::files::read(&path, crate::files::Limit::Tape))
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?;
    let bytes = read.map_err(|e| {
        let gone = matches!(&e, crate::files::FileError::Io { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound);
        if gone {
            missing()
        } else {
            ApiError::Internal(e.reason())
        }
    })?;
    let disposition = format!("attachment; filename=\"{name}\"");
    let mut resp = bytes.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::Target;
    use crate::exchange::tests_support::exchange;

    fn ids(calls: &[Arc<Exchange>]) -> Vec<u64> {
        calls.iter().map(|e| e.id).collect()
    }

    #[test]
    fn each_case_gets_its_own_calls_in_the_journals_order() {
        // The journal holds exchanges as they end, not as their ids were given.
        let window: Vec<Arc<Exchange>> = [4, 2, 3, 7, 5]
            .into_iter()
            .map(|id| Arc::new(exchange(Target::Other, "http://t/").id(id).build()))
            .collect();
        let cases = vec![vec![2, 3, 4], vec![5, 5, 9], vec![], vec![8], vec![3, 7]];
        let calls = calls_of(&cases, window);
        let got: Vec<Vec<u64>> = calls.iter().map(|c| ids(c)).collect();
        assert_eq!(
            got,
            vec![vec![4, 2, 3], vec![5], vec![], vec![], vec![3, 7]]
        );
    }
}
