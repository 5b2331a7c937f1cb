//! Content codings of an answer's bytes (gzip, br, zstd), each compressed once and kept: the
//! leaderboard's files and the cached API answers are sent compressed without compressing per
//! request. Levels are set per use: answers cached on first request at a level that is quick; the
//! leaderboard's files and the frontend's at once at that level too, then hard (once per snapshot)
//! by a thread that yields to requests ([`refine_later`]).

use std::io::Write;
use std::sync::OnceLock;

use bytes::Bytes;

/// A content coding the service sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Coding {
    Identity,
    Gzip,
    Br,
    Zstd,
}

impl Coding {
    /// The compressed codings, in the order preferred when a client rates them equally: the
    /// smallest for JSON first.
    pub const COMPRESSED: [Coding; 3] = [Coding::Br, Coding::Zstd, Coding::Gzip];

    /// The token of `Content-Encoding` / `Accept-Encoding`.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Br => "br",
            Coding::Zstd => "zstd",
        }
    }

    /// The suffix an entity tag gets for this coding (a strong tag differs per representation).
    pub fn etag_suffix(self) -> &'static str {
        match self {
            Coding::Identity => "",
            Coding::Gzip => "-gz",
            Coding::Br => "-br",
            Coding::Zstd => "-zst",
        }
    }

    pub fn from_token(token: &str) -> Option<Coding> {
        let token = token.trim();
        let is = |name: &str| token.eq_ignore_ascii_case(name);
        Some(if is("identity") {
            Coding::Identity
        } else if is("gzip") || is("x-gzip") {
            Coding::Gzip
        } else if is("br") {
            Coding::Br
        } else if is("zstd") {
            Coding::Zstd
        } else {
            return None;
        })
    }
}

/// How hard to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Once per snapshot, off the request path: gzip 9, brotli 11, zstd 19.
    Most,
    /// On a request's path: gzip 6, brotli 5, zstd 3.
    Quick,
}

/// `body` in `coding`.
pub fn compress(body: &[u8], coding: Coding, effort: Effort) -> Bytes {
    let most = effort == Effort::Most;
    match coding {
        Coding::Identity => Bytes::copy_from_slice(body),
        Coding::Gzip => {
            let level = if most { 9 } else { 6 };
            let mut enc = flate2::write::GzEncoder::new(
                Vec::with_capacity(body.len() / 4),
                flate2::Compression::new(level),
            );
            enc.write_all(body).expect("writing to memory");
            enc.finish().expect("writing to memory").into()
        }
        Coding::Br => {
            let params = brotli::enc::BrotliEncoderParams {
                quality: if most { 11 } else { 5 },
                lgwin: 22,
                size_hint: body.len(),
                ..Default::default()
            };
            let mut out = Vec::with_capacity(body.len() / 4);
            brotli::BrotliCompress(&mut &body[..], &mut out, &params).expect("writing to memory");
            out.into()
        }
        Coding::Zstd => {
            let level = if most { 19 } else { 3 };
            zstd::bulk::compress(body, level)
                .expect("zstd in memory")
                .into()
        }
    }
}

/// The compressed forms of a body, each made on first use and kept.
#[derive(Debug, Default)]
pub struct Variants {
    gzip: OnceLock<Bytes>,
    br: OnceLock<Bytes>,
    zstd: OnceLock<Bytes>,
}

impl Variants {
    /// `body` in `coding`, compressed now if it is the first time (`body` must be the same every
    /// call).
    pub fn get(&self, body: &Bytes, coding: Coding, effort: Effort) -> Bytes {
        let slot = match coding {
            Coding::Identity => return body.clone(),
            Coding::Gzip => &self.gzip,
            Coding::Br => &self.br,
            Coding::Zstd => &self.zstd,
        };
        slot.get_or_init(|| compress(body, coding, effort)).clone()
    }

    /// `coding`'s form if it is made already.
    pub fn made(&self, coding: Coding) -> Option<Bytes> {
        match coding {
            Coding::Identity => None,
            Coding::Gzip => self.gzip.get().cloned(),
            Coding::Br => self.br.get().cloned(),
            Coding::Zstd => self.zstd.get().cloned(),
        }
    }

    /// Memory held by the compressed forms made so far.
    pub fn held(&self) -> usize {
        [&self.gzip, &self.br, &self.zstd]
            .iter()
            .map(|s| s.get().map_or(0, Bytes::len))
            .sum()
    }
}

/// A body and its compressed forms, each made on first use and kept. With [`Effort::Most`], a
/// form asked for before it is made at that effort is made at once at [`Effort::Quick`] and sent
/// until [`Precompressed::refine`] (queued with [`refine_later`]) makes the final one: a request
/// never waits for the most effort.
#[derive(Debug)]
pub struct Precompressed {
    body: Bytes,
    effort: Effort,
    /// The forms at `effort`.
    variants: Variants,
    /// Quick forms sent until the final ones are made (`Effort::Most` only): br, zstd, gzip.
    interim: [std::sync::Mutex<Option<Bytes>>; 3],
}

impl Precompressed {
    pub fn new(body: Bytes, effort: Effort) -> Self {
        Precompressed {
            body,
            effort,
            variants: Variants::default(),
            interim: Default::default(),
        }
    }

    /// The identity body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    fn interim(&self, coding: Coding) -> Option<&std::sync::Mutex<Option<Bytes>>> {
        let i = Coding::COMPRESSED.iter().position(|c| *c == coding)?;
        Some(&self.interim[i])
    }

    /// The body in `coding`, and whether these are its final bytes (made at the body's effort)
    /// rather than a quick form sent until those are made. Compressed now if it is the first
    /// time, at the quick level.
    pub fn get(&self, coding: Coding) -> (Bytes, bool) {
        if coding == Coding::Identity || self.effort == Effort::Quick {
            return (self.variants.get(&self.body, coding, self.effort), true);
        }
        if let Some(b) = self.variants.made(coding) {
            return (b, true);
        }
        let Some(slot) = self.interim(coding) else {
            return (self.body.clone(), true);
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        // Made while this request waited for the slot.
        if let Some(b) = self.variants.made(coding) {
            return (b, true);
        }
        let quick = slot.get_or_insert_with(|| compress(&self.body, coding, Effort::Quick));
        (quick.clone(), false)
    }

    /// Make every compressed form at the body's effort (the quick forms are then dropped).
    pub fn refine(&self) {
        for c in Coding::COMPRESSED {
            self.variants.get(&self.body, c, self.effort);
            if let Some(slot) = self.interim(c) {
                slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            }
        }
    }

    /// Whether every compressed form is final.
    pub fn refined(&self) -> bool {
        Coding::COMPRESSED
            .iter()
            .all(|c| self.variants.made(*c).is_some())
    }

    /// Memory held, compressed forms included.
    pub fn weight(&self) -> usize {
        let interim: usize = self
            .interim
            .iter()
            .map(|s| {
                s.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .map_or(0, Bytes::len)
            })
            .sum();
        self.body.len() + self.variants.held() + interim
    }
}

/// Work at the most effort, done off the request path: one job at a time, in order, on a thread of
/// its own that runs only when a core is otherwise idle (Linux's SCHED_IDLE class), so that
/// requests never wait for it and its memory is one job's.
pub fn refine_later(job: Box<dyn FnOnce() + Send>) {
    type Job = Box<dyn FnOnce() + Send>;
    static QUEUE: OnceLock<std::sync::Mutex<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("refine".into())
            .spawn(move || {
                idle_priority();
                for job in rx {
                    job();
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no thread for compressing at the most effort; the quick forms stay");
        }
        std::sync::Mutex::new(tx)
    });
    let _ = queue.lock().unwrap_or_else(|e| e.into_inner()).send(job);
}

/// Put the calling thread in the idle scheduling class (it runs when no other thread wants the
/// core); elsewhere than Linux, at the lowest priority the platform gives a thread, if any.
fn idle_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 is the calling thread; the parameter is read, not kept.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "SCHED_IDLE refused");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn every_coding_decodes_to_the_body() {
        let body: Bytes = (0..200_000u32)
            .map(|i| format!("{{\"x\": {}}},", i % 977))
            .collect::<String>()
            .into();
        for effort in [Effort::Quick, Effort::Most] {
            let p = Precompressed::new(body.clone(), effort);
            let get = |c| p.get(c).0;
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&get(Coding::Gzip)[..])
                .read_to_end(&mut out)
                .unwrap();
            assert!(out == body);
            out.clear();
            brotli::BrotliDecompress(&mut &get(Coding::Br)[..], &mut out).unwrap();
            assert!(out == body);
            assert!(zstd::decode_all(&get(Coding::Zstd)[..]).unwrap() == body);
            assert!(get(Coding::Identity) == body);
            assert!(get(Coding::Br).len() < body.len() / 10);
        }
        assert_eq!(Coding::from_token(" GZip"), Some(Coding::Gzip));
    }

    /// A form asked for before it is refined is a quick one, marked so, and stays the same
    /// bytes until the refinement replaces it with the most effort's.
    #[test]
    fn quick_forms_are_sent_until_refined() {
        let body: Bytes = (0..100_000u32)
            .map(|i| format!("{{\"run\": {}, \"v\": {}}},", i % 313, i % 71))
            .collect::<String>()
            .into();
        let p = Precompressed::new(body.clone(), Effort::Most);
        let (first, done) = p.get(Coding::Br);
        assert!(!done);
        assert_eq!(first, compress(&body, Coding::Br, Effort::Quick));
        assert_eq!(p.get(Coding::Br), (first.clone(), false));
        assert!(!p.refined());
        p.refine();
        assert!(p.refined());
        for c in Coding::COMPRESSED {
            let (bytes, done) = p.get(c);
            assert!(done);
            assert_eq!(bytes, compress(&body, c, Effort::Most));
        }
        assert!(p.get(Coding::Br).0.len() < first.len());
        assert_eq!(p.weight(), body.len() + p.variants.held());
        // Work queued off the request path is done, in order.
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..3 {
            let tx = tx.clone();
            refine_later(Box::new(move || tx.send(i).unwrap()));
        }
        let got: Vec<i32> = (0..3)
            .map(|_| rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap())
            .collect();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(Coding::from_token("deflate"), None);
    }
}
