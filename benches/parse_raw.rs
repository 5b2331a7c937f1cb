//! Parse speed of one raw `results.json`: the fast path (window + slices) and the reader path,
//! min and median of N runs each. Measures only; asserts nothing.
//!
//!     cargo bench --bench parse_raw -- PATH/results.json [N] [fast]
//!
//! With `fast`, only the fast path is timed (for profiling it).

use std::time::{Duration, Instant};

use mlenergy_server::rawfile::reader::{read_run, read_run_at};

fn stats(mut t: Vec<Duration>) -> String {
    t.sort();
    format!(
        "min {:.1} ms, median {:.1} ms",
        t[0].as_secs_f64() * 1e3,
        t[t.len() / 2].as_secs_f64() * 1e3
    )
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let Some(path) = args.first() else {
        eprintln!("usage: cargo bench --bench parse_raw -- PATH/results.json [N] [fast]");
        return;
    };
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut fast = Vec::new();
    let mut samples = 0;
    for _ in 0..n {
        let f = std::fs::File::open(path).expect("open");
        let t = Instant::now();
        let d = read_run_at(&f, true).expect("the fast path reads it");
        fast.push(t.elapsed());
        samples = d.itl.as_ref().map_or(0, |b| b.len());
    }
    let mut slow = Vec::new();
    let reader_runs = if args.get(2).is_some_and(|a| a == "fast") {
        0
    } else {
        n.min(3)
    };
    for _ in 0..reader_runs {
        let f = std::fs::File::open(path).expect("open");
        let t = Instant::now();
        std::hint::black_box(read_run(f, path, true).expect("the reader path reads it"));
        slow.push(t.elapsed());
    }
    println!("{path}: {:.1} MB, {samples} ITL samples", size as f64 / 1e6);
    println!("fast path:   {}", stats(fast));
    if !slow.is_empty() {
        println!("reader path: {}", stats(slow));
    }
}
