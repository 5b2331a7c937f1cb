//! SQL over HTTP: `GET /v1/sql?q=` and `POST /v1/sql` (text/plain SQL, or JSON `{"sql": ...,
//! "params": [...]}` for `$1`... placeholders), answered in the five formats with the same
//! negotiation and caching as the rest, and `GET /v1/sql/tables` (what the tables hold). Read-only
//! and limited (`engine::sql`, `service::sql`).

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use datafusion::common::ScalarValue;
use serde::Serialize;
use utoipa::ToSchema;

use super::answer::respond;
use super::error::AppError;
use super::models::ApiBytes;
use super::negotiate::{Format, negotiate};
use super::state::{AppState, Revision};
use crate::engine::sql::SqlError;
use crate::service::ask::sql::{SqlAsked, json_param};
use crate::service::catalog::SqlTable;
use crate::service::sql::{SqlFailure, Surface};

/// The query string of /v1/sql: `q` (GET only), `format` and `revision`.
fn query_params(query: Option<&str>, with_q: bool) -> Result<SqlQuery, AppError> {
    let allowed: Vec<String> = if with_q {
        vec!["q".into(), "format".into(), "revision".into()]
    } else {
        vec!["format".into(), "revision".into()]
    };
    let (mut q, mut format, mut revision) = (None, None, None);
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let slot = match k.as_ref() {
            "q" if with_q => &mut q,
            "format" => &mut format,
            "revision" => &mut revision,
            _ => {
                return Err(AppError::UnknownParameter {
                    parameter: k.into_owned(),
                    allowed,
                });
            }
        };
        if slot.replace(v.into_owned()).is_some() {
            return Err(AppError::InvalidParameter {
                detail: format!("parameter '{k}' takes a single value"),
                parameter: k.into_owned(),
                allowed: None,
            });
        }
    }
    if let Some(r) = &revision {
        crate::service::ask::check_revision(r)?;
    }
    Ok(SqlQuery {
        q,
        format,
        revision,
    })
}

/// The query parameters of /v1/sql.
struct SqlQuery {
    q: Option<String>,
    format: Option<String>,
    revision: Option<String>,
}

impl From<SqlFailure> for AppError {
    fn from(f: SqlFailure) -> Self {
        AppError::from(&f)
    }
}

impl From<&SqlFailure> for AppError {
    fn from(f: &SqlFailure) -> Self {
        match f {
            SqlFailure::Busy { retry_after, .. } => AppError::Busy {
                detail: f.to_string(),
                retry_after: retry_after.as_secs().max(1),
            },
            SqlFailure::Query(e) => match e {
                SqlError::Refused(_) => AppError::SqlRefused(e.to_string()),
                SqlError::Invalid(_) => AppError::SqlInvalid(e.to_string()),
                SqlError::Timeout(_)
                | SqlError::Memory { .. }
                | SqlError::Rows(_)
                | SqlError::Value(_) => AppError::QueryLimit(e.to_string()),
                SqlError::Internal(m) => AppError::Internal(m.clone()),
            },
        }
    }
}

/// The door's answer to `sql` with `params` in `format`, kept when it is a GET's.
async fn answer(
    state: &AppState,
    keep: bool,
    sql: &str,
    params: Vec<ScalarValue>,
    format: Format,
    revision: Option<&str>,
) -> Result<Response, AppError> {
    let asked = SqlAsked {
        text: sql,
        params,
        format,
        keep,
        revision,
    };
    Ok(respond(&state.door.sql(asked).await?))
}

/// Run a read-only SQL query.
///
/// Tables: `llm_runs` and `diffusion_runs` (every loaded run, stable and unstable, the published
/// columns and `run_id`; `GET /v1/sql/tables` lists them). Only queries run (SELECT, WITH,
/// VALUES, EXPLAIN, SHOW, DESCRIBE). Each query has a time limit, a share of a memory pool and a
/// row cap; one over a limit is stopped and answered 422 naming it. JSON is
/// `{"columns": [{"name", "type"}], "count", "rows"}`; CSV and NDJSON rows; Arrow and Parquet keep
/// the query's types.
#[utoipa::path(
    get,
    path = "/v1/sql",
    tag = "sql",
    params(
        ("q" = String, Query, description = "The SQL query, e.g. SELECT model_id, min(energy_per_token_joules) FROM llm_runs GROUP BY model_id"),
        ("format" = Option<String>, Query, description = "json (default), csv, ndjson, arrow or parquet; overrides Accept."),
        Revision,
    ),
    responses(
        (status = 200, description = "The query's rows, with `X-Total-Count`",
            headers(("X-Total-Count" = usize, description = "Rows")),
            content(
                (SqlRows = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::SqlProblems,
    )
)]
pub async fn sql_get(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let SqlQuery {
        q,
        format,
        revision,
    } = query_params(query.as_deref(), true)?;
    let format = negotiate(format.as_deref(), accept(&headers))?;
    let Some(q) = q else {
        return Err(AppError::InvalidParameter {
            parameter: "q".into(),
            detail: "q (the SQL query) is required".into(),
            allowed: None,
        });
    };
    answer(&state, true, &q, Vec::new(), format, revision.as_deref()).await
}

fn accept(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())
}

/// The JSON body of POST /v1/sql.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SqlBody {
    /// The SQL query, with `$1`, `$2`... for `params`.
    #[schema(min_length = 1, pattern = r"\S")]
    sql: String,
    /// Values of the placeholders: numbers, strings, booleans or null.
    #[serde(default)]
    params: Vec<serde_json::Value>,
}

fn scalar(i: usize, v: serde_json::Value) -> Result<ScalarValue, AppError> {
    json_param(v).ok_or_else(|| AppError::InvalidBody {
        field: Some(format!("params[{i}]")),
        detail: format!("params[{i}] is not a number, string, boolean or null"),
    })
}

/// Run a read-only SQL query from the body: `text/plain` SQL, or JSON `{"sql", "params"}` with
/// `$1`... placeholders bound to `params`. The same limits and formats as `GET /v1/sql`.
#[utoipa::path(
    post,
    path = "/v1/sql",
    tag = "sql",
    params(("format" = Option<String>, Query, description = "json (default), csv, ndjson, arrow or parquet; overrides Accept."), Revision),
    request_body(content(
        (SqlBody = "application/json"),
        (String = "text/plain"),
    )),
    responses(
        (status = 200, description = "The query's rows, with `X-Total-Count`",
            headers(("X-Total-Count" = usize, description = "Rows")),
            content(
                (SqlRows = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::SqlBodyProblems,
    )
)]
pub async fn sql_post(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    ApiBytes(body): ApiBytes,
) -> Result<Response, AppError> {
    let asked = query_params(query.as_deref(), false)?;
    let format = negotiate(asked.format.as_deref(), accept(&headers))?;
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("text/plain")
        .to_ascii_lowercase();
    let (sql, params) = sql_body(&ct, &body)?;
    answer(
        &state,
        false,
        &sql,
        params,
        format,
        asked.revision.as_deref(),
    )
    .await
}

/// The SQL text and its parameters of a body of content type `ct` (lower case): SQL as text, or
/// JSON `{"sql": "...", "params": [...]}`.
fn sql_body(ct: &str, body: &[u8]) -> Result<(String, Vec<ScalarValue>), AppError> {
    let text = std::str::from_utf8(body).map_err(|_| AppError::InvalidBody {
        field: None,
        detail: "the body is not UTF-8".into(),
    })?;
    if ct.starts_with("application/json") {
        let b: SqlBody = serde_json::from_str(text).map_err(|e| AppError::InvalidBody {
            field: None,
            detail: format!("the body is not {{\"sql\": \"...\", \"params\": [...]}}: {e}"),
        })?;
        let params = b
            .params
            .into_iter()
            .enumerate()
            .map(|(i, v)| scalar(i, v))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((b.sql, params))
    } else if ct.starts_with("text/plain") || ct.starts_with("application/sql") {
        Ok((text.to_string(), Vec::new()))
    } else {
        Err(AppError::InvalidBody {
            field: Some("content-type".into()),
            detail: format!(
                "content type '{ct}' is not text/plain (SQL) or application/json ({{\"sql\", \"params\"}})"
            ),
        })
    }
}

/// A query's answer in JSON.
#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct SqlRows {
    /// Each column's name and Arrow type.
    columns: Vec<SqlColumn>,
    count: usize,
    /// One object per row, members in column order.
    rows: Vec<serde_json::Map<String, serde_json::Value>>,
}

#[allow(dead_code)]
#[derive(Serialize, ToSchema)]
pub struct SqlColumn {
    name: String,
    #[serde(rename = "type")]
    type_: String,
}

/// The tables SQL sees: name, rows, and each column's type, unit and description.
#[utoipa::path(
    get,
    path = "/v1/sql/tables",
    tag = "sql",
    responses((status = 200, description = "The tables", body = Vec<SqlTable>))
)]
pub async fn sql_tables(State(state): State<AppState>) -> Response {
    axum::Json(SqlTable::all(&state.service)).into_response()
}

/// A function SQL queries may call.
#[derive(Serialize, ToSchema)]
pub struct SqlFunction {
    name: String,
    /// `scalar`, `aggregate`, `window` or `table`.
    kind: &'static str,
}

/// The functions SQL queries may call (HTTP, Flight SQL and MCP; the PostgreSQL wire adds its
/// catalog's): every other is refused by name. Each scalar function's output is sized before it
/// is built, and a value over the server's value limit stops the query.
#[utoipa::path(
    get,
    path = "/v1/sql/functions",
    tag = "sql",
    responses((status = 200, description = "The functions, by kind and name", body = Vec<SqlFunction>))
)]
pub async fn sql_functions(State(state): State<AppState>) -> Result<Response, AppError> {
    let snapshot = state.service.snapshot();
    let functions = state
        .service
        .sql_functions(&Surface::PLAIN, &snapshot)
        .await
        .map_err(|e| AppError::from(SqlFailure::Query(e)))?;
    let list: Vec<SqlFunction> = functions
        .into_iter()
        .map(|(kind, name)| SqlFunction { name, kind })
        .collect();
    Ok(axum::Json(list).into_response())
}
