//! The problem responses of the API, declared at the handlers: each status has one shared response
//! definition (`#/components/responses/<name>`, a problem+json document), and a handler's
//! `#[utoipa::path]` names the set of them it can answer with (`responses(..., RawProblems)`).
//! `openapi::complete` adds the definitions to the document's components.

use std::collections::BTreeMap;

use utoipa::openapi::{RefOr, Response};

/// The shared problem responses: (status, component name, what it means).
pub const PROBLEMS: &[(u16, &str, &str)] = &[
    (
        400,
        "BadRequest",
        "A parameter the endpoint does not take, a malformed value, exact values mixed with a range, or an unknown field or aggregate (`unknown_parameter`, `invalid_parameter`, `unknown_field`), or a request body that is not what the endpoint takes (`invalid_body`), or SQL that is not a query or does not plan (`sql_refused`, `invalid_sql`); `parameter` and `allowed` say which and what would do.",
    ),
    (
        413,
        "PayloadTooLarge",
        "The request body is over the endpoint's size limit (`payload_too_large`).",
    ),
    (
        403,
        "SourceDenied",
        "The hub refused the raw file (`source_denied`): a gated dataset without access; `detail` says where to request it. Or admin actions are off: the server listens beyond loopback without MLENERGY_ADMIN_TOKEN (`admin_forbidden`).",
    ),
    (
        401,
        "Unauthorized",
        "An admin action without the admin token (`unauthorized`): send `Authorization: Bearer <MLENERGY_ADMIN_TOKEN>`.",
    ),
    (
        404,
        "NotFound",
        "No such domain, run, job, raw file or dataset revision (`unknown_domain`, `unknown_run`, `unknown_job`, `raw_unavailable`, `unknown_revision`).",
    ),
    (
        406,
        "NotAcceptable",
        "`format` or `Accept` names nothing the service produces (`not_acceptable`).",
    ),
    (
        422,
        "RawInvalid",
        "The raw file is not valid JSON or lacks what the answer needs (`raw_invalid`), an SQL query was stopped at a limit: time, memory or rows (`query_limit`, the detail names it), or the revision asked for is not the published schema (`malformed_revision`, the detail names the file).",
    ),
    (
        503,
        "Busy",
        "As many requests (or SQL queries) are in flight as the server takes (`busy`); `Retry-After` says when to try again.",
    ),
    (
        502,
        "UpstreamFailed",
        "The source failed after bounded retries, or the download was corrupt (`upstream_failed`, `download_corrupt`), or a revision could not be loaded (`revision_unavailable`); nothing was cached.",
    ),
    (
        504,
        "UpstreamTimeout",
        "The source did not answer in time (`upstream_timeout`), or the request ran over its time limit (`request_timeout`).",
    ),
];

pub fn problem_response(description: &str) -> utoipa::openapi::Response {
    utoipa::openapi::ResponseBuilder::new()
        .description(description)
        .content(
            "application/problem+json",
            utoipa::openapi::ContentBuilder::new()
                .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                    "Problem",
                ))))
                .build(),
        )
        .build()
}

/// The problems of an operation that takes `revision`: the revision unknown (404), not the
/// published schema (422), or its source failed (502).
pub const REVISION_PROBLEMS: [u16; 3] = [404, 422, 502];

/// A reference to the shared response of `status`.
pub fn problem_ref(status: u16) -> RefOr<Response> {
    let (_, name, _) = PROBLEMS
        .iter()
        .find(|p| p.0 == status)
        .unwrap_or_else(|| panic!("{status} has no shared problem response"));
    RefOr::Ref(utoipa::openapi::Ref::new(format!(
        "#/components/responses/{name}"
    )))
}

/// A set of problem responses a handler names in its `responses(...)`.
macro_rules! problem_set {
    ($($(#[$doc:meta])* $name:ident = [$($status:literal),+];)+) => {$(
        $(#[$doc])*
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                [$($status),+]
                    .into_iter()
                    .map(|s| (s.to_string(), problem_ref(s)))
                    .collect()
            }
        }
    )+};
}

problem_set! {
    /// A query string read: a bad parameter (400), an unacceptable format (406).
    QueryProblems = [400, 406];
    /// A query string read and a thing looked up: the domain, a run or a table may not exist (404).
    LookupProblems = [400, 404, 406];
    /// Parameters read, one representation: only a bad parameter.
    ParameterProblems = [400];
    /// Something looked up by its path: it may not exist.
    NotFoundProblem = [404];
    /// A raw file is read: the source can refuse it (403), lack it (404), fail (502) or be too
    /// slow (504), and the file can lack what the answer needs (422).
    RawProblems = [400, 403, 404, 406, 422, 502, 504];
    /// A raw file passed on as it is: as `RawProblems`, but its content is not read.
    RawFileProblems = [400, 403, 404, 406, 502, 504];
    /// An admin action: the token is missing (401) or admin actions are off (403).
    AdminProblems = [400, 401, 403, 404, 406];
    /// SQL from the query string: refused or invalid (400), stopped at a limit (422), the gate
    /// full (503).
    SqlProblems = [400, 406, 422, 503];
    /// SQL from a body: as `SqlProblems`, and the body can be too large (413).
    SqlBodyProblems = [400, 406, 413, 422, 503];
    /// A chart of run summaries: bad parameters, an unknown domain.
    ChartProblems = [400, 404];
    /// A chart of a run's raw data: as `RawProblems`, one representation.
    RawChartProblems = [400, 403, 404, 422, 502, 504];
    /// A JSON body read: malformed or out of bounds (400), or too large (413).
    BodyProblems = [400, 413];
    /// A leaderboard model file: unknown (404); an LLM file whose histograms are read from raw
    /// files now, from a source that refuses, fails or is too slow.
    LeaderboardModelProblems = [403, 404, 502, 504];
}
