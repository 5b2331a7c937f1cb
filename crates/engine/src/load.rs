//! Loading a compiled data directory (`runs/llm.parquet`, `runs/diffusion.parquet`) through
//! DataFusion into `RunTable`s, and registering the normalised tables for SQL access.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::object_store::ObjectStoreExt;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

use super::arrow_conv::{column_from_array, frame_to_batch};
use super::dataset::Dataset;
use super::domain::Domain;
use super::error::EngineError;
use super::fields::published_fields;
use super::frame::ColumnData;
use super::table::RunTable;

/// The parquet file of a domain inside a compiled data directory.
pub fn parquet_path(root: &Path, domain: Domain) -> std::path::PathBuf {
    root.join("runs")
        .join(format!("{}.parquet", domain.as_str()))
}

/// Read a parquet file named by a local path or a URL of an object store registered in `ctx`.
/// A file of no bytes is refused: DataFusion's listing skips it, which would read a file caught
/// between its truncation and its new content as a table of no runs.
async fn read_parquet(
    ctx: &SessionContext,
    location: &str,
) -> Result<Vec<RecordBatch>, EngineError> {
    let url = ListingTableUrl::parse(location)?;
    let size = ctx
        .runtime_env()
        .object_store(&url)?
        .head(url.prefix())
        .await
        .map_err(|e| EngineError::Load(format!("{location}: {e}")))?
        .size;
    if size == 0 {
        return Err(EngineError::Load(format!(
            "{location} is empty (0 bytes), not a parquet file"
        )));
    }
    let df = ctx
        .read_parquet(location, ParquetReadOptions::default())
        .await?;
    Ok(df.collect().await?)
}

pub fn local_parquet(root: &Path, domain: Domain) -> Result<String, EngineError> {
    let path = parquet_path(root, domain);
    if !path.is_file() {
        return Err(EngineError::Load(format!(
            "{} does not exist",
            path.display()
        )));
    }
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| EngineError::Load(format!("non-UTF-8 path {}", path.display())))
}

/// A DataFusion context for reading the summaries. Statistics collection stays off: with it,
/// DataFusion 55 turns a column whose parquet min == max into a constant, but parquet min/max skip
/// NaN, so [48105.0, NaN] would read back as [48105.0, 48105.0] (apache/datafusion#19136 rewrites,
/// #24804 NaN bounds). The tables are small and read once, so the statistics buy nothing here.
pub fn summary_context() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new().with_collect_statistics(false))
}

/// Load the two summaries (local paths, or URLs of object stores registered in `ctx`) as one
/// dataset.
pub async fn load_compiled(
    ctx: SessionContext,
    llm: &str,
    diffusion: &str,
) -> Result<Dataset, EngineError> {
    // A refusal names the file it is about.
    async fn table(
        ctx: &SessionContext,
        domain: Domain,
        path: &str,
    ) -> Result<RunTable, EngineError> {
        let read = async { table_from_batches(domain, &read_parquet(ctx, path).await?) };
        let name = format!("{}.parquet", domain.as_str());
        read.await.map_err(|e| match e {
            EngineError::Load(m) if m.contains(&name) => EngineError::Load(m),
            EngineError::Load(m) => EngineError::Load(format!("{name}: {m}")),
            e => EngineError::Load(format!("{name}: {e}")),
        })
    }
    let llm = table(&ctx, Domain::Llm, llm).await?;
    let diffusion = table(&ctx, Domain::Diffusion, diffusion).await?;
    from_tables(ctx, llm, diffusion)
}

/// The embedded sample (`data/sample/runs`), for the crate's tests.
#[cfg(test)]
pub(crate) async fn sample_dataset() -> Dataset {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample/runs");
    load_compiled(
        summary_context(),
        &format!("{root}/llm.parquet"),
        &format!("{root}/diffusion.parquet"),
    )
    .await
    .expect("data/sample loads")
}

/// A dataset of two tables built elsewhere (from a raw tree), registered in `ctx`.
pub fn from_tables(
    ctx: SessionContext,
    llm: RunTable,
    diffusion: RunTable,
) -> Result<Dataset, EngineError> {
    register_tables(&ctx, &[&llm, &diffusion])?;
    Ok(Dataset {
        llm,
        diffusion,
        ctx,
    })
}

/// Normalise parquet batches to the published columns of `domain`. Every published column must
/// be present (as the toolkit's `from_parquet` requires); extra columns are ignored. A file with
/// no columns at all (what the toolkit writes for an empty collection) is an empty table.
pub fn table_from_batches(
    domain: Domain,
    batches: &[RecordBatch],
) -> Result<RunTable, EngineError> {
    let specs = published_fields(domain);
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => {
            return RunTable::from_published(
                domain,
                specs.iter().map(|s| ColumnData::empty(s.ty)).collect(),
            );
        }
    };
    if schema.fields().is_empty() {
        return RunTable::from_published(
            domain,
            specs.iter().map(|s| ColumnData::empty(s.ty)).collect(),
        );
    }
    let mut columns = Vec::with_capacity(specs.len());
    for spec in specs {
        let idx = schema.index_of(spec.name).map_err(|_| {
            EngineError::Load(format!(
                "{}.parquet has no column '{}'",
                domain.as_str(),
                spec.name
            ))
        })?;
        let mut data = ColumnData::empty(spec.ty);
        for batch in batches {
            // column_from_array returns the spec's type.
            data.extend(column_from_array(spec, batch.column(idx))?);
        }
        columns.push(data);
    }
    RunTable::from_published(domain, columns)
}

/// Register `llm_runs` / `diffusion_runs` as in-memory DataFusion tables (normalised schema,
/// default order, with `run_id`): the REST queries run on the `RunTable`s, SQL (`engine::sql`)
/// over these.
fn register_tables(ctx: &SessionContext, tables: &[&RunTable]) -> Result<(), EngineError> {
    for t in tables {
        let batch = frame_to_batch(&t.frame, &|name| t.is_nullable(name))?;
        let mem = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
        ctx.register_table(format!("{}_runs", t.domain.as_str()), Arc::new(mem))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary caught between its truncation and its new content (0 bytes) is refused, named;
    /// a torn one fails to parse; the whole file reads as before.
    #[tokio::test]
    async fn an_empty_or_torn_summary_is_refused() {
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/sample/runs");
        let dir = tempfile::tempdir().unwrap();
        let llm = format!("{sample}/llm.parquet");
        let diffusion = dir.path().join("diffusion.parquet");
        let whole = std::fs::read(format!("{sample}/diffusion.parquet")).unwrap();
        let load = || load_compiled(summary_context(), &llm, diffusion.to_str().unwrap());

        std::fs::write(&diffusion, b"").unwrap();
        let err = load()
            .await
            .err()
            .expect("an empty file is refused")
            .to_string();
        assert!(
            err.contains("diffusion.parquet is empty (0 bytes), not a parquet file"),
            "{err}"
        );
        std::fs::write(&diffusion, &whole[..whole.len() / 2]).unwrap();
        assert!(load().await.is_err(), "half a file is refused");
        std::fs::write(&diffusion, &whole).unwrap();
        let dataset = load().await.unwrap();
        assert_eq!((dataset.llm.len(), dataset.diffusion.len()), (838, 1020));
    }
}
