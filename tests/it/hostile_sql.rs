//! Every function of DataFusion's registry, called with hostile arguments over HTTP on the real
//! binary (issue 62): each call is answered (200, a 4xx, or 503 when the gate is full; never
//! another 5xx) within the time limit plus a second, the server's private memory never grows past
//! its memory share plus 64 MiB while it answers, and it is alive after. The functions are those
//! of a new DataFusion context (`engine::sql_bounds::registry`), so one an upgrade adds is called
//! here too (refused by name unless `engine::sql_bounds` allows it).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::binary::{Server, exchange, post_sql_text, start_with_env};

/// The server's time limit in these tests (shorter than the default, so calls that run until
/// stopped cost less of the suite's time).
const TIMEOUT: Duration = Duration::from_secs(2);
const SHARE: u64 = 512 << 20;
const SLACK: u64 = 64 << 20;

/// Private memory (RssAnon) of process `pid`, in bytes.
pub(crate) fn rss_anon(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

/// The highest private memory of `pid` seen while it runs, sampled every few milliseconds.
pub(crate) struct Peak {
    peak: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peak {
    pub(crate) fn watch(pid: u32) -> Peak {
        let peak = Arc::new(AtomicU64::new(rss_anon(pid)));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (peak.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_anon(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        Peak {
            peak,
            stop,
            thread: Some(thread),
        }
    }

    pub(crate) fn get(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for Peak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `sql` posted to the server: its status, body and how long it took.
fn post(addr: &str, sql: &str) -> (u16, String, Duration) {
    let start = Instant::now();
    let (status, body) = post_sql_text(addr, sql);
    (status, body, start.elapsed())
}

/// The server these tests call: the defaults but for a shorter time limit and one query at a
/// time (a query stopped while computing holds its turn until it has stopped, so at most one
/// query's memory is ever in use, the bound the tests hold it to).
fn server() -> Server {
    start_with_env(
        &[
            "--sql-timeout",
            "2s",
            "--sql-concurrency",
            "1",
            "--sql-queue",
            "64",
        ],
        &[],
    )
}

/// Arguments of every kind, most of them hostile: huge and extreme counts, long strings, wide
/// and nested lists, NULLs, dates, intervals and columns of many rows.
const ARGS: &[&str] = &[
    "2000000000",
    "-2000000000",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "NULL",
    "'x'",
    "repeat('ab', 8000)",
    "range(1, 2000)",
    "[[1, 2], [3]]",
    "named_struct('a', 1)",
    "map(['a'], [1])",
    "TIMESTAMP '2026-01-01 00:00:00'",
    "INTERVAL '1 nanosecond'",
    "model_id",
    "num_gpus",
];

/// A huge count, and one made per row from a column.
const BIG: &str = "2000000000";
const PER_ROW: &str = "num_gpus * 100000000";

/// The argument lists each function is called with: every argument alone, every argument before
/// a huge count, and the shapes of the functions that build from a count or a replacement.
fn argument_lists() -> Vec<Vec<&'static str>> {
    let mut lists: Vec<Vec<&str>> = vec![vec![]];
    for a in ARGS {
        lists.push(vec![a]);
        lists.push(vec![a, BIG]);
    }
    for a in ["'x'", "range(1, 2000)", "1", "repeat('ab', 8000)"] {
        lists.push(vec![a, PER_ROW]);
        lists.push(vec![a, "9223372036854775807", "'y'"]);
    }
    lists.extend([
        vec!["1", BIG, "1"],
        vec![
            "TIMESTAMP '1970-01-01 00:00:00'",
            "TIMESTAMP '2200-01-01 00:00:00'",
            "INTERVAL '1 nanosecond'",
        ],
        vec!["repeat('ab', 8000)", "'b'", "repeat('cd', 8000)"],
        vec!["repeat('ab', 8000)", "''", "repeat('cd', 8000)"],
        vec!["repeat('ab', 8000)", "'(a)'", "'$1$1$1$1$1$1$1$1'", "'g'"],
        vec!["'x'", "'x'", "'x'", "'x'"],
    ]);
    lists
}

/// Rows for calls over columns: every LLM run, twice over (a few thousand rows).
const ROWS: &str = "(SELECT a.* FROM llm_runs a, (VALUES (1), (2)) v(n)) t";

/// The statements calling `name` (of `kind`) with `args`.
fn statement(kind: &str, name: &str, args: &[&str]) -> String {
    let list = args.join(", ");
    let over_rows = args
        .iter()
        .any(|a| a.contains("model_id") || a.contains("num_gpus"));
    let from = if over_rows || kind != "scalar" {
        format!(" FROM {ROWS}")
    } else {
        String::new()
    };
    // Over rows, the answer is counted: the calls are made on every row, and the answer (whose
    // encoding is not the query's work) stays one row.
    match kind {
        "window" => {
            format!(
                "SELECT count(v) FROM (SELECT {name}({list}) OVER (ORDER BY run_id) AS v{from}) s"
            )
        }
        "table" => format!("SELECT count(*) FROM {name}({list})"),
        _ if !from.is_empty() => {
            format!("SELECT count(v) FROM (SELECT {name}({list}) AS v{from}) s")
        }
        _ => format!("SELECT {name}({list})"),
    }
}

#[test]
fn every_registered_function_with_hostile_arguments_stays_within_the_bounds() {
    let server = server();
    let addr = server.addr.clone();
    let pid = server.child.id();
    // The SQL context is made by the first query: the idle server is measured after it.
    assert_eq!(post(&addr, "SELECT 1").0, 200);
    let idle = rss_anon(pid);
    let peak = Peak::watch(pid);

    let functions = mlenergy_server::engine::sql_bounds::registry();
    let allowed: BTreeSet<String> = {
        let (status, body, _) = {
            let (s, _, b) = exchange(
                &addr,
                &format!(
                    "GET /v1/sql/functions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
                ),
            );
            (s, b, ())
        };
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(allowed.contains("repeat") && allowed.contains("array_agg"));
    assert!(!allowed.contains("levenshtein"), "{allowed:?}");

    let mut calls: Vec<String> = Vec::new();
    for (kind, name) in &functions {
        for args in argument_lists() {
            calls.push(statement(kind, name, &args));
        }
    }
    let calls = Arc::new(calls);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let answered = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::<
        u16,
        usize,
    >::new()));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (calls, next, failures, answered, addr) = (
                calls.clone(),
                next.clone(),
                failures.clone(),
                answered.clone(),
                addr.clone(),
            );
            std::thread::spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(sql) = calls.get(i) else { break };
                    let (status, body, took) = post(&addr, sql);
                    *answered.lock().unwrap().entry(status).or_default() += 1;
                    let mut f = failures.lock().unwrap();
                    // 503: the gate was full (a query waits for a turn within its time limit).
                    if !(status == 200 || status == 503 || (400..500).contains(&status)) {
                        f.push(format!("{sql}: {status} {body}"));
                    }
                    if took > TIMEOUT + Duration::from_secs(1) {
                        f.push(format!("{sql}: answered in {took:?}"));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let grown = peak.get().saturating_sub(idle);
    drop(peak);
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} calls broke a bound:\n{}",
        failures.len(),
        calls.len(),
        failures.join("\n")
    );
    assert!(
        grown <= SHARE + SLACK,
        "private memory grew by {} MiB over {} calls",
        grown >> 20,
        calls.len()
    );
    // Alive, and answering.
    let (status, _, _) = exchange(
        &addr,
        &format!("GET /v1/llm/runs?limit=1 HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200);
    let answered = answered.lock().unwrap();
    eprintln!(
        "{} functions, {} calls, answers by status {answered:?}, private memory grew by {} MiB",
        functions.len(),
        calls.len(),
        grown >> 20
    );
    // The calls did reach functions: many answered, many were stopped by a bound.
    assert!(
        answered.get(&200).copied().unwrap_or(0) > 1000,
        "{answered:?}"
    );
    assert!(
        answered.get(&422).copied().unwrap_or(0) > 100,
        "{answered:?}"
    );
}
