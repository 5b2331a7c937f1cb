//! One `TestApp` for the in-process tests: the router over the embedded dataset, and helpers
//! that send a request and return status, headers and body.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use mlenergy_server::http::{AppState, Limits};
use mlenergy_server::server::app;
use mlenergy_server::service::open as load;
use mlenergy_server::service::{Service, ServiceOptions};
use tower::ServiceExt;

pub mod hub;

/// A counter's value in a /metrics text: the line that starts with `series` (name and labels),
/// 0 when there is none.
pub fn counter(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .map_or(0, |n| n.parse().unwrap())
}

/// The `run_id` of each row of the array `key` of an answer.
pub fn run_ids_in(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

pub fn sample_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sample")
}

/// A copy of data/sample at `to` (a dataset a test may rewrite).
pub fn copy_sample(to: &std::path::Path) {
    let from = sample_dir();
    for entry in walkdir::WalkDir::new(&from) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(&from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// data/sample's LLM table written to `dst` with some string cells replaced: (column, row, value;
/// `None` for null).
pub fn rewrite_llm_strings(dst: &std::path::Path, edits: &[(&str, usize, Option<&str>)]) {
    use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::DataType;
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let file = std::fs::File::open(sample_dir().join("runs/llm.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let schema = batches[0].schema();
    let batch = datafusion::arrow::compute::concat_batches(&schema, &batches).unwrap();
    let mut cols = batch.columns().to_vec();
    let mut columns: Vec<&str> = edits.iter().map(|e| e.0).collect();
    columns.sort_unstable();
    columns.dedup();
    for name in columns {
        let i = schema.index_of(name).unwrap();
        let col = datafusion::arrow::compute::cast(&cols[i], &DataType::Utf8).unwrap();
        let col = col.as_any().downcast_ref::<StringArray>().unwrap();
        let mut values: Vec<Option<String>> = (0..col.len())
            .map(|r| col.is_valid(r).then(|| col.value(r).to_string()))
            .collect();
        for &(_, row, v) in edits.iter().filter(|e| e.0 == name) {
            values[row] = v.map(String::from);
        }
        let edited: ArrayRef = Arc::new(StringArray::from(values));
        cols[i] = datafusion::arrow::compute::cast(&edited, schema.field(i).data_type()).unwrap();
    }
    let out = RecordBatch::try_new(schema.clone(), cols).unwrap();
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let mut w = ArrowWriter::try_new(std::fs::File::create(dst).unwrap(), schema, None).unwrap();
    w.write(&out).unwrap();
    w.close().unwrap();
}

pub struct TestApp {
    pub router: Router,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("UTF-8 body")
    }

    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Assert a problem+json answer with this status and slug; returns the problem document.
    pub fn problem(&self, status: u16, slug: &str) -> serde_json::Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.content_type(), "application/problem+json");
        let p = self.json();
        assert_eq!(p["type"], format!("/problems/{slug}"));
        assert_eq!(p["status"], status);
        p
    }
}

impl TestApp {
    pub async fn sample() -> Self {
        Self::with_limits(Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        })
        .await
    }

    pub async fn with_limits(limits: Limits) -> Self {
        Self::with(limits, mlenergy_server::http::HttpOptions::default()).await
    }

    pub async fn with(limits: Limits, http: mlenergy_server::http::HttpOptions) -> Self {
        Self::configured(limits, http, |_| {}).await
    }

    /// The app over data/sample with these HTTP options and pages of up to 100,000 rows.
    pub async fn with_http(http: mlenergy_server::http::HttpOptions) -> Self {
        Self::with(
            Limits {
                max_rows: 100_000,
                stream_bytes: Limits::STREAM_BYTES,
            },
            http,
        )
        .await
    }

    /// The app over data/sample with its service adjusted by `adjust` (SQL limits, ...).
    pub async fn with_options(adjust: impl FnOnce(&mut ServiceOptions)) -> Self {
        Self::configured(
            Limits {
                max_rows: 100_000,
                stream_bytes: Limits::STREAM_BYTES,
            },
            mlenergy_server::http::HttpOptions::default(),
            adjust,
        )
        .await
    }

    pub async fn configured(
        limits: Limits,
        http: mlenergy_server::http::HttpOptions,
        adjust: impl FnOnce(&mut ServiceOptions),
    ) -> Self {
        Self::configured_with_cache(limits, http, adjust, 8 * 1024 * 1024).await
    }

    /// The app over data/sample without an answer cache: every request is answered anew (a
    /// repeated SQL query reaches the prepared statement, not a kept answer).
    pub async fn without_answer_cache() -> Self {
        Self::configured_with_cache(
            Limits {
                max_rows: 100_000,
                stream_bytes: Limits::STREAM_BYTES,
            },
            mlenergy_server::http::HttpOptions::default(),
            |_| {},
            0,
        )
        .await
    }

    pub async fn configured_with_cache(
        limits: Limits,
        http: mlenergy_server::http::HttpOptions,
        adjust: impl FnOnce(&mut ServiceOptions),
        answer_cache_bytes: u64,
    ) -> Self {
        let dataset = load::load_compiled_dir(&sample_dir())
            .await
            .expect("data/sample loads");
        let catalog = mlenergy_server::store::catalog::Catalog::open("sqlite::memory:")
            .await
            .expect("catalog");
        let mut options = ServiceOptions::default();
        adjust(&mut options);
        let service = Service::with_options(dataset, catalog, options);
        let state = AppState::new(Arc::new(service), limits, answer_cache_bytes).with_http(http);
        TestApp { router: app(state) }
    }

    /// The app over the compiled directory `dir` (data/sample's layout).
    pub async fn over(dir: &std::path::Path) -> Self {
        let dataset = load::load_compiled_dir(dir)
            .await
            .expect("the directory loads");
        let catalog = mlenergy_server::store::catalog::Catalog::open("sqlite::memory:")
            .await
            .expect("catalog");
        let service = Service::with_options(dataset, catalog, ServiceOptions::default());
        let limits = Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        };
        TestApp {
            router: app(AppState::new(Arc::new(service), limits, 8 * 1024 * 1024)),
        }
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.get_with(uri, &[]).await
    }

    pub async fn get_with(&self, uri: &str, headers: &[(&str, &str)]) -> Reply {
        self.request("GET", uri, headers).await
    }

    pub async fn request(&self, method: &str, uri: &str, headers: &[(&str, &str)]) -> Reply {
        self.send(method, uri, headers, Body::empty()).await
    }

    /// POST `body` as `content_type`.
    pub async fn post(&self, uri: &str, content_type: &str, body: &str) -> Reply {
        self.send(
            "POST",
            uri,
            &[("content-type", content_type)],
            Body::from(body.to_string()),
        )
        .await
    }

    pub async fn send(
        &self,
        method: &str,
        uri: &str,
        headers: &[(&str, &str)],
        body: Body,
    ) -> Reply {
        let mut req = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = self
            .router
            .clone()
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        Reply {
            status,
            headers,
            body,
        }
    }
}

/// A database created for one test on the server `MLENERGY_TEST_POSTGRES` names; dropped when
/// the test ends, passed or failed.
pub struct PgDatabase {
    base: String,
    name: String,
    url: String,
}

impl PgDatabase {
    pub fn url(&self) -> String {
        self.url.clone()
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let (base, name) = (self.base.clone(), self.name.clone());
        // A runtime of its own: the test's may be shutting down.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&base).await.ok()?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("could not drop the test database {}", self.name);
        }
    }
}

/// A fresh database on the server `MLENERGY_TEST_POSTGRES` names, or `None` to skip. The tests
/// that use it are `#[ignore]`d with the reason, so a run without a server says they did not run;
/// `tests/run.sh` runs them (`--include-ignored`) when `MLENERGY_TEST_POSTGRES` is set.
pub async fn fresh_postgres() -> Option<PgDatabase> {
    let Ok(base) = std::env::var("MLENERGY_TEST_POSTGRES") else {
        assert!(
            std::env::var("MLENERGY_REQUIRE_POSTGRES").is_err(),
            "MLENERGY_REQUIRE_POSTGRES is set but MLENERGY_TEST_POSTGRES is not"
        );
        eprintln!("MLENERGY_TEST_POSTGRES not set: PostgreSQL catalog test skipped");
        return None;
    };
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&base)
        .await
        .expect("connect to MLENERGY_TEST_POSTGRES");
    let name = format!("mlenergy_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("CREATE DATABASE");
    let (head, _) = base.rsplit_once('/').expect("URL with a database");
    Some(PgDatabase {
        url: format!("{head}/{name}"),
        base,
        name,
    })
}
