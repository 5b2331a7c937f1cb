//! Fitted models over the dataset (docs/toolkit.md §12): logistic fits of batch sweeps of the
//! filtered runs (`/v1/{domain}/fits/logistic`), and the ITL mixture of one run or of each
//! filtered run (`/v1/llm/runs/{run_id}/itl-mixture`, `/v1/llm/fits/itl-mixture`). Fits are
//! cached and persisted by the service (`service::fits`).

use std::sync::Arc;

use axum::extract::{OriginalUri, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::answer::{frame_rows, lookup};
use super::error::AppError;
use super::state::{ApiPath, AppState, Prepared, ask, prepare};
use crate::engine::Domain;
use crate::engine::frame::{ColumnData, Frame, FrameColumn};
use crate::engine::models::ItlMixtureModel;
use crate::service::ServiceError;
use crate::service::ask::raw::{KEY_COLUMNS, table_columns};
use crate::service::ask::{self as ask, Question};

/// A fit frame as rows, cached per request.
fn answer(
    state: &AppState,
    p: &Prepared,
    uri: &axum::http::Uri,
    frame: &Frame,
    warnings: Vec<String>,
) -> Result<Response, AppError> {
    frame_rows(&state.cache, &p.snapshot, uri, p.format, warnings, || {
        Ok(frame)
    })
}

/// Logistic fits of batch sweeps.
///
/// The runs are filtered as `/runs` filters them and grouped by `by` (default model_id, task,
/// gpu_model, num_gpus). In each group, for each field `y`, x is log2 of each batch size (at least
/// 1) and y the median of the field over the runs of that batch size; the toolkit's
/// `LogisticModel.fit` (a 40 × 60 grid of x0 and k, least squares of the baseline and amplitude at
/// each point) gives `L`, `x0`, `k`, `b0`. One row per (group, field) with the number of batch
/// sizes fitted, the fit's mse, R² and largest relative residual (read R² before trusting a
/// prediction), `degenerate` when there was nothing to search (one batch size, or a constant
/// field), and a `pred_<batch>` column per batch size in `predict`.
#[utoipa::path(
    get,
    path = "/v1/{domain}/fits/logistic",
    tag = "models",
    params(("domain" = crate::engine::Domain, Path, description = "llm or diffusion")),
    responses(
        (status = 200, description = "One row per (group, field): the by fields, y, L, x0, k, b0, n, batch_sizes, mse, r2, max_rel_residual, degenerate, pred_<batch>...",
            content(
                (Vec<super::openapi::LogisticFitRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::LookupProblems,
    ),
    extensions(("x-query" = json!("sweep"))),
)]
pub async fn logistic_fits(
    State(state): State<AppState>,
    ApiPath(domain): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let q = query.as_deref();
    ask(
        &state,
        Question::Sweep,
        &domain,
        None,
        uri.path(),
        q,
        &headers,
    )
    .await
}

/// The mixture fit of one LLM run (a frame of one row), through the fit cache.
async fn run_mixture(
    state: &AppState,
    p: &Prepared,
    row: usize,
    max_samples: Option<usize>,
    seed: u64,
) -> Result<Arc<Frame>, AppError> {
    let t = &p.snapshot.llm;
    let run_id = t.run_id(row).to_string();
    let request = format!("itl-mixture|{run_id}|{max_samples:?}|{seed}");
    let service = &state.service;
    let snapshot = p.snapshot.clone();
    let fitted = state
        .service
        .fit(&p.snapshot, &request, async move {
            let d = service.derived(&snapshot, Domain::Llm, row).await?;
            let samples = crate::rawfile::itl_samples(&d)
                .map_err(|e| crate::service::derived::raw_error(&run_id, &e))?;
            let total = samples.len();
            let joined = samples.joined();
            let used = max_samples.map_or(total, |m| total.min(m));
            let model = tokio::task::spawn_blocking(move || {
                ItlMixtureModel::fit(&joined, max_samples, seed)
            })
            .await
            .map_err(|e| ServiceError::Internal(format!("fit task failed: {e}")))?;
            Ok(mixture_row(&snapshot.llm, Some((row, &model, used, total))))
        })
        .await?;
    Ok(fitted)
}

/// One row: the run's key columns, the seven parameters, the mixture's mean and variance, and
/// the samples fitted and held; with no run, the same columns empty.
fn mixture_row(
    t: &crate::engine::RunTable,
    fit: Option<(usize, &ItlMixtureModel, usize, usize)>,
) -> Frame {
    let rows: Vec<Option<usize>> = fit.iter().map(|f| Some(f.0)).collect();
    let mut columns = table_columns(t, &KEY_COLUMNS, &rows);
    let values: Option<[f64; 9]> = fit.map(|(_, m, _, _)| {
        let (mean, var) = m.mean_var();
        [
            m.loc,
            m.pi_steady,
            m.sigma_steady,
            m.scale_steady,
            m.pi_stall,
            m.sigma_stall,
            m.scale_stall,
            mean,
            var,
        ]
    });
    let names = crate::engine::models::itl_mixture::PARAMETERS
        .iter()
        .copied()
        .chain(["mean_s", "variance_s2"]);
    for (i, name) in names.enumerate() {
        columns.push(FrameColumn {
            name: name.to_string(),
            data: ColumnData::Float(values.iter().map(|v| Some(v[i])).collect()),
        });
    }
    for (name, pick) in [("n", 2usize), ("n_samples", 3)] {
        columns.push(FrameColumn {
            name: name.to_string(),
            data: ColumnData::Int(
                fit.iter()
                    .map(|f| Some(if pick == 2 { f.2 } else { f.3 } as i64))
                    .collect(),
            ),
        });
    }
    Frame { columns }
}

/// Rows of frames with the same columns, one after the other.
fn stack(frames: &[Arc<Frame>]) -> Frame {
    let Some(first) = frames.first() else {
        return Frame::default();
    };
    let mut out = Frame {
        columns: first
            .columns
            .iter()
            .map(|c| FrameColumn {
                name: c.name.clone(),
                data: c.data.take(&[]),
            })
            .collect(),
    };
    for f in frames {
        for r in 0..f.num_rows() {
            for (o, c) in out.columns.iter_mut().zip(&f.columns) {
                o.data.push_from(&c.data, r);
            }
        }
    }
    out
}

/// The ITL mixture of one LLM run.
///
/// The toolkit's `ITLMixtureModel.fit` of the run's smoothed ITL samples (the `itl` endpoint's),
/// at most `max_samples` of them drawn at random without replacement (seeded by `seed`; the
/// random stream is not numpy's, the distribution of the draw is the same), or all of them with
/// `max_samples=all`. One row: the run's keys, loc, pi_steady, sigma_steady, scale_steady,
/// pi_stall, sigma_stall, scale_stall, the mixture's mean (s) and variance (s²), the samples
/// fitted (`n`) and held (`n_samples`).
#[utoipa::path(
    get,
    path = "/v1/llm/runs/{run_id}/itl-mixture",
    tag = "models",
    params(("run_id" = String, Path, description = "Run id")),
    responses(
        (status = 200, description = "One row: run_id, task, model_id, num_gpus, max_num_seqs, the seven parameters, mean_s, variance_s2, n, n_samples",
            content(
                (Vec<super::openapi::ItlMixtureRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("itl_mixture_one"))),
)]
pub async fn run_itl_mixture(
    State(state): State<AppState>,
    ApiPath(run): ApiPath<String>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let _place = state.door.costly_place()?;
    let p = prepare(
        &state,
        "llm",
        ask::ITL_MIXTURE_ONE,
        query.as_deref(),
        &headers,
    )?;
    let row = p
        .snapshot
        .llm
        .row_of(&run)
        .ok_or_else(|| AppError::UnknownRun {
            domain: "llm".into(),
            run_id: run.clone(),
        })?;
    let (max_samples, seed) = (p.params.max_samples()?, p.params.seed()?);
    if let Some(hit) = lookup(&state.cache, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let frame = run_mixture(&state, &p, row, max_samples, seed).await?;
    answer(&state, &p, &uri, &frame, Vec::new())
}

/// ITL mixtures of the filtered LLM runs, one row per run in the default order. Any run without
/// usable raw results fails the request, naming it.
#[utoipa::path(
    get,
    path = "/v1/llm/fits/itl-mixture",
    tag = "models",
    responses(
        (status = 200, description = "One row per run, as /v1/llm/runs/{run_id}/itl-mixture",
            content(
                (Vec<super::openapi::ItlMixtureRow> = "application/json"),
                (String = "text/csv"),
                (String = "application/x-ndjson"),
                (Vec<u8> = "application/vnd.apache.arrow.stream"),
                (Vec<u8> = "application/vnd.apache.parquet"),
            )),
        super::problems::RawProblems,
    ),
    extensions(("x-query" = json!("itl_mixture_many"))),
)]
pub async fn itl_mixtures(
    State(state): State<AppState>,
    OriginalUri(uri): OriginalUri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let _place = state.door.costly_place()?;
    let p = prepare(
        &state,
        "llm",
        ask::ITL_MIXTURE_MANY,
        query.as_deref(),
        &headers,
    )?;
    let rows = p.filtered_rows()?;
    let (max_samples, seed) = (p.params.max_samples()?, p.params.seed()?);
    if let Some(hit) = lookup(&state.cache, &p.snapshot, &uri, p.format) {
        return Ok(hit);
    }
    let warnings = p.params.filter_warnings(Domain::Llm, &p.snapshot.llm);
    let mut frames = Vec::with_capacity(rows.len());
    for row in rows {
        frames.push(run_mixture(&state, &p, row, max_samples, seed).await?);
    }
    let frame = if frames.is_empty() {
        // No run: the columns still, so every format has its schema.
        mixture_row(&p.snapshot.llm, None)
    } else {
        stack(&frames)
    };
    answer(&state, &p, &uri, &frame, warnings)
}
