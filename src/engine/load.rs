//! Loading a compiled data directory (`runs/llm.parquet`, `runs/diffusion.parquet`) through
//! DataFusion into `RunTable`s, and registering the normalised tables for SQL access.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};

use super::arrow_conv::{column_from_array, frame_to_batch};
use super::fields::published_fields;
use super::frame::ColumnData;
use super::{Dataset, DatasetSource, Domain, EngineError, RunTable};

/// The parquet file of a domain inside a compiled data directory.
pub fn parquet_path(root: &Path, domain: Domain) -> std::path::PathBuf {
    root.join("runs")
        .join(format!("{}.parquet", domain.as_str()))
}

/// Read a parquet file named by a local path or a URL of an object store registered in `ctx`.
async fn read_parquet(
    ctx: &SessionContext,
    location: &str,
) -> Result<Vec<RecordBatch>, EngineError> {
    let df = ctx
        .read_parquet(location, ParquetReadOptions::default())
        .await?;
    Ok(df.collect().await?)
}

fn local_parquet(root: &Path, domain: Domain) -> Result<String, EngineError> {
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
/// snapshot.
pub async fn load_compiled(
    ctx: SessionContext,
    llm: &str,
    diffusion: &str,
    source: DatasetSource,
) -> Result<Dataset, EngineError> {
    let llm = table_from_batches(Domain::Llm, &read_parquet(&ctx, llm).await?)?;
    let diffusion = table_from_batches(Domain::Diffusion, &read_parquet(&ctx, diffusion).await?)?;
    register_tables(&ctx, &[&llm, &diffusion])?;
    Ok(Dataset::new(llm, diffusion, source, ctx))
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
    let llm = local_parquet(root, Domain::Llm)?;
    let diffusion = local_parquet(root, Domain::Diffusion)?;
    let root = std::path::absolute(root)?;
    let source = DatasetSource {
        location: format!("local:{}", root.display()),
        revision: None,
        root: Some(root),
        skipped: Vec::new(),
        remote: None,
        derived: None,
    };
    load_compiled(summary_context(), &llm, &diffusion, source).await
}

/// What a `--data` value names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataLocation {
    /// A compiled data directory (`runs/llm.parquet`, ...).
    Compiled(PathBuf),
    /// A raw benchmark root (`llm/`, `diffusion/` trees of results.json files).
    Raw(PathBuf),
}

impl DataLocation {
    /// `raw:DIR` is a raw root; a directory with `runs/llm.parquet` is compiled; one with `llm/`
    /// or `diffusion/` but no `runs/` (or a `.../run` directory) is raw; anything else is taken
    /// as compiled, so the error names the missing parquet file.
    pub fn detect(spec: &str) -> DataLocation {
        if let Some(raw) = spec.strip_prefix("raw:") {
            return DataLocation::Raw(PathBuf::from(raw));
        }
        let p = PathBuf::from(spec);
        let compiled = p.join("runs").join("llm.parquet").is_file();
        let raw_like = p.join("llm").is_dir()
            || p.join("diffusion").is_dir()
            || p.file_name().is_some_and(|n| n == "run");
        if !compiled && raw_like {
            DataLocation::Raw(p)
        } else {
            DataLocation::Compiled(p)
        }
    }
}

/// Load whatever `location` names.
pub async fn load(location: &DataLocation) -> Result<Dataset, EngineError> {
    match location {
        DataLocation::Compiled(p) => load_compiled_dir(p).await,
        DataLocation::Raw(p) => load_raw_root(p).await,
    }
}

/// Derive the run tables from a raw benchmark root (configs auto-detected under it), in
/// parallel, and serve them like a compiled directory.
pub async fn load_raw_root(root: &Path) -> Result<Dataset, EngineError> {
    if !root.is_dir() {
        return Err(EngineError::Load(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let root = std::path::absolute(root)?;
    let opts = crate::build::BuildOptions {
        roots: vec![root.clone()],
        ..Default::default()
    };
    let built = tokio::task::spawn_blocking(move || crate::build::build(&opts, None))
        .await
        .map_err(|e| EngineError::Load(format!("raw build failed: {e}")))??;
    let ctx = summary_context();
    register_tables(&ctx, &[&built.llm, &built.diffusion])?;
    // Stored paths are relative to each run's benchmark root, which is the root itself unless
    // discovery had to infer one above it.
    let bench_root = built
        .runs
        .first()
        .map_or(root.clone(), |r| r.bench_root.clone());
    Ok(Dataset::new(
        built.llm,
        built.diffusion,
        DatasetSource {
            location: format!("raw:{}", root.display()),
            revision: None,
            root: Some(bench_root),
            skipped: built
                .skipped
                .into_iter()
                .map(|s| (s.path, s.reason))
                .collect(),
            remote: None,
            derived: None,
        },
        ctx,
    ))
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
