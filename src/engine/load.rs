//! Loading a compiled data directory (`runs/llm.parquet`, `runs/diffusion.parquet`) through
//! DataFusion into `RunTable`s, and registering the normalised tables for SQL access.

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

use super::arrow_conv::{column_from_array, frame_to_batch};
use super::fields::published_fields;
use super::frame::ColumnData;
use super::{Dataset, DatasetSource, Domain, EngineError, RunTable};

/// The parquet file of a domain inside a compiled data directory.
pub fn parquet_path(root: &Path, domain: Domain) -> std::path::PathBuf {
    root.join("runs").join(format!("{}.parquet", domain.as_str()))
}

async fn read_parquet(ctx: &SessionContext, path: &Path) -> Result<Vec<RecordBatch>, EngineError> {
    if !path.is_file() {
        return Err(EngineError::Load(format!("{} does not exist", path.display())));
    }
    let path_str = path.to_str().ok_or_else(|| EngineError::Load(format!("non-UTF-8 path {}", path.display())))?;
    let df = ctx.read_parquet(path_str, ParquetReadOptions::default()).await?;
    Ok(df.collect().await?)
}

/// Normalise parquet batches to the published columns of `domain`. Every published column must
/// be present (as the toolkit's `from_parquet` requires); extra columns are ignored. A file with
/// no columns at all (what the toolkit writes for an empty collection) is an empty table.
pub fn table_from_batches(domain: Domain, batches: &[RecordBatch]) -> Result<RunTable, EngineError> {
    let specs = published_fields(domain);
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => return RunTable::from_published(domain, specs.iter().map(|s| ColumnData::empty(s.ty)).collect()),
    };
    if schema.fields().is_empty() {
        return RunTable::from_published(domain, specs.iter().map(|s| ColumnData::empty(s.ty)).collect());
    }
    let mut columns = Vec::with_capacity(specs.len());
    for spec in specs {
        let idx = schema.index_of(spec.name).map_err(|_| {
            EngineError::Load(format!("{}.parquet has no column '{}'", domain.as_str(), spec.name))
        })?;
        let mut data = ColumnData::empty(spec.ty);
        for batch in batches {
            let part = column_from_array(spec, batch.column(idx))?;
            match (&mut data, part) {
                (ColumnData::Str(a), ColumnData::Str(b)) => a.extend(b),
                (ColumnData::Int(a), ColumnData::Int(b)) => a.extend(b),
                (ColumnData::Float(a), ColumnData::Float(b)) => a.extend(b),
                (ColumnData::Bool(a), ColumnData::Bool(b)) => a.extend(b),
                _ => unreachable!("column_from_array returns the spec's type"),
            }
        }
        columns.push(data);
    }
    RunTable::from_published(domain, columns)
}

/// Load a compiled data directory from the local file system.
pub async fn load_compiled_dir(root: &Path) -> Result<Dataset, EngineError> {
    // Statistics collection stays off: with it, DataFusion 55 turns a column whose parquet min == max
    // into a constant, but parquet min/max skip NaN, so [48105.0, NaN] would read back as
    // [48105.0, 48105.0] (apache/datafusion#19136 rewrites, #24804 NaN bounds). The tables are
    // small and read once, so the statistics buy nothing here.
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_collect_statistics(false));
    let llm = table_from_batches(Domain::Llm, &read_parquet(&ctx, &parquet_path(root, Domain::Llm)).await?)?;
    let diffusion =
        table_from_batches(Domain::Diffusion, &read_parquet(&ctx, &parquet_path(root, Domain::Diffusion)).await?)?;
    register_tables(&ctx, &[&llm, &diffusion])?;
    let root = std::path::absolute(root)?;
    Ok(Dataset {
        generation: super::next_generation(),
        llm,
        diffusion,
        source: DatasetSource {
            location: format!("local:{}", root.display()),
            revision: None,
            root: Some(root),
        },
        loaded_at: SystemTime::now(),
        ctx,
    })
}

/// Register `llm_runs` / `diffusion_runs` as in-memory DataFusion tables (normalised schema,
/// default order, with `run_id`).
fn register_tables(ctx: &SessionContext, tables: &[&RunTable]) -> Result<(), EngineError> {
    for t in tables {
        let batch = frame_to_batch(&t.frame, &|name| t.is_nullable(name))?;
        let mem = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        ctx.register_table(format!("{}_runs", t.domain.as_str()), Arc::new(mem))?;
    }
    Ok(())
}
