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

/// One problem type the API answers: its slug (the document's `type` is `/problems/<slug>`), its
/// status, and when it is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProblemType {
    pub slug: &'static str,
    pub status: u16,
    pub when: &'static str,
}

const fn problem_type(slug: &'static str, status: u16, when: &'static str) -> ProblemType {
    ProblemType { slug, status, when }
}

/// Every problem type, by status. The reference's table of problem types is written from it, and
/// `error`'s tests hold every `AppError` to it (its slug and status are one of these, and each of
/// these is some error's).
pub const PROBLEM_TYPES: &[ProblemType] = &[
    problem_type(
        "unknown_parameter",
        400,
        "a query parameter the endpoint does not take (lists those it takes)",
    ),
    problem_type(
        "invalid_parameter",
        400,
        "a value that cannot be used: a non-numeric number, a negative or repeated `limit`/`offset`, exact values with a range, an unknown `stability` or aggregate",
    ),
    problem_type(
        "unknown_field",
        400,
        "a field in `fields`, `sort`, `by` or `agg` the domain does not have (lists the fields)",
    ),
    problem_type(
        "invalid_body",
        400,
        "a request body that is not what the endpoint takes (JSON of the wrong shape, a value out of range)",
    ),
    problem_type(
        "sql_refused",
        400,
        "SQL that is not a query: it defines, changes or copies data or sets state",
    ),
    problem_type(
        "invalid_sql",
        400,
        "SQL that does not plan (syntax, an unknown table, column or function, types), or nests or chains past the parser's limits; the detail says why",
    ),
    problem_type(
        "unauthorized",
        401,
        "an admin action without the admin token (`WWW-Authenticate: Bearer`)",
    ),
    problem_type(
        "source_denied",
        403,
        "the hub refused the raw file (gated dataset, missing or wrong `HF_TOKEN`); the detail says where to request access",
    ),
    problem_type(
        "admin_forbidden",
        403,
        "admin actions are off: no admin token and a bind beyond loopback",
    ),
    problem_type(
        "host_not_allowed",
        403,
        "`/mcp` asked through a `Host` or `Origin` it does not accept (`--mcp-allowed-host`)",
    ),
    problem_type(
        "unknown_domain",
        404,
        "a domain other than `llm` or `diffusion`",
    ),
    problem_type("unknown_run", 404, "no run with that id"),
    problem_type("not_found", 404, "no such route"),
    problem_type(
        "raw_unavailable",
        404,
        "the run has no raw results file in this dataset, or the file is missing",
    ),
    problem_type("unknown_job", 404, "no prefetch job with that id"),
    problem_type(
        "unknown_leaderboard_file",
        404,
        "no leaderboard data file of that name",
    ),
    problem_type(
        "unknown_revision",
        404,
        "a `revision` (or `from`, `to`) this server does not have; lists the names it has",
    ),
    problem_type(
        "repo_not_found",
        404,
        "the hub mirror serves no such dataset repository (the hub's `X-Error-Code: RepoNotFound`)",
    ),
    problem_type(
        "revision_not_found",
        404,
        "the hub mirror has no such revision (`X-Error-Code: RevisionNotFound`)",
    ),
    problem_type(
        "entry_not_found",
        404,
        "the hub mirror's revision has no such file (`X-Error-Code: EntryNotFound`)",
    ),
    problem_type(
        "method_not_allowed",
        405,
        "a method the endpoint does not take",
    ),
    problem_type(
        "not_acceptable",
        406,
        "`format` or `Accept` names nothing the service produces (lists what it does)",
    ),
    problem_type(
        "payload_too_large",
        413,
        "a request body over `--max-body-bytes` (`--max-samples-body-bytes` for the ITL mixture fit), named in the detail",
    ),
    problem_type(
        "uri_too_long",
        414,
        "a request target over `--max-uri-bytes`",
    ),
    problem_type(
        "raw_invalid",
        422,
        "the raw file is not valid JSON or lacks what the computation needs (named in the detail)",
    ),
    problem_type(
        "query_limit",
        422,
        "an SQL query stopped at its time, memory, row or value limit (named in the detail)",
    ),
    problem_type(
        "malformed_revision",
        422,
        "the revision's summaries are not the published schema; the detail names the file",
    ),
    problem_type(
        "reload_failed",
        422,
        "a reload whose source failed to load or holds no run; the served snapshot stays",
    ),
    problem_type(
        "rate_limited",
        429,
        "the client is over `--rate-limit-per-ip`; `Retry-After` says when it may send again",
    ),
    problem_type(
        "headers_too_large",
        431,
        "request headers over `--max-header-bytes`",
    ),
    problem_type(
        "internal",
        500,
        "a fault of the server's own; the detail says what failed",
    ),
    problem_type(
        "upstream_failed",
        502,
        "the source answered 5xx or refused the connection, after bounded retries (`--upstream-retries`)",
    ),
    problem_type(
        "download_corrupt",
        502,
        "the download was cut short or did not match the size or SHA-256 the source announced; nothing was cached",
    ),
    problem_type(
        "revision_unavailable",
        502,
        "the revision's source failed (the hub, an object store); nothing was kept",
    ),
    problem_type(
        "busy",
        503,
        "as many requests (or SQL queries, or costly questions) in flight as the server takes; `Retry-After` says when to try again",
    ),
    problem_type(
        "upstream_timeout",
        504,
        "no answer, or a stalled body, for longer than `--upstream-timeout`, after retries",
    ),
    problem_type(
        "request_timeout",
        504,
        "no answer within `--request-timeout`; the work was stopped",
    ),
];

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
