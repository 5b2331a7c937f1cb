//! The catalog on both backends: an SQLite file, and PostgreSQL when `MLENERGY_TEST_POSTGRES`
//! names a server (a URL whose user may create databases; each run gets a fresh database).
//! `.ci/run` starts PostgreSQL and sets it, with `MLENERGY_REQUIRE_POSTGRES=1` so that a missing
//! server fails instead of skipping.

use crate::common::fresh_postgres;
use mlenergy_server::store::catalog::{Catalog, Entry, JobRow};

async fn suite(url: &str) {
    let c = Catalog::open(url)
        .await
        .expect("catalog opens and migrates");
    assert_eq!(c.totals().await.unwrap(), (0, 0));
    for (i, key) in ["ns/a", "ns/b", "ns/c"].iter().enumerate() {
        c.insert(&Entry {
            key: key.to_string(),
            size: 100 * (i as u64 + 1),
            sha256: Some(format!("{i:064}")),
        })
        .await
        .unwrap();
        // Distinct access times for a defined LRU order.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(c.totals().await.unwrap(), (3, 600));
    let e = c.lookup("ns/b").await.unwrap().unwrap();
    assert_eq!(
        (e.size, e.sha256.as_deref()),
        (200, Some(format!("{:064}", 1).as_str()))
    );
    assert_eq!(c.lookup("ns/zzz").await.unwrap(), None);
    // Using "a" makes "b" the least recent; the excluded key never shows up.
    c.touch("ns/a").await.unwrap();
    let lru: Vec<String> = c
        .least_recent("ns/c", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(lru, ["ns/b", "ns/a"]);
    // Re-inserting replaces the row.
    c.insert(&Entry {
        key: "ns/b".into(),
        size: 5,
        sha256: None,
    })
    .await
    .unwrap();
    assert_eq!(c.totals().await.unwrap(), (3, 405));
    c.remove("ns/b").await.unwrap();
    assert_eq!(c.totals().await.unwrap(), (2, 400));

    let mut job = JobRow {
        id: "job-1".into(),
        domain: "llm".into(),
        query: "task=gpqa".into(),
        state: "running".into(),
        files_total: 4,
        files_done: 0,
        bytes_total: 0,
        bytes_done: 0,
        errors: serde_json::json!([]),
        created_at_ms: 1,
        updated_at_ms: 1,
        note: None,
    };
    c.insert_job(&job).await.unwrap();
    job.files_done = 3;
    job.bytes_done = 1234;
    job.errors = serde_json::json!([{"run_id": "r", "file": "results.json", "error": "boom"}]);
    job.updated_at_ms = 2;
    c.update_job(&job).await.unwrap();
    assert_eq!(c.job("job-1").await.unwrap().unwrap(), job);
    assert_eq!(c.job("nope").await.unwrap(), None);
    // A process that stops mid-job leaves it running; the next start marks it failed.
    assert_eq!(c.fail_orphaned_jobs().await.unwrap(), 1);
    assert_eq!(c.job("job-1").await.unwrap().unwrap().state, "failed");
    drop(c);

    // Reopening applies no migration twice and keeps the data.
    let c = Catalog::open(url).await.expect("reopen");
    assert_eq!(c.totals().await.unwrap(), (2, 400));
}

#[tokio::test]
async fn sqlite_catalog() {
    let dir = tempfile::tempdir().unwrap();
    suite(&format!(
        "sqlite://{}",
        dir.path().join("catalog.db").display()
    ))
    .await;
}

#[tokio::test]
#[ignore = "needs a PostgreSQL server: set MLENERGY_TEST_POSTGRES"]
async fn postgres_catalog() {
    if let Some(db) = fresh_postgres().await {
        suite(&db.url()).await;
    }
}
