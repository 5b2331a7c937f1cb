//! Background prefetch: `POST /v1/{domain}/prefetch?<run filters>` fetches the raw files of the
//! filtered runs into the raw cache (four at a time) and returns a job; `GET /v1/jobs/{id}`
//! reports files and bytes done and total, and the files that failed. Jobs are kept in the
//! catalog, so a finished job can still be read after a restart; a job that was running when the
//! process stopped reads as `failed`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::error::AppError;
use super::params::Endpoint;
use super::respond::prepare;
use super::state::{ApiPath, AppState};
use crate::engine::{Dataset, Domain, RawFile, RawLocation};
use crate::store::catalog::{Catalog, JobRow, now_ms};

/// Jobs of this process, by id (the catalog has every job).
pub type JobMap = Arc<Mutex<HashMap<String, Arc<Mutex<JobRow>>>>>;

/// Files fetched at once by one job.
const CONCURRENCY: usize = 4;

/// One file of a job.
struct Target {
    run_id: String,
    file: &'static str,
    loc: RawLocation,
}

fn targets(snapshot: &Dataset, domain: Domain, rows: &[usize]) -> Vec<Target> {
    let files: &[(RawFile, &str)] = match domain {
        Domain::Llm => &[
            (RawFile::Results, "results.json"),
            (RawFile::Prometheus, "prometheus.json"),
        ],
        Domain::Diffusion => &[(RawFile::Results, "results.json")],
    };
    let t = snapshot.table(domain);
    rows.iter()
        .flat_map(|&row| {
            files.iter().filter_map(move |&(which, name)| {
                snapshot
                    .raw_location(domain, row, which)
                    .ok()
                    .map(|loc| Target {
                        run_id: t.run_id(row).to_string(),
                        file: name,
                        loc,
                    })
            })
        })
        .collect()
}

/// Make one file local; its size.
async fn fetch(t: &Target) -> Result<u64, String> {
    match &t.loc {
        RawLocation::Local { path: p, .. } => tokio::fs::metadata(p)
            .await
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display())),
        RawLocation::Remote(store, key) => store
            .ensure(key)
            .await
            .map(|e| e.size)
            .map_err(|e| e.to_string()),
    }
}

async fn persist(catalog: &Catalog, job: &Mutex<JobRow>) {
    let row = job.lock().expect("job").clone();
    if let Err(e) = catalog.update_job(&row).await {
        tracing::warn!(job = %row.id, error = %e, "could not record job progress");
    }
}

async fn run_job(catalog: Catalog, job: Arc<Mutex<JobRow>>, targets: Vec<Target>) {
    let mut done = futures::stream::iter(targets)
        .map(|t| async move {
            let r = fetch(&t).await;
            (t, r)
        })
        .buffer_unordered(CONCURRENCY);
    while let Some((t, r)) = done.next().await {
        {
            let mut j = job.lock().expect("job");
            j.files_done += 1;
            match r {
                Ok(n) => {
                    j.bytes_done += n;
                    j.bytes_total += n;
                }
                Err(e) => {
                    if let serde_json::Value::Array(a) = &mut j.errors {
                        a.push(serde_json::json!({"run_id": t.run_id, "file": t.file, "error": e}));
                    }
                }
            }
            j.updated_at_ms = u64::try_from(now_ms()).unwrap_or(0);
        }
        persist(&catalog, &job).await;
    }
    {
        let mut j = job.lock().expect("job");
        let failed = j.errors.as_array().is_some_and(|a| !a.is_empty());
        j.state = if failed { "failed" } else { "done" }.into();
        j.updated_at_ms = u64::try_from(now_ms()).unwrap_or(0);
    }
    persist(&catalog, &job).await;
}

/// Fetch the raw files of the filtered runs into the cache, in the background.
#[utoipa::path(
    post,
    path = "/v1/{domain}/prefetch",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        super::openapi::RunFilterParams,
    ),
    responses(
        (status = 202, description = "The job, also at the Location header", body = JobRow),
        (status = 400, description = "Unknown parameter or bad value", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn prefetch(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(
        &state,
        &domain,
        Endpoint::RawMany(&[]),
        query.as_deref(),
        &headers,
    )?;
    let rows = p.filtered_rows()?;
    let targets = targets(&p.snapshot, p.domain, &rows);
    let now = u64::try_from(now_ms()).unwrap_or(0);
    let row = JobRow {
        id: uuid::Uuid::new_v4().to_string(),
        domain: p.domain.as_str().into(),
        query: query.unwrap_or_default(),
        state: "running".into(),
        files_total: targets.len() as u64,
        files_done: 0,
        bytes_total: 0,
        bytes_done: 0,
        errors: serde_json::json!([]),
        created_at_ms: now,
        updated_at_ms: now,
    };
    state.catalog.insert_job(&row).await?;
    let job = Arc::new(Mutex::new(row.clone()));
    state
        .jobs
        .lock()
        .expect("jobs")
        .insert(row.id.clone(), job.clone());
    tokio::spawn(run_job(state.catalog.clone(), job, targets));
    let mut resp = (StatusCode::ACCEPTED, Json(&row)).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/jobs/{}", row.id)) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// A prefetch job's progress.
#[utoipa::path(
    get,
    path = "/v1/jobs/{job_id}",
    tag = "raw",
    params(("job_id" = String, Path, description = "Job id from POST /v1/{domain}/prefetch")),
    responses(
        (status = 200, description = "The job", body = JobRow),
        (status = 404, description = "No such job", body = super::error::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_job(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<JobRow>, AppError> {
    let live = state.jobs.lock().expect("jobs").get(&id).cloned();
    if let Some(j) = live {
        return Ok(Json(j.lock().expect("job").clone()));
    }
    state
        .catalog
        .job(&id)
        .await?
        .map(Json)
        .ok_or(AppError::UnknownJob(id))
}
