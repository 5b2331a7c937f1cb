//! The one error type of the HTTP layer, rendered as RFC 9457 `application/problem+json`.
//! `status()` is separate from `into_response()`; 5xx answers carry a generic detail and the
//! full error is logged once here.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::EngineError;

/// An RFC 9457 problem document. `parameter` and `allowed` say which input was refused and what
/// would have been accepted.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// Stable problem type, `/problems/<slug>`.
    #[serde(rename = "type")]
    pub type_: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The query parameter, path segment or header at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<String>,
    /// The accepted values or names, where they can be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
}

/// Every error an endpoint can answer with.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AppError {
    /// A query parameter this endpoint does not take.
    #[error("unknown query parameter '{parameter}'")]
    UnknownParameter {
        parameter: String,
        allowed: Vec<String>,
    },
    /// A parameter with a value that cannot be used (`detail` says why).
    #[error("{detail}")]
    InvalidParameter {
        parameter: String,
        detail: String,
        allowed: Option<Vec<String>>,
    },
    /// A field name (in fields, sort, by or agg) that the domain does not have.
    #[error("unknown field '{field}' in parameter '{parameter}'")]
    UnknownField {
        parameter: String,
        field: String,
        allowed: Vec<String>,
    },
    #[error("unknown domain '{0}'")]
    UnknownDomain(String),
    #[error("no {domain} run has the id '{run_id}'")]
    UnknownRun { domain: String, run_id: String },
    /// No supported representation matches `Accept` or `format`.
    #[error("cannot produce '{requested}'")]
    NotAcceptable {
        parameter: String,
        requested: String,
        allowed: Vec<String>,
    },
    /// The run has no raw results file in this dataset, or the file is missing.
    #[error("no raw results for run '{run_id}': {detail}")]
    RawUnavailable { run_id: String, detail: String },
    /// The raw file exists but lacks what the computation needs, or is not valid JSON.
    #[error("{detail}")]
    RawInvalid { run_id: String, detail: String },
    /// The source refused access to a raw file (hub 401/403: gated dataset or bad token).
    #[error("{detail}")]
    SourceDenied { run_id: String, detail: String },
    /// The source failed or did not answer in time, after bounded retries.
    #[error("{detail}")]
    Upstream {
        run_id: String,
        detail: String,
        timed_out: bool,
    },
    /// The download was cut short or failed verification; nothing was cached.
    #[error("{detail}")]
    DownloadCorrupt { run_id: String, detail: String },
    #[error("no job has the id '{0}'")]
    UnknownJob(String),
    /// A leaderboard data file the served snapshot does not have (`kind`: task or model).
    #[error("no leaderboard {kind} file '{name}'")]
    UnknownLeaderboardFile {
        kind: &'static str,
        name: String,
        allowed: Vec<String>,
    },
    /// A request body that is not the JSON the endpoint takes, or whose values cannot be used
    /// (`field` names the member at fault, when there is one).
    #[error("{detail}")]
    InvalidBody {
        field: Option<String>,
        detail: String,
    },
    /// A request body over the endpoint's size limit.
    #[error("the request body is over {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("no route for {0}")]
    NoRoute(String),
    #[error("method not allowed")]
    MethodNotAllowed,
    /// An SQL statement of a kind the service does not run (anything but a query).
    #[error("{0}")]
    SqlRefused(String),
    /// SQL that does not plan: syntax, unknown table or column, types.
    #[error("{0}")]
    SqlInvalid(String),
    /// A query stopped at a limit (time, memory, rows); the detail names it.
    #[error("{0}")]
    QueryLimit(String),
    /// Too much work in flight: try again after `retry_after` seconds.
    #[error("{detail}")]
    Busy { detail: String, retry_after: u64 },
    /// Over the per-client rate limit: try again after `retry_after` seconds.
    #[error("{detail}")]
    RateLimited { detail: String, retry_after: u64 },
    #[error("the request target is over {limit} bytes")]
    UriTooLong { limit: usize },
    #[error("the request headers are over {limit} bytes")]
    HeadersTooLarge { limit: usize },
    #[error("no answer within the time limit of {limit:?}")]
    RequestTimeout { limit: std::time::Duration },
    /// An admin action without the admin token.
    #[error("{0}")]
    Unauthorized(String),
    /// Admin actions are off (no token configured, listening beyond loopback).
    #[error("{0}")]
    AdminForbidden(String),
    /// `/mcp` asked under a host name (or from an origin) it does not answer for: the check
    /// against DNS rebinding.
    #[error("{0}")]
    HostNotAllowed(String),
    /// A reload whose source did not load; the served snapshot is kept.
    #[error("{0}")]
    ReloadFailed(String),
    /// A hub mirror request for something the mirror does not serve, in the hub's terms: `code` is
    /// the hub's `X-Error-Code` (`RepoNotFound`, `RevisionNotFound`, `EntryNotFound`), which
    /// huggingface_hub turns into its own exception; `parameter` names the path part at fault.
    #[error("{detail}")]
    HubNotFound {
        code: &'static str,
        parameter: &'static str,
        detail: String,
    },
    /// A dataset revision that cannot be answered from (`revision`).
    #[error("{detail}")]
    Revision {
        revision: String,
        problem: crate::service::RevisionProblem,
        detail: String,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

impl AppError {
    pub fn status(&self) -> StatusCode {
        match self {
            AppError::UnknownParameter { .. }
            | AppError::InvalidParameter { .. }
            | AppError::UnknownField { .. } => StatusCode::BAD_REQUEST,
            AppError::UnknownDomain(_)
            | AppError::UnknownRun { .. }
            | AppError::NoRoute(_)
            | AppError::RawUnavailable { .. }
            | AppError::HubNotFound { .. } => StatusCode::NOT_FOUND,
            AppError::RawInvalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Revision { problem, .. } => match problem {
                crate::service::RevisionProblem::Unknown => StatusCode::NOT_FOUND,
                crate::service::RevisionProblem::Malformed => StatusCode::UNPROCESSABLE_ENTITY,
                crate::service::RevisionProblem::Unavailable => StatusCode::BAD_GATEWAY,
            },
            AppError::SourceDenied { .. } => StatusCode::FORBIDDEN,
            AppError::Upstream {
                timed_out: true, ..
            } => StatusCode::GATEWAY_TIMEOUT,
            AppError::Upstream { .. } | AppError::DownloadCorrupt { .. } => StatusCode::BAD_GATEWAY,
            AppError::UnknownJob(_) | AppError::UnknownLeaderboardFile { .. } => {
                StatusCode::NOT_FOUND
            }
            AppError::InvalidBody { .. } => StatusCode::BAD_REQUEST,
            AppError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            AppError::NotAcceptable { .. } => StatusCode::NOT_ACCEPTABLE,
            AppError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            AppError::SqlRefused(_) | AppError::SqlInvalid(_) => StatusCode::BAD_REQUEST,
            AppError::QueryLimit(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            AppError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            AppError::UriTooLong { .. } => StatusCode::URI_TOO_LONG,
            AppError::HeadersTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            AppError::RequestTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
            AppError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            AppError::AdminForbidden(_) | AppError::HostNotAllowed(_) => StatusCode::FORBIDDEN,
            AppError::ReloadFailed(_) => StatusCode::UNPROCESSABLE_ENTITY,
            AppError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Stable slug of the problem type.
    pub fn slug(&self) -> &'static str {
        match self {
            AppError::UnknownParameter { .. } => "unknown_parameter",
            AppError::InvalidParameter { .. } => "invalid_parameter",
            AppError::UnknownField { .. } => "unknown_field",
            AppError::UnknownDomain(_) => "unknown_domain",
            AppError::UnknownRun { .. } => "unknown_run",
            AppError::NotAcceptable { .. } => "not_acceptable",
            AppError::RawUnavailable { .. } => "raw_unavailable",
            AppError::RawInvalid { .. } => "raw_invalid",
            AppError::SourceDenied { .. } => "source_denied",
            AppError::Upstream {
                timed_out: true, ..
            } => "upstream_timeout",
            AppError::Upstream { .. } => "upstream_failed",
            AppError::DownloadCorrupt { .. } => "download_corrupt",
            AppError::UnknownJob(_) => "unknown_job",
            AppError::UnknownLeaderboardFile { .. } => "unknown_leaderboard_file",
            AppError::InvalidBody { .. } => "invalid_body",
            AppError::PayloadTooLarge { .. } => "payload_too_large",
            AppError::NoRoute(_) => "not_found",
            AppError::MethodNotAllowed => "method_not_allowed",
            AppError::SqlRefused(_) => "sql_refused",
            AppError::SqlInvalid(_) => "invalid_sql",
            AppError::QueryLimit(_) => "query_limit",
            AppError::Busy { .. } => "busy",
            AppError::RateLimited { .. } => "rate_limited",
            AppError::UriTooLong { .. } => "uri_too_long",
            AppError::HeadersTooLarge { .. } => "headers_too_large",
            AppError::RequestTimeout { .. } => "request_timeout",
            AppError::Unauthorized(_) => "unauthorized",
            AppError::AdminForbidden(_) => "admin_forbidden",
            AppError::HostNotAllowed(_) => "host_not_allowed",
            AppError::ReloadFailed(_) => "reload_failed",
            AppError::HubNotFound {
                code: "RepoNotFound",
                ..
            } => "repo_not_found",
            AppError::HubNotFound {
                code: "RevisionNotFound",
                ..
            } => "revision_not_found",
            AppError::HubNotFound { .. } => "entry_not_found",
            AppError::Revision { problem, .. } => match problem {
                crate::service::RevisionProblem::Unknown => "unknown_revision",
                crate::service::RevisionProblem::Malformed => "malformed_revision",
                crate::service::RevisionProblem::Unavailable => "revision_unavailable",
            },
            AppError::Internal(_) => "internal",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            AppError::UnknownParameter { .. } => "Unknown query parameter",
            AppError::InvalidParameter { .. } => "Invalid parameter value",
            AppError::UnknownField { .. } => "Unknown field",
            AppError::UnknownDomain(_) => "Unknown domain",
            AppError::UnknownRun { .. } => "Unknown run",
            AppError::NotAcceptable { .. } => "Not acceptable",
            AppError::RawUnavailable { .. } => "Raw results unavailable",
            AppError::RawInvalid { .. } => "Raw results invalid",
            AppError::SourceDenied { .. } => "Access to the source denied",
            AppError::Upstream {
                timed_out: true, ..
            } => "Source timed out",
            AppError::Upstream { .. } => "Source failed",
            AppError::DownloadCorrupt { .. } => "Download corrupt",
            AppError::UnknownJob(_) => "Unknown job",
            AppError::UnknownLeaderboardFile { .. } => "Unknown leaderboard file",
            AppError::InvalidBody { .. } => "Invalid request body",
            AppError::PayloadTooLarge { .. } => "Request body too large",
            AppError::NoRoute(_) => "Not found",
            AppError::MethodNotAllowed => "Method not allowed",
            AppError::SqlRefused(_) => "Statement refused",
            AppError::SqlInvalid(_) => "Invalid SQL",
            AppError::QueryLimit(_) => "Query stopped at a limit",
            AppError::Busy { .. } => "Busy",
            AppError::RateLimited { .. } => "Too many requests",
            AppError::UriTooLong { .. } => "Request target too long",
            AppError::HeadersTooLarge { .. } => "Request headers too large",
            AppError::RequestTimeout { .. } => "Request timed out",
            AppError::Unauthorized(_) => "Admin token required",
            AppError::AdminForbidden(_) => "Admin actions are off",
            AppError::HostNotAllowed(_) => "Host not allowed",
            AppError::ReloadFailed(_) => "Reload failed",
            AppError::HubNotFound { .. } => "Not found on this hub mirror",
            AppError::Revision { problem, .. } => match problem {
                crate::service::RevisionProblem::Unknown => "Unknown revision",
                crate::service::RevisionProblem::Malformed => {
                    "Revision not in the published schema"
                }
                crate::service::RevisionProblem::Unavailable => "Revision could not be loaded",
            },
            AppError::Internal(_) => "Internal server error",
        }
    }

    pub fn problem(&self) -> Problem {
        let (parameter, allowed, detail) = match self {
            AppError::UnknownParameter { parameter, allowed } => (
                Some(parameter.clone()),
                Some(allowed.clone()),
                format!(
                    "unknown query parameter '{parameter}'; this endpoint takes: {}",
                    allowed.join(", ")
                ),
            ),
            AppError::InvalidParameter {
                parameter,
                detail,
                allowed,
            } => {
                let detail = match allowed {
                    Some(a) => format!("{detail}; allowed: {}", a.join(", ")),
                    None => detail.clone(),
                };
                (Some(parameter.clone()), allowed.clone(), detail)
            }
            AppError::UnknownField {
                parameter,
                field,
                allowed,
            } => (
                Some(parameter.clone()),
                Some(allowed.clone()),
                format!(
                    "parameter '{parameter}': unknown field '{field}'; allowed: {}",
                    allowed.join(", ")
                ),
            ),
            AppError::UnknownDomain(d) => (
                Some("domain".into()),
                Some(vec!["llm".into(), "diffusion".into()]),
                format!("unknown domain '{d}'; allowed: llm, diffusion"),
            ),
            AppError::UnknownRun { domain, run_id } => (
                Some("run_id".into()),
                None,
                format!(
                    "no {domain} run has the id '{run_id}'; list the ids with GET /v1/{domain}/runs?fields=run_id"
                ),
            ),
            AppError::NotAcceptable {
                parameter,
                requested,
                allowed,
            } => (
                Some(parameter.clone()),
                Some(allowed.clone()),
                format!(
                    "cannot produce '{requested}' (from {parameter}); available: {}",
                    allowed.join(", ")
                ),
            ),
            AppError::RawUnavailable { run_id, detail } => (
                Some("run_id".into()),
                None,
                format!("no raw results for run '{run_id}': {detail}"),
            ),
            AppError::RawInvalid { run_id, detail } => (
                Some("run_id".into()),
                None,
                format!("raw results of run '{run_id}' cannot be used: {detail}"),
            ),
            AppError::SourceDenied { detail, .. } => (Some("run_id".into()), None, detail.clone()),
            AppError::Upstream { run_id, detail, .. } => (
                Some("run_id".into()),
                None,
                format!("raw file of run '{run_id}' could not be fetched: {detail}"),
            ),
            AppError::DownloadCorrupt { run_id, detail } => (
                Some("run_id".into()),
                None,
                format!(
                    "raw file of run '{run_id}' could not be fetched: {detail}; nothing was cached, a retry downloads it again"
                ),
            ),
            AppError::UnknownJob(id) => (
                Some("job_id".into()),
                None,
                format!(
                    "no job has the id '{id}'; jobs are started with POST /v1/{{domain}}/prefetch"
                ),
            ),
            AppError::UnknownLeaderboardFile {
                kind,
                name,
                allowed,
            } => (
                Some(if *kind == "task" { "task" } else { "file" }.into()),
                Some(allowed.clone()),
                format!(
                    "the served dataset has no leaderboard {kind} file '{name}'; it has: {}",
                    allowed.join(", ")
                ),
            ),
            AppError::Revision { detail, .. } => (Some("revision".into()), None, detail.clone()),
            AppError::InvalidBody { field, detail } => {
                let (named, allowed) = body_parameter(detail);
                (
                    Some(field.clone().unwrap_or(named)),
                    allowed,
                    detail.clone(),
                )
            }
            AppError::PayloadTooLarge { limit } => (
                None,
                None,
                format!(
                    "the request body is over this endpoint's limit of {limit} bytes ({:.1} MiB; the server's --max-body-bytes, or --max-samples-body-bytes for an ITL mixture fit)",
                    *limit as f64 / (1 << 20) as f64
                ),
            ),
            AppError::NoRoute(path) => (
                None,
                None,
                format!("no endpoint at {path}; see /docs or /openapi.json"),
            ),
            AppError::MethodNotAllowed => {
                (None, None, "method not allowed on this endpoint".into())
            }
            AppError::SqlRefused(d) | AppError::SqlInvalid(d) | AppError::QueryLimit(d) => {
                (Some("q".into()), None, d.clone())
            }
            AppError::Busy { detail, .. } | AppError::RateLimited { detail, .. } => {
                (None, None, detail.clone())
            }
            AppError::UriTooLong { limit } => (
                None,
                None,
                format!("the request target (path and query) is over {limit} bytes"),
            ),
            AppError::HeadersTooLarge { limit } => (
                None,
                None,
                format!("the request headers are over {limit} bytes"),
            ),
            AppError::RequestTimeout { limit } => (
                None,
                None,
                format!(
                    "no answer within the time limit of {limit:?} (--request-timeout); the work was stopped"
                ),
            ),
            AppError::Unauthorized(d) => (Some("Authorization".into()), None, d.clone()),
            AppError::AdminForbidden(d)
            | AppError::HostNotAllowed(d)
            | AppError::ReloadFailed(d) => (None, None, d.clone()),
            AppError::HubNotFound {
                parameter, detail, ..
            } => (Some((*parameter).into()), None, detail.clone()),
            AppError::Internal(_) => (
                None,
                None,
                "the server failed to answer this request; it has been logged".into(),
            ),
        };
        Problem {
            type_: format!("/problems/{}", self.slug()),
            title: self.title().into(),
            status: self.status().as_u16(),
            detail,
            parameter,
            allowed,
        }
    }
}

/// Engine errors that reach HTTP without a parameter context. Exhaustive on purpose: a new
/// engine error must be given a status here.
impl From<EngineError> for AppError {
    fn from(e: EngineError) -> Self {
        AppError::from(&e)
    }
}

impl From<&EngineError> for AppError {
    fn from(e: &EngineError) -> Self {
        match e {
            EngineError::UnknownField { name, allowed, .. } => AppError::UnknownField {
                parameter: "field".into(),
                field: name.clone(),
                allowed: allowed.clone(),
            },
            EngineError::NotNumeric { name, allowed } => AppError::InvalidParameter {
                parameter: "field".into(),
                detail: format!("field '{name}' is not numeric"),
                allowed: Some(allowed.clone()),
            },
            EngineError::InvalidQuery(msg) => AppError::InvalidParameter {
                parameter: "query".into(),
                detail: msg.clone(),
                allowed: None,
            },
            EngineError::UnknownRun(id) => AppError::UnknownRun {
                domain: "requested".into(),
                run_id: id.clone(),
            },
            e @ (EngineError::Load(_)
            | EngineError::DataFusion(_)
            | EngineError::Arrow(_)
            | EngineError::Parquet(_)
            | EngineError::Io(_)) => AppError::Internal(e.to_string()),
        }
    }
}

impl From<crate::service::ServiceError> for AppError {
    fn from(e: crate::service::ServiceError) -> Self {
        use crate::service::ServiceError as S;
        match e {
            S::UnknownRun { domain, run_id } => AppError::UnknownRun {
                domain: domain.as_str().into(),
                run_id,
            },
            S::UnknownMeasuredRun { run_id } => AppError::UnknownRun {
                domain: "measurements".into(),
                run_id,
            },
            S::RawUnavailable { run_id, detail } => AppError::RawUnavailable { run_id, detail },
            S::RawInvalid { run_id, detail } => AppError::RawInvalid { run_id, detail },
            S::Fetch { run_id, error } => AppError::fetch(&run_id, error),
            S::UnknownParameter { parameter, allowed } => {
                AppError::UnknownParameter { parameter, allowed }
            }
            S::InvalidParameter {
                parameter,
                detail,
                allowed,
            } => AppError::InvalidParameter {
                parameter,
                detail,
                allowed,
            },
            S::UnknownField {
                parameter,
                field,
                allowed,
            } => AppError::UnknownField {
                parameter,
                field,
                allowed,
            },
            S::Engine(e) => AppError::from(&*e),
            S::Sql(f) => AppError::from(&*f),
            S::InvalidBody { field, detail } => AppError::InvalidBody { field, detail },
            S::UnknownLeaderboardFile {
                kind,
                name,
                allowed,
            } => AppError::UnknownLeaderboardFile {
                kind,
                name,
                allowed,
            },
            S::Revision {
                revision,
                problem,
                detail,
            } => AppError::Revision {
                revision,
                problem,
                detail,
            },
            S::Busy(detail) => AppError::Busy {
                detail,
                retry_after: 1,
            },
            S::Internal(detail) => AppError::Internal(detail),
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(e: sqlx::Error) -> Self {
        AppError::Internal(format!("catalog: {e}"))
    }
}

impl AppError {
    /// A failed raw fetch of `run_id`, with the status its kind calls for.
    pub fn fetch(run_id: &str, e: crate::store::FetchError) -> AppError {
        use crate::store::FetchError as F;
        let run_id = run_id.to_string();
        match e {
            F::NotFound(path) => AppError::RawUnavailable {
                run_id,
                detail: format!("{path} is not in the source"),
            },
            F::Refused(detail) => AppError::RawUnavailable { run_id, detail },
            F::Denied { detail, .. } => AppError::SourceDenied { run_id, detail },
            F::Upstream(detail) => AppError::Upstream {
                run_id,
                detail,
                timed_out: false,
            },
            F::Timeout(detail) => AppError::Upstream {
                run_id,
                detail,
                timed_out: true,
            },
            e @ F::Corrupt { .. } => AppError::DownloadCorrupt {
                run_id,
                detail: e.to_string(),
            },
            F::Cache(detail) => AppError::Internal(format!("raw cache: {detail}")),
        }
    }
}

/// What a body error names, read from serde's message (axum's JSON extractor puts the path of the
/// value before it): the field missing, unknown or of the wrong kind, else `body`; and, for an
/// unknown field, the fields the body takes.
fn body_parameter(detail: &str) -> (String, Option<Vec<String>>) {
    let quoted = |after: &str| -> Option<String> {
        let rest = &detail[detail.find(after)? + after.len()..];
        Some(rest[..rest.find('`')?].to_string())
    };
    if let Some(f) = quoted("missing field `") {
        return (f, None);
    }
    if let Some(f) = quoted("unknown field `") {
        let allowed = detail.find("expected ").map(|i| {
            detail[i..]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect::<Vec<_>>()
        });
        return (f, allowed.filter(|a| !a.is_empty()));
    }
    let message = detail
        .split_once("target type: ")
        .map_or(detail, |(_, m)| m);
    match message.split_once(": ") {
        Some((path, _))
            if path != "."
                && !path.is_empty()
                && path
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.[]".contains(c)) =>
        {
            (path.to_string(), None)
        }
        _ => ("body".to_string(), None),
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error()
            && !matches!(
                self,
                AppError::Busy { .. } | AppError::RequestTimeout { .. }
            )
        {
            tracing::error!(error = %self, "request failed");
        }
        let body = serde_json::to_vec(&self.problem()).unwrap_or_default();
        let mut resp = (status, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        match self {
            AppError::Busy { retry_after, .. } | AppError::RateLimited { retry_after, .. } => {
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            }
            AppError::Unauthorized(_) => {
                resp.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            AppError::HubNotFound { code, detail, .. } => {
                let h = resp.headers_mut();
                h.insert("x-error-code", HeaderValue::from_static(code));
                if let Ok(v) = HeaderValue::from_str(&detail.replace(['\r', '\n'], " ")) {
                    h.insert("x-error-message", v);
                }
            }
            _ => {}
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::{AppError, body_parameter};
    use crate::http::problems::PROBLEM_TYPES;
    use crate::service::RevisionProblem;

    /// One error of each kind, and of each slug a kind can have.
    fn one_of_each() -> Vec<AppError> {
        let s = || String::from("x");
        let mut out = vec![
            AppError::UnknownParameter {
                parameter: s(),
                allowed: vec![],
            },
            AppError::InvalidParameter {
                parameter: s(),
                detail: s(),
                allowed: None,
            },
            AppError::UnknownField {
                parameter: s(),
                field: s(),
                allowed: vec![],
            },
            AppError::UnknownDomain(s()),
            AppError::UnknownRun {
                domain: s(),
                run_id: s(),
            },
            AppError::NotAcceptable {
                parameter: s(),
                requested: s(),
                allowed: vec![],
            },
            AppError::RawUnavailable {
                run_id: s(),
                detail: s(),
            },
            AppError::RawInvalid {
                run_id: s(),
                detail: s(),
            },
            AppError::SourceDenied {
                run_id: s(),
                detail: s(),
            },
            AppError::Upstream {
                run_id: s(),
                detail: s(),
                timed_out: false,
            },
            AppError::Upstream {
                run_id: s(),
                detail: s(),
                timed_out: true,
            },
            AppError::DownloadCorrupt {
                run_id: s(),
                detail: s(),
            },
            AppError::UnknownJob(s()),
            AppError::UnknownLeaderboardFile {
                kind: "task",
                name: s(),
                allowed: vec![],
            },
            AppError::InvalidBody {
                field: None,
                detail: s(),
            },
            AppError::PayloadTooLarge { limit: 1 },
            AppError::NoRoute(s()),
            AppError::MethodNotAllowed,
            AppError::SqlRefused(s()),
            AppError::SqlInvalid(s()),
            AppError::QueryLimit(s()),
            AppError::Busy {
                detail: s(),
                retry_after: 1,
            },
            AppError::RateLimited {
                detail: s(),
                retry_after: 1,
            },
            AppError::UriTooLong { limit: 1 },
            AppError::HeadersTooLarge { limit: 1 },
            AppError::RequestTimeout {
                limit: std::time::Duration::from_secs(1),
            },
            AppError::Unauthorized(s()),
            AppError::AdminForbidden(s()),
            AppError::HostNotAllowed(s()),
            AppError::ReloadFailed(s()),
            AppError::Internal(s()),
        ];
        for code in ["RepoNotFound", "RevisionNotFound", "EntryNotFound"] {
            out.push(AppError::HubNotFound {
                code,
                parameter: "path",
                detail: s(),
            });
        }
        for problem in [
            RevisionProblem::Unknown,
            RevisionProblem::Malformed,
            RevisionProblem::Unavailable,
        ] {
            out.push(AppError::Revision {
                revision: s(),
                problem,
                detail: s(),
            });
        }
        for e in &out {
            assert!(has_an_example(e));
        }
        out
    }

    /// A new kind of error fails to compile here until `one_of_each` has one of it (and
    /// `PROBLEM_TYPES` its slug).
    fn has_an_example(e: &AppError) -> bool {
        match e {
            AppError::UnknownParameter { .. }
            | AppError::InvalidParameter { .. }
            | AppError::UnknownField { .. }
            | AppError::UnknownDomain(_)
            | AppError::UnknownRun { .. }
            | AppError::NotAcceptable { .. }
            | AppError::RawUnavailable { .. }
            | AppError::RawInvalid { .. }
            | AppError::SourceDenied { .. }
            | AppError::Upstream { .. }
            | AppError::DownloadCorrupt { .. }
            | AppError::UnknownJob(_)
            | AppError::UnknownLeaderboardFile { .. }
            | AppError::InvalidBody { .. }
            | AppError::PayloadTooLarge { .. }
            | AppError::NoRoute(_)
            | AppError::MethodNotAllowed
            | AppError::SqlRefused(_)
            | AppError::SqlInvalid(_)
            | AppError::QueryLimit(_)
            | AppError::Busy { .. }
            | AppError::RateLimited { .. }
            | AppError::UriTooLong { .. }
            | AppError::HeadersTooLarge { .. }
            | AppError::RequestTimeout { .. }
            | AppError::Unauthorized(_)
            | AppError::AdminForbidden(_)
            | AppError::HostNotAllowed(_)
            | AppError::ReloadFailed(_)
            | AppError::HubNotFound { .. }
            | AppError::Revision { .. }
            | AppError::Internal(_) => true,
        }
    }

    /// Every error's slug and status are a declared problem type, and every declared problem type
    /// is some error's: the reference's table of them is the whole truth.
    #[test]
    fn every_error_is_a_declared_problem_type() {
        let errors = one_of_each();
        for e in &errors {
            let declared = PROBLEM_TYPES.iter().find(|p| p.slug == e.slug());
            let declared =
                declared.unwrap_or_else(|| panic!("{} is not in PROBLEM_TYPES", e.slug()));
            assert_eq!(declared.status, e.status().as_u16(), "{}", e.slug());
        }
        for p in PROBLEM_TYPES {
            assert!(
                errors.iter().any(|e| e.slug() == p.slug),
                "no error has the slug {}",
                p.slug
            );
        }
        let mut slugs: Vec<&str> = PROBLEM_TYPES.iter().map(|p| p.slug).collect();
        slugs.sort();
        slugs.dedup();
        assert_eq!(slugs.len(), PROBLEM_TYPES.len(), "a slug declared twice");
    }

    /// A body error names the field serde's message names.
    #[test]
    fn body_errors_name_their_field() {
        let p = |d: &str| body_parameter(d);
        assert_eq!(
            p(
                "Failed to deserialize the JSON body into the target type: missing field `y` at line 1 column 2"
            ),
            ("y".into(), None)
        );
        assert_eq!(
            p(
                "Failed to deserialize the JSON body into the target type: unknown field `z`, expected `x` or `batch` at line 1 column 5"
            ),
            ("z".into(), Some(vec!["x".into(), "batch".into()]))
        );
        assert_eq!(
            p(
                "Failed to deserialize the JSON body into the target type: x[2]: invalid type: string \"a\", expected f64 at line 1 column 12"
            ),
            ("x[2]".into(), None)
        );
        assert_eq!(
            p(
                "Failed to parse the request body as JSON: EOF while parsing a value at line 1 column 0"
            ),
            ("body".into(), None)
        );
        assert_eq!(p("the body is not UTF-8"), ("body".into(), None));
    }
}
