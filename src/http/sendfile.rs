//! Answers sent again and again, sent without copying their bytes: a kept response's body (see
//! `answer::KeptResponses`) is also written once to a sealed memory file, and the connection sends
//! it from there with `sendfile(2)`, as nginx sends a file from the page cache, instead of copying
//! it from the heap into the socket for each request (a tenth of the server's time on the bench's
//! 55 KB run query). Everything else, compressed forms among them, is written as before.
//!
//! How the connection knows: the response carries `SendFrom` with the sealed body; the connection's
//! service offers it to the connection's stream (`Offered`); when hyper then writes a slice that
//! lies within the sealed body's heap bytes (the very `Bytes` the body was sealed from, so the same
//! bytes), those bytes go out from the same offset of the file. The file is sealed against writes,
//! shrinking and growing, so the pages the kernel hands to the socket cannot change while they are
//! in flight, and each is closed when the last response using it is dropped.

use std::io::IoSlice;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Bodies smaller than this are copied: a copy that small costs less than the file's syscalls.
const MIN_SEALED: usize = 16 * 1024;

/// Sealed bodies open at once: each holds a descriptor, and connections need theirs.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// A body and a sealed memory file holding the same bytes.
pub struct Sealed {
    file: OwnedFd,
    body: Bytes,
}

impl Sealed {
    /// `body` sealed in a memory file of its own, if it is large enough to be worth one and a
    /// descriptor is to spare (at most 256, and a sixteenth of the process's limit).
    pub fn of(body: &Bytes) -> Option<Arc<Sealed>> {
        if body.len() < MIN_SEALED {
            return None;
        }
        let most = most_open();
        if OPEN.fetch_add(1, Relaxed) >= most {
            OPEN.fetch_sub(1, Relaxed);
            return None;
        }
        match seal(body) {
            Ok(file) => Some(Arc::new(Sealed {
                file,
                body: body.clone(),
            })),
            Err(e) => {
                OPEN.fetch_sub(1, Relaxed);
                tracing::debug!(error = %e, "an answer was not sealed; it is copied as it is sent");
                None
            }
        }
    }

    /// Sealed bodies open now (`/metrics`).
    pub fn open() -> usize {
        OPEN.load(Relaxed)
    }

    /// Bytes of the file, counted with the cache that keeps it.
    pub fn bytes(&self) -> usize {
        self.body.len()
    }

    /// Where `part` starts in the body, if it lies wholly within the body's bytes.
    fn offset_of(&self, part: &[u8]) -> Option<u64> {
        let base = self.body.as_ptr() as usize;
        let start = part.as_ptr() as usize;
        let inside = start >= base && start + part.len() <= base + self.body.len();
        (inside && !part.is_empty()).then(|| (start - base) as u64)
    }
}

impl Drop for Sealed {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, Relaxed);
    }
}

fn most_open() -> usize {
    static MOST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MOST.get_or_init(|| match super::connections::descriptor_limit() {
        Some(limit) => usize::try_from(limit / 16).unwrap_or(256).min(256),
        None => 256,
    })
}

/// A memory file holding `body`, sealed so that nothing changes its bytes or its length.
#[cfg(target_os = "linux")]
fn seal(body: &[u8]) -> std::io::Result<OwnedFd> {
    use rustix::fs::{MemfdFlags, SealFlags};
    use std::io::Write;
    let file = rustix::fs::memfd_create(
        "mlenergy-answer",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut file = std::fs::File::from(file);
    file.write_all(body)?;
    let file = OwnedFd::from(file);
    rustix::fs::fcntl_add_seals(
        &file,
        SealFlags::WRITE | SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL,
    )?;
    Ok(file)
}

/// Elsewhere than Linux bodies are copied as they are sent.
#[cfg(not(target_os = "linux"))]
fn seal(_: &[u8]) -> std::io::Result<OwnedFd> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// A response extension: its body (or the body in its identity coding) is this sealed body's.
#[derive(Clone)]
pub struct SendFrom(pub Arc<Sealed>);

/// The sealed body a connection's latest response offered, shared by its service and its stream.
#[derive(Default)]
pub struct Offered(Mutex<Option<Arc<Sealed>>>);

impl Offered {
    pub fn offer(&self, sealed: Arc<Sealed>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(sealed);
    }

    fn current(&self) -> Option<Arc<Sealed>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The body was sent to its end: the connection holds the file no longer.
    fn done(&self, sealed: &Arc<Sealed>) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.as_ref().is_some_and(|h| Arc::ptr_eq(h, sealed)) {
            *held = None;
        }
    }
}

/// Write `bufs` to `stream` as `poll_write_vectored` does, but a slice of the offered sealed body
/// goes from its file: the slices before it are sent with `MSG_MORE` (the head and the body leave
/// in the same segments), then the body's bytes with `sendfile`. `None` when no slice is the
/// offered body's, for the caller to write them as usual. The body's bytes sent are added to
/// `from_file`.
pub fn poll_send(
    stream: &TcpStream,
    offered: &Offered,
    from_file: &AtomicU64,
    cx: &mut Context<'_>,
    bufs: &[IoSlice<'_>],
) -> Option<Poll<std::io::Result<usize>>> {
    let sealed = offered.current()?;
    let (i, offset) = bufs
        .iter()
        .enumerate()
        .find_map(|(i, b)| sealed.offset_of(b).map(|o| (i, o)))?;
    Some(poll_send_from(
        stream,
        (offered, from_file),
        cx,
        &sealed,
        &bufs[..i],
        offset,
        bufs[i].len(),
    ))
}

fn poll_send_from(
    stream: &TcpStream,
    (offered, from_file): (&Offered, &AtomicU64),
    cx: &mut Context<'_>,
    sealed: &Arc<Sealed>,
    head: &[IoSlice<'_>],
    offset: u64,
    len: usize,
) -> Poll<std::io::Result<usize>> {
    loop {
        ready!(stream.poll_write_ready(cx))?;
        match stream.try_io(Interest::WRITABLE, || {
            send(stream, head, sealed, offset, len)
        }) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Poll::Ready(Err(e)),
            Ok((n, body, finished)) => {
                from_file.fetch_add(body as u64, Relaxed);
                if finished {
                    offered.done(sealed);
                }
                return Poll::Ready(Ok(n));
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
    match rustix::fs::sendfile(socket, &sealed.file, Some(&mut offset), len) {
        Ok(n) => Ok((head_len + n, n, offset == sealed.body.len() as u64)),
        // The head went: the body's error (or a full socket) shows on the next write.
        Err(_) if head_len > 0 => Ok((head_len, 0, false)),
        Err(e) => Err(e.into()),
    }
}

/// No body is sealed elsewhere than Linux (`seal`), so none is sent from a file.
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
    use tokio::io::AsyncReadExt;

    use super::*;

    fn body(n: usize) -> Bytes {
        Bytes::from((0..n).map(|i| (i % 251) as u8).collect::<Vec<_>>())
    }

    #[test]
    fn large_bodies_are_sealed_whole_and_stay_as_they_were_written() {
        assert!(Sealed::of(&body(MIN_SEALED - 1)).is_none());
        let b = body(MIN_SEALED * 3 + 17);
        let s = Sealed::of(&b).unwrap();
        assert_eq!(s.bytes(), b.len());
        let mut read = vec![0; b.len() + 1];
        let n = rustix::io::pread(&s.file, &mut read, 0).unwrap();
        assert_eq!(&read[..n], &b[..]);
        // Sealed: neither written to nor resized.
        assert_eq!(
            rustix::io::pwrite(&s.file, b"x", 0),
            Err(rustix::io::Errno::PERM)
        );
        assert_eq!(
            rustix::fs::ftruncate(&s.file, 1),
            Err(rustix::io::Errno::PERM)
        );
        assert_eq!(
            rustix::fs::ftruncate(&s.file, b.len() as u64 * 2),
            Err(rustix::io::Errno::PERM)
        );
    }

    #[test]
    fn only_slices_of_the_sealed_bytes_themselves_are_sent_from_the_file() {
        let b = body(MIN_SEALED);
        let s = Sealed::of(&b).unwrap();
        assert_eq!(s.offset_of(&b), Some(0));
        assert_eq!(s.offset_of(&b[100..200]), Some(100));
        assert_eq!(s.offset_of(&b[b.len() - 1..]), Some(b.len() as u64 - 1));
        assert_eq!(s.offset_of(&b[5..5]), None);
        // The same bytes held elsewhere are not the sealed body's.
        let copy = b.to_vec();
        assert_eq!(s.offset_of(&copy), None);
        assert_eq!(s.offset_of(&copy[100..200]), None);
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
        let head = b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n";
        let (mut written, mut writes) = (0, 0);
        while written < head.len() + b.len() {
            let bufs = if written < head.len() {
                vec![IoSlice::new(&head[written..]), IoSlice::new(&b)]
            } else {
                vec![IoSlice::new(&b[written - head.len()..])]
            };
            let n = std::future::poll_fn(|cx| {
                poll_send(&server, &offered, &from_file, cx, &bufs).expect("the offered body")
            })
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
        let left = std::future::poll_fn(|cx| {
            Poll::Ready(poll_send(&server, &offered, &from_file, cx, &other).is_none())
        })
        .await;
        assert!(left);
        drop(server);
        let got = client.await.unwrap();
        assert_eq!(&got[..head.len()], head);
        assert_eq!(got.len(), head.len() + b.len());
        assert!(got[head.len()..] == b[..]);
        assert_eq!(from_file.load(Relaxed), b.len() as u64);
    }
}
