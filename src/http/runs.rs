//! Run endpoints: `GET /v1/{domain}/runs` (filter, sort, page, project) and
//! `GET /v1/{domain}/runs/{run_id}` (one run, every field).

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{Encoded, cached, respond};
use super::encode;
use super::error::AppError;
use super::negotiate::Format;
use super::state::{ApiPath, AppState, Prepared, prepare};
use crate::service::ask::Question;

/// The same request with `offset` replaced.
pub(super) fn page_link(path: &str, query: Option<&str>, offset: usize) -> String {
    let mut ser = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if k != "offset" {
            ser.append_pair(&k, &v);
        }
    }
    ser.append_pair("offset", &offset.to_string());
    format!("{path}?{}", ser.finish())
}

/// List runs.
///
/// Filters follow the reference toolkit: repeated or comma-separated values of one filter are
/// OR, different filters AND; numeric filters take exact values or an inclusive `_min`/`_max`
/// range (not both). LLM lists hold stable runs unless `stability` says otherwise. The default
/// order is (task, model_id, gpu_model, num_gpus, max_num_seqs|batch_size), then `run_id`;
/// `sort` keys come first and the default order breaks their ties.
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
    ),
    responses(
        (status = 200, description = "Matching runs. JSON has an envelope; CSV, NDJSON, Arrow and Parquet carry the rows only, with `X-Total-Count` and a `Link: rel=\"next\"` header when a page follows.",
            headers(("X-Total-Count" = usize, description = "Matching runs before paging")),
            content(
                (super::openapi::RunList = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("list"))),
)]
pub async fn list_runs(
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
    } = prepare(&state, &domain, Question::List, query.as_deref(), &headers)?;
    let table = snapshot.table(domain);
    // The query and the filter hints are made on a miss only: a kept answer has its hints.
    let encoded = cached(&state.cache, &snapshot, &uri, format, || {
        let q = params.run_query(domain, table, state.limits.max_rows)?;
        let path = uri.path();
        let warnings = params.filter_warnings(domain, table);
        let sel = table.select(&q)?;
        let next = match q.limit {
            Some(l) if q.offset.saturating_add(l) < sel.total => {
                Some(page_link(path, query.as_deref(), q.offset + l))
            }
            _ => None,
        };
        let body = if format == Format::Json {
            // The page from the cells' JSON text, written once per snapshot; no frame.
            let cells = state.table_json.get(snapshot.generation, domain, table);
            let mut out = Vec::with_capacity(sel.rows.len() * 64 * sel.columns.len() + 256);
            out.extend_from_slice(b"{\"domain\":");
            encode::json_str(&mut out, domain.as_str());
            out.extend_from_slice(
                format!(
                    ",\"total\":{},\"offset\":{},\"limit\":",
                    sel.total, q.offset
                )
                .as_bytes(),
            );
            match q.limit {
                Some(l) => out.extend_from_slice(l.to_string().as_bytes()),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(format!(",\"count\":{},\"next\":", sel.rows.len()).as_bytes());
            match &next {
                Some(n) => encode::json_str(&mut out, n),
                None => out.extend_from_slice(b"null"),
            }
            encode::json_warnings(&mut out, &warnings);
            out.extend_from_slice(b",\"runs\":");
            cells.write_array(&mut out, &sel.rows, &sel.columns);
            out.push(b'}');
            out
        } else {
            let frame = table.frame_of(&sel);
            // CSV, NDJSON, Arrow, Parquet (the closure writes JSON, not asked for here).
            encode::encode_owned_frame(
                frame,
                format,
                &|name| table.is_nullable(name),
                encode::json_array,
            )?
        };
        Ok(Encoded {
            content_type: format.content_type(),
            body: body.into(),
            total: Some(sel.total),
            next,
            warnings,
            variants: Default::default(),
            sent: Default::default(),
        })
    })?;
    Ok(respond(&encoded))
}

/// One run by id, every field (or those named by `fields`), stable or not.
#[utoipa::path(
    get,
    path = "/v1/{domain}/runs/{run_id}",
    tag = "runs",
    params(
        ("domain" = crate::engine::Domain, Path, description = "llm or diffusion"),
        ("run_id" = String, Path, description = "Run id, e.g. gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1"),
    ),
    responses(
        (status = 200, description = "The run (JSON object; other formats hold one row)",
            content(
                (super::openapi::Run = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("one"))),
)]
pub async fn get_run(
    State(state): State<AppState>,
    ApiPath((domain, run_id)): ApiPath<(String, String)>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Prepared {
        domain,
        params,
        format,
        snapshot,
    } = prepare(&state, &domain, Question::One, query.as_deref(), &headers)?;
    let table = snapshot.table(domain);
    let fields = params.fields(table)?;
    let row = table.row_of(&run_id).ok_or_else(|| AppError::UnknownRun {
        domain: domain.as_str().into(),
        run_id: run_id.clone(),
    })?;
    let encoded = cached(&state.cache, &snapshot, &uri, format, || {
        let cols = table.projection(fields.as_deref())?;
        let frame = table.frame.select(&[row], &cols);
        let body = encode::encode_frame(
            &frame,
            format,
            &|name| table.is_nullable(name),
            |out, frame| encode::json_object(out, frame, 0),
        )?;
        Ok(Encoded {
            content_type: format.content_type(),
            body: body.into(),
            total: None,
            next: None,
            warnings: Vec::new(),
            variants: Default::default(),
            sent: Default::default(),
        })
    })?;
    Ok(respond(&encoded))
}
