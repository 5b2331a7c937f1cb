//! Black-box test of the real binary: start it on a random port, wait for the `listening` log
//! line, talk HTTP over TCP, stop it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: String,
    /// Every log line so far.
    pub(crate) logs: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Server {
    /// Whether a log line containing `text` arrives within 10 s (lines are written in batches,
    /// up to 50 ms after they are logged).
    pub(crate) fn logged(&self, text: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.logs.lock().unwrap().iter().any(|l| l.contains(text)) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Server {
    start_with_env(args, &[])
}

/// The binary on a free port of 127.0.0.1 with JSON logs, once it reports `listening`.
pub(crate) fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlenergy-server"))
        .args(["--bind", "127.0.0.1:0", "--log-format", "json"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        logs.lock().unwrap().push(line.clone());
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if v["fields"]["message"] == "listening" {
            let addr = v["fields"]["addr"].as_str().unwrap().to_string();
            // Keep draining the log so the child never blocks on a full pipe.
            let kept = logs.clone();
            std::thread::spawn(move || {
                for line in lines.map_while(Result::ok) {
                    kept.lock().unwrap().push(line);
                }
            });
            return Server { child, addr, logs };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the server did not report 'listening'");
}

fn get(addr: &str, path: &str) -> (u16, String, String) {
    exchange(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    )
}

/// `request` sent on a connection of its own: the answer's status, head (lowercase) and body.
pub(crate) fn exchange(addr: &str, request: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).unwrap();
    let raw = String::from_utf8_lossy(&bytes);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}

#[test]
fn serves_the_embedded_dataset_from_any_directory() {
    // Started outside the repository with no --data: falls back to the crate's data/sample.
    let server = start(&[]);
    let (status, head, body) = get(
        &server.addr,
        "/v1/llm/runs?task=gpqa&gpu_model=B200&fields=run_id&limit=1",
    );
    assert_eq!(status, 200);
    assert!(head.contains("content-type: application/json"));
    assert!(head.contains("x-request-id: "));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["total"], 106);
    assert_eq!(v["runs"][0]["run_id"], "gpqa~Qwen--Qwen3-14B~B200~g1~b8~r1");

    let (status, head, body) = get(
        &server.addr,
        "/v1/diffusion/runs?batch_size=1&batch_size_min=2",
    );
    assert_eq!(status, 400);
    assert!(head.contains("content-type: application/problem+json"));
    assert!(body.contains("\"parameter\":\"batch_size\""));

    let (status, _, body) = get(&server.addr, "/readyz");
    assert_eq!(status, 200);
    // `compressed` turns true once the start-up task has compressed the files: either, here.
    let mut ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    let compressed = ready["leaderboard"]
        .as_object_mut()
        .unwrap()
        .remove("compressed");
    assert!(compressed.is_some_and(|c| c.is_boolean()));
    assert_eq!(
        ready.to_string(),
        r#"{"status":"ready","llm_runs":838,"diffusion_runs":1020,"leaderboard":{"files":70,"last_updated":"2026-02-16","histograms":{"files":50,"ready":50,"pending":0,"without":[]}}}"#
    );
}

fn post_sql(addr: &str, sql: &str) -> (u16, serde_json::Value) {
    let (status, body) = post_sql_text(addr, sql);
    (status, serde_json::from_str(&body).unwrap())
}

/// `sql` posted to `/v1/sql` on a connection of its own: the answer's status and body.
pub(crate) fn post_sql_text(addr: &str, sql: &str) -> (u16, String) {
    let (status, _, body) = exchange(
        addr,
        &format!(
            "POST /v1/sql HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{sql}",
            sql.len()
        ),
    );
    (status, body)
}

/// The chains of operators the bound lets through are answered by the real binary (its worker
/// stacks are what the bound is measured against; this is the debug build, whose frames are the
/// largest), with the answer the same query written without the chain has; past the bound they are
/// refused and the server stays up. 2,000 ORs used to abort the server on a worker's stack.
#[test]
fn chains_of_operators_at_the_bound_are_answered() {
    // Planning a chain this long takes seconds in the debug build on a busy machine, and the time
    // limit counts planning as well (it did not before the SQL runtime of its own): the stack is
    // what this test is about, so the limit is out of its way.
    let server = start(&["--sql-timeout", "60s"]);
    let addr = &server.addr;
    let value = |sql: &str| {
        let (status, v) = post_sql(addr, sql);
        assert_eq!(status, 200, "{v}");
        v["rows"][0]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone()
    };
    // SELECT, COUNT, FROM, WHERE, 488 ORs and 489 `=`, and count(*)'s group of two: 983 links.
    let values: Vec<String> = (0..489).map(|i| (i % 9).to_string()).collect();
    let ors: Vec<String> = values.iter().map(|v| format!("num_gpus = {v}")).collect();
    assert_eq!(
        value(&format!(
            "SELECT count(*) FROM llm_runs WHERE {}",
            ors.join(" OR ")
        )),
        value(&format!(
            "SELECT count(*) FROM llm_runs WHERE num_gpus IN ({})",
            values.join(", ")
        ))
    );
    assert_eq!(
        value(&format!("SELECT {}", vec!["1"; 999].join(" + "))),
        serde_json::json!(999)
    );
    assert_eq!(
        value(&format!(
            "SELECT {} AS t FROM llm_runs LIMIT 1",
            vec!["num_gpus > 0"; 498].join(" AND ")
        )),
        serde_json::json!(true)
    );
    for n in [1_001, 2_000, 20_000] {
        // SELECT and n - 1 `+`: n links.
        let (status, v) = post_sql(addr, &format!("SELECT {}", vec!["1"; n].join(" + ")));
        assert_eq!(status, 400, "{v}");
        assert!(
            v["detail"]
                .as_str()
                .unwrap()
                .starts_with(&format!("the statement chains {n} operators")),
            "{v}"
        );
    }
    assert_eq!(
        value("SELECT count(*) AS n FROM llm_runs"),
        serde_json::json!(838)
    );
}

#[test]
fn a_missing_data_directory_fails_cleanly() {
    let out = Command::new(env!("CARGO_BIN_EXE_mlenergy-server"))
        .args(["--bind", "127.0.0.1:0", "--data", "/nonexistent/dataset"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/dataset/runs/llm.parquet does not exist"),
        "{err}"
    );
}

/// A stop (SIGTERM) right after answers that parsed raw files: the process exits cleanly, with
/// every run's derived data persisted in the cache.
#[test]
fn a_stop_waits_for_derived_data_to_be_persisted() {
    let cache = tempfile::tempdir().unwrap();
    let mut server = start(&["--cache", cache.path().to_str().unwrap()]);
    let uris = [
        "/v1/llm/runs/video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1/itl?summary=true",
        "/v1/diffusion/runs/text-to-image~Efficient-Large-Model--SANA1.5_1.6B_1024px_diffusers~B200~g2~b1~1024x1024~s20~u1~r2/timeline",
        "/v1/diffusion/runs/text-to-video~Wan-AI--Wan2.1-T2V-1.3B-Diffusers~B200~g2~b1~480x832~s50~u1~r2/timeline",
    ];
    for uri in uris {
        let (status, _, body) = get(&server.addr, uri);
        assert_eq!(status, 200, "{uri}: {body}");
    }
    let stopped = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", server.child.id())])
        .status()
        .unwrap();
    assert!(stopped.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let exit = loop {
        if let Some(s) = server.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    let persisted = walkdir::WalkDir::new(cache.path().join("derived"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".arrow"))
        .count();
    assert_eq!(persisted, 3);
}

/// Text logs written to a pipe carry no ANSI colour codes (colour is for terminals only).
#[test]
fn text_logs_to_a_pipe_are_plain() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mlenergy-server"))
        .args(["--bind", "127.0.0.1:0", "--log-format", "text"])
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let done = line.contains("listening");
        seen.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen.iter().any(|l| l.contains("listening")), "{seen:?}");
    assert!(seen.iter().any(|l| l.contains("INFO")), "{seen:?}");
    assert!(!seen.iter().any(|l| l.contains('\u{1b}')), "{seen:?}");
}

/// The admin token is never written to the log, at any level, whether a request carries the
/// right one or a wrong one.
#[test]
fn the_admin_token_is_never_logged() {
    let token = "tok-8f3a9c1d-never-log";
    let server = start_with_env(
        &[],
        &[("MLENERGY_ADMIN_TOKEN", token), ("MLENERGY_LOG", "trace")],
    );
    for auth in [format!("Bearer {token}"), "Bearer wrong".to_string()] {
        let mut s = TcpStream::connect(&server.addr).unwrap();
        write!(
            s,
            "POST /v1/llm/prefetch?task=video-chat HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            server.addr
        )
        .unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let status: u16 = raw.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(status == 202 || status == 401, "{raw}");
    }
    std::thread::sleep(Duration::from_millis(500));
    let logs = server.logs.lock().unwrap();
    assert!(logs.len() > 5, "the requests were logged");
    assert!(logs.iter().any(|l| l.contains("prefetch")), "{logs:?}");
    assert!(
        !logs.iter().any(|l| l.contains(token)),
        "the token is in the log"
    );
}

/// SIGHUP reads the dataset again: new runs are served without a restart.
#[cfg(unix)]
#[test]
fn sighup_reloads_the_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    crate::common::copy_sample(&data);
    let cache = dir.path().join("cache");
    let server = start(&[
        "--data",
        data.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
    ]);
    let total = |server: &Server| -> u64 {
        let (status, _, body) = get(&server.addr, "/v1/llm/runs?limit=1");
        assert_eq!(status, 200);
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["total"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(total(&server), 838);
    // Only the diffusion table's runs change: drop all but the text-to-video runs.
    let (status, _, _) = get(
        &server.addr,
        "/v1/diffusion/runs?task=text-to-video&format=parquet",
    );
    assert_eq!(status, 200);
    keep_text_to_video_only(&server.addr, &data);
    let diffusion_total = |server: &Server| -> u64 {
        let (_, _, body) = get(&server.addr, "/v1/diffusion/runs?limit=1");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["total"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(diffusion_total(&server), 1020);
    let pid = server.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while diffusion_total(&server) == 1020 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(diffusion_total(&server), 382);
    assert_eq!(total(&server), 838);
    assert!(
        server.logged("reloaded on SIGHUP"),
        "{:?}",
        server.logs.lock().unwrap()
    );
}

/// `--watch`: the source read again on a timer, swapped in only when its content changed.
#[test]
fn watch_serves_a_changed_source_and_leaves_an_unchanged_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    crate::common::copy_sample(&data);
    let cache = dir.path().join("cache");
    let server = start(&[
        "--data",
        data.to_str().unwrap(),
        "--cache",
        cache.to_str().unwrap(),
        "--watch",
        "300ms",
    ]);
    let json = |path: &str| -> serde_json::Value {
        let (status, _, body) = get(&server.addr, path);
        assert_eq!(status, 200, "{path}");
        serde_json::from_str(&body).unwrap()
    };
    // Unchanged over several ticks: nothing reloaded.
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(json("/v1/datasets")["last_reload"], serde_json::Value::Null);
    keep_text_to_video_only(&server.addr, &data);
    let deadline = Instant::now() + Duration::from_secs(20);
    while json("/v1/diffusion/runs?limit=1")["total"] == 1020 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(json("/v1/diffusion/runs?limit=1")["total"], 382);
    assert_eq!(
        json("/v1/datasets")["last_reload"]["error"],
        serde_json::Value::Null
    );
    assert!(
        server.logged("the source changed: reloaded"),
        "{:?}",
        server.logs.lock().unwrap()
    );
}

/// Rewrite the diffusion table of the dataset at `data` to its text-to-video runs (382), as the
/// server at `addr` answers them in Parquet.
fn keep_text_to_video_only(addr: &str, data: &std::path::Path) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /v1/diffusion/runs?task=text-to-video&format=parquet HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    // Written beside the data and renamed over the file, as a deploy replaces it: a watcher's tick
    // never sees the file half written.
    let fresh = data.with_extension("fresh.parquet");
    std::fs::write(&fresh, &raw[at..]).unwrap();
    std::fs::rename(&fresh, data.join("runs/diffusion.parquet")).unwrap();
}

/// Issue 29 item 6: RUST_LOG is honoured when MLENERGY_LOG is not set (an empty one counts as
/// unset), and MLENERGY_LOG comes first when both are.
#[test]
fn rust_log_is_honoured_after_mlenergy_log() {
    let debug_lines = |env: &[(&str, &str)]| {
        let server = start_with_env(&[], env);
        let (status, _, _) = get(&server.addr, "/healthz");
        assert_eq!(status, 200);
        std::thread::sleep(Duration::from_millis(300));
        let logs = server.logs.lock().unwrap();
        logs.iter()
            .filter(|l| l.contains("\"level\":\"DEBUG\""))
            .count()
    };
    assert!(
        debug_lines(&[("MLENERGY_LOG", ""), ("RUST_LOG", "debug")]) > 0,
        "RUST_LOG=debug shows debug lines"
    );
    assert_eq!(
        debug_lines(&[("MLENERGY_LOG", "info"), ("RUST_LOG", "debug")]),
        0,
        "MLENERGY_LOG first"
    );
    assert_eq!(
        debug_lines(&[("MLENERGY_LOG", ""), ("RUST_LOG", "")]),
        0,
        "info by default"
    );
}
