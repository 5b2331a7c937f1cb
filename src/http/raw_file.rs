//! `GET /v1/{domain}/runs/{run_id}/raw/{file}`: a run's raw file, streamed as stored.

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::error::AppError;
use super::state::{ApiPath, AppState, prepare};
use crate::engine::Domain;
use crate::service::RawFile;
use crate::service::ask;
use crate::service::raw_files::open_raw;

/// The raw file of a run, streamed as stored: `results.json` (both domains) or `prometheus.json`
/// (LLM).
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}/raw/{file}",
    tag = "raw",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id"),
        ("file" = String, Path, description = "results.json, or prometheus.json (llm)"),
    ),
    responses(
        (status = 200, description = "The file, streamed", content_type = "application/json"),
        super::problems::RawFileProblems,
    ),
    extensions(("x-query" = json!("raw_file"))),
)]
pub async fn raw_file(
    State(state): State<AppState>,
    ApiPath((domain, run, file)): ApiPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let p = prepare(&state, &domain, ask::RAW_FILE, query.as_deref(), &headers)?;
    let domain = p.domain;
    let which = match (file.as_str(), domain) {
        ("results.json", _) => RawFile::Results,
        ("prometheus.json", Domain::Llm) => RawFile::Prometheus,
        _ => {
            let allowed: Vec<String> = match domain {
                Domain::Llm => vec!["results.json".into(), "prometheus.json".into()],
                Domain::Diffusion => vec!["results.json".into()],
            };
            return Err(AppError::InvalidParameter {
                parameter: "file".into(),
                detail: format!("no raw file '{file}' for {domain} runs"),
                allowed: Some(allowed),
            });
        }
    };
    let table = p.snapshot.table(domain);
    let row = table.row_of(&run).ok_or_else(|| AppError::UnknownRun {
        domain: domain.as_str().into(),
        run_id: run.clone(),
    })?;
    let (opened, len) = open_raw(&p.snapshot, domain, row, which).await?;
    let mut resp = Response::new(axum::body::Body::from_stream(opened.into_stream()));
    let h = resp.headers_mut();
    h.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/json"),
    );
    if let Some(len) = len {
        h.insert(
            axum::http::header::CONTENT_LENGTH,
            axum::http::HeaderValue::from(len),
        );
    }
    Ok(resp)
}
