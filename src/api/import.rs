//! `POST /v1/runs/import`: a finished run's report recorded as a run, one import at a
//! time. An import takes its turn before it reads its body, so however many arrive at
//! once the daemon holds one report in memory (others wait their turn, up to `TURN_WAIT`,
//! then get 429 with `Retry-After`); the body is capped (`control.max_import_bytes`) and
//! must arrive within `control.body_timeout_ms`. The report is checked whole before
//! anything is stored (400 naming the problem); then the run is recorded, and if that
//! takes longer than `Limits::import_answer`, the answer is 202 with the run (`running`)
//! and its `Location` rather than a wait: the import goes on and ends the run itself, so
//! a client never retries what was stored (nothing twice, nothing lost).

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::runs::{record, store_error};
use super::{ApiError, ApiState};

/// How long an import waits for the one before it to end before it is told to come back.
const TURN_WAIT: Duration = Duration::from_secs(10);
/// What `Retry-After` says then.
const RETRY_AFTER_S: u64 = 5;

/// The imports' one turn (cheap to clone).
#[derive(Clone)]
pub struct Imports {
    turn: Arc<Semaphore>,
}

impl Default for Imports {
    fn default() -> Self {
        Imports {
            turn: Arc::new(Semaphore::new(1)),
        }
    }
}

impl Imports {
    /// Tests: holds the turn as an import in progress would.
    #[cfg(test)]
    pub async fn hold_for_tests(&self) -> OwnedSemaphorePermit {
        self.turn.clone().acquire_owned().await.unwrap()
    }

    async fn take_turn(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        let busy = || ApiError::Busy {
            message: format!(
                "another report is being imported: imports are taken one at a time; retry \
                 in {RETRY_AFTER_S} s"
            ),
            retry_after_s: RETRY_AFTER_S,
        };
        match tokio::time::timeout(TURN_WAIT, self.turn.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(busy()),
        }
    }
}

/// Records a finished run from its JSON report (a merged sharded run, another machine's
/// run): 201 with its record, or 202 while a long import goes on. The report is read as
/// `flakestorm report` reads a file.
#[utoipa::path(post, path = "/v1/runs/import", request_body = Object, responses(
    (status = 201, description = "recorded", body = crate::store::RunRecord),
    (status = 202, description = "checked and being recorded: the run is `running` until it is (GET its Location)", body = crate::store::RunRecord),
    (status = 400, description = "not a flakestorm report, or one of another schema version", body = super::openapi::ErrorBody),
    (status = 408, description = "the body did not arrive within control.body_timeout_ms", body = super::openapi::ErrorBody),
    (status = 413, description = "larger than control.max_import_bytes", body = super::openapi::ErrorBody),
    (status = 429, description = "another import held the turn too long: retry after Retry-After", body = super::openapi::ErrorBody),
))]
pub async fn import(State(s): State<ApiState>, body: Body) -> Result<Response, ApiError> {
    let turn = s.imports.take_turn().await?;
    let body = super::body::read_report(body, &s.limits).await?;
    let (report, text) = tokio::task::spawn_blocking(move || {
        let text = String::from_utf8(body)
            .map_err(|_| ApiError::BadBody("the report is not UTF-8".into()))?;
        let report =
            crate::run::Report::from_json(&text).map_err(|e| ApiError::BadBody(e.to_string()))?;
        Ok::<_, ApiError>((report, text))
    })
    .await
    .map_err(|e| ApiError::BadBody(format!("parsing the body failed: {e}")))??;
    let recorder = crate::store::begin_import(s.jobs.store(), &report);
    let id = recorder.id.clone();
    // Its own task: it goes on (holding the turn) if the client leaves or is answered 202.
    let work = tokio::spawn(async move {
        let _turn = turn;
        crate::store::record_import(&recorder, &report, text).await
    });
    let status = match tokio::time::timeout(s.limits.import_answer, work).await {
        Ok(Ok(Ok(()))) => StatusCode::CREATED,
        Ok(Ok(Err(e))) => return Err(store_error(e)),
        Ok(Err(e)) => return Err(ApiError::Internal(format!("the import stopped: {e}"))),
        Err(_) => {
            // The run's row is committed (it was sent first) before it is read.
            s.jobs.store().flush().await.map_err(store_error)?;
            StatusCode::ACCEPTED
        }
    };
    let record = record(&s, id.as_str()).await?;
    let mut resp = (status, Json(json!(record))).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/runs/{id}")) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}
