//! An import directory: one parquet file per table (`runs.parquet`, `requests.parquet`, ...), written
//! by `mlenergy-server import` and read by `serve --import`. Re-importing a source replaces its rows
//! and keeps every other source's; a source whose files did not change keeps its import time, so
//! an unchanged import writes the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::concat_batches;
use arrow::datatypes::{DataType, Field, Schema};
use parquet::file::properties::EnabledStatistics;

use super::Tables;
use super::schema::{self, Col};
use mlenergy_engine::EngineError;
use mlenergy_engine::arrow_conv::{
    Columns, frame_from_batch, frame_to_dictionary_batch, parquet_properties,
    write_parquet_parallel,
};
use mlenergy_engine::frame::{Frame, FrameColumn, Value};

/// The tables of an import, as frames (every table present, possibly empty).
#[derive(Debug, Clone, Default)]
pub struct Frames(pub BTreeMap<&'static str, Frame>);

pub fn empty(cols: &[Col]) -> Frame {
    Frame {
        columns: cols
            .iter()
            .map(|c| FrameColumn {
                name: c.name.to_string(),
                data: c.ty.column(0),
            })
            .collect(),
    }
}

/// The source ids of a sources table.
pub fn source_ids(f: &Frame) -> BTreeSet<String> {
    let c = &f.column("source_id").expect("source_id").data;
    (0..f.num_rows())
        .filter_map(|r| match c.get(r) {
            Value::Str(s) => Some(s.to_string()),
            _ => None,
        })
        .collect()
}

/// Write an import directory: each table's file holds the rows kept from an earlier import, then
/// the new `sources` rows and the new sources' tables (`parts`, written from their Arrow columns
/// as they are; the latency samples from their series). Each table's parts are joined, and the
/// tables and their columns are encoded, on every core. Text is written as parquet dictionaries,
/// without statistics (a run id's minimum and maximum over a row group prune nothing, and
/// comparing every row's text costs more than the dictionary); numbers are written plain, with
/// statistics, except integer columns of long runs, which `engine::parquet_runs` writes as
/// dictionaries; latency values are written uncompressed. A column without nulls is written as
/// required (no definition levels). Every table is written to a temporary file first and the
/// files replace the old ones only once all are written, so a failed import leaves the directory
/// as it was.
pub fn write_import(
    dir: &Path,
    kept: &Frames,
    sources: &Frame,
    parts: Vec<Tables>,
) -> Result<(), EngineError> {
    use rayon::prelude::*;
    // Each table: the kept rows' batch, and a job that adds the new rows.
    let mut tables: BTreeMap<&'static str, (RecordBatch, Option<TableJob>)> = BTreeMap::new();
    for (name, f) in &kept.0 {
        tables.insert(name, (frame_to_dictionary_batch(f, &nulls(f))?, None));
    }
    let new_sources = frame_to_dictionary_batch(sources, &nulls(sources))?;
    let mut jobs = Tables::into_jobs(parts);
    jobs.push((
        "sources",
        Box::new(move |kept| Ok(Box::new(concat(vec![kept, new_sources])?))),
    ));
    for (name, job) in jobs {
        if let Some(t) = tables.get_mut(name) {
            t.1 = Some(job);
        }
    }
    let temp = |name: &str| dir.join(format!(".{name}.parquet.tmp"));
    let written: Vec<(&'static str, Result<(), EngineError>)> = tables
        .into_par_iter()
        .map(|(name, (kept, job))| {
            let write = || {
                let table: Box<dyn Columns> = match job {
                    Some(job) => job(kept)?,
                    None => Box::new(concat(vec![kept])?),
                };
                let mut props = parquet_properties().set_dictionary_enabled(false);
                for (c, f) in table.schema().fields().iter().enumerate() {
                    let path = parquet::schema::types::ColumnPath::from(f.name().as_str());
                    if let Some(codec) = table.codec(c) {
                        props = props.set_column_compression(path.clone(), codec);
                    }
                    if matches!(f.data_type(), DataType::Dictionary(..)) {
                        props = props
                            .set_column_dictionary_enabled(path.clone(), true)
                            .set_column_statistics_enabled(path, EnabledStatistics::None);
                    }
                }
                write_parquet_parallel(&temp(name), table.as_ref(), props.build())
            };
            (name, write())
        })
        .collect();
    let names: Vec<&str> = written.iter().map(|(name, _)| *name).collect();
    if let Some(e) = written.into_iter().find_map(|(_, r)| r.err()) {
        for name in names {
            let _ = std::fs::remove_file(temp(name));
        }
        return Err(e);
    }
    for name in names {
        std::fs::rename(temp(name), dir.join(format!("{name}.parquet")))?;
    }
    Ok(())
}

/// Whether a frame's column holds a null (a column that does not is written as required).
fn nulls(f: &Frame) -> impl Fn(&str) -> bool + Sync + '_ {
    move |c| f.column(c).is_some_and(|c| c.data.has_null())
}

/// A table to write from the kept rows' batch of an earlier import (made when run, on any core).
pub type TableJob = Box<dyn FnOnce(RecordBatch) -> Result<Box<dyn Columns>, EngineError> + Send>;

/// One batch of a table's parts (the first gives the column types), each column nullable when a
/// part holds a null there; a single part with rows is taken as it is.
pub(super) fn concat(parts: Vec<RecordBatch>) -> Result<RecordBatch, EngineError> {
    let first = parts
        .first()
        .expect("the kept rows' batch comes first")
        .schema();
    let fields: Vec<Field> = first
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let nullable = parts.iter().any(|b| b.column(i).null_count() > 0);
            f.as_ref().clone().with_nullable(nullable)
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let mut rows: Vec<RecordBatch> = parts
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()))
        .collect::<Result<_, _>>()?;
    Ok(match rows.len() {
        0 => RecordBatch::new_empty(schema),
        1 => rows.pop().expect("one"),
        _ => concat_batches(&schema, &rows)?,
    })
}

impl Frames {
    pub fn from_tables(t: Tables) -> Frames {
        Frames(BTreeMap::from([
            ("sources", t.sources.into_frame()),
            ("runs", t.runs.into_frame()),
            ("run_metrics", t.run_metrics.into_frame()),
            ("requests", t.requests.into_frame()),
            ("turns", t.turns.into_frame()),
            ("tool_calls", t.tool_calls.into_frame()),
            ("timeseries", t.timeseries.into_frame()),
            ("latency_samples", t.latency_samples.into_frame()),
            ("evaluations", t.evaluations.into_frame()),
            ("reported_stats", t.reported_stats.into_frame()),
        ]))
    }

    pub fn table(&self, name: &str) -> &Frame {
        self.0.get(name).expect("every table is present")
    }

    /// The source ids present.
    pub fn source_ids(&self) -> BTreeSet<String> {
        source_ids(self.table("sources"))
    }

    /// Rows of every table that belong to a source for which `keep` holds.
    pub fn retain_sources(&self, keep: impl Fn(&str) -> bool) -> Frames {
        let mut m = BTreeMap::new();
        for (name, f) in &self.0 {
            let key = if f.column("source_id").is_some() {
                "source_id"
            } else {
                "run_id"
            };
            let c = &f
                .column(key)
                .expect("every table has source_id or run_id")
                .data;
            let rows: Vec<usize> = (0..f.num_rows())
                .filter(|&r| match c.get(r) {
                    Value::Str(s) => keep(if key == "run_id" {
                        s.split('~').next().unwrap_or(s)
                    } else {
                        s
                    }),
                    _ => false,
                })
                .collect();
            let cols: Vec<usize> = (0..f.columns.len()).collect();
            m.insert(*name, f.select(&rows, &cols));
        }
        Frames(m)
    }

    /// These tables followed by `other`'s rows.
    pub fn append(mut self, other: Frames) -> Frames {
        for (name, f) in other.0 {
            match self.0.get_mut(name) {
                Some(mine) => {
                    for (a, b) in mine.columns.iter_mut().zip(f.columns) {
                        a.data.extend(b.data);
                    }
                }
                None => {
                    self.0.insert(name, f);
                }
            }
        }
        self
    }

    /// Write every table to `dir/<table>.parquet` (see [`write_import`]).
    pub fn write(&self, dir: &Path) -> Result<(), EngineError> {
        write_import(dir, self, &empty(schema::SOURCE_COLUMNS), Vec::new())
    }

    /// Read an import directory. A table file that is missing reads as empty; a malformed one, or
    /// one whose columns are not this version's, is an error naming it.
    pub fn read(dir: &Path) -> Result<Frames, EngineError> {
        let mut m = BTreeMap::new();
        for (name, cols) in schema::TABLES {
            let path = dir.join(format!("{name}.parquet"));
            let frame = if path.is_file() {
                let file = std::fs::File::open(&path)?;
                let reader =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
                        .and_then(|b| b.build())
                        .map_err(|e| EngineError::Load(format!("{}: {e}", path.display())))?;
                let mut frame = empty(cols);
                for batch in reader {
                    let batch =
                        batch.map_err(|e| EngineError::Load(format!("{}: {e}", path.display())))?;
                    let f = frame_from_batch(&batch)?;
                    let names: Vec<&str> = f.columns.iter().map(|c| c.name.as_str()).collect();
                    let want: Vec<&str> = cols.iter().map(|c| c.name).collect();
                    if names != want {
                        return Err(EngineError::Load(format!(
                            "{}: columns are not those of this version's '{name}' table; import the sources again",
                            path.display()
                        )));
                    }
                    for (a, b) in frame.columns.iter_mut().zip(f.columns) {
                        if std::mem::discriminant(&a.data) != std::mem::discriminant(&b.data) {
                            return Err(EngineError::Load(format!(
                                "{}: column '{}' has another type",
                                path.display(),
                                a.name
                            )));
                        }
                        a.data.extend(b.data);
                    }
                }
                frame
            } else {
                empty(cols)
            };
            m.insert(*name, frame);
        }
        Ok(Frames(m))
    }
}
