//! Other tools' measurements (peer-formats §1, §2, §4): readers for LLM Energy Measure (v1 results
//! directories, v2 result directories) and Intelligence Per Watt (single-turn profiles, agentic
//! runs) into one normalised schema ([`schema`]), the ML.ENERGY runs mapped into it too, and the
//! imported tables as parquet files (`mlenergy-server import`, `serve --import`).
//!
//! Every reader is lenient: fields are optional, a field of the wrong type is a warning, unknown
//! fields are kept, and a file that cannot be read is listed with its reason without stopping the
//! rest. Paths a source names (IPW `state.json` shards) stay inside its directory.
//!
//! Crate `mlenergy-peer`: depends on `mlenergy-engine` (frames, run tables), `mlenergy-rawfile`
//! (its path confinement only) and `mlenergy-pycompat` of the workspace; no HTTP, no server.

pub mod common;
pub mod files;
pub mod ipw;
pub mod json;
pub mod lem;
pub mod mlenergy;
pub mod schema;

use std::path::{Path, PathBuf};

use self::common::{SourceCtx, json_list};
use self::schema::*;

/// Version of the importer's rules, stored with each source: an import made by an older version is
/// read again by `import`.
pub const PARSER_VERSION: i64 = 1;

/// Source kinds (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    LemV1,
    LemV2,
    IpwProfile,
    IpwAgentic,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::LemV1 => "lem_v1",
            Kind::LemV2 => "lem_v2",
            Kind::IpwProfile => "ipw_profile",
            Kind::IpwAgentic => "ipw_agentic",
        }
    }
}

/// Every table of an import.
#[derive(Debug, Default)]
pub struct Tables {
    pub sources: SourceRows,
    pub runs: RunRows,
    pub run_metrics: RunMetricRows,
    pub requests: RequestRows,
    pub turns: TurnRows,
    pub tool_calls: ToolCallRows,
    pub timeseries: TimeseriesRows,
    pub latency_samples: LatencySampleRows,
    pub evaluations: EvaluationRows,
    pub reported_stats: RepeatStatRows,
}

impl Tables {
    /// Many parts' tables, each table as a job that joins its parts (in order, each row moved
    /// once) after the kept rows of an earlier import and makes the table to write: run on any
    /// core, a large table is joined while others are written. The latency samples are written
    /// from their series. The sources table is left out (the import writes it from its own
    /// bookkeeping).
    pub fn into_jobs(parts: Vec<Tables>) -> Vec<(&'static str, files::TableJob)> {
        fn job<T: Default + Send + 'static>(
            parts: Vec<T>,
            append: fn(&mut T, T),
            batch: fn(T) -> arrow::array::RecordBatch,
        ) -> files::TableJob {
            Box::new(move |kept| {
                let mut parts = parts.into_iter();
                let mut all = parts.next().unwrap_or_default();
                for p in parts {
                    append(&mut all, p);
                }
                Ok(Box::new(files::concat(vec![kept, batch(all)])?))
            })
        }
        let n = parts.len();
        let mut samples = LatencySampleRows::default();
        let (mut runs, mut run_metrics, mut requests, mut turns) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let (mut tool_calls, mut timeseries, mut evaluations, mut reported_stats) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for p in parts {
            runs.push(p.runs);
            run_metrics.push(p.run_metrics);
            requests.push(p.requests);
            turns.push(p.turns);
            tool_calls.push(p.tool_calls);
            timeseries.push(p.timeseries);
            samples.append(p.latency_samples);
            evaluations.push(p.evaluations);
            reported_stats.push(p.reported_stats);
        }
        vec![
            (
                "latency_samples",
                Box::new(move |kept| Ok(Box::new(samples.into_columns(Some(kept))))),
            ),
            ("runs", job(runs, RunRows::append, RunRows::into_batch)),
            (
                "run_metrics",
                job(
                    run_metrics,
                    RunMetricRows::append,
                    RunMetricRows::into_batch,
                ),
            ),
            (
                "requests",
                job(requests, RequestRows::append, RequestRows::into_batch),
            ),
            ("turns", job(turns, TurnRows::append, TurnRows::into_batch)),
            (
                "tool_calls",
                job(tool_calls, ToolCallRows::append, ToolCallRows::into_batch),
            ),
            (
                "timeseries",
                job(
                    timeseries,
                    TimeseriesRows::append,
                    TimeseriesRows::into_batch,
                ),
            ),
            (
                "evaluations",
                job(
                    evaluations,
                    EvaluationRows::append,
                    EvaluationRows::into_batch,
                ),
            ),
            (
                "reported_stats",
                job(
                    reported_stats,
                    RepeatStatRows::append,
                    RepeatStatRows::into_batch,
                ),
            ),
        ]
    }
}

/// What the user named: a path, with an optional `lem:` or `ipw:` prefix that restricts detection
/// to that tool's layouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSpec {
    pub path: PathBuf,
    pub tool: Option<&'static str>,
}

impl ImportSpec {
    pub fn parse(s: &str) -> ImportSpec {
        for tool in ["lem", "ipw"] {
            if let Some(rest) = s.strip_prefix(tool).and_then(|r| r.strip_prefix(':')) {
                return ImportSpec {
                    path: rest.into(),
                    tool: Some(tool),
                };
            }
        }
        ImportSpec {
            path: s.into(),
            tool: None,
        }
    }
}

/// The layout of one directory, if it is one.
pub fn detect(dir: &Path, tool: Option<&str>) -> Option<Kind> {
    let lem = tool.is_none_or(|t| t == "lem");
    let ipw = tool.is_none_or(|t| t == "ipw");
    if ipw && ipw::is_agentic(dir) {
        Some(Kind::IpwAgentic)
    } else if ipw && ipw::is_profile(dir) {
        Some(Kind::IpwProfile)
    } else if lem && lem::is_v1(dir) {
        Some(Kind::LemV1)
    } else if lem && lem::is_v2(dir) {
        Some(Kind::LemV2)
    } else {
        None
    }
}

/// The sources under a path: the path itself when it is a layout, else the layouts among its
/// children and grandchildren (a `runs/` directory of IPW profiles, a LEM v2 output directory).
pub fn discover(spec: &ImportSpec) -> Result<Vec<(Kind, PathBuf)>, String> {
    let root = &spec.path;
    if !root.is_dir() {
        return Err(format!("{}: not a directory", root.display()));
    }
    if let Some(k) = detect(root, spec.tool) {
        return Ok(vec![(k, root.clone())]);
    }
    let mut found = Vec::new();
    let mut level: Vec<PathBuf> = vec![root.clone()];
    for _ in 0..2 {
        let mut next = Vec::new();
        for dir in level {
            // Symlinked directories are not followed out of the named root.
            let children = common::entries(&dir, |p| {
                p.is_dir() && mlenergy_rawfile::confine::inside(root, p).is_ok()
            });
            for c in children {
                match detect(&c, spec.tool) {
                    Some(k) => found.push((k, c)),
                    None => next.push(c),
                }
            }
        }
        level = next;
    }
    if found.is_empty() {
        return Err(format!(
            "{}: no LEM or IPW results found (looked for aggregated/, raw/, *_multi_cycle.json, result.json, traces.jsonl, data-*.arrow or state.json)",
            root.display()
        ));
    }
    Ok(found)
}

/// Read one source directory into tables (never fails: what cannot be read is listed).
pub fn read_source(kind: Kind, dir: &Path, ingested_at: &str) -> Tables {
    let mut ctx = SourceCtx::new(kind.as_str(), dir);
    let mut out = Tables::default();
    match kind {
        Kind::LemV1 => lem::read_v1(&mut ctx, &mut out),
        Kind::LemV2 => lem::read_v2(&mut ctx, &mut out),
        Kind::IpwProfile => ipw::read_profile(&mut ctx, &mut out, dir),
        Kind::IpwAgentic => ipw::read_agentic(&mut ctx, &mut out, dir),
    }
    let failed: Vec<serde_json::Value> = ctx
        .failed
        .iter()
        .map(|(p, r)| serde_json::json!({"path": p, "reason": r}))
        .collect();
    out.sources.push(SourceRow {
        source_id: Some(ctx.ids.source_id.clone()),
        kind: Some(kind.as_str().into()),
        origin: Some(dir.display().to_string().into()),
        tool_version: ctx.tool_version.as_deref().map(Into::into),
        content_hash: Some(ctx.content_hash().into()),
        ingested_at: Some(ingested_at.into()),
        parser_version: Some(PARSER_VERSION),
        runs: Some(out.runs.len() as i64),
        files_read: Some(ctx.files_read),
        files_failed: Some(serde_json::Value::from(failed).to_string().into()),
        warnings: json_list(&ctx.warnings),
    });
    out
}

/// What `import` did.
#[derive(Debug, Default)]
pub struct ImportReport {
    /// (kind, path, runs, failed files) per source read.
    pub sources: Vec<(&'static str, PathBuf, usize, Vec<(String, String)>)>,
    /// Sources whose files had not changed since the import in `out`.
    pub unchanged: usize,
    /// Sources of an earlier import kept as they were.
    pub kept: usize,
    pub runs: usize,
    /// Seconds spent reading the sources into tables, and writing the tables.
    pub read_s: f64,
    pub write_s: f64,
}

/// The current time as RFC 3339 (UTC, seconds).
fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Read every source the specs name (in parallel), as tables, one per source.
fn read_parts(specs: &[ImportSpec]) -> Result<(Vec<Tables>, Vec<(Kind, PathBuf)>), String> {
    use rayon::prelude::*;
    let mut found = Vec::new();
    for spec in specs {
        found.extend(discover(spec)?);
    }
    let at = now_rfc3339();
    let parts = found
        .par_iter()
        .map(|(k, p)| read_source(*k, p, &at))
        .collect();
    Ok((parts, found))
}

/// Read every source the specs name (in parallel), as frames.
pub fn read_specs(specs: &[ImportSpec]) -> Result<(files::Frames, Vec<(Kind, PathBuf)>), String> {
    let (parts, found) = read_parts(specs)?;
    let all = parts
        .into_iter()
        .fold(files::Frames::from_tables(Tables::default()), |all, t| {
            all.append(files::Frames::from_tables(t))
        });
    Ok((all, found))
}

/// `mlenergy-server import SOURCE... --out DIR`: read the sources and write the tables to `out`,
/// replacing those sources' earlier rows there and keeping every other source's.
pub fn import(specs: &[ImportSpec], out: &Path) -> Result<ImportReport, String> {
    let previous = if out.join("sources.parquet").is_file() {
        files::Frames::read(out).map_err(|e| e.to_string())?
    } else {
        files::Frames::from_tables(Tables::default())
    };
    let started = std::time::Instant::now();
    let (mut parts, found) = read_parts(specs)?;
    let read = started.elapsed();
    // The new sources as one frame (the bookkeeping below reads it); every other table is
    // written from the parts' columns as they are.
    let mut sources = files::empty(SOURCE_COLUMNS);
    for part in &mut parts {
        let f = std::mem::take(&mut part.sources).into_frame();
        for (a, b) in sources.columns.iter_mut().zip(f.columns) {
            a.data.extend(b.data);
        }
    }
    let new_ids = files::source_ids(&sources);
    let mut report = ImportReport::default();
    // A source whose content and parser are unchanged keeps its earlier import time.
    let prev_sources = previous.table("sources");
    let col = |f: &mlenergy_engine::frame::Frame, name: &str, r: usize| match f
        .column(name)
        .map(|c| c.data.get(r))
    {
        Some(mlenergy_engine::frame::Value::Str(s)) => Some(s.to_string()),
        Some(mlenergy_engine::frame::Value::Int(i)) => Some(i.to_string()),
        _ => None,
    };
    let mut earlier: std::collections::HashMap<
        String,
        (Option<String>, Option<String>, Option<String>),
    > = Default::default();
    for r in 0..prev_sources.num_rows() {
        if let Some(id) = col(prev_sources, "source_id", r) {
            earlier.insert(
                id,
                (
                    col(prev_sources, "content_hash", r),
                    col(prev_sources, "parser_version", r),
                    col(prev_sources, "ingested_at", r),
                ),
            );
        }
    }
    {
        let n = sources.num_rows();
        let mut at: Vec<Option<std::sync::Arc<str>>> = Vec::with_capacity(n);
        for r in 0..n {
            let id = col(&sources, "source_id", r).unwrap_or_default();
            let now = col(&sources, "ingested_at", r);
            let same = earlier.get(&id).filter(|(h, v, _)| {
                *h == col(&sources, "content_hash", r) && *v == col(&sources, "parser_version", r)
            });
            if same.is_some() {
                report.unchanged += 1;
            }
            at.push(same.and_then(|(_, _, t)| t.clone()).or(now).map(Into::into));
        }
        if let Some(c) = sources.columns.iter_mut().find(|c| c.name == "ingested_at") {
            c.data = mlenergy_engine::frame::ColumnData::Str(at);
        }
    }
    let kept = previous.retain_sources(|id| !new_ids.contains(id));
    report.kept = kept.source_ids().len();
    report.runs = parts.iter().map(|p| p.runs.len()).sum();
    files::write_import(out, &kept, &sources, parts)
        .map_err(|e| format!("{}: {e}", out.display()))?;
    report.read_s = read.as_secs_f64();
    report.write_s = (started.elapsed() - read).as_secs_f64();
    for (i, (kind, path)) in found.into_iter().enumerate() {
        let runs = match sources.column("runs").map(|c| c.data.get(i)) {
            Some(mlenergy_engine::frame::Value::Int(n)) => n as usize,
            _ => 0,
        };
        let failed = match sources.column("files_failed").map(|c| c.data.get(i)) {
            Some(mlenergy_engine::frame::Value::Str(s)) => {
                serde_json::from_str::<Vec<serde_json::Value>>(s)
                    .unwrap_or_default()
                    .iter()
                    .map(|v| {
                        (
                            v["path"].as_str().unwrap_or("").to_string(),
                            v["reason"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            }
            _ => Vec::new(),
        };
        report.sources.push((kind.as_str(), path, runs, failed));
    }
    Ok(report)
}

/// The tables `serve --import PATH` adds: an import directory (written by `import`) is read as it
/// is; any other path is imported in memory at start.
pub fn load(specs: &[ImportSpec]) -> Result<files::Frames, String> {
    let mut frames = files::Frames::from_tables(Tables::default());
    let mut raw = Vec::new();
    for spec in specs {
        if spec.tool.is_none() && spec.path.join("sources.parquet").is_file() {
            let f = files::Frames::read(&spec.path).map_err(|e| e.to_string())?;
            frames = frames.append(f);
        } else {
            raw.push(spec.clone());
        }
    }
    if !raw.is_empty() {
        frames = frames.append(read_specs(&raw)?.0);
    }
    Ok(frames)
}
