//! The fitted models' questions: logistic fits of batch sweeps over the filtered runs, and the
//! ITL mixture of one LLM run or of each filtered run, through the service's fit cache (a fit is
//! made once per snapshot and question, whoever asks).

use std::sync::Arc;

use crate::engine::Domain;
use crate::engine::frame::{ColumnData, Frame, FrameColumn};
use crate::engine::models::ItlMixtureModel;
use crate::service::{Service, ServiceError, Snapshot};

use super::answer::{Answer, Nullable, Rows, Shape};
use super::raw::{KEY_COLUMNS, table_columns, target_rows};
use super::request::Request;

/// Logistic fits of the batch sweeps of the filtered runs: one row per (group, field).
pub(super) async fn sweep(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Answer, ServiceError> {
    let table = snapshot.table(req.domain);
    let q = req.params.sweep_query(req.domain, table)?;
    let warnings = req.params.filter_warnings(req.domain, table);
    let request = format!("logistic|{}|{q:?}", req.domain);
    let fitted = snapshot.clone();
    let domain = req.domain;
    let frame = service
        .fit(snapshot, &request, async move {
            tokio::task::spawn_blocking(move || fitted.table(domain).sweep_fits(&q))
                .await
                .map_err(|e| ServiceError::Internal(format!("fit task failed: {e}")))?
                .map_err(|e| ServiceError::Internal(e.to_string()))
        })
        .await?;
    Ok(Answer {
        shape: Shape::Array,
        nullable: Nullable::All,
        total: Some(frame.num_rows()),
        next: None,
        warnings,
        rows: Rows::Shared(frame),
    })
}

/// ITL mixtures of `req`'s run, or of each filtered run in default order: one row per run.
pub(super) async fn mixtures(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
) -> Result<Answer, ServiceError> {
    let rows = target_rows(req, snapshot)?;
    let (max_samples, seed) = (req.params.max_samples()?, req.params.seed()?);
    let warnings = req.params.filter_warnings(Domain::Llm, &snapshot.llm);
    let mut frames = Vec::with_capacity(rows.len());
    for row in rows {
        frames.push(mixture(service, snapshot, row, max_samples, seed).await?);
    }
    let rows = match frames.len() {
        // No run: the columns still, so every format has its schema.
        0 => Rows::Frame(mixture_row(&snapshot.llm, None)),
        1 => Rows::Shared(frames.remove(0)),
        _ => Rows::Frame(stack(&frames)),
    };
    Ok(Answer {
        shape: Shape::Array,
        nullable: Nullable::All,
        total: Some(rows.len()),
        next: None,
        warnings,
        rows,
    })
}

/// The mixture fit of the LLM run in `row` (a frame of one row), through the fit cache.
async fn mixture(
    service: &Service,
    snapshot: &Arc<Snapshot>,
    row: usize,
    max_samples: Option<usize>,
    seed: u64,
) -> Result<Arc<Frame>, ServiceError> {
    let run_id = snapshot.llm.run_id(row).to_string();
    let request = format!("itl-mixture|{run_id}|{max_samples:?}|{seed}");
    let fitted = snapshot.clone();
    service
        .fit(snapshot, &request, async move {
            let d = service.derived(&fitted, Domain::Llm, row).await?;
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
            Ok(mixture_row(&fitted.llm, Some((row, &model, used, total))))
        })
        .await
}

/// One row: the run's key columns, the seven parameters, the mixture's mean and variance, and
/// the samples fitted and held; with no run, the same columns empty.
fn mixture_row(
    t: &crate::engine::RunTable,
    fit: Option<(usize, &ItlMixtureModel, usize, usize)>,
) -> Frame {
    let rows: Vec<Option<usize>> = fit.iter().map(|f| Some(f.0)).collect();
    let mut columns = table_columns(t, &KEY_COLUMNS, &rows);
    let values: Option<Vec<f64>> = fit.map(|(_, m, _, _)| {
        let (mean, var) = m.mean_var();
        m.parameters().into_iter().chain([mean, var]).collect()
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
