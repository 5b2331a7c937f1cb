//! The leaderboard's LLM output-length histograms (docs/leaderboard.md): per (model, task) group of
//! stable runs, numpy's 50 equal bins over the pooled lengths of the group's successful requests,
//! and each run counted on those shared edges. A compiled directory carries them as
//! `histograms/llm_output_lengths.parquet` (one row per run and bin: `sample` writes it from the
//! published bins, `build` from the raw files it reads), so the leaderboard is served without
//! reading a raw file; the service reads them at load ([`read_histograms`]) and computes a group's
//! from its runs' raw results only where they are missing.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::engine::frame::{ColumnData, Frame, FrameColumn};
use crate::engine::{EngineError, RunTable};
use crate::pycompat::numpy::np_histogram;

/// Where a compiled directory keeps them.
pub const PATH: &str = "histograms/llm_output_lengths.parquet";

/// Bins of an output-length histogram.
pub const BINS: usize = 50;

/// One run's output-length histogram: 51 edges, 50 counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub bins: Vec<f64>,
    pub counts: Vec<i64>,
}

/// Histograms by run id.
pub type Histograms = HashMap<String, Histogram>;

/// Histograms of a group of runs from their output lengths (successful requests): numpy's 50
/// equal bins over the pooled lengths, then each run counted on those edges as
/// `np.histogram(lengths, bins=edges)` counts (half-open bins, the last closed).
pub fn group_histograms(runs: &[(String, Vec<i64>)]) -> Histograms {
    let pooled: Vec<f64> = runs
        .iter()
        .flat_map(|(_, l)| l.iter().map(|&v| v as f64))
        .collect();
    let (edges, _) = np_histogram(&pooled, BINS);
    runs.iter()
        .map(|(id, lengths)| {
            let mut counts = vec![0i64; BINS];
            let last = edges[BINS];
            for &v in lengths {
                let x = v as f64;
                if x < edges[0] || x > last {
                    continue;
                }
                // The bin whose [lo, hi) holds x; the last bin also holds its upper edge.
                let i = edges
                    .partition_point(|&e| e <= x)
                    .saturating_sub(1)
                    .min(BINS - 1);
                counts[i] += 1;
            }
            (
                id.clone(),
                Histogram {
                    bins: edges.clone(),
                    counts,
                },
            )
        })
        .collect()
}

/// The histograms of a compiled directory on the local file system, when it has them.
pub fn read_histograms_file(dir: &Path) -> Result<Option<Histograms>, String> {
    let path = dir.join(PATH);
    if !path.is_file() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    read_histograms(bytes.into(), &path.display().to_string()).map(Some)
}

/// The histograms of a `histograms/llm_output_lengths.parquet` file (`path` names it in errors).
/// Input like any dataset file: a run's bins must be 50 consecutive indices with finite, ordered
/// edges and counts that are not negative, else the file is refused.
pub fn read_histograms(bytes: bytes::Bytes, path: &str) -> Result<Histograms, String> {
    use arrow::array::{Array, BooleanArray, Float64Array, Int64Array, StringArray};
    let path = std::path::PathBuf::from(path);
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.build())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut rows: HashMap<String, Vec<(i64, f64, f64, i64)>> = HashMap::new();
    for batch in reader {
        let batch = batch.map_err(|e| format!("{}: {e}", path.display()))?;
        let col = |name: &str| {
            batch
                .column_by_name(name)
                .ok_or_else(|| format!("{}: no column {name}", path.display()))
        };
        let ids = col("run_id")?
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or("run_id is not a string column")?;
        let index = col("bin_index")?
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or("bin_index is not int64")?;
        let lo = col("bin_lo")?
            .as_any()
            .downcast_ref::<Float64Array>()
            .ok_or("bin_lo is not double")?;
        let hi = col("bin_hi")?
            .as_any()
            .downcast_ref::<Float64Array>()
            .ok_or("bin_hi is not double")?;
        let count = col("count")?
            .as_any()
            .downcast_ref::<Int64Array>()
            .ok_or("count is not int64")?;
        let _ = col("right_closed")?
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or("right_closed is not bool")?;
        for i in 0..batch.num_rows() {
            if ids.is_null(i) {
                continue;
            }
            rows.entry(ids.value(i).to_string()).or_default().push((
                index.value(i),
                lo.value(i),
                hi.value(i),
                count.value(i),
            ));
        }
    }
    let mut out = HashMap::with_capacity(rows.len());
    for (id, mut bins) in rows {
        bins.sort_by_key(|b| b.0);
        let consecutive = bins.len() == BINS
            && bins
                .iter()
                .enumerate()
                .all(|(i, b)| b.0 == i as i64 && b.3 >= 0);
        let mut edges: Vec<f64> = bins.iter().map(|b| b.1).collect();
        edges.push(bins.last().map_or(0.0, |b| b.2));
        let ordered = edges.iter().all(|e| e.is_finite()) && edges.is_sorted();
        if !consecutive || !ordered {
            return Err(format!(
                "{}: run '{id}' does not have {BINS} bins with ordered finite edges and counts of zero or more",
                path.display()
            ));
        }
        out.insert(
            id,
            Histogram {
                bins: edges,
                counts: bins.iter().map(|b| b.3).collect(),
            },
        );
    }
    Ok(out)
}

/// One bin of a run's histogram as the file keeps it.
pub struct Bin {
    /// The run's row in the table.
    pub row: usize,
    pub index: i64,
    pub lo: f64,
    pub hi: f64,
    pub right_closed: bool,
    pub count: i64,
}

/// The bins of `histograms` (by run id) for the rows of `llm`, in row order.
pub fn bins_of(llm: &RunTable, histograms: &Histograms) -> Vec<Bin> {
    let mut out = Vec::new();
    for row in 0..llm.len() {
        let Some(h) = histograms.get(llm.run_id(row)) else {
            continue;
        };
        for (i, &count) in h.counts.iter().enumerate() {
            out.push(Bin {
                row,
                index: i as i64,
                lo: h.bins[i],
                hi: h.bins[i + 1],
                right_closed: i + 1 == h.counts.len(),
                count,
            });
        }
    }
    out
}

/// Write `histograms/llm_output_lengths.parquet` under `out`: one row per (run, bin), keyed by the
/// run's id and described by its configuration, in the order of `bins` (sorted by row and index).
pub fn write_histograms(out: &Path, llm: &RunTable, mut bins: Vec<Bin>) -> Result<(), EngineError> {
    bins.sort_by_key(|b| (b.row, b.index));
    let rows: Vec<Option<usize>> = bins.iter().map(|b| Some(b.row)).collect();
    let col = |name: &str| -> Result<FrameColumn, EngineError> {
        let i = llm
            .field_index(name)
            .ok_or_else(|| EngineError::Load(format!("the LLM table has no field {name}")))?;
        Ok(FrameColumn {
            name: name.to_string(),
            data: llm.column(i).take(&rows),
        })
    };
    let frame = Frame {
        columns: vec![
            col("run_id")?,
            col("task")?,
            col("model_id")?,
            col("gpu_model")?,
            col("num_gpus")?,
            col("max_num_seqs")?,
            col("num_request_repeats")?,
            FrameColumn {
                name: "bin_index".into(),
                data: ColumnData::Int(bins.iter().map(|b| Some(b.index)).collect()),
            },
            FrameColumn {
                name: "bin_lo".into(),
                data: ColumnData::Float(bins.iter().map(|b| Some(b.lo)).collect()),
            },
            FrameColumn {
                name: "bin_hi".into(),
                data: ColumnData::Float(bins.iter().map(|b| Some(b.hi)).collect()),
            },
            FrameColumn {
                name: "right_closed".into(),
                data: ColumnData::Bool(bins.iter().map(|b| Some(b.right_closed)).collect()),
            },
            FrameColumn {
                name: "count".into(),
                data: ColumnData::Int(bins.iter().map(|b| Some(b.count)).collect()),
            },
        ],
    };
    crate::engine::arrow_conv::write_parquet(&out.join(PATH), &frame, &|_| false)
}

/// The histograms the leaderboard shows for `llm`'s stable runs, from each run's output lengths
/// (successful requests; by row): a group (model, task) whose every stable run has its lengths
/// gets histograms on its shared edges, a group with a run missing gets none (the server then
/// reads that group's raw files when its file is asked for).
pub fn leaderboard_histograms(llm: &RunTable, lengths: &[Option<Vec<i64>>]) -> Histograms {
    let stable = llm.field_index("is_stable");
    let (model, task) = (llm.field_index("model_id"), llm.field_index("task"));
    let text = |col: Option<usize>, row: usize| match col.map(|c| llm.column(c).get(row)) {
        Some(crate::engine::frame::Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for row in 0..llm.len() {
        let is_stable = match stable.map(|c| llm.column(c).get(row)) {
            Some(crate::engine::frame::Value::Bool(b)) => b,
            _ => false,
        };
        if is_stable {
            groups
                .entry((text(model, row), text(task, row)))
                .or_default()
                .push(row);
        }
    }
    let mut out = Histograms::new();
    for rows in groups.into_values() {
        let runs: Option<Vec<(String, Vec<i64>)>> = rows
            .iter()
            .map(|&r| {
                let l = lengths.get(r)?.as_ref()?;
                Some((llm.run_id(r).to_string(), l.clone()))
            })
            .collect();
        if let Some(runs) = runs {
            out.extend(group_histograms(&runs));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_on_shared_edges() {
        let runs = vec![
            ("a".to_string(), vec![2, 10, 100]),
            ("b".to_string(), vec![102, 2, 51]),
        ];
        let h = group_histograms(&runs);
        let (a, b) = (&h["a"], &h["b"]);
        assert_eq!(a.bins, b.bins);
        assert_eq!(a.bins[0], 2.0);
        assert_eq!(a.bins[50], 102.0);
        assert_eq!(a.counts.iter().sum::<i64>(), 3);
        assert_eq!(b.counts[49], 1, "the maximum is in the last, closed bin");
        assert_eq!(a.counts[0] + b.counts[0], 2);
        // The sum equals numpy's histogram of the pooled lengths.
        let (_, pooled) = np_histogram(&[2.0, 10.0, 100.0, 102.0, 2.0, 51.0], 50);
        let sum: Vec<i64> = a.counts.iter().zip(&b.counts).map(|(x, y)| x + y).collect();
        assert_eq!(sum, pooled.iter().map(|&c| c as i64).collect::<Vec<_>>());
    }
}
