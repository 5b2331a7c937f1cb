//! The LLM model files' output-length histograms (docs/leaderboard.md): per (model, task) group,
//! numpy's 50 equal bins over the pooled lengths of the group's successful requests, and each run
//! counted on those shared edges. From a compiled directory's precomputed
//! `histograms/llm_output_lengths.parquet` when it has them, else from the runs' raw results.

use std::collections::HashMap;
use std::path::Path;

use crate::pycompat::numpy::np_histogram;

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

/// The precomputed histograms of a compiled directory (`histograms/llm_output_lengths.parquet`,
/// one row per run and bin), when it has them.
pub fn read_histograms(dir: &Path) -> Result<Option<Histograms>, String> {
    use arrow::array::{Array, BooleanArray, Float64Array, Int64Array, StringArray};
    let path = dir.join("histograms").join("llm_output_lengths.parquet");
    if !path.is_file() {
        return Ok(None);
    }
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
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
        let mut edges: Vec<f64> = bins.iter().map(|b| b.1).collect();
        edges.push(bins.last().map_or(0.0, |b| b.2));
        out.insert(
            id,
            Histogram {
                bins: edges,
                counts: bins.iter().map(|b| b.3).collect(),
            },
        );
    }
    Ok(Some(out))
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
