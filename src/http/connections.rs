//! The listener's connections: each is served by hyper's HTTP/1 connection, and none is held for a
//! client that stops sending. A connection that starts a request has `header_read_timeout` to send
//! its headers; one with no request under way (opened and silent, or kept alive after an answer)
//! is closed after `keep_alive_timeout`; at most `max_connections` are open, and a connection past
//! the bound is answered 503 and closed at once, before any request is read. A connection whose
//! answer is still being sent is never cut by either timeout. Each is counted in `/metrics`.
//!
//! A worker thread that has run for `cpu_turn` without a pause (since it last woke from waiting
//! for work, or last gave its core up) gives its core up (`sched_yield`) once it has handed an
//! answer's bytes to the kernel. Where the server shares its cores with busy threads (a proxy or
//! a client on the same machine), the thread that reads the answer then runs at once instead of
//! a scheduler tick later, which shortens such a client's tail latency; where nothing else shares
//! the cores it only costs throughput, so it is off unless configured. With no other thread
//! waiting the call returns at once: one system call a turn at most (at most one per `cpu_turn`
//! for a thread busy without a pause).
//!
//! hyper's own header read timeout (it needs a timer, which `axum::serve` does not give it) counts
//! from the moment the connection waits for a request head, idle time included, so it is set to
//! the sum of both timeouts as a backstop; the two bounds themselves are kept here, from what the
//! connection's reads and answers show.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

/// The bounds of the listener's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// Time from a request's first byte to the end of its headers.
    pub header_read_timeout: Duration,
    /// Time a connection may stay open with no request under way.
    pub keep_alive_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// Time a worker thread runs without a pause before it gives its core up after an answer;
    /// zero (the default): never. It helps only where clients share the server's cores.
    pub cpu_turn: Duration,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        ConnectionOptions {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_timeout: Duration::from_secs(30),
            max_connections: default_max_connections(),
            cpu_turn: Duration::ZERO,
        }
    }
}

/// Connections open at once unless configured: 4096, or three quarters of the process's limit
/// on open descriptors when that is lower (files, the cache and the catalog need the rest).
pub fn default_max_connections() -> usize {
    const MOST: usize = 4096;
    match rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        None => MOST,
        Some(limit) => usize::try_from(limit / 4 * 3)
            .unwrap_or(MOST)
            .clamp(1, MOST),
    }
}

/// What the connections did, for `/metrics`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    pub open: AtomicUsize,
    pub accepted: AtomicU64,
    /// Refused at once because `max_connections` were open.
    pub refused: AtomicU64,
    /// Closed because a request's headers did not arrive in time.
    pub header_timeouts: AtomicU64,
    /// Closed because no request came within the keep-alive timeout.
    pub idle_closed: AtomicU64,
    /// Times a worker thread gave its core up after an answer (`cpu_turn`).
    pub cpu_turns_ended: AtomicU64,
}

/// What one connection is doing, as its reads and answers show it. Times are milliseconds since
/// the connection opened, plus one (zero: unset).
struct Activity {
    opened: Instant,
    /// Requests whose answers are not yet wholly sent (the answer body dropped).
    busy: AtomicUsize,
    /// When the connection last had no request under way.
    idle_since: AtomicU64,
    /// When the first byte of the next request arrived, while no request was under way.
    head_since: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            opened: Instant::now(),
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(1),
            head_since: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
    }

    /// Bytes arrived: the start of a request head if none is under way.
    fn read(&self) {
        if self.busy.load(Relaxed) == 0 && self.head_since.load(Relaxed) == 0 {
            self.head_since.store(self.now(), Relaxed);
        }
    }

    /// A request's head was read; its answer is under way until the guard is dropped.
    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Relaxed);
        self.head_since.store(0, Relaxed);
        Busy(self.clone())
    }

    /// When the connection is to be closed, and why, if nothing changes before then; `None`
    /// while a request is under way.
    fn deadline(&self, opts: &ConnectionOptions) -> Option<(u64, Closed)> {
        if self.busy.load(Relaxed) > 0 {
            return None;
        }
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX / 4);
        match self.head_since.load(Relaxed) {
            0 => Some((
                self.idle_since.load(Relaxed) + ms(opts.keep_alive_timeout),
                Closed::Idle,
            )),
            since => Some((since + ms(opts.header_read_timeout), Closed::HeaderTimeout)),
        }
    }
}

/// A request under way on its connection.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let a = &self.0;
        a.idle_since.store(a.now(), Relaxed);
        a.busy.fetch_sub(1, Relaxed);
    }
}

/// Why a connection was closed by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    HeaderTimeout,
    Idle,
}

/// Resolves when the connection has been without a request for too long, or has been sending a
/// request's headers for too long.
async fn watchdog(activity: &Activity, opts: &ConnectionOptions) -> Closed {
    loop {
        match activity.deadline(opts) {
            None => tokio::time::sleep(opts.header_read_timeout.min(opts.keep_alive_timeout)).await,
            Some((at, why)) => {
                let now = activity.now();
                if now >= at {
                    return why;
                }
                tokio::time::sleep(Duration::from_millis(at - now)).await;
            }
        }
    }
}

/// A TCP stream that tells its connection's activity when bytes arrive.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
    stats: Arc<ConnectionStats>,
    cpu_turn: Duration,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    /// hyper flushes once it has written an answer (or the part of it the socket took).
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let flushed = Pin::new(&mut self.stream).poll_flush(cx);
        if end_turn(self.cpu_turn) {
            self.stats.cpu_turns_ended.fetch_add(1, Relaxed);
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

thread_local! {
    /// When this thread's turn began: when it last gave its core up after an answer, or woke
    /// from waiting for work ([`turn_begins`]).
    static TURN_STARTED: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// A turn begins: the runtime calls this when a worker thread wakes from waiting for work, so
/// that a thread that pauses often of itself is never asked to give its core up.
pub fn turn_begins() {
    TURN_STARTED.with(|started| started.set(Some(Instant::now())));
}

/// Whether a thread whose turn started at `started` (none: not yet) has had `turn` by `now`;
/// never with a zero turn.
fn turn_over(started: Option<Instant>, now: Instant, turn: Duration) -> bool {
    !turn.is_zero() && started.is_none_or(|t| now.saturating_duration_since(t) >= turn)
}

/// Give this thread's core up if its turn is over (see the module header); whether it did.
fn end_turn(turn: Duration) -> bool {
    if turn.is_zero() {
        return false;
    }
    TURN_STARTED.with(|started| {
        if !turn_over(started.get(), Instant::now(), turn) {
            return false;
        }
        std::thread::yield_now();
        started.set(Some(Instant::now()));
        true
    })
}

/// The answer a connection past the bound gets before it is closed.
fn refusal() -> &'static [u8] {
    static REFUSAL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    REFUSAL.get_or_init(|| {
        let body = r#"{"type":"/problems/busy","title":"Too many connections","status":503,"detail":"the server holds its --max-connections open connections; try again shortly"}"#;
        format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    })
}

/// Serve `router` on `listener` until `shutdown` completes, then let the connections finish
/// their requests (idle ones are closed at once).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    opts: ConnectionOptions,
    stats: Arc<ConnectionStats>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(opts.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            stats.refused.fetch_add(1, Relaxed);
            // The socket is new and its buffer empty: the write completes or is dropped.
            let _ = stream.try_write(refusal());
            continue;
        };
        stats.accepted.fetch_add(1, Relaxed);
        stats.open.fetch_add(1, Relaxed);
        let _ = stream.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Watched {
            stream,
            activity: activity.clone(),
            stats: stats.clone(),
            cpu_turn: opts.cpu_turn,
        });
        let service = {
            let (router, activity) = (router.clone(), activity.clone());
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                let busy = activity.begin();
                req.extensions_mut().insert(ConnectInfo(peer));
                let router = router.clone();
                async move {
                    let resp = match router.oneshot(req.map(Body::new)).await {
                        Ok(r) => r,
                        Err(never) => match never {},
                    };
                    // The request stays under way until its body is sent (or dropped).
                    Ok::<_, Infallible>(resp.map(|b| {
                        Body::new(b.map_frame(move |f| {
                            let _ = &busy;
                            f
                        }))
                    }))
                }
            })
        };
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(opts.header_read_timeout + opts.keep_alive_timeout)
            .serve_connection(io, service);
        let conn = graceful.watch(conn);
        let stats = stats.clone();
        tokio::spawn(async move {
            let _slot = slot;
            tokio::select! {
                served = conn => {
                    if let Err(e) = served && e.is_timeout() {
                        stats.header_timeouts.fetch_add(1, Relaxed);
                    }
                }
                why = watchdog(&activity, &opts) => match why {
                    Closed::HeaderTimeout => {
                        stats.header_timeouts.fetch_add(1, Relaxed);
                    }
                    Closed::Idle => {
                        stats.idle_closed.fetch_add(1, Relaxed);
                    }
                },
            }
            stats.open.fetch_sub(1, Relaxed);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// An accept that failed: a connection reset before it was taken is nothing; anything else
/// (out of descriptors) is logged and the listener pauses, as hyper's did.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accept failed; pausing the listener for a second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_over_once_it_has_lasted_and_never_when_it_is_zero() {
        let t0 = Instant::now();
        let turn = Duration::from_micros(100);
        assert!(
            turn_over(None, t0, turn),
            "the first answer ends the first turn"
        );
        assert!(!turn_over(Some(t0), t0, turn));
        assert!(!turn_over(Some(t0), t0 + Duration::from_micros(99), turn));
        assert!(turn_over(Some(t0), t0 + turn, turn));
        assert!(turn_over(Some(t0), t0 + Duration::from_millis(5), turn));
        // A clock read before the turn's start (another core's) is no turn at all.
        assert!(!turn_over(Some(t0 + turn), t0, turn));
        assert!(!turn_over(None, t0, Duration::ZERO));
        assert!(!turn_over(
            Some(t0),
            t0 + Duration::from_secs(1),
            Duration::ZERO
        ));
        assert!(!end_turn(Duration::ZERO));
    }

    #[test]
    fn a_connection_is_given_the_bound_that_applies_to_what_it_is_doing() {
        let opts = ConnectionOptions {
            header_read_timeout: Duration::from_millis(100),
            keep_alive_timeout: Duration::from_millis(1000),
            max_connections: 1,
            cpu_turn: Duration::ZERO,
        };
        let a = Arc::new(Activity::new());
        // Open and silent: the keep-alive bound from the opening.
        assert_eq!(a.deadline(&opts), Some((1001, Closed::Idle)));
        // A byte arrives: the header bound from then on.
        a.read();
        let (at, why) = a.deadline(&opts).unwrap();
        assert_eq!(why, Closed::HeaderTimeout);
        assert!((101..=1100).contains(&at), "{at}");
        // The head is read: no bound while the answer is under way, nor for bytes read then.
        let busy = a.begin();
        a.read();
        assert_eq!(a.deadline(&opts), None);
        // The answer is sent: the keep-alive bound again, from then.
        drop(busy);
        let (at, why) = a.deadline(&opts).unwrap();
        assert_eq!(why, Closed::Idle);
        assert!(at >= 1001);
        assert!(default_max_connections() >= 1);
    }
}
