//! What the service holds, as its catalog answers say it: each domain's fields (with the
//! parameters that filter on them), the datasets loaded (with what was passed over or refused,
//! and the last reload), the cache of raw files and derived data, and the tables SQL sees.

use serde::Serialize;
use utoipa::ToSchema;

use crate::engine::Domain;
use crate::engine::fields::FieldType;
use crate::service::ask::{Question, allowed_parameters, filtered_field};
use crate::service::reload::ReloadOutcome;
use crate::service::sql_tables::RawTableKind;
use crate::service::{Service, ServiceError, Snapshot};

/// One field of a run table.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldInfo {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub type_: FieldType,
    pub unit: Option<&'static str>,
    pub nullable: bool,
    pub description: &'static str,
    /// Query parameters that filter on this field.
    pub filters: Vec<String>,
}

/// The fields of a domain, in output order.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldList {
    pub domain: Domain,
    pub fields: Vec<FieldInfo>,
}

impl FieldList {
    /// The fields of `domain`'s run table in `snapshot`, with the parameters that filter on each.
    pub fn of(snapshot: &Snapshot, domain: Domain) -> FieldList {
        let table = snapshot.table(domain);
        let params = allowed_parameters(domain, Question::List);
        FieldList {
            domain,
            fields: table
                .fields
                .iter()
                .map(|f| FieldInfo {
                    name: f.name,
                    type_: f.ty,
                    unit: f.unit,
                    nullable: f.nullable,
                    description: f.description,
                    filters: params
                        .iter()
                        .filter(|p| filtered_field(domain, p) == Some(f.name))
                        .cloned()
                        .collect(),
                })
                .collect(),
        }
    }
}

/// One loaded table.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetInfo {
    pub domain: Domain,
    /// Where the snapshot was read from, e.g. `local:/srv/mlenergy/data/sample`.
    pub source: String,
    /// Pinned revision of a remote source; null for a local directory.
    pub revision: Option<String>,
    pub rows: usize,
    pub stable_rows: usize,
    pub unstable_rows: usize,
    /// RFC 3339 time the snapshot was loaded.
    pub loaded_at: String,
}

/// A raw results file that produced no row, and why.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
}

/// A raw path of a run that is not served because it would leave the dataset root.
#[derive(Debug, Serialize, ToSchema)]
pub struct RefusedRawPath {
    pub domain: Domain,
    pub run_id: String,
    /// `results_path` or `prometheus_path`.
    pub field: &'static str,
    /// The path as the dataset gives it.
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DatasetList {
    pub datasets: Vec<DatasetInfo>,
    /// Raw results files passed over when the rows were derived from a raw tree (empty for a
    /// compiled directory).
    pub skipped: Vec<SkippedFile>,
    /// Raw paths of loaded runs that leave the dataset root (absolute, `..` above the root, or a
    /// symlink out of it): the runs are served, their raw endpoints answer 404 `raw_unavailable`.
    pub refused_paths: Vec<RefusedRawPath>,
    /// The id of the snapshot served (also the `X-Snapshot-Id` header of every answer).
    pub snapshot: String,
    /// How the last reload went (`POST /v1/admin/reload`, SIGHUP), if there was one.
    pub last_reload: Option<LastReload>,
    /// Other revisions held beside the served one (`revision`), by the name first asked.
    pub revisions: Vec<HeldRevision>,
    /// The last revision loaded on request, and how long its load took.
    pub last_revision_load: Option<RevisionLoad>,
}

/// A revision held beside the served one.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeldRevision {
    /// The name it was asked for by.
    pub asked: String,
    pub snapshot: crate::service::snapshot::Identity,
    pub llm_rows: usize,
    pub diffusion_rows: usize,
}

/// A revision's load.
#[derive(Debug, Serialize, ToSchema)]
pub struct RevisionLoad {
    pub revision: String,
    pub seconds: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LastReload {
    pub at: String,
    /// The snapshot served after it: the new one, or the old one when it failed.
    pub snapshot: String,
    /// Why it failed; null when the new snapshot is served.
    pub error: Option<String>,
}

pub use super::snapshot::snapshot_id;

impl DatasetList {
    /// What `snapshot` holds, and the last reload.
    pub fn of(snapshot: &Snapshot, last_reload: Option<ReloadOutcome>) -> DatasetList {
        let loaded_at = humantime::format_rfc3339_millis(snapshot.loaded_at).to_string();
        DatasetList {
            datasets: Domain::ALL
                .iter()
                .map(|&d| {
                    let t = snapshot.table(d);
                    let (stable_rows, unstable_rows) = t.stability_counts();
                    DatasetInfo {
                        domain: d,
                        source: snapshot.source.location.clone(),
                        revision: snapshot.source.revision.clone(),
                        rows: t.len(),
                        stable_rows,
                        unstable_rows,
                        loaded_at: loaded_at.clone(),
                    }
                })
                .collect(),
            skipped: snapshot
                .source
                .skipped
                .iter()
                .map(|(path, reason)| SkippedFile {
                    path: path.clone(),
                    reason: reason.clone(),
                })
                .collect(),
            refused_paths: snapshot
                .refused
                .iter()
                .map(|r| RefusedRawPath {
                    domain: r.domain,
                    run_id: r.run_id.clone(),
                    field: r.field,
                    path: r.path.clone(),
                    reason: r.reason.clone(),
                })
                .collect(),
            snapshot: snapshot_id(&snapshot.content_id).to_string(),
            last_reload: last_reload.map(|r| LastReload {
                at: humantime::format_rfc3339_millis(r.at).to_string(),
                snapshot: snapshot_id(&r.content_id).to_string(),
                error: r.error,
            }),
            revisions: Vec::new(),
            last_revision_load: None,
        }
    }

    /// The list with the revisions `revisions` holds and its last load.
    pub fn with_revisions(mut self, revisions: &crate::service::revisions::Revisions) -> Self {
        self.revisions = revisions
            .held()
            .into_iter()
            .map(|(asked, s)| HeldRevision {
                asked,
                snapshot: s.identity(),
                llm_rows: s.llm.len(),
                diffusion_rows: s.diffusion.len(),
            })
            .collect();
        self.last_revision_load = revisions.last_load().map(|(revision, took)| RevisionLoad {
            revision,
            seconds: took.as_secs_f64(),
        });
        self
    }
}

/// The cache: the raw files of a remote source and the persisted derived data of every source,
/// what it holds and how it has been used since start.
#[derive(Debug, Serialize, ToSchema)]
pub struct CacheInfo {
    /// Whether raw files are cached: false for a local dataset (raw files are read in place).
    pub enabled: bool,
    /// Raw cache directory or object_store URL (null when raw files are read in place).
    pub location: Option<String>,
    /// Where this dataset's raw files are read from, in words: in place from a local directory,
    /// or fetched from the source into the raw cache.
    pub raw_files: String,
    /// Where derived data (ITLs, output lengths, timelines) is persisted, for every source; null
    /// when it is kept in memory only.
    pub derived_location: Option<String>,
    /// Catalog database (credentials hidden).
    pub catalog: String,
    /// This process's id among the replicas sharing the catalog (random per process; the holder
    /// of a fetch lease).
    pub replica: String,
    /// The bound on `bytes` (none when derived data is not persisted).
    pub max_bytes: Option<u64>,
    /// Files and bytes the catalog lists, raw files and persisted derived data (all sources
    /// sharing it).
    pub files: u64,
    pub bytes: u64,
    /// Since start: files served from the cache, files fetched (one upstream download each),
    /// bytes fetched, files evicted (raw or derived), failed downloads.
    pub hits: u64,
    pub misses: u64,
    pub bytes_fetched: u64,
    pub evictions: u64,
    pub failures: u64,
    /// Since start: downloads that waited for another replica fetching the same file.
    pub lease_waits: u64,
}

/// Where a snapshot's raw files are read from, in words.
fn raw_files(snapshot: &Snapshot) -> String {
    match (&snapshot.source.remote, &snapshot.source.root) {
        (Some(r), _) => format!(
            "fetched from {} on first use into the raw cache at {}",
            snapshot.source.location,
            r.cache_location()
        ),
        (None, Some(root)) => format!(
            "read in place from {} (a local dataset needs no raw cache)",
            root.display()
        ),
        (None, None) => "none: this dataset has no raw files".to_string(),
    }
}

impl CacheInfo {
    /// The cache of `service`'s snapshot: where it is, what it holds, its counters.
    pub async fn of(service: &Service) -> Result<CacheInfo, ServiceError> {
        use std::sync::atomic::Ordering::Relaxed;
        let snapshot = service.snapshot();
        let (files, bytes) = service
            .cache_totals()
            .await
            .map_err(|e| ServiceError::Internal(format!("catalog: {e}")))?;
        let (catalog, replica) = service.catalog_names();
        let remote = snapshot.source.remote.as_ref();
        let bound = remote
            .map(|r| r.bound())
            .or_else(|| snapshot.source.derived.as_ref().and_then(|d| d.bound()));
        let stat = |f: fn(&crate::store::cache::CacheStats) -> &std::sync::atomic::AtomicU64| {
            remote.map_or(0, |r| f(r.stats()).load(Relaxed))
        };
        Ok(CacheInfo {
            enabled: remote.is_some(),
            location: remote.map(|r| r.cache_location().to_string()),
            raw_files: raw_files(&snapshot),
            derived_location: snapshot.source.derived.as_ref().and_then(|d| d.location()),
            catalog: catalog.to_string(),
            replica: replica.to_string(),
            max_bytes: bound.map(|b| b.max_bytes()),
            files,
            bytes,
            hits: stat(|s| &s.hits),
            misses: stat(|s| &s.misses),
            bytes_fetched: stat(|s| &s.bytes_fetched),
            evictions: bound.map_or(0, |b| b.evictions()),
            failures: stat(|s| &s.failures),
            lease_waits: stat(|s| &s.lease_waits),
        })
    }
}

/// One SQL table: its columns (with unit and meaning where the field catalog has them) and rows.
#[derive(Serialize, ToSchema)]
pub struct SqlTable {
    name: String,
    description: String,
    /// Rows; null for a table of raw-derived data (read when a query names its runs).
    rows: Option<usize>,
    columns: Vec<SqlTableColumn>,
}

#[derive(Serialize, ToSchema)]
pub struct SqlTableColumn {
    name: String,
    #[serde(rename = "type")]
    type_: String,
    nullable: bool,
    unit: Option<String>,
    description: String,
}

impl SqlTable {
    /// The tables SQL sees over `service`'s snapshot: the run tables, then the raw-derived ones.
    pub fn all(service: &Service) -> Vec<SqlTable> {
        let snapshot = service.snapshot();
        Domain::ALL
            .iter()
            .map(|&d| {
                let t = snapshot.table(d);
                SqlTable {
                    name: format!("{}_runs", d.as_str()),
                    description: format!(
                        "Every loaded {} run{}: the published columns and run_id.",
                        d.as_str(),
                        if d == Domain::Llm {
                            ", stable and unstable (is_stable)"
                        } else {
                            ""
                        }
                    ),
                    rows: Some(t.len()),
                    columns: t
                        .fields
                        .iter()
                        .map(|f| SqlTableColumn {
                            name: f.name.to_string(),
                            type_: f.ty.sql_type().to_string(),
                            nullable: f.nullable,
                            unit: f.unit.map(str::to_string),
                            description: f.description.to_string(),
                        })
                        .collect(),
                }
            })
            .chain(RawTableKind::ALL.iter().map(|k| SqlTable {
                name: k.name().to_string(),
                description: format!(
                    "{} A query reads at most {} runs' raw data: name them with run_id = '...' or run_id IN (...).",
                    k.description(),
                    service.sql_max_raw_runs()
                ),
                rows: None,
                columns: k
                    .columns()
                    .iter()
                    .map(|(name, ty, unit, description)| SqlTableColumn {
                        name: name.to_string(),
                        type_: ty.to_string(),
                        nullable: false,
                        unit: unit.map(str::to_string),
                        description: description.to_string(),
                    })
                    .collect(),
            }))
            .collect()
    }
}
