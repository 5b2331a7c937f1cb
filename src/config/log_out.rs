//! Where the log lines go: standard output. A server logs each request (one line with its
//! `x-request-id`), and a line written on its own cost a `write` call on the request's thread, so
//! `serve` batches them: a line is appended to a buffer under a lock, and the buffer is written
//! when it holds [`BATCH_BYTES`], by a thread of its own at most [`LATEST`] after its first line,
//! and when the process ends ([`flush`]). Lines reach the output in the order they were logged;
//! a process that aborts loses the lines still waiting (at most the last 50 ms). The other
//! commands print their results on standard output between their log lines, and log to it
//! directly (`std::io::stdout`).

use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// Buffered bytes that are written at once, on the thread that logs.
const BATCH_BYTES: usize = 32 * 1024;

/// How long a line may wait in the buffer.
const LATEST: Duration = Duration::from_millis(50);

struct Shared {
    lines: Mutex<Vec<u8>>,
    /// Signalled when the buffer gets its first line.
    filled: Condvar,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| {
        let _ = std::thread::Builder::new()
            .name("log-out".into())
            .spawn(flusher);
        Shared {
            lines: Mutex::new(Vec::with_capacity(BATCH_BYTES)),
            filled: Condvar::new(),
        }
    })
}

/// Lock the buffer; a thread that panicked while holding it left whole lines only (each is
/// appended with one `extend_from_slice`).
fn lock(s: &Shared) -> MutexGuard<'_, Vec<u8>> {
    s.lines.lock().unwrap_or_else(|p| p.into_inner())
}

/// Append `line`, handing the buffer to `write_out` once it holds a batch; whether the buffer
/// was empty before (the flusher is then waiting for a line).
fn append(lines: &mut Vec<u8>, line: &[u8], write_out: impl FnOnce(&mut Vec<u8>)) -> bool {
    let was_empty = lines.is_empty();
    lines.extend_from_slice(line);
    if lines.len() >= BATCH_BYTES {
        write_out(lines);
    }
    was_empty
}

/// Write out the buffer's lines; output that fails (a closed pipe) drops them, as a line
/// written on its own would be.
fn drain(lines: &mut Vec<u8>, out: &mut dyn Write) {
    if lines.is_empty() {
        return;
    }
    let _ = out.write_all(lines);
    let _ = out.flush();
    lines.clear();
}

/// The thread that writes what waits: it sleeps until a line arrives, lets lines gather for
/// [`LATEST`], and writes them.
fn flusher() {
    let s = shared();
    loop {
        {
            let mut lines = lock(s);
            while lines.is_empty() {
                lines = s.filled.wait(lines).unwrap_or_else(|p| p.into_inner());
            }
        }
        std::thread::sleep(LATEST);
        drain(&mut lock(s), &mut std::io::stdout().lock());
    }
}

/// Write every line logged so far (before the process ends).
pub fn flush() {
    if let Some(s) = SHARED.get() {
        drain(&mut lock(s), &mut std::io::stdout().lock());
    }
}

/// The subscriber's writer for `serve`: standard output, batched.
#[derive(Debug, Clone, Copy, Default)]
pub struct BatchedStdout;

/// One log line's writer (the subscriber writes each line with one `write_all`).
pub struct Line;

impl Write for Line {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let s = shared();
        let mut lines = lock(s);
        let to_stdout = |l: &mut Vec<u8>| drain(l, &mut std::io::stdout().lock());
        if append(&mut lines, bytes, to_stdout) {
            s.filled.notify_one();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchedStdout {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wait_in_order_until_a_batch_is_full() {
        let (mut lines, mut out) = (Vec::new(), Vec::<u8>::new());
        assert!(append(&mut lines, b"first\n", |l| drain(l, &mut out)));
        assert!(!append(&mut lines, b"second\n", |l| drain(l, &mut out)));
        assert_eq!(lines, b"first\nsecond\n");
        assert!(out.is_empty());
        let long = vec![b'x'; BATCH_BYTES];
        assert!(!append(&mut lines, &long, |l| drain(l, &mut out)));
        assert!(lines.is_empty());
        assert_eq!(out.len(), 13 + BATCH_BYTES);
        assert!(out.starts_with(b"first\nsecond\nxxx"));
        // The flusher's drain: what waits is written, once.
        assert!(append(&mut lines, b"third\n", |l| drain(l, &mut out)));
        drain(&mut lines, &mut out);
        drain(&mut lines, &mut out);
        assert!(out.ends_with(b"xthird\n"));
        assert_eq!(out.len(), 13 + BATCH_BYTES + 6);
    }
}
