//! Two replicas, one cache (issue 19 item 6): an S3 server (moto's server mode, from PyPI),
//! PostgreSQL and the fake hub; two server processes with `--cache s3://…` and one `postgres://`
//! catalog. A raw file asked of both at once is fetched from the hub once; derived data persisted
//! by one is used by the other without reading the raw file; an eviction by one is seen by the
//! other; a replica killed mid-download leaves no object behind, and the other takes its lease over
//! once it expires and serves the whole file.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::ObjectStore;

use crate::binary::{Server, start_with_env};
use crate::common::fresh_postgres;
use crate::common::hub::{FakeHub, Fault, REPO};
use crate::common::sample_dir;

const BUCKET: &str = "fleet";

/// moto's S3 server on a free port, with the bucket created; stopped on drop.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    async fn start() -> Moto {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // moto takes unsigned requests: a PUT of the bucket creates it.
            match client
                .put(format!("{}/{BUCKET}", moto.endpoint))
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => return moto,
                _ if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => {
                    panic!("moto's S3 server did not start (pip install 'moto[server]'): {other:?}")
                }
            }
        }
    }

    /// The settings object_store reads for S3, in the form of its environment variables.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// Every object in the bucket: (key, size).
    async fn objects(&self) -> Vec<(String, u64)> {
        let s3 = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_bucket_name(BUCKET)
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_region("us-east-1")
            .with_allow_http(true)
            .build()
            .unwrap();
        let mut out: Vec<(String, u64)> = s3
            .list(None)
            .map_ok(|m| (m.location.to_string(), m.size))
            .try_collect()
            .await
            .unwrap();
        out.sort();
        out
    }
}

/// A replica: the binary over the fake hub's dataset, caching in the bucket, with the shared
/// catalog and a fetch lease of 2 s.
async fn replica(hub: &FakeHub, moto: &Moto, catalog: &str, home: &std::path::Path) -> Server {
    let mut env: Vec<(&str, String)> = moto.env();
    env.push(("HF_HOME", home.display().to_string()));
    env.push(("HF_TOKEN", String::new()));
    env.push(("MLENERGY_LOG", "info".into()));
    let args: Vec<String> = [
        "--data",
        &format!("hf://datasets/{REPO}"),
        "--hf-endpoint",
        &hub.url,
        "--cache",
        &format!("s3://{BUCKET}/cache"),
        "--catalog",
        catalog,
        "--cache-lease-ttl",
        "2s",
        "--upstream-timeout",
        "10s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        start_with_env(&args, &env)
    })
    .await
    .unwrap()
}

async fn get(client: &reqwest::Client, server: &Server, path: &str) -> (u16, Vec<u8>) {
    let r = client
        .get(format!("http://{}{path}", server.addr))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
}

/// DELETE `path` (an eviction): the JSON answer.
async fn delete(client: &reqwest::Client, server: &Server, path: &str) -> serde_json::Value {
    let r = client
        .delete(format!("http://{}{path}", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

async fn json(client: &reqwest::Client, server: &Server, path: &str) -> serde_json::Value {
    let (status, body) = get(client, server, path).await;
    assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

/// A counter of `/metrics` (0 when absent).
async fn metric(client: &reqwest::Client, server: &Server, name: &str) -> u64 {
    let (_, body) = get(client, server, "/metrics").await;
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

/// (run_id, results_path) of the first run of `domain` with a raw file.
pub(crate) async fn raw_run(
    client: &reqwest::Client,
    server: &Server,
    domain: &str,
) -> (String, String) {
    let runs = json(
        client,
        server,
        &format!(
            "/v1/{domain}/runs?fields=run_id,results_path{}",
            if domain == "llm" {
                "&stability=all"
            } else {
                ""
            }
        ),
    )
    .await;
    runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|r| {
            Some((
                r["run_id"].as_str()?.to_string(),
                r["results_path"].as_str()?.to_string(),
            ))
        })
        .unwrap()
}

/// Every object in the bucket is a whole file the catalog lists, with the listed size.
async fn bucket_matches_catalog(moto: &Moto, catalog: &str) {
    use sqlx::{Connection, Row};
    let mut conn = sqlx::PgConnection::connect(catalog).await.unwrap();
    let mut listed: Vec<(String, u64)> = sqlx::query("SELECT key, size FROM cache_entries")
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|r| {
            let key: String = r.get("key");
            let size: i64 = r.get("size");
            (format!("cache/{key}"), size as u64)
        })
        .collect();
    listed.sort();
    assert_eq!(moto.objects().await, listed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs MLENERGY_TEST_POSTGRES and moto's S3 server (pip install 'moto[server]'); tests/run.sh runs it"]
async fn two_replicas_share_one_cache() {
    let Some(pg) = fresh_postgres().await else {
        return;
    };
    let catalog = pg.url();
    let moto = Moto::start().await;
    let hub = FakeHub::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut a = replica(&hub, &moto, &catalog, &tmp.path().join("home-a")).await;
    let b = replica(&hub, &moto, &catalog, &tmp.path().join("home-b")).await;
    let client = reqwest::Client::new();
    let (cache_a, cache_b) = (
        json(&client, &a, "/v1/cache").await,
        json(&client, &b, "/v1/cache").await,
    );
    assert_ne!(cache_a["replica"], cache_b["replica"]);
    assert_eq!(cache_a["location"], format!("s3://{BUCKET}/cache"));
    assert!(
        cache_a["catalog"]
            .as_str()
            .unwrap()
            .starts_with("postgres://")
    );

    // 1. One file asked of both replicas at once (a download of about 1.2 s): one hub GET.
    let (diff_id, diff_path) = raw_run(&client, &a, "diffusion").await;
    let diff_file = std::fs::read(sample_dir().join(&diff_path)).unwrap();
    hub.fault(&diff_path, Some(Fault::Paced(Duration::from_millis(150))));
    let uri = format!("/v1/diffusion/runs/{diff_id}/raw/results.json");
    let (ra, rb) = tokio::join!(get(&client, &a, &uri), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        get(&client, &b, &uri).await
    });
    hub.fault(&diff_path, None);
    assert_eq!((ra.0, rb.0), (200, 200));
    assert!(ra.1 == diff_file && rb.1 == diff_file);
    assert_eq!(
        hub.gets(&diff_path),
        1,
        "fetched from the hub once in total"
    );
    let waits = metric(&client, &a, "mlenergy_raw_cache_lease_waits_total").await
        + metric(&client, &b, "mlenergy_raw_cache_lease_waits_total").await;
    let misses = metric(&client, &a, "mlenergy_raw_cache_misses_total").await
        + metric(&client, &b, "mlenergy_raw_cache_misses_total").await;
    assert_eq!((waits, misses), (1, 1), "one downloaded, the other waited");

    // 2. Derived data persisted by A is loaded by B, which never reads the raw file.
    let (llm_id, llm_path) = raw_run(&client, &a, "llm").await;
    let itl = format!("/v1/llm/runs/{llm_id}/itl?summary=true");
    let (status, from_a) = get(&client, &a, &itl).await;
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(&client, &a, "mlenergy_derived_persisted_total").await < 1 {
        assert!(Instant::now() < deadline, "A persisted its derived data");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let b_raw_before = metric(&client, &b, "mlenergy_raw_cache_hits_total").await
        + metric(&client, &b, "mlenergy_raw_cache_misses_total").await;
    let (status, from_b) = get(&client, &b, &itl).await;
    assert_eq!(status, 200);
    assert_eq!(from_a, from_b);
    assert_eq!(
        metric(
            &client,
            &b,
            "mlenergy_derived_loads_total{from=\"persisted\"}"
        )
        .await,
        1
    );
    assert_eq!(
        metric(&client, &b, "mlenergy_derived_loads_total{from=\"raw\"}").await,
        0
    );
    let b_raw_after = metric(&client, &b, "mlenergy_raw_cache_hits_total").await
        + metric(&client, &b, "mlenergy_raw_cache_misses_total").await;
    assert_eq!(b_raw_before, b_raw_after, "B did not open the raw file");
    assert_eq!(hub.gets(&llm_path), 1);
    bucket_matches_catalog(&moto, &catalog).await;

    // 3. An eviction by A is seen by B: the shared listing shrinks, and B fetches the file again.
    let files_before = json(&client, &b, "/v1/cache").await["files"]
        .as_u64()
        .unwrap();
    let evicted = delete(&client, &a, &format!("/v1/llm/runs/{llm_id}/cache")).await;
    assert_eq!(evicted["removed"].as_array().unwrap().len(), 2, "{evicted}");
    let files_after = json(&client, &b, "/v1/cache").await["files"]
        .as_u64()
        .unwrap();
    assert_eq!(files_after, files_before - 2);
    let llm_file = std::fs::read(sample_dir().join(&llm_path)).unwrap();
    let raw = format!("/v1/llm/runs/{llm_id}/raw/results.json");
    assert_eq!(get(&client, &b, &raw).await, (200, llm_file));
    assert_eq!(hub.gets(&llm_path), 2);
    bucket_matches_catalog(&moto, &catalog).await;

    // 4. A killed in the middle of a download (of about 3.2 s) leaves no object; B waits for
    // A's lease to expire, takes it over and serves the whole file.
    let evicted = delete(&client, &b, &format!("/v1/diffusion/runs/{diff_id}/cache")).await;
    assert_eq!(evicted["removed"][0]["file"], "results.json", "{evicted}");
    hub.fault(&diff_path, Some(Fault::Paced(Duration::from_millis(400))));
    let (a_addr, a_uri) = (a.addr.clone(), uri.clone());
    let doomed = tokio::spawn(async move {
        reqwest::get(format!("http://{a_addr}{a_uri}"))
            .await
            .map(|r| r.status())
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while hub.gets(&diff_path) < 2 {
        assert!(Instant::now() < deadline, "A started the download");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    assert!(doomed.await.unwrap().is_err(), "A died before answering");
    hub.fault(&diff_path, None);
    let waits_before = metric(&client, &b, "mlenergy_raw_cache_lease_waits_total").await;
    assert_eq!(get(&client, &b, &uri).await, (200, diff_file));
    assert_eq!(hub.gets(&diff_path), 3, "A's cut download, then B's");
    assert_eq!(
        metric(&client, &b, "mlenergy_raw_cache_lease_waits_total").await,
        waits_before + 1,
        "B found A's lease and waited for it to expire"
    );
    bucket_matches_catalog(&moto, &catalog).await;
    drop(b);
}
