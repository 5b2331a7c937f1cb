//! `GET /v1/{domain}/groups`: group the filtered runs and aggregate.

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{Encoded, cached, respond};
use super::encode;
use super::error::AppError;
use super::state::{ApiPath, AppState, Prepared, prepare};
use crate::engine::GroupResult;
use crate::service::ask::Question;

fn group_json(out: &mut Vec<u8>, domain: &str, g: &GroupResult, warnings: &[String]) {
    let frame = &g.frame;
    out.extend_from_slice(b"{\"domain\":");
    encode::json_str(out, domain);
    out.extend_from_slice(b",\"by\":[");
    for (i, b) in g.by.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        encode::json_str(out, b);
    }
    out.extend_from_slice(format!("],\"count\":{},\"groups\":[", frame.num_rows()).as_bytes());
    for r in 0..frame.num_rows() {
        if r > 0 {
            out.push(b',');
        }
        // The key as the toolkit's group_by shapes it: the bare value for one field, an array
        // for several, an empty array for none.
        out.extend_from_slice(b"{\"key\":");
        if g.by.len() == 1 {
            encode::json_cell_of(out, &frame.columns[0], r);
        } else {
            out.push(b'[');
            for i in 0..g.by.len() {
                if i > 0 {
                    out.push(b',');
                }
                encode::json_cell_of(out, &frame.columns[i], r);
            }
            out.push(b']');
        }
        out.push(b',');
        encode::json_members(out, frame, r);
        out.push(b'}');
    }
    out.push(b']');
    encode::json_warnings(out, warnings);
    out.push(b'}');
}

/// Group runs and aggregate.
///
/// `by` names the grouping fields (none: one group of every run). Groups come in the order of
/// their first run in the default order. Every group has `count`; `agg` adds
/// `func(field)` or `func` (that function over every numeric field) for count, min, max, mean,
/// median, sum, argmin and argmax, in columns named `{func}_{field}`. argmin/argmax hold the whole
/// winning run (first one on ties). Aggregates skip nulls and are null over no values; mean and
/// sum use numpy's pairwise summation, so they equal numpy's to the last bit.
#[utoipa::path(
    get,
    path = "/v1/{domain}/groups",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "One row per group. CSV flattens argmin/argmax runs into `argmin_<field>.<run field>` columns.",
            content(
                (super::openapi::GroupList = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("group"))),
)]
pub async fn groups(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Prepared {
        domain,
        params,
        format,
        snapshot,
    } = prepare(&state, &domain, Question::Group, query.as_deref(), &headers)?;
    let table = snapshot.table(domain);
    let q = params.group_query(domain, table)?;
    // Made on a miss only: a kept answer has its hints.
    let encoded = cached(&state.cache, &snapshot, &uri, format, || {
        let warnings = params.filter_warnings(domain, table);
        let g = table.group(&q)?;
        let nullable = |name: &str| match name {
            "count" => false,
            _ if q.by.iter().any(|b| b == name) => table.is_nullable(name),
            _ => true,
        };
        let body = encode::encode_frame(&g.frame, format, &nullable, |out, _| {
            group_json(out, domain.as_str(), &g, &warnings)
        })?;
        Ok(Encoded {
            content_type: format.content_type(),
            body: body.into(),
            total: Some(g.frame.num_rows()),
            next: None,
            warnings: warnings.clone(),
            variants: Default::default(),
            sent: Default::default(),
        })
    })?;
    Ok(respond(&encoded))
}
