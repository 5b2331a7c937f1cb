//! SQL text built from the function registry (issue 62): every function DataFusion registers
//! (`engine::sql_bounds::registry`, allowed or not), nested up to three deep, over hostile
//! arguments (huge and extreme counts, long strings, wide and nested lists, NULLs, columns of
//! many rows), in a statement of one of several shapes (a constant, a row of each run, a cross
//! join, an aggregate, a table function, a recursive doubling). Each is sent as `POST /v1/sql`
//! through the router, and must be answered with a success or a 4xx within the time limit plus a
//! second, while the process's private memory (sampled every few milliseconds) stays within the
//! memory share plus 64 MiB of what it was before the first query.

#![no_main]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::Request;
use libfuzzer_sys::fuzz_target;

#[path = "app.rs"]
mod app;

/// The time limit of the fuzzed service (short: an execution that runs until stopped costs it).
const TIMEOUT: Duration = Duration::from_millis(1000);
const SHARE: u64 = 512 << 20;
const SLACK: u64 = 64 << 20;

const LEAVES: &[&str] = &[
    "2000000000",
    "-2000000000",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "0",
    "3",
    "NULL",
    "'x'",
    "''",
    "'(a)'",
    "'$1$1$1$1'",
    "repeat('ab', 8000)",
    "range(1, 2000)",
    "[[1, 2], [3]]",
    "[]",
    "named_struct('a', 1)",
    "map(['a'], [1])",
    "TIMESTAMP '2026-01-01 00:00:00'",
    "INTERVAL '1 nanosecond'",
    "DATE '1970-01-01'",
    "model_id",
    "run_id",
    "num_gpus",
    "num_gpus * 100000000",
    "energy_per_token_joules",
];

struct Fuzzed {
    app: app::App,
    functions: Vec<(&'static str, String)>,
    /// The process's private memory before the first query, and the most seen since.
    idle: u64,
    peak: &'static AtomicU64,
}

fn rss_anon() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb << 10)
}

fn fuzzed() -> &'static Fuzzed {
    static F: OnceLock<Fuzzed> = OnceLock::new();
    F.get_or_init(|| {
        let mut options = mlenergy_server::service::ServiceOptions::default();
        options.sql_limits.timeout = TIMEOUT;
        options.sql_concurrency = 1;
        let app = app::build(options);
        // The SQL context is made by the first query.
        let warm = Request::post("/v1/sql")
            .header("content-type", "text/plain")
            .body(Body::from("SELECT 1"))
            .unwrap();
        assert!(app.send(warm).0.is_success());
        let peak: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
        std::thread::spawn(move || {
            loop {
                peak.fetch_max(rss_anon(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        Fuzzed {
            app,
            functions: mlenergy_server::engine::sql_bounds::registry(),
            idle: rss_anon(),
            peak,
        }
    })
}

/// The fuzzer's bytes, read one choice at a time (0 when they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> usize {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b as usize
            }
            None => 0,
        }
    }
    fn pick<'t, T>(&mut self, of: &'t [T]) -> &'t T {
        let i = (self.next() << 8 | self.next()) % of.len();
        &of[i]
    }
}

/// A call of one of `kind`'s functions, or a leaf.
fn expr(b: &mut Bytes, f: &Fuzzed, depth: usize, kind: &str) -> String {
    if depth == 0 || b.next() % 3 == 0 {
        return b.pick(LEAVES).to_string();
    }
    let of_kind: Vec<&String> = f
        .functions
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, n)| n)
        .collect();
    let name = b.pick(&of_kind);
    let arity = b.next() % 4;
    let args: Vec<String> = (0..arity)
        .map(|_| expr(b, f, depth - 1, "scalar"))
        .collect();
    format!("{name}({})", args.join(", "))
}

fn statement(b: &mut Bytes, f: &Fuzzed) -> String {
    let e = expr(b, f, 3, "scalar");
    match b.next() % 8 {
        0 | 1 => format!("SELECT {e}"),
        // Calls on every run, the answer counted: its encoding is not the query's work, and an
        // unoptimised build takes long over a large answer.
        2 => format!("SELECT count(v) FROM (SELECT {e} AS v FROM llm_runs) s"),
        3 => format!("SELECT {} FROM llm_runs", expr(b, f, 2, "aggregate")),
        4 => format!(
            "SELECT count(v) FROM (SELECT {} OVER (ORDER BY run_id) AS v FROM llm_runs) s",
            expr(b, f, 1, "window")
        ),
        5 => format!(
            "SELECT count(*) FROM {}",
            expr(b, f, 2, "table").replace("()", "(1)")
        ),
        6 => format!(
            "SELECT max(length(CAST(v AS VARCHAR))) FROM (SELECT {e} AS v) c, \
             (SELECT run_id FROM llm_runs LIMIT 40) a, (SELECT run_id FROM llm_runs LIMIT 40) b"
        ),
        _ => format!(
            "WITH RECURSIVE t(x, n) AS (SELECT CAST({e} AS VARCHAR), 1 UNION ALL \
             SELECT x || x, n + 1 FROM t WHERE n < 40) SELECT max(length(x)) FROM t"
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let f = fuzzed();
    let sql = statement(&mut Bytes(data), f);
    let req = Request::post("/v1/sql")
        .header("content-type", "text/plain")
        .body(Body::from(sql.clone()))
        .unwrap();
    let start = Instant::now();
    let (status, body) = f.app.send(req);
    let took = start.elapsed();
    assert!(
        !status.is_server_error(),
        "{sql}: {status} {}",
        String::from_utf8_lossy(&body)
    );
    assert!(
        took <= TIMEOUT + Duration::from_secs(1),
        "{sql}: answered in {took:?}"
    );
    let grown = f.peak.load(Ordering::Relaxed).saturating_sub(f.idle);
    assert!(
        grown <= SHARE + SLACK,
        "{sql}: private memory grew by {} MiB",
        grown >> 20
    );
});
