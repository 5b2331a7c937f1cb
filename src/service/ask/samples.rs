//! The raw-derived samples of LLM runs, long form (docs/toolkit.md §11.1, §11.2): output lengths
//! and smoothed inter-token latencies of one run or of the filtered runs, one row per value with
//! the run's key columns, from the service's derived data of each run. Such an answer reaches
//! millions of rows: it is not made as a `Frame` but written from each run's values
//! (`encode::per_sample`), and when it is long it is sent while it is written, not held.

use std::sync::Arc;

use crate::engine::Domain;
use crate::rawfile;
use crate::service::encode::per_sample::{
    Segment, Values, arrow_pieces, encode_long, estimated_bytes, write_long,
};
use crate::service::{Service, ServiceError, Snapshot};

use super::answer::{Encoded, Sent, SentBody};
use super::declare::{ITL_MANY, ITL_ONE, OUTPUT_LENGTHS_MANY, OUTPUT_LENGTHS_ONE};
use super::format::Format;
use super::raw::{KEY_COLUMNS, target_rows};
use super::request::Request;

/// Which samples a question asks for.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    OutputLengths,
    Itl,
}

impl Kind {
    /// The samples `req` asks for, if it asks for samples (ITL statistics, `summary=true`, are a
    /// question of `raw`).
    pub(super) fn of(req: &Request) -> Result<Option<Kind>, ServiceError> {
        Ok(match req.question {
            OUTPUT_LENGTHS_ONE | OUTPUT_LENGTHS_MANY => Some(Kind::OutputLengths),
            ITL_ONE | ITL_MANY if !req.params.flag("summary")? => Some(Kind::Itl),
            _ => None,
        })
    }

    /// The value column's name.
    fn column(self) -> &'static str {
        match self {
            Kind::OutputLengths => "output_len",
            Kind::Itl => "itl_s",
        }
    }
}

/// A samples answer: whole (to be kept), or sent as it is made.
pub(super) enum Made {
    Whole(Box<Encoded>),
    Sent(Sent),
}

/// The samples `kind` of `req`'s runs in `req.format`. An Arrow answer is the values' own
/// buffers, framed; a text or Parquet answer estimated at `stream_bytes` or more is written while
/// it is sent. Neither is held: the derived data they come from is.
pub(super) async fn answer(
    service: &Service,
    req: &Request,
    snapshot: &Arc<Snapshot>,
    kind: Kind,
    stream_bytes: usize,
) -> Result<Made, ServiceError> {
    let include_unsuccessful = match kind {
        Kind::OutputLengths => req.params.flag("include_unsuccessful")?,
        Kind::Itl => false,
    };
    let t = &snapshot.llm;
    let rows = target_rows(req, snapshot)?;
    let warnings = req.params.filter_warnings(Domain::Llm, t);
    // One segment per run, or per chunk of a run's ITL samples.
    let mut segments = Vec::with_capacity(rows.len());
    for &row in &rows {
        let raw = service.derived(snapshot, Domain::Llm, row).await?;
        let refused = |e: rawfile::RawError| crate::service::derived::raw_error(t.run_id(row), &e);
        match kind {
            Kind::OutputLengths => {
                let lengths =
                    rawfile::output_lengths(&raw, include_unsuccessful).map_err(refused)?;
                segments.push(Segment {
                    row,
                    values: Values::Int(lengths.into()),
                });
            }
            Kind::Itl => {
                let samples = rawfile::itl_samples(&raw).map_err(refused)?;
                segments.extend(samples.chunks().iter().map(|c| Segment {
                    row,
                    values: Values::Float(c.clone()),
                }));
            }
        }
    }
    let keys: Vec<usize> = KEY_COLUMNS
        .iter()
        .map(|n| t.field_index(n).expect("llm key field"))
        .collect();
    let value = kind.column();
    let format = req.format;
    let total: usize = segments.iter().map(|s| s.values.len()).sum();
    let sent = |body| {
        Made::Sent(Sent {
            content_type: format.content_type(),
            total: Some(total),
            warnings: warnings.clone(),
            body,
        })
    };
    if format == Format::Arrow {
        return Ok(sent(SentBody::Pieces(arrow_pieces(
            t, &keys, &segments, value,
        )?)));
    }
    if estimated_bytes(t, &keys, &segments, value, format) >= stream_bytes {
        let snapshot = snapshot.clone();
        return Ok(sent(SentBody::Written(Box::new(move |out| {
            write_long(&snapshot.llm, &keys, &segments, value, format, out)
                .map_err(|e| e.to_string())
        }))));
    }
    let body = encode_long(t, &keys, &segments, value, format)?;
    Ok(Made::Whole(Box::new(Encoded {
        total: Some(total),
        warnings,
        ..Encoded::new(format.content_type(), body)
    })))
}
