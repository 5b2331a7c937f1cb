//! The Hugging Face source and the raw cache against a fake hub: an axum server on port 0 that
//! implements the paths hf-hub and the service use (`/api/datasets/{repo}/revision/{rev}` and
//! `/datasets/{repo}/resolve/{rev}/{path}` with Range support), serving data/sample as the
//! dataset, with per-file faults: gated 401/403, 404, 500, a slow body, a truncated body, a wrong
//! checksum. Each test has its own hub, cache directory, HF_HOME and catalog.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::common::hub::{COMMIT, FakeHub, Fault, REPO};
use crate::common::{TestApp, sample_dir};
use mlenergy_server::http::{AppState, Limits};
use mlenergy_server::server::app;
use mlenergy_server::service::Service;
use mlenergy_server::service::open::{SourceOptions, open_dataset};
use mlenergy_server::store::FetchOptions;
use mlenergy_server::store::hub::HubConfig;

/// The cache directory, HF_HOME and catalog of one test (kept across restarts).
struct Dirs {
    _tmp: tempfile::TempDir,
    cache: PathBuf,
    home: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        let tmp = tempfile::tempdir().unwrap();
        Dirs {
            cache: tmp.path().join("cache"),
            home: tmp.path().join("hf-home"),
            _tmp: tmp,
        }
    }

    fn options(&self, hub: &FakeHub, token: Option<&str>, max_bytes: u64) -> SourceOptions {
        SourceOptions {
            hub: HubConfig {
                endpoint: hub.url.clone(),
                token: token.map(String::from),
                home: Some(self.home.clone()),
                fetch: FetchOptions {
                    timeout: Duration::from_millis(800),
                    retries: 2,
                },
            },
            cache: self.cache.display().to_string(),
            catalog: None,
            max_bytes,
            lease_ttl: Duration::from_secs(30),
        }
    }

    /// Files in the cache directory other than the catalog database.
    fn cached_files(&self) -> Vec<String> {
        walkdir::WalkDir::new(&self.cache)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("catalog.db"))
            .collect()
    }
}

async fn service(opts: &SourceOptions) -> TestApp {
    service_of(opts, &format!("hf://datasets/{REPO}")).await
}

async fn service_of(opts: &SourceOptions, spec: &str) -> TestApp {
    let (dataset, catalog) = open_dataset(spec, opts)
        .await
        .expect("the hub source opens");
    let state = AppState::new(
        Arc::new(Service::new(dataset, catalog)),
        Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        8 * 1024 * 1024,
    );
    TestApp { router: app(state) }
}

/// (domain, run_id, results_path) of the runs with raw files.
/// `/v1/cache` once it lists `files` files (derived data is persisted off the request path), or
/// after 10 s.
async fn cache_once_listed(app: &TestApp, files: u64) -> serde_json::Value {
    for _ in 0..200 {
        let cache = app.get("/v1/cache").await.json();
        if cache["files"].as_u64() == Some(files) {
            return cache;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.get("/v1/cache").await.json()
}

async fn raw_runs(app: &TestApp) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for domain in ["llm", "diffusion"] {
        let stability = if domain == "llm" {
            "&stability=all"
        } else {
            ""
        };
        let r = app
            .get(&format!(
                "/v1/{domain}/runs?fields=run_id,results_path{stability}"
            ))
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        for run in r.json()["runs"].as_array().unwrap() {
            if let Some(p) = run["results_path"].as_str() {
                out.push((
                    domain.to_string(),
                    run["run_id"].as_str().unwrap().to_string(),
                    p.to_string(),
                ));
            }
        }
    }
    assert_eq!(
        out.len(),
        3,
        "data/sample has three runs with raw files: {out:?}"
    );
    out
}

fn sample_file(rel: &str) -> Vec<u8> {
    std::fs::read(sample_dir().join(rel)).unwrap()
}

#[tokio::test]
async fn answers_of_a_pinned_commit_are_immutable() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let opts = dirs.options(&hub, None, 1 << 30);
    // Asked at a branch: answers may change with the branch, so they expire.
    let app = service(&opts).await;
    let r = app.get("/v1/llm/runs?limit=3").await;
    assert_eq!(r.headers["cache-control"], "public, max-age=60");
    // The leaderboard's date is the commit's.
    let index = app.get("/leaderboard/data/index.json").await.json();
    assert_eq!(index["last_updated"], "2026-03-05");
    // Asked at the commit itself: immutable.
    let pinned = service_of(&opts, &format!("hf://datasets/{REPO}@{COMMIT}")).await;
    let r = pinned.get("/v1/llm/runs?limit=3").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let r = pinned.get("/leaderboard/data/index.json").await;
    assert_eq!(
        r.headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    // The same data, the same entity tags, however the revision was named.
    let a = app.get("/v1/diffusion/runs?limit=3").await;
    let b = pinned.get("/v1/diffusion/runs?limit=3").await;
    assert_eq!(a.headers["etag"], b.headers["etag"]);
}

#[tokio::test]
async fn raw_files_come_from_the_hub_once_and_match_the_local_answers() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, None, 1 << 30)).await;
    let datasets = app.get("/v1/datasets").await.json();
    assert_eq!(
        datasets["datasets"][0]["source"],
        format!("hf://datasets/{REPO}@main")
    );
    assert_eq!(datasets["datasets"][0]["revision"], COMMIT);
    // The summaries went into HF_HOME's hub cache, under the pinned commit.
    let snap = dirs.home.join(format!(
        "hub/datasets--ml-energy--benchmark-v3/snapshots/{COMMIT}/runs"
    ));
    assert!(snap.join("llm.parquet").exists() && snap.join("diffusion.parquet").exists());

    let runs = raw_runs(&app).await;
    let (_, llm_id, llm_path) = runs.iter().find(|r| r.0 == "llm").unwrap().clone();
    assert_eq!(hub.gets(&llm_path), 0, "nothing raw is fetched at start");

    // Eight concurrent requests for one file: one upstream GET, eight identical bodies.
    let (_, diff_id, diff_path) = runs.iter().find(|r| r.0 == "diffusion").unwrap().clone();
    let uri = format!("/v1/diffusion/runs/{diff_id}/raw/results.json");
    let replies = futures::future::join_all((0..8).map(|_| app.get(&uri))).await;
    let want = sample_file(&diff_path);
    for r in &replies {
        assert_eq!(r.status, 200);
        assert_eq!(r.body, want);
    }
    assert_eq!(hub.gets(&diff_path), 1);
    // The seven other requests joined the one download, or (once it was done) found the file.
    let m = app.get("/metrics").await.text();
    assert_eq!(metric_of(&m, "mlenergy_raw_cache_misses_total"), 1);
    assert_eq!(
        metric_of(&m, "mlenergy_raw_cache_single_flight_waits_total")
            + metric_of(&m, "mlenergy_raw_cache_hits_total"),
        7
    );

    // Raw-derived answers equal the ones computed from the local copy.
    let local = TestApp::sample().await;
    for uri in [
        format!("/v1/llm/runs/{llm_id}/itl?summary=true"),
        format!("/v1/llm/runs/{llm_id}/output-lengths?format=csv"),
        format!("/v1/llm/runs/{llm_id}/timeline?metric=power.device_average&format=csv"),
        format!("/v1/diffusion/runs/{diff_id}/timeline?metric=temperature&per_gpu=true&format=csv"),
    ] {
        let (a, b) = (app.get(&uri).await, local.get(&uri).await);
        assert_eq!(a.status, 200, "{uri}: {}", a.text());
        assert_eq!(a.body, b.body, "{uri}");
    }
    assert_eq!(hub.gets(&llm_path), 1);
    // Two raw files, and the two runs' derived data once persisted (off the request path).
    let cache = cache_once_listed(&app, 4).await;
    // A persist is counted just after its file is written: wait for the count (at most 10 s).
    let mut m = String::new();
    for _ in 0..200 {
        m = app.get("/metrics").await.text();
        if metric_of(&m, "mlenergy_derived_persisted_total") >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(metric_of(&m, "mlenergy_derived_persisted_total"), 2);
    assert_eq!(metric_of(&m, "mlenergy_derived_persist_failures_total"), 0);
    assert_eq!(cache["enabled"], true);
    assert_eq!(cache["misses"], 2);
    assert_eq!(cache["files"], 4, "{cache}");
    assert_eq!(
        cache["bytes_fetched"].as_u64().unwrap(),
        (sample_file(&llm_path).len() + want.len()) as u64
    );
}

/// `DELETE /v1/{domain}/runs/{run_id}/cache` removes the run's raw file and persisted derived
/// data from the cache store and the catalog; the next request fetches and reads them again.
#[tokio::test]
async fn an_eviction_removes_a_runs_files_and_the_next_use_fetches_again() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, None, 1 << 30)).await;
    let runs = raw_runs(&app).await;
    let (_, id, path) = runs.iter().find(|r| r.0 == "llm").unwrap().clone();
    let itl = format!("/v1/llm/runs/{id}/itl?summary=true");
    let first = app.get(&itl).await;
    assert_eq!(first.status, 200, "{}", first.text());
    // The raw file and, once persisted, the derived data.
    let cache = cache_once_listed(&app, 2).await;
    let held = cache["bytes"].as_u64().unwrap();
    let raw = sample_file(&path).len() as u64;

    let r = app
        .request("DELETE", &format!("/v1/llm/runs/{id}/cache"), &[])
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let evicted = r.json();
    assert_eq!(evicted["run_id"], id.as_str());
    let files: Vec<(&str, u64)> = evicted["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["file"].as_str().unwrap(), f["bytes"].as_u64().unwrap()))
        .collect();
    assert_eq!(files[0], ("results.json", raw), "{evicted}");
    assert_eq!(files[1].0, "derived", "{evicted}");
    assert_eq!(files.len(), 2, "{evicted}");
    assert_eq!(evicted["bytes"].as_u64().unwrap(), held);
    let cache = app.get("/v1/cache").await.json();
    assert_eq!(
        (cache["files"].as_u64(), cache["bytes"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(dirs.cached_files().is_empty(), "{:?}", dirs.cached_files());
    // Nothing left: a second eviction removes nothing.
    let again = app
        .request("DELETE", &format!("/v1/llm/runs/{id}/cache"), &[])
        .await
        .json();
    assert_eq!(again["removed"], serde_json::json!([]));
    assert_eq!(again["bytes"], 0);

    // Another answer of the run (the first is in the response cache): read again from a fresh
    // download, equal to the local copy's.
    let csv = format!("/v1/llm/runs/{id}/itl?format=csv");
    let second = app.get(&csv).await;
    assert_eq!(second.status, 200, "{}", second.text());
    assert_eq!(second.body, TestApp::sample().await.get(&csv).await.body);
    assert_eq!(hub.gets(&path), 2);
    let m = app.get("/metrics").await.text();
    assert_eq!(
        metric_of(&m, "mlenergy_derived_loads_total{from=\"raw\"}"),
        2
    );
    assert_eq!(
        metric_of(&m, "mlenergy_derived_loads_total{from=\"persisted\"}"),
        0
    );
    app.request("DELETE", "/v1/llm/runs/no-such-run/cache", &[])
        .await
        .problem(404, "unknown_run");
}

/// A cache that is not a directory (here object_store's in-memory store; a bucket in production,
/// see the fleet suite) hands raw files over as streams: derived data is read from them, and
/// persisted there, with answers equal to the local copy's.
#[tokio::test]
async fn derived_data_is_read_from_a_cache_bucket_stream() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let mut opts = dirs.options(&hub, None, 1 << 30);
    opts.cache = "memory:///".into();
    opts.catalog = Some("sqlite::memory:".into());
    let app = service(&opts).await;
    let runs = raw_runs(&app).await;
    let local = TestApp::sample().await;
    for (domain, id, _) in &runs {
        let uri = if domain == "llm" {
            format!("/v1/llm/runs/{id}/itl?format=csv")
        } else {
            format!("/v1/diffusion/runs/{id}/timeline?metric=power.device_instant&format=csv")
        };
        let (a, b) = (app.get(&uri).await, local.get(&uri).await);
        assert_eq!(a.status, 200, "{uri}: {}", a.text());
        assert_eq!(a.body, b.body, "{uri}");
    }
    // Three raw files and their derived data, all in the store.
    let cache = cache_once_listed(&app, 6).await;
    assert_eq!(cache["location"], "memory:///");
    assert_eq!(cache["files"], 6, "{cache}");
}

#[tokio::test]
async fn a_restart_serves_from_the_cache_without_upstream_gets() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let opts = dirs.options(&hub, None, 1 << 30);
    let app = service(&opts).await;
    let runs = raw_runs(&app).await;
    let mut first = Vec::new();
    for (domain, id, _) in &runs {
        let r = app
            .get(&format!("/v1/{domain}/runs/{id}/raw/results.json"))
            .await;
        assert_eq!(r.status, 200);
        first.push(r.body);
    }
    let before = hub.all_gets();
    drop(app);

    let app = service(&opts).await;
    for ((domain, id, _), body) in runs.iter().zip(&first) {
        let r = app
            .get(&format!("/v1/{domain}/runs/{id}/raw/results.json"))
            .await;
        assert_eq!(r.status, 200);
        assert_eq!(&r.body, body);
    }
    let after = hub.all_gets();
    assert_eq!(
        before, after,
        "no resolve GET after the restart (summaries and raw files cached)"
    );
    let cache = app.get("/v1/cache").await.json();
    assert_eq!(
        (cache["hits"].as_u64(), cache["misses"].as_u64()),
        (Some(3), Some(0))
    );
}

/// Derived data (ITLs, timelines) is persisted in the cache: after a restart with every cached raw
/// file gone, the same answers come back without a single upstream GET.
#[tokio::test]
async fn derived_data_survives_a_restart_without_the_raw_files() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let opts = dirs.options(&hub, None, 1 << 30);
    let app = service(&opts).await;
    let runs = raw_runs(&app).await;
    let mut uris = Vec::new();
    for (domain, id, _) in &runs {
        uris.push(format!(
            "/v1/{domain}/runs/{id}/timeline?metric=temperature"
        ));
        if domain == "llm" {
            uris.push(format!("/v1/llm/runs/{id}/itl?format=csv"));
            uris.push(format!("/v1/llm/runs/{id}/output-lengths"));
        }
    }
    let mut first = Vec::new();
    for uri in &uris {
        let r = app.get(uri).await;
        assert_eq!(r.status, 200, "{uri}");
        first.push(r.body);
    }
    // Persisting happens off the request path: wait for one file per run.
    let derived = dirs.cache.join("derived");
    let count = || {
        walkdir::WalkDir::new(&derived)
            .into_iter()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".arrow"))
            .count()
    };
    for _ in 0..200 {
        if count() == runs.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(), runs.len());
    let raw_files: Vec<PathBuf> = walkdir::WalkDir::new(&dirs.cache)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file() && !e.path().starts_with(&derived))
        .filter(|e| !e.file_name().to_string_lossy().starts_with("catalog.db"))
        .map(|e| e.into_path())
        .collect();
    assert_eq!(raw_files.len(), runs.len(), "{raw_files:?}");
    // The derived files are listed with the raw ones, and count toward the bound.
    let on_disk: u64 = walkdir::WalkDir::new(&dirs.cache)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| !e.file_name().to_string_lossy().starts_with("catalog.db"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    let cache = cache_once_listed(&app, 2 * runs.len() as u64).await;
    assert_eq!(cache["files"], 2 * runs.len(), "{cache}");
    assert_eq!(cache["bytes"], on_disk, "{cache}");
    assert_eq!(cache["max_bytes"], 1u64 << 30, "{cache}");
    drop(app);
    for f in &raw_files {
        std::fs::remove_file(f).unwrap();
    }
    let before = hub.all_gets();
    let app = service(&opts).await;
    for (uri, body) in uris.iter().zip(&first) {
        let r = app.get(uri).await;
        assert_eq!(r.status, 200, "{uri}");
        assert_eq!(&r.body, body, "{uri}");
    }
    let after = hub.all_gets();
    assert_eq!(
        before, after,
        "no upstream GET: the derived data was persisted"
    );
}

/// The restart scenario with the catalog in PostgreSQL (skipped without a server, see
/// tests/catalog.rs).
#[tokio::test]
#[ignore = "needs a PostgreSQL server: set MLENERGY_TEST_POSTGRES"]
async fn a_postgres_catalog_survives_a_restart() {
    let Some(db) = crate::common::fresh_postgres().await else {
        return;
    };
    let url = db.url();
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let mut opts = dirs.options(&hub, None, 1 << 30);
    opts.catalog = Some(url);
    let app = service(&opts).await;
    let (domain, id, path) = raw_runs(&app).await.remove(0);
    let uri = format!("/v1/{domain}/runs/{id}/raw/results.json");
    assert_eq!(app.get(&uri).await.status, 200);
    drop(app);
    let app = service(&opts).await;
    let r = app.get(&uri).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, sample_file(&path));
    assert_eq!(hub.gets(&path), 1);
    let cache = app.get("/v1/cache").await.json();
    assert!(
        cache["catalog"]
            .as_str()
            .unwrap()
            .starts_with("postgres://"),
        "{cache}"
    );
    assert_eq!(cache["files"], 1);
}

#[tokio::test]
async fn a_gated_dataset_without_access_is_refused_with_instructions() {
    let hub = FakeHub::start().await;
    hub.gate(Some("hf_good"));
    let dirs = Dirs::new();
    for token in [None, Some("hf_wrong")] {
        let err = open_dataset(
            &format!("hf://datasets/{REPO}"),
            &dirs.options(&hub, token, 1 << 30),
        )
        .await
        .err()
        .expect("refused");
        assert!(err.contains("gated dataset"), "{err}");
        assert!(err.contains("HF_TOKEN"), "{err}");
        assert!(
            err.contains(&format!("{}/datasets/{REPO}", hub.url)),
            "{err}"
        );
        assert!(
            err.contains(if token.is_none() { "401" } else { "403" }),
            "{err}"
        );
    }
    // With access, then revoked: a raw request answers 403 naming what to do; nothing cached.
    let app = service(&dirs.options(&hub, Some("hf_good"), 1 << 30)).await;
    let (_, id, _) = raw_runs(&app)
        .await
        .into_iter()
        .find(|r| r.0 == "llm")
        .unwrap();
    hub.gate(Some("hf_other"));
    let r = app.get(&format!("/v1/llm/runs/{id}/itl")).await;
    let p = r.problem(403, "source_denied");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("request access") && detail.contains("HF_TOKEN"),
        "{detail}"
    );
    assert!(dirs.cached_files().is_empty(), "{:?}", dirs.cached_files());
}

#[tokio::test]
async fn upstream_faults_map_to_statuses_and_leave_nothing_in_the_cache() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, None, 1 << 30)).await;
    let runs = raw_runs(&app).await;
    let (_, id, path) = runs.iter().find(|r| r.0 == "llm").unwrap().clone();
    let uri = format!("/v1/llm/runs/{id}/raw/results.json");

    let cases = [
        (Fault::Status(404), 404, "raw_unavailable", 1),
        (Fault::Status(500), 502, "upstream_failed", 3),
        (Fault::Slow, 504, "upstream_timeout", 1),
        (Fault::Truncated, 502, "download_corrupt", 1),
        (Fault::BadChecksum, 502, "download_corrupt", 1),
    ];
    for (fault, status, slug, gets) in cases {
        hub.fault(&path, Some(fault));
        let before = hub.gets(&path);
        let r = app.get(&uri).await;
        let p = r.problem(status, slug);
        assert_eq!(p["parameter"], "run_id", "{fault:?}");
        assert_eq!(
            hub.gets(&path) - before,
            gets,
            "{fault:?}: GETs (retries are bounded)"
        );
        assert!(
            dirs.cached_files().is_empty(),
            "{fault:?} left {:?}",
            dirs.cached_files()
        );
    }
    let cache = app.get("/v1/cache").await.json();
    assert_eq!(
        (cache["files"].as_u64(), cache["failures"].as_u64()),
        (Some(0), Some(5))
    );
    // The same failures by kind in /metrics.
    let m = app.get("/metrics").await.text();
    for (kind, n) in [
        ("not_found", 1),
        ("upstream", 1),
        ("timeout", 1),
        ("corrupt", 2),
        ("denied", 0),
    ] {
        let line = format!("mlenergy_raw_cache_fetch_errors_total{{kind=\"{kind}\"}} {n}");
        assert!(m.lines().any(|l| l == line), "{line} in {m}");
    }
    // Once the hub is healthy the same request succeeds: nothing bad was kept.
    hub.fault(&path, None);
    let r = app.get(&uri).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, sample_file(&path));
}

#[tokio::test]
async fn eviction_keeps_the_cache_within_its_bound() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let runs = raw_runs(&service(&dirs.options(&hub, None, 1 << 30)).await).await;
    let mut sizes: Vec<(usize, &(String, String, String))> =
        runs.iter().map(|r| (sample_file(&r.2).len(), r)).collect();
    sizes.sort_by_key(|s| s.0);
    // Room for the largest file plus a little: fetching the two small ones, then the large one,
    // must evict the least recently used until the total fits.
    let bound = sizes[2].0 as u64 + 1024;
    let app = service(&dirs.options(&hub, None, bound)).await;
    for (_, (domain, id, _)) in &sizes {
        let r = app
            .get(&format!("/v1/{domain}/runs/{id}/raw/results.json"))
            .await;
        assert_eq!(r.status, 200);
        let cache = app.get("/v1/cache").await.json();
        assert!(cache["bytes"].as_u64().unwrap() <= bound, "{cache}");
    }
    let cache = app.get("/v1/cache").await.json();
    assert_eq!(cache["evictions"], 2, "{cache}");
    assert_eq!(cache["files"], 1);
    assert_eq!(cache["bytes"].as_u64().unwrap(), sizes[2].0 as u64);
    assert_eq!(dirs.cached_files(), vec!["results.json".to_string()]);
    // The evicted file comes back on demand (a new GET).
    let (_, small) = sizes[0];
    let before = hub.gets(&small.2);
    let r = app
        .get(&format!(
            "/v1/{}/runs/{}/raw/results.json",
            small.0, small.1
        ))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(hub.gets(&small.2), before + 1);
}

#[tokio::test]
async fn a_bad_hf_url_is_refused_with_the_expected_form() {
    let dirs = Dirs::new();
    let hub = FakeHub::start().await;
    let err = open_dataset("hf://datasets/only-one-part", &dirs.options(&hub, None, 1))
        .await
        .err()
        .unwrap();
    assert!(err.contains("hf://datasets/ORG/NAME"), "{err}");
    let err = open_dataset("ftp://x/y", &dirs.options(&hub, None, 1))
        .await
        .err()
        .unwrap();
    assert!(err.contains("unsupported scheme 'ftp'"), "{err}");
}

/// The token goes to the hub and never to the storage host its redirects point to: not for the
/// parquet summaries (hf-hub's client sent it there) and not for raw files.
#[tokio::test]
async fn the_token_never_leaves_for_the_storage_host() {
    let hub = FakeHub::start().await;
    hub.gate(Some("hf_secret"));
    hub.redirect_to_storage().await;
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, Some("hf_secret"), 1 << 30)).await;
    let (_, id, path) = raw_runs(&app)
        .await
        .into_iter()
        .find(|r| r.0 == "diffusion")
        .unwrap();
    let r = app
        .get(&format!("/v1/diffusion/runs/{id}/raw/results.json"))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.body, sample_file(&path));
    let gets = hub.storage_gets();
    let fetched: Vec<&str> = gets.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        fetched,
        ["runs/llm.parquet", "runs/diffusion.parquet", path.as_str()],
        "the summaries and the raw file came from the storage host"
    );
    for (path, auth) in &gets {
        assert_eq!(auth, &None, "{path} was sent with a credential");
    }
    // The summaries are in HF_HOME as huggingface_hub lays them out.
    let repo = dirs.home.join("hub/datasets--ml-energy--benchmark-v3");
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).unwrap(),
        COMMIT
    );
    assert_eq!(
        std::fs::read(repo.join(format!("snapshots/{COMMIT}/runs/llm.parquet"))).unwrap(),
        sample_file("runs/llm.parquet")
    );
}

/// A summary whose raw paths leave the repository: the runs load, the paths are listed as
/// refused, and the hub is never asked for them (a `..` in a resolve URL would reach another
/// repository).
#[tokio::test]
async fn hub_keys_out_of_the_repository_are_never_requested() {
    let hub = FakeHub::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let summary = tmp.path().join("llm.parquet");
    crate::confine::rewrite_llm(
        &summary,
        &[
            (0, "../../../other/private/resolve/main/secret.json", None),
            (1, "/etc/passwd", None),
            (2, "llm/%2e%2e/%2e%2e/x/results.json", None),
        ],
    );
    hub.put("runs/llm.parquet", std::fs::read(&summary).unwrap());
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, None, 1 << 30)).await;
    let refused = app.get("/v1/datasets").await.json()["refused_paths"].clone();
    assert_eq!(refused.as_array().unwrap().len(), 2, "{refused}");
    let runs = app
        .get("/v1/llm/runs?stability=all&fields=run_id,results_path")
        .await
        .json()["runs"]
        .clone();
    for run in runs.as_array().unwrap() {
        let p = run["results_path"].as_str().unwrap_or("");
        if p.starts_with("../") || p.starts_with('/') {
            let id = run["run_id"].as_str().unwrap();
            let r = app
                .get(&format!("/v1/llm/runs/{id}/raw/results.json"))
                .await;
            r.problem(404, "raw_unavailable");
        }
        if p.contains("%2e") {
            // A file name with a percent sign: asked for as that name, encoded, inside the repo.
            let id = run["run_id"].as_str().unwrap();
            let r = app
                .get(&format!("/v1/llm/runs/{id}/raw/results.json"))
                .await;
            r.problem(404, "raw_unavailable");
        }
    }
    let asked: Vec<String> = hub.all_gets().into_keys().collect();
    for path in &asked {
        assert!(
            path.starts_with("runs/")
                || path == "histograms/llm_output_lengths.parquet"
                || path == "llm/%2e%2e/%2e%2e/x/results.json",
            "the hub was asked for {path}"
        );
    }
    assert_eq!(hub.gets("llm/%2e%2e/%2e%2e/x/results.json"), 1);
}

/// A cached file replaced by a symlink out of the cache directory is not followed.
#[tokio::test]
async fn a_symlink_in_the_cache_directory_is_not_followed() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, None, 1 << 30)).await;
    let (_, id, path) = raw_runs(&app)
        .await
        .into_iter()
        .find(|r| r.0 == "diffusion")
        .unwrap();
    let uri = format!("/v1/diffusion/runs/{id}/raw/results.json");
    assert_eq!(app.get(&uri).await.status, 200);
    let cached = walkdir::WalkDir::new(&dirs.cache)
        .into_iter()
        .flatten()
        .find(|e| e.file_type().is_file() && e.path().ends_with(&path))
        .expect("the file is cached")
        .into_path();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    // Of the cached file's size, so the catalog's check of the entry does not see a difference.
    let mut text = b"outside the cache".to_vec();
    text.resize(sample_file(&path).len(), b'.');
    std::fs::write(&secret, text).unwrap();
    std::fs::remove_file(&cached).unwrap();
    std::os::unix::fs::symlink(&secret, &cached).unwrap();
    let r = app.get(&uri).await;
    let p = r.problem(404, "raw_unavailable");
    assert!(
        p["detail"].as_str().unwrap().contains("symbolic link"),
        "{p}"
    );
    assert!(!r.text().contains("outside the cache"));
}

/// An unlabelled integer series of a /metrics text.
fn metric_of(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{name} in {text}"))
}

/// Every series deploy/grafana-dashboard.json draws is one the server exports (a remote source's,
/// so that the raw cache's are there too).
#[tokio::test]
async fn the_dashboard_draws_only_exported_series() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let app = service(&dirs.options(&hub, None, 1 << 30)).await;
    // A request of each kind, so that per-route series exist.
    assert_eq!(app.get("/v1/llm/runs?limit=1").await.status, 200);
    let exported: std::collections::HashSet<String> = app
        .get("/metrics")
        .await
        .text()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next().map(String::from))
        .collect();
    let dashboard = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana-dashboard.json"
    ))
    .unwrap();
    let mut drawn: Vec<&str> = dashboard
        .match_indices("mlenergy_")
        .map(|(i, _)| {
            let rest = &dashboard[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    drawn.sort();
    drawn.dedup();
    assert!(drawn.len() >= 15, "{drawn:?}");
    let missing: Vec<&&str> = drawn.iter().filter(|m| !exported.contains(**m)).collect();
    assert!(missing.is_empty(), "drawn but not exported: {missing:?}");
}

/// Issue 29 item 1: the server, started on the hub as a user starts it (the binary, its defaults),
/// fetches the summaries and no raw file: the leaderboard's histograms of a source without them are
/// read when a model file is asked for, not at start. Eight requests at once for one raw file then
/// make one download, and all eight get the whole file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_fetches_no_raw_file_and_eight_requests_share_one_download() {
    let hub = FakeHub::start().await;
    let dirs = Dirs::new();
    let (endpoint, cache, home) = (
        hub.url.clone(),
        dirs.cache.display().to_string(),
        dirs.home.display().to_string(),
    );
    let server = tokio::task::spawn_blocking(move || {
        crate::binary::start_with_env(
            &[
                "--data",
                &format!("hf://datasets/{REPO}"),
                "--hf-endpoint",
                &endpoint,
                "--cache",
                &cache,
            ],
            &[("HF_HOME", home.as_str()), ("HF_TOKEN", "")],
        )
    })
    .await
    .unwrap();
    let client = reqwest::Client::new();
    let ready = client
        .get(format!("http://{}/readyz", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    // Time for a start-up task to have fetched raw files, had it been started.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let gets = hub.all_gets();
    let mut fetched: Vec<&String> = gets.keys().collect();
    fetched.sort();
    assert_eq!(
        fetched,
        [
            "histograms/llm_output_lengths.parquet",
            "runs/diffusion.parquet",
            "runs/llm.parquet"
        ],
        "only the summaries and the histograms (missing here) are asked for at start: {gets:?}"
    );
    assert!(gets.values().all(|n| *n == 1), "{gets:?}");

    let (id, path) = crate::fleet::raw_run(&client, &server, "llm").await;
    let whole = sample_file(&path);
    hub.fault(&path, Some(Fault::Paced(Duration::from_millis(100))));
    let uri = format!("http://{}/v1/llm/runs/{id}/raw/results.json", server.addr);
    let answers =
        futures::future::join_all((0..8).map(|_| async { client.get(&uri).send().await })).await;
    hub.fault(&path, None);
    for a in answers {
        let a = a.unwrap();
        assert_eq!(a.status(), 200);
        assert!(
            a.bytes().await.unwrap() == whole,
            "every request gets the whole file"
        );
    }
    assert_eq!(hub.gets(&path), 1, "one download for the eight requests");

    let metrics = client
        .get(format!("http://{}/metrics", server.addr))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(metric_of(&metrics, "mlenergy_raw_cache_misses_total"), 1);
}

/// A small raw tree made by the conformance suite's generator (python3, tests/conformance/rawgen.py):
/// two LLM models' batch sweeps with failed requests mixed in, and a diffusion run.
fn generated_tree(root: &std::path::Path) {
    let script = r#"
import sys
from pathlib import Path
sys.path.insert(0, "tests/conformance")
import rawgen as g
root = Path(sys.argv[1])
cfg = root / "configs" / "vllm"
g.llm_config(cfg, "gpqa", "org/model-a", "H100")
for i, b in enumerate(["8", "16", "32"]):
    g.llm_run(root, max_num_seqs=b, prometheus=g.prom(float(b)), rng_seed=i + 1)
g.llm_config(cfg, "lm-arena-chat", "org/model-b", "H100")
for i, b in enumerate(["8", "64"]):
    g.llm_run(root, task="lm-arena-chat", model_id="org/model-b", max_num_seqs=b, failed=5,
              prometheus=g.prom(float(b)), rng_seed=10 + i)
g.diffusion_config(root / "configs" / "xdit", "text-to-image", "org/diff-a")
g.diffusion_run(root, rng_seed=20)
"#;
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(root)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("python3 runs");
    assert!(status.success(), "the raw tree generator failed");
}

/// Issue 29 item 1: `build` writes the leaderboard's histograms into the compiled directory, and a
/// server of that directory on the hub makes every model file from them, complete, with no raw
/// read; the same directory without the histograms file makes the same files by reading the raw
/// files (so the histograms `build` wrote are the ones the raw files give).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_directory_carries_the_leaderboards_histograms() {
    let tmp = tempfile::tempdir().unwrap();
    let (tree, out) = (tmp.path().join("tree"), tmp.path().join("compiled"));
    generated_tree(&tree);
    let built = std::process::Command::new(env!("CARGO_BIN_EXE_mlenergy-server"))
        .arg("build")
        .arg(&tree)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&built.stderr);
    assert!(built.status.success(), "{report}");
    assert!(
        report.contains("output-length histograms of 5 of 5 stable LLM runs"),
        "{report}"
    );
    assert!(out.join("histograms/llm_output_lengths.parquet").is_file());

    let mut made: Vec<Vec<(String, Vec<u8>)>> = Vec::new();
    for carried in [true, false] {
        let hub = FakeHub::start_dir(&out, carried).await;
        let dirs = Dirs::new();
        let app = service(&dirs.options(&hub, None, 1 << 30)).await;
        let ready = app.get("/readyz").await.json();
        let histograms = &ready["leaderboard"]["histograms"];
        assert_eq!(histograms["files"], 2);
        assert_eq!(histograms["ready"], if carried { 2 } else { 0 });
        let listed = app
            .get("/leaderboard/data/models/nothing.json")
            .await
            .problem(404, "unknown_leaderboard_file");
        let mut files = Vec::new();
        for name in listed["allowed"].as_array().unwrap() {
            let name = name.as_str().unwrap();
            let r = app.get(&format!("/leaderboard/data/models/{name}")).await;
            assert_eq!(r.status, 200);
            assert!(
                r.headers.get("warning").is_none(),
                "{name}: {:?}",
                r.headers
            );
            files.push((name.to_string(), r.body));
        }
        let llm_files = files
            .iter()
            .filter(|(_, body)| {
                String::from_utf8_lossy(body).contains("\"output_length_distribution\"")
            })
            .count();
        assert_eq!(llm_files, 2, "both LLM model files have their histograms");
        let raw_gets: usize = hub
            .all_gets()
            .iter()
            .filter(|(p, _)| p.ends_with("results.json"))
            .map(|(_, n)| n)
            .sum();
        if carried {
            assert_eq!(raw_gets, 0, "no raw file read: {:?}", hub.all_gets());
        } else {
            assert_eq!(raw_gets, 5, "each stable LLM run's raw file read once");
        }
        let ready = app.get("/readyz").await.json();
        assert_eq!(
            ready["leaderboard"]["histograms"],
            serde_json::json!({"files": 2, "ready": 2, "pending": 0, "without": []})
        );
        made.push(files);
    }
    assert!(
        made[0] == made[1],
        "the built histograms are those of the raw files"
    );
}
