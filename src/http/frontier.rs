//! The leaderboard's client logic as endpoints (docs/leaderboard.md §4): `GET
//! /v1/{domain}/pareto` (the runs on the Pareto frontier of a latency and an energy field) and
//! `GET /v1/{domain}/best` (the energy-optimal run per model under a deadline and a budget), in
//! every format. Ties go to the first run in the leaderboard's file order, as in the browser.

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{Encoded, cached, respond};
use super::encode;
use super::error::AppError;
use super::state::{ApiPath, AppState, Prepared, prepare};
use crate::engine::frontier::{self, Chosen};
use crate::engine::{RunQuery, RunTable};
use crate::service::ask::Question;
use crate::service::leaderboard::files::in_file_order;

/// The filtered runs in the leaderboard's file order.
pub(super) fn rows_in_file_order(table: &RunTable, q: &RunQuery) -> Result<Vec<usize>, AppError> {
    let mut rows = table.filter_rows(&q.filters, q.stability)?;
    in_file_order(table, &mut rows);
    Ok(rows)
}

fn json_names(out: &mut Vec<u8>, names: &[String]) {
    out.push(b'[');
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        encode::json_str(out, n);
    }
    out.push(b']');
}

fn json_number(out: &mut Vec<u8>, v: Option<f64>) {
    match v {
        Some(v) => encode::json_f64(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// The chosen runs encoded in `prepared`'s format; JSON in an envelope that `head` begins.
fn encode_chosen(
    prepared: &Prepared,
    table: &RunTable,
    chosen: &Chosen,
    fields: Option<&[String]>,
    warnings: &[String],
    head: impl Fn(&mut Vec<u8>),
) -> Result<Encoded, AppError> {
    let cols = table.projection(fields)?;
    let frame = table.frame.select(&chosen.rows, &cols);
    let body = encode::encode_frame(
        &frame,
        prepared.format,
        &|name| table.is_nullable(name),
        |out, frame| {
            out.extend_from_slice(b"{\"domain\":");
            encode::json_str(out, prepared.domain.as_str());
            head(out);
            out.extend_from_slice(
                format!(
                    ",\"count\":{},\"without_value\":{}",
                    frame.num_rows(),
                    chosen.without_value
                )
                .as_bytes(),
            );
            encode::json_warnings(out, warnings);
            out.extend_from_slice(b",\"runs\":");
            encode::json_array(out, frame);
            out.push(b'}');
        },
    )?;
    Ok(Encoded {
        content_type: prepared.format.content_type(),
        body: body.into(),
        total: Some(chosen.rows.len()),
        next: None,
        warnings: warnings.to_vec(),
        variants: Default::default(),
        sent: Default::default(),
    })
}

/// The Pareto frontier of the filtered runs.
///
/// A run is on the frontier when no other run (of its `per` group) has both a strictly lower
/// `x` and a strictly lower `y`, as the leaderboard's charts draw it: equal points are all kept,
/// and so is a run another beats in one field while tying it in the other. Runs whose x or y is
/// null are left out (`without_value`). Groups come in the order of their first run in the
/// leaderboard's file order, each by x, then y.
#[utoipa::path(
    get,
    path = "/v1/{domain}/pareto",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "The runs on the frontier. JSON has an envelope; CSV, NDJSON, Arrow and Parquet carry the rows only, with `X-Total-Count`.",
            headers(("X-Total-Count" = usize, description = "Runs on the frontier(s)")),
            content(
                (super::openapi::ParetoAnswer = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("pareto"))),
)]
pub async fn pareto(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let prepared = prepare(
        &state,
        &domain,
        Question::Pareto,
        query.as_deref(),
        &headers,
    )?;
    let table = prepared.snapshot.table(prepared.domain);
    let (filters, q) = prepared.params.pareto_query(prepared.domain, table)?;
    let fields = prepared.params.fields(table)?;
    let encoded = cached(
        &state.cache,
        &prepared.snapshot,
        &uri,
        prepared.format,
        || {
            let warnings = prepared.params.filter_warnings(prepared.domain, table);
            let rows = rows_in_file_order(table, &filters)?;
            let chosen = frontier::pareto(table, &rows, &q)?;
            encode_chosen(
                &prepared,
                table,
                &chosen,
                fields.as_deref(),
                &warnings,
                |out| {
                    out.extend_from_slice(b",\"x\":");
                    encode::json_str(out, &q.x);
                    out.extend_from_slice(b",\"y\":");
                    encode::json_str(out, &q.y);
                    out.extend_from_slice(b",\"per\":");
                    json_names(out, &q.per);
                },
            )
        },
    )?;
    Ok(respond(&encoded))
}

/// The energy-optimal run per model under a latency deadline and an energy budget.
///
/// As the leaderboard's table chooses: among the filtered runs whose latency is at most
/// `deadline` and whose energy is at most `energy_budget`, the one with the least energy per
/// `per` group (default model_id), the first in the leaderboard's file order on an exact tie;
/// the chosen runs ascending by energy. With one task filtered and no `deadline`, the
/// leaderboard's default deadline for that task applies (500 ms ITL; 30 s text-to-image; 300 s
/// text-to-video); the JSON envelope states the deadline used.
#[utoipa::path(
    get,
    path = "/v1/{domain}/best",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "The chosen runs, ascending by energy. JSON has an envelope stating the deadline and budget applied; CSV, NDJSON, Arrow and Parquet carry the rows only, with `X-Total-Count`.",
            headers(("X-Total-Count" = usize, description = "Runs chosen")),
            content(
                (super::openapi::BestAnswer = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("best"))),
)]
pub async fn best(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let prepared = prepare(&state, &domain, Question::Best, query.as_deref(), &headers)?;
    let table = prepared.snapshot.table(prepared.domain);
    let (filters, q) = prepared.params.best_query(prepared.domain, table)?;
    let fields = prepared.params.fields(table)?;
    let encoded = cached(
        &state.cache,
        &prepared.snapshot,
        &uri,
        prepared.format,
        || {
            let warnings = prepared.params.filter_warnings(prepared.domain, table);
            let rows = rows_in_file_order(table, &filters)?;
            let chosen = frontier::best(table, &rows, &q)?;
            encode_chosen(
                &prepared,
                table,
                &chosen,
                fields.as_deref(),
                &warnings,
                |out| {
                    out.extend_from_slice(b",\"latency\":");
                    encode::json_str(out, &q.latency);
                    out.extend_from_slice(b",\"deadline\":");
                    json_number(out, q.deadline);
                    out.extend_from_slice(b",\"energy\":");
                    encode::json_str(out, &q.energy);
                    out.extend_from_slice(b",\"energy_budget\":");
                    json_number(out, q.energy_budget);
                    out.extend_from_slice(b",\"per\":");
                    json_names(out, &q.per);
                },
            )
        },
    )?;
    Ok(respond(&encoded))
}
