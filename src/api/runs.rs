//! `/v1/runs`: start a run on the daemon (`POST`), list and read runs, follow one's events
//! (Server-Sent Events, resumable with `Last-Event-ID`), fetch its report, cancel it
//! (`DELETE`). A submitted body is read and checked in `new_run`, an imported report in
//! `import`; the runs themselves live in `jobs`; this module only speaks HTTP.

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::new_run::{NewRun, daemon_warnings, submission};
use super::{ApiError, ApiState};
use crate::config::ReportFormat;
use crate::jobs::{CancelError, Submission};
use crate::run::RunRequest;
use crate::store::{Filter, Page, RunRecord, StoreError};

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;

/// Starts a run: 202 with its record and a `Location`.
#[utoipa::path(post, path = "/v1/runs", request_body = NewRun, responses(
    (status = 202, description = "queued", body = RunRecord),
    (status = 400, description = "bad body, invalid config (every problem at its path), or a run the config cannot make", body = super::openapi::ErrorBody),
    (status = 401, description = "missing or wrong token", body = super::openapi::ErrorBody),
    (status = 403, description = "a Host, Origin or Sec-Fetch-Site a web page would send", body = super::openapi::ErrorBody),
    (status = 415, description = "a body that is not JSON or YAML", body = super::openapi::ErrorBody),
))]
pub async fn create(
    State(s): State<ApiState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let yaml = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("yaml"));
    let body = super::body::read_limited(body, &s.limits).await?;
    let loopback = s.loopback();
    let exposed = s.expose_env.clone();
    let (new, kind, loaded) =
        tokio::task::spawn_blocking(move || submission(&body, yaml, loopback, &exposed))
            .await
            .map_err(|e| ApiError::BadBody(format!("parsing the body failed: {e}")))??;
    let mut loaded = loaded;
    crate::config::override_trials(
        &mut loaded.config,
        new.trials,
        new.trial,
        ("trials", "trial"),
    )
    .map_err(|e| ApiError::BadBody(crate::config::one_line(e)))?;
    let warnings = daemon_warnings(&loaded);
    let sub = Submission {
        loaded,
        request: RunRequest {
            kind,
            under_chaos: new.chaos,
            profile: new.profile,
        },
        seed: new.seed,
        min_score: new.min_score,
        trial: new.trial,
    };
    let job = s.jobs.submit(sub).map_err(ApiError::NotRunnable)?;
    let location = format!("/v1/runs/{}", job.id);
    let mut body = json!(job.record());
    body["warnings"] = json!(warnings);
    let mut resp = (StatusCode::ACCEPTED, Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    kind: Option<String>,
    status: Option<String>,
    limit: Option<usize>,
    /// The `next_cursor` of the page before.
    cursor: Option<String>,
}

impl ListQuery {
    /// The store's filter and page this query asks for (also the web view's runs list).
    pub fn filter(self) -> Result<Filter, ApiError> {
        let bad = |field: &str, e: String| ApiError::BadBody(format!("{field}: {e}"));
        let filter = Filter {
            kind: self
                .kind
                .map(|k| k.parse())
                .transpose()
                .map_err(|e| bad("kind", e))?,
            status: self
                .status
                .map(|k| k.parse())
                .transpose()
                .map_err(|e| bad("status", e))?,
            limit: self.limit,
            cursor: self.cursor,
        };
        if let Some(limit) = filter.limit.filter(|l| !(1..=1000).contains(l)) {
            return Err(bad("limit", format!("{limit} is outside 1..=1000")));
        }
        Ok(filter)
    }
}

/// Stored runs newest first, with this daemon's live ones as they are now.
#[utoipa::path(get, path = "/v1/runs", params(ListQuery), responses(
    (status = 200, description = "a page of runs", body = Page),
    (status = 400, description = "a bad filter", body = super::openapi::ErrorBody),
))]
pub async fn list(
    State(s): State<ApiState>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = query(q)?;
    let filter = q.filter()?;
    let page = s.jobs.list(&filter).await.map_err(store_error)?;
    Ok(Json(json!(page)))
}

/// The query, or the problem with it as a JSON `bad_body` (axum's own rejection is plain
/// text).
pub(crate) fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(q)| q).map_err(|e| {
        let text = e.body_text();
        let why = text
            .strip_prefix("Failed to deserialize query string: ")
            .unwrap_or(&text);
        ApiError::BadBody(format!("query string: {why}"))
    })
}

/// The run id of the path, or why it is not one as a JSON `bad_body`.
fn run_id(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(id)| id)
        .map_err(|e| ApiError::BadBody(format!("run id: {}", e.body_text())))
}

pub(crate) fn store_error(e: StoreError) -> ApiError {
    ApiError::Internal(format!("the run store: {e}"))
}

/// The record of run `id`, live or stored.
pub(crate) async fn record(s: &ApiState, id: &str) -> Result<RunRecord, ApiError> {
    s.jobs
        .record(id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::RunNotFound(id.to_string()))
}

/// One run's record: status, progress, scores.
#[utoipa::path(get, path = "/v1/runs/{id}", params(("id" = String, Path)), responses(
    (status = 200, description = "the run", body = RunRecord),
    (status = 404, description = "no such run", body = super::openapi::ErrorBody),
))]
pub async fn get(
    State(s): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Value>, ApiError> {
    let id = run_id(id)?;
    Ok(Json(json!(record(&s, &id).await?)))
}

/// Cancels a queued or running run.
#[utoipa::path(delete, path = "/v1/runs/{id}", params(("id" = String, Path)), responses(
    (status = 202, description = "cancelling", body = RunRecord),
    (status = 404, description = "no such run", body = super::openapi::ErrorBody),
    (status = 409, description = "it has ended, or another process runs it", body = super::openapi::ErrorBody),
))]
pub async fn cancel(
    State(s): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let id = run_id(id)?;
    match s.jobs.cancel(&id).await {
        Ok(r) => Ok((StatusCode::ACCEPTED, Json(json!(r)))),
        Err(CancelError::NotFound) => Err(ApiError::RunNotFound(id)),
        Err(CancelError::Finished(status)) => Err(ApiError::RunFinished { id, status }),
        Err(CancelError::Elsewhere(status)) => Err(ApiError::RunElsewhere { id, status }),
        Err(CancelError::Store(e)) => Err(store_error(e)),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct ReportQuery {
    format: Option<String>,
}

/// The run's report: JSON (the record of truth), or rendered as HTML, JUnit XML or Markdown
/// (the file the run wrote when its config asked for that format, else rendered now from
/// the JSON).
#[utoipa::path(get, path = "/v1/runs/{id}/report", params(("id" = String, Path), ReportQuery), responses(
    (status = 200, description = "the report: JSON (schema: docs/report-schema.md), text/html, application/xml (JUnit) or text/markdown", body = Object),
    (status = 400, description = "an unknown format", body = super::openapi::ErrorBody),
    (status = 404, description = "no such run", body = super::openapi::ErrorBody),
    (status = 409, description = "no report yet", body = super::openapi::ErrorBody),
))]
pub async fn report(
    State(s): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
    q: Result<Query<ReportQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let (id, q) = (run_id(id)?, query(q)?);
    let run = record(&s, &id).await?;
    let format: ReportFormat = q
        .format
        .as_deref()
        .unwrap_or("json")
        .parse()
        .map_err(|e| ApiError::BadBody(format!("format: {e}")))?;
    let Some(path) = run.artifacts.get("json") else {
        return Err(ApiError::NoReport {
            id,
            status: run.status,
        });
    };
    let (written, json) = (run.artifacts.get(format.as_str()).cloned(), path.clone());
    // Off the async threads: reading, parsing and rendering a large report would stall
    // the proxy traffic they carry.
    let body = tokio::task::spawn_blocking(move || match written {
        Some(file) => read_artifact(&file),
        None => {
            let text = String::from_utf8(read_artifact(&json)?)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            let report = crate::run::Report::from_json(&text)
                .map_err(|e| ApiError::Internal(format!("reading {json}: {e}")))?;
            Ok(crate::report::render(&report, format)
                .map_err(|e| ApiError::Internal(format!("rendering {json}: {e}")))?
                .into_bytes())
        }
    })
    .await
    .map_err(|e| ApiError::Internal(format!("reading the report: {e}")))??;
    let content_type = match format {
        ReportFormat::Json => "application/json",
        ReportFormat::Html => "text/html; charset=utf-8",
        ReportFormat::Junit => "application/xml; charset=utf-8",
        ReportFormat::Markdown => "text/markdown; charset=utf-8",
    };
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response())
}

/// One of the run's own files, but read as any other: bounded, regular files only.
fn read_artifact(path: &str) -> Result<Vec<u8>, ApiError> {
    crate::files::read(std::path::Path::new(path), crate::files::Limit::Report)
        .map_err(|e| ApiError::Internal(format!("reading {e}")))
}

/// The run's events as Server-Sent Events, from after `Last-Event-ID`, to `done`; the
/// connection closes with the stream.
#[utoipa::path(get, path = "/v1/runs/{id}/events", params(("id" = String, Path),
    ("Last-Event-ID" = Option<u64>, Header, description = "resume after this event")), responses(
    (status = 200, description = "text/event-stream: queued, started, warning, case_started, case, phase, cell, done", content_type = "text/event-stream", body = String),
    (status = 404, description = "no such run", body = super::openapi::ErrorBody),
))]
pub async fn events(
    State(s): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = run_id(id)?;
    let after = match headers.get("last-event-id") {
        None => 0,
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                ApiError::BadBody("Last-Event-ID: must be the number of an event".into())
            })?,
    };
    let events = match s.jobs.get(&id) {
        Some(job) => super::sse::follow(job, after, s.keep_alive),
        // A run this daemon is not running has ended: its last word is its record. Unless
        // another process is running it: a `done` saying `running` would be a lie.
        None => match record(&s, &id).await? {
            r if r.status.is_final() => super::sse::ended(&r, after),
            r => {
                return Err(ApiError::RunElsewhere {
                    id,
                    status: r.status,
                });
            }
        },
    };
    Ok(events)
}
