//! The fitted models' questions: logistic fits of batch sweeps over the filtered runs, through
//! the service's fit cache (a fit is made once per snapshot and question, whoever asks).

use std::sync::Arc;

use crate::service::{Service, ServiceError, Snapshot};

use super::answer::{Answer, Nullable, Rows, Shape};
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
