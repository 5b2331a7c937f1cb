//! Issue 29 item 5: the listener's connections, with real sockets against `serve_until`. A client
//! that sends part of a request's headers and then nothing is closed after the header read
//! timeout; one past `--max-connections` is answered 503 and closed at once; a kept-alive
//! connection is answered again within the keep-alive timeout (not the header timeout) and closed
//! after it; each is counted in /metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mlenergy_server::http::connections::ConnectionOptions;
use mlenergy_server::http::{AppState, HttpOptions, Limits};
use mlenergy_server::service::Service;
use mlenergy_server::service::open as load;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::sample_dir;

/// The server over data/sample with these connection bounds, on a free port; stopped when the
/// sender is dropped or sent to.
async fn server(
    connections: ConnectionOptions,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let dataset = load::load_compiled_dir(&sample_dir()).await.unwrap();
    let catalog = mlenergy_server::store::catalog::Catalog::open("sqlite::memory:")
        .await
        .unwrap();
    let state = AppState::new(
        Arc::new(Service::new(dataset, catalog)),
        Limits {
            max_rows: 100_000,
            stream_bytes: Limits::STREAM_BYTES,
        },
        8 << 20,
    )
    .with_http(HttpOptions {
        connections,
        ..HttpOptions::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        mlenergy_server::server::serve_until(state, listener, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (addr, stop, task)
}

/// Read one answer (head and a Content-Length body) from a kept-alive connection.
async fn answer(s: &mut TcpStream) -> (u16, String) {
    let (status, _, body) = read_answer(s, &mut Vec::new(), false).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Read the next answer from `s`, `buf` holding the bytes read past the last one: its status,
/// head and Content-Length body (none for a HEAD); the bytes after it are kept in `buf`.
async fn read_answer(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    head_only: bool,
) -> (u16, String, Vec<u8>) {
    let mut chunk = [0u8; 16384];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            let len = if head_only { 0 } else { len };
            if buf.len() >= end + 4 + len {
                let status = head.split(' ').nth(1).unwrap().parse().unwrap();
                let body = buf[end + 4..end + 4 + len].to_vec();
                buf.drain(..end + 4 + len);
                return (status, head, body);
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut chunk))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before the answer: {}",
            String::from_utf8_lossy(buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Whether the server closes `s` within `within` (end of stream or a reset).
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut chunk = [0u8; 1024];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut chunk)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// `name{kind="..."} N` of the metrics text.
fn closed(metrics: &str, kind: &str) -> u64 {
    let prefix = format!("mlenergy_http_connections_closed_total{{kind=\"{kind}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{prefix} in {metrics}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_closed_and_refused_past_the_bound() {
    let (addr, stop, task) = server(ConnectionOptions {
        header_read_timeout: Duration::from_millis(800),
        keep_alive_timeout: Duration::from_millis(2500),
        max_connections: 4,
        cpu_turn: Duration::from_micros(100),
    })
    .await;
    // Four connections send a request line and one header, then nothing.
    let mut half = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        half.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A fifth is answered 503 at once and closed.
    let mut fifth = TcpStream::connect(&addr).await.unwrap();
    let mut refused = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), fifth.read_to_end(&mut refused))
        .await
        .expect("answered at once")
        .ok();
    let refused = String::from_utf8_lossy(&refused);
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("--max-connections"), "{refused}");
    // The four are closed once the header timeout has passed, with no answer.
    for s in &mut half {
        assert!(
            closed_within(s, Duration::from_secs(10)).await,
            "a half-open connection is closed"
        );
    }

    // A connection that completes its requests is answered, and kept alive past the header
    // timeout: a second request 1.5 s later is answered on it.
    let mut kept = TcpStream::connect(&addr).await.unwrap();
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    kept.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(answer(&mut kept).await.0, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kept.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(answer(&mut kept).await.0, 200);
    // With no further request it is closed after the keep-alive timeout.
    let idle_from = Instant::now();
    assert!(closed_within(&mut kept, Duration::from_secs(15)).await);
    assert!(idle_from.elapsed() >= Duration::from_millis(1500));
    // A silent connection is closed too.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(15)).await);

    let mut m = TcpStream::connect(&addr).await.unwrap();
    m.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let (status, metrics) = answer(&mut m).await;
    assert_eq!(status, 200);
    assert_eq!(closed(&metrics, "refused"), 1);
    assert_eq!(closed(&metrics, "header_timeout"), 4);
    assert_eq!(closed(&metrics, "idle"), 2);
    assert!(
        metrics.contains("mlenergy_http_connections_open 1\n"),
        "only the metrics request's connection is open: {metrics}"
    );
    drop(m);
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the server stops")
        .unwrap();
}

/// Answers read in turn from one connection, pipelined or not: each answer's status, head and
/// Content-Length body (none for a HEAD), the bytes after it kept for the next.
struct Answers {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Answers {
    async fn next(&mut self, head_only: bool) -> (u16, String, Vec<u8>) {
        read_answer(&mut self.stream, &mut self.buf, head_only).await
    }
}

/// A large answer asked for again (computed, then kept, then answered from what was kept) is the
/// same bytes each time, on one connection and pipelined, with HEAD requests among them, through a
/// client that reads late, and after a client that left mid-answer; so is a leaderboard file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_asked_for_again_are_sent_whole() {
    let (addr, stop, task) = server(ConnectionOptions::default()).await;
    let uri = "/v1/llm/runs?task=gpqa&gpu_model=B200&sort=energy_per_token_joules&limit=50";
    let get = format!("GET {uri} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let head = format!("HEAD {uri} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut one = Answers {
        stream: TcpStream::connect(&addr).await.unwrap(),
        buf: Vec::new(),
    };
    // Computed, then kept (the second time it is sent), then given from what was kept.
    one.stream.write_all(get.as_bytes()).await.unwrap();
    let (status, first_head, first) = one.next(false).await;
    assert_eq!(status, 200);
    assert!(
        first_head.contains("content-type: application/json"),
        "{first_head}"
    );
    let page: serde_json::Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(
        (page["total"].as_u64(), page["count"].as_u64()),
        (Some(106), Some(50))
    );
    let rows = page["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 50);
    assert!(
        rows.iter()
            .all(|r| r["task"] == "gpqa" && r["gpu_model"] == "B200")
    );
    assert!(first.len() > 32 * 1024, "{}", first.len());
    for _ in 0..3 {
        one.stream.write_all(get.as_bytes()).await.unwrap();
        let (status, _, again) = one.next(false).await;
        assert_eq!(status, 200);
        assert!(again == first, "the same bytes");
    }
    // Pipelined: two GETs with a HEAD between them, in one write.
    one.stream
        .write_all(format!("{get}{head}{get}").as_bytes())
        .await
        .unwrap();
    let (_, _, a) = one.next(false).await;
    let (status, h, empty) = one.next(true).await;
    assert_eq!(status, 200);
    assert!(
        h.contains(&format!("content-length: {}", first.len())),
        "{h}"
    );
    assert!(empty.is_empty());
    let (_, _, b) = one.next(false).await;
    assert!(a == first && b == first, "the same bytes, pipelined");

    // A client that leaves after the head, while the body is under way.
    let mut gone = TcpStream::connect(&addr).await.unwrap();
    gone.write_all(get.as_bytes()).await.unwrap();
    let mut some = [0u8; 512];
    let n = gone.read(&mut some).await.unwrap();
    assert!(some[..n].starts_with(b"HTTP/1.1 200"));
    drop(gone);

    // A client with a small receive buffer that reads only after a while: the server's writes
    // wait for room, and the answer arrives whole.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut late = Answers {
        stream: socket.connect(addr.parse().unwrap()).await.unwrap(),
        buf: Vec::new(),
    };
    late.stream
        .write_all(format!("{get}{get}").as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..2 {
        let (status, _, body) = late.next(false).await;
        assert_eq!(status, 200);
        assert!(body == first, "the same bytes, read late");
    }

    // A leaderboard file, twice.
    let lb = format!("GET /leaderboard/data/tasks/gpqa.json HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    one.stream
        .write_all(format!("{lb}{lb}").as_bytes())
        .await
        .unwrap();
    let (status, _, file) = one.next(false).await;
    assert_eq!(status, 200);
    let tasks: serde_json::Value = serde_json::from_slice(&file).unwrap();
    assert!(tasks.is_object(), "{tasks}");
    assert!(file.len() > 32 * 1024, "{}", file.len());
    assert!(one.next(false).await.2 == file, "the same bytes");

    drop(one);
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("the server stops")
        .unwrap();
}

/// `--cpu-turn`: a thread whose turn is over gives its core up after an answer, counted in
/// /metrics; a turn of zero never does. The answers are the same either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_gives_its_core_up_after_an_answer_once_its_turn_is_over() {
    let mut bodies = Vec::new();
    for (turn, gives_up) in [(Duration::from_nanos(1), true), (Duration::ZERO, false)] {
        let (addr, stop, task) = server(ConnectionOptions {
            cpu_turn: turn,
            ..ConnectionOptions::default()
        })
        .await;
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let uri = "/v1/llm/runs?task=gpqa&limit=3";
        let mut got = Vec::new();
        for _ in 0..5 {
            s.write_all(format!("GET {uri} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let (status, body) = answer(&mut s).await;
            assert_eq!(status, 200, "{body}");
            got.push(body);
        }
        assert!(got.iter().all(|b| *b == got[0]));
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let (_, metrics) = answer(&mut s).await;
        let series = "mlenergy_http_cpu_turns_ended_total";
        assert!(
            metrics.lines().any(|l| l.starts_with(series)),
            "{series} in {metrics}"
        );
        let ended = crate::common::counter(&metrics, series);
        if gives_up {
            // Each of the five answers ended a turn (a long one may be flushed more than once).
            assert!(ended >= 5, "{ended}");
        } else {
            assert_eq!(ended, 0);
        }
        bodies.push(got.swap_remove(0));
        let _ = stop.send(());
        tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .expect("the server stops")
            .unwrap();
    }
    let page: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    assert_eq!(page["count"].as_u64(), Some(3));
    assert_eq!(bodies[0], bodies[1]);
}
