//! Background prefetch: the raw files of a set of runs fetched into the raw cache (four at a
//! time) as a job whose files and bytes done and total, and failures, can be read while it runs.
//! Jobs are kept in the catalog, so a finished job can still be read after a restart; a job that
//! was running when the process stopped reads as `failed`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;

use super::snapshot::{RawFile, Snapshot};
use crate::engine::Domain;
use crate::store::RawLocation;
use crate::store::catalog::{Catalog, JobRow, now_ms};

/// Jobs of this process, by id (the catalog has every job).
type JobMap = Arc<Mutex<HashMap<String, Arc<Mutex<JobRow>>>>>;

/// Files fetched at once by one job.
const CONCURRENCY: usize = 4;

/// One file of a job.
struct Target {
    run_id: String,
    file: &'static str,
    loc: RawLocation,
}

fn targets(snapshot: &Snapshot, domain: Domain, rows: &[usize]) -> Vec<Target> {
    let files: &[(RawFile, &str)] = match domain {
        Domain::Llm => &[
            (RawFile::Results, "results.json"),
            (RawFile::Prometheus, "prometheus.json"),
        ],
        Domain::Diffusion => &[(RawFile::Results, "results.json")],
    };
    let t = snapshot.table(domain);
    rows.iter()
        .flat_map(|&row| {
            files.iter().filter_map(move |&(which, name)| {
                snapshot
                    .raw_location(domain, row, which)
                    .ok()
                    .map(|loc| Target {
                        run_id: t.run_id(row).to_string(),
                        file: name,
                        loc,
                    })
            })
        })
        .collect()
}

/// Make one file local; its size.
async fn fetch(t: &Target) -> Result<u64, String> {
    match &t.loc {
        RawLocation::Local { path: p, .. } => tokio::fs::metadata(p)
            .await
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display())),
        RawLocation::Remote(store, key) => store
            .ensure(key)
            .await
            .map(|e| e.size)
            .map_err(|e| e.to_string()),
    }
}

async fn persist(catalog: &Catalog, job: &Mutex<JobRow>) {
    let row = job.lock().expect("job").clone();
    if let Err(e) = catalog.update_job(&row).await {
        tracing::warn!(job = %row.id, error = %e, "could not record job progress");
    }
}

async fn run_job(catalog: Catalog, job: Arc<Mutex<JobRow>>, targets: Vec<Target>) {
    let mut done = futures::stream::iter(targets)
        .map(|t| async move {
            let r = fetch(&t).await;
            (t, r)
        })
        .buffer_unordered(CONCURRENCY);
    while let Some((t, r)) = done.next().await {
        {
            let mut j = job.lock().expect("job");
            j.files_done += 1;
            match r {
                Ok(n) => {
                    j.bytes_done += n;
                    j.bytes_total += n;
                }
                Err(e) => {
                    if let serde_json::Value::Array(a) = &mut j.errors {
                        a.push(serde_json::json!({"run_id": t.run_id, "file": t.file, "error": e}));
                    }
                }
            }
            j.updated_at_ms = u64::try_from(now_ms()).unwrap_or(0);
        }
        persist(&catalog, &job).await;
    }
    {
        let mut j = job.lock().expect("job");
        let failed = j.errors.as_array().is_some_and(|a| !a.is_empty());
        j.state = if failed { "failed" } else { "done" }.into();
        j.updated_at_ms = u64::try_from(now_ms()).unwrap_or(0);
    }
    persist(&catalog, &job).await;
}

/// The prefetch jobs of this process (the catalog has every job).
pub struct Prefetch {
    catalog: Catalog,
    live: JobMap,
}

impl Prefetch {
    pub fn new(catalog: Catalog) -> Self {
        Prefetch {
            catalog,
            live: JobMap::default(),
        }
    }

    /// Start fetching the raw files of `rows` of `domain` (`query` is recorded with the job);
    /// the job as it starts. Local raw files count as done at once.
    pub async fn start(
        &self,
        snapshot: &Snapshot,
        domain: Domain,
        rows: &[usize],
        query: String,
    ) -> Result<JobRow, sqlx::Error> {
        let targets = targets(snapshot, domain, rows);
        let now = u64::try_from(now_ms()).unwrap_or(0);
        let note = if snapshot.source.remote.is_none() {
            Some(format!(
                "this dataset's raw files are local ({}): they are read in place and need no prefetch{}",
                snapshot.source.location,
                if targets.is_empty() {
                    ", and none of the matched runs has one"
                } else {
                    "; the job only checks that they are there"
                }
            ))
        } else if targets.is_empty() {
            Some("none of the matched runs has a raw file in this dataset".to_string())
        } else {
            None
        };
        let row = JobRow {
            id: uuid::Uuid::new_v4().to_string(),
            domain: domain.as_str().into(),
            query,
            state: "running".into(),
            files_total: targets.len() as u64,
            files_done: 0,
            bytes_total: 0,
            bytes_done: 0,
            errors: serde_json::json!([]),
            created_at_ms: now,
            updated_at_ms: now,
            note,
        };
        self.catalog.insert_job(&row).await?;
        let job = Arc::new(Mutex::new(row.clone()));
        self.live
            .lock()
            .expect("jobs")
            .insert(row.id.clone(), job.clone());
        tokio::spawn(run_job(self.catalog.clone(), job, targets));
        Ok(row)
    }

    /// A job by id: this process's live state, else the catalog's record.
    pub async fn job(&self, id: &str) -> Result<Option<JobRow>, sqlx::Error> {
        let live = self.live.lock().expect("jobs").get(id).cloned();
        if let Some(j) = live {
            return Ok(Some(j.lock().expect("job").clone()));
        }
        self.catalog.job(id).await
    }
}
