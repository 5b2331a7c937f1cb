//! Bytes kept in a sealed memory file as well: a body sent again and again (a kept answer, a
//! leaderboard or frontend file) is written once to a memfd sealed against writes, shrinking and
//! growing, so that the connection can send it from there with `sendfile(2)` rather than copy it
//! from the heap into the socket for each request (`http::sendfile`). The seals make the pages the
//! kernel hands to a socket unchangeable while they are in flight; each file is closed when the
//! last holder of its `Sealed` drops it. Elsewhere than Linux nothing is sealed.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use bytes::Bytes;

/// Bodies smaller than this are copied: a copy that small costs less than the file's syscalls.
const MIN_SEALED: usize = 16 * 1024;

/// Sealed bodies open at once: each holds a descriptor, and connections need theirs.
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// A body and a sealed memory file holding the same bytes.
pub struct Sealed {
    file: OwnedFd,
    body: Bytes,
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealed")
            .field("file", &self.file)
            .field("bytes", &self.body.len())
            .finish()
    }
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

    /// The file.
    pub fn file(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Where `part` starts in the body, if it lies wholly within the body's own bytes (not the
    /// same bytes held elsewhere): the offset in the file of the same bytes.
    pub fn offset_of(&self, part: &[u8]) -> Option<u64> {
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
    *MOST.get_or_init(|| {
        match rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
            Some(limit) => usize::try_from(limit / 16).unwrap_or(256).min(256),
            None => 256,
        }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
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
}
