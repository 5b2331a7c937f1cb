//! Bodies sent again and again, sent without copying their bytes: a kept answer's body (see
//! `answer::KeptResponses`) and the leaderboard's and frontend's files, in their identity coding,
//! are sent from their sealed memory files (`service::sealed`) with `sendfile(2)`, as nginx sends a
//! file from the page cache, instead of being copied from the heap into the socket for each
//! request (a copy that cost the server time on every repeated answer). Everything else,
//! compressed forms among them, is written as before.
//!
//! How the connection knows: the response carries `SendFrom` with the sealed body; the connection's
//! service offers it to the connection's stream (`Offered`); when hyper then writes a slice that
//! lies within the sealed body's heap bytes (the very `Bytes` the file was made from, so the same
//! bytes), those bytes go out from the same offset of the file.

use std::io::IoSlice;
use std::os::fd::AsFd;
use std::sync::atomic::{
    AtomicBool, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use axum::response::Response;
use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::service::coding::Coding;
pub use crate::service::sealed::Sealed;

/// A response extension: its body (or the body in its identity coding) is this sealed body's.
#[derive(Clone)]
pub struct SendFrom(pub Arc<Sealed>);

/// `resp`, whose body goes in `coding`, to be sent from its sealed file when it goes uncompressed:
/// `sealed` gives the identity body's file (none when it is too small or no descriptor was to
/// spare), asked for only then. Only identity bodies are sealed.
pub fn from_file(
    resp: &mut Response,
    coding: Coding,
    sealed: impl FnOnce() -> Option<Arc<Sealed>>,
) {
    if coding == Coding::Identity
        && let Some(sealed) = sealed()
    {
        resp.extensions_mut().insert(SendFrom(sealed));
    }
}

/// The sealed body a connection's latest response offered, shared by its service and its stream.
/// `held` tells whether the slot holds one, so that a write with nothing offered (most writes)
/// takes no lock.
#[derive(Default)]
pub struct Offered {
    held: AtomicBool,
    slot: Mutex<Option<Arc<Sealed>>>,
}

impl Offered {
    pub fn offer(&self, sealed: Arc<Sealed>) {
        *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(sealed);
        self.held.store(true, Release);
    }

    fn current(&self) -> Option<Arc<Sealed>> {
        if !self.held.load(Acquire) {
            return None;
        }
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The body was sent to its end: the connection holds the file no longer.
    fn done(&self, sealed: &Arc<Sealed>) {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_some_and(|h| Arc::ptr_eq(h, sealed)) {
            *slot = None;
            self.held.store(false, Release);
        }
    }
}

/// A connection's stream as its writes see it: the socket, the body its service offered, and the
/// count of the bytes sent from sealed files.
pub struct Sending<'a> {
    pub stream: &'a TcpStream,
    pub offered: &'a Offered,
    pub from_file: &'a AtomicU64,
}

impl Sending<'_> {
    /// Write `bufs` as `poll_write_vectored` does, but a slice of the offered sealed body goes
    /// from its file: the slices before it are sent with `MSG_MORE` (the head and the body leave
    /// in the same segments), then the body's bytes with `sendfile`. `None` when no slice is the
    /// offered body's, for the caller to write them as usual. The body's bytes sent are added to
    /// `from_file`.
    pub fn poll_send(
        &self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Option<Poll<std::io::Result<usize>>> {
        let sealed = self.offered.current()?;
        let (i, offset) = bufs
            .iter()
            .enumerate()
            .find_map(|(i, b)| sealed.offset_of(b).map(|o| (i, o)))?;
        Some(self.poll_send_from(cx, &sealed, &bufs[..i], offset, bufs[i].len()))
    }

    fn poll_send_from(
        &self,
        cx: &mut Context<'_>,
        sealed: &Arc<Sealed>,
        head: &[IoSlice<'_>],
        offset: u64,
        len: usize,
    ) -> Poll<std::io::Result<usize>> {
        loop {
            ready!(self.stream.poll_write_ready(cx))?;
            match self.stream.try_io(Interest::WRITABLE, || {
                send(self.stream, head, sealed, offset, len)
            }) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
                Ok((n, body, finished)) => {
                    self.from_file.fetch_add(body as u64, Relaxed);
                    if finished {
                        self.offered.done(sealed);
                    }
                    return Poll::Ready(Ok(n));
                }
            }
        }
    }
}

/// One attempt: the head, then as much of the body's `len` bytes from `offset` as the socket
/// takes. Bytes written, the body's among them, and whether the body was sent to its end.
#[cfg(target_os = "linux")]
fn send(
    stream: &TcpStream,
    head: &[IoSlice<'_>],
    sealed: &Sealed,
    mut offset: u64,
    len: usize,
) -> std::io::Result<(usize, usize, bool)> {
    use rustix::net::SendFlags;
    let socket = stream.as_fd();
    let head_len: usize = head.iter().map(|b| b.len()).sum();
    if head_len > 0 {
        let flags = SendFlags::MORE | SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
        let n = rustix::net::sendmsg(socket, head, &mut Default::default(), flags)?;
        if n < head_len {
            return Ok((n, 0, false));
        }
    }
    match rustix::fs::sendfile(socket, sealed.file(), Some(&mut offset), len) {
        Ok(n) => Ok((head_len + n, n, offset == sealed.bytes() as u64)),
        // The head went: the body's error (or a full socket) shows on the next write.
        Err(_) if head_len > 0 => Ok((head_len, 0, false)),
        Err(e) => Err(e.into()),
    }
}

/// No body is sealed elsewhere than Linux (`service::sealed`), so none is sent from a file.
#[cfg(not(target_os = "linux"))]
fn send(
    _: &TcpStream,
    _: &[IoSlice<'_>],
    _: &Sealed,
    _: u64,
    _: usize,
) -> std::io::Result<(usize, usize, bool)> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use bytes::Bytes;
    use tokio::io::AsyncReadExt;

    use super::*;

    fn body(n: usize) -> Bytes {
        Bytes::from((0..n).map(|i| (i % 251) as u8).collect::<Vec<_>>())
    }

    /// A head and a sealed body written as hyper writes them (advancing over what each write
    /// took) to a socket with a small send buffer and a client that reads only after a while: the
    /// body goes in several writes, the waits among them, and arrives whole after the head.
    #[tokio::test]
    async fn a_head_and_a_sealed_body_arrive_whole_through_a_full_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let mut got = Vec::new();
            c.read_to_end(&mut got).await.unwrap();
            got
        });
        let (server, _) = listener.accept().await.unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&server, 4096).unwrap();
        let b = body(1 << 20);
        let s = Sealed::of(&b).unwrap();
        let offered = Offered::default();
        offered.offer(s.clone());
        let from_file = AtomicU64::new(0);
        let sending = Sending {
            stream: &server,
            offered: &offered,
            from_file: &from_file,
        };
        let head = b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n";
        let (mut written, mut writes) = (0, 0);
        while written < head.len() + b.len() {
            let bufs = if written < head.len() {
                vec![IoSlice::new(&head[written..]), IoSlice::new(&b)]
            } else {
                vec![IoSlice::new(&b[written - head.len()..])]
            };
            let n =
                std::future::poll_fn(|cx| sending.poll_send(cx, &bufs).expect("the offered body"))
                    .await
                    .unwrap();
            assert!(n > 0);
            written += n;
            writes += 1;
        }
        assert!(writes > 1, "{writes}");
        // Sent to its end: the connection holds the file no longer, and writes go as usual.
        assert!(offered.current().is_none());
        let other = [IoSlice::new(&b)];
        let left =
            std::future::poll_fn(|cx| Poll::Ready(sending.poll_send(cx, &other).is_none())).await;
        assert!(left);
        drop(server);
        let got = client.await.unwrap();
        assert_eq!(&got[..head.len()], head);
        assert_eq!(got.len(), head.len() + b.len());
        assert!(got[head.len()..] == b[..]);
        assert_eq!(from_file.load(Relaxed), b.len() as u64);
    }
}
