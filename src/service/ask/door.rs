//! The service's door: a question asked ([`Request`]: what, of which domain and run, with which
//! parameters, in which representation) is answered here for every front end, from the answer
//! cache when it was answered before for the same snapshot. Keys are the canonical request, so
//! the same question asked by REST and by an MCP tool, or with its parameters in another order,
//! is one entry, counted once.

use std::sync::Arc;

use bytes::Bytes;

use crate::service::encode::TableJsonCache;
use crate::service::leaderboard::SiteFile;
use crate::service::machinery::{Piece, Plain};
use crate::service::{Service, ServiceError, Snapshot};

use super::answer::{Answer, Encoded, Head, Reply};
use super::declare::{ITL_MIXTURE_MANY, ITL_MIXTURE_ONE, QUERIES, Question};
use super::models::ModelRequest;
use super::places::{Place, Places};
use super::request::Request;

/// The answer key of `req` for the snapshots numbered `generations` (the one it is of; `changes`'
/// two): what it asks, in its canonical form.
fn key(req: &Request, question: Option<usize>, generations: &[u64]) -> AnswerKey {
    let mut params = Vec::new();
    req.params.canonical(&mut params);
    let generations: Vec<u8> = generations.iter().flat_map(|g| g.to_le_bytes()).collect();
    AnswerKey::of(&[
        &generations,
        b"ask",
        &question.map_or(u64::MAX, |i| i as u64).to_le_bytes(),
        req.domain.as_str().as_bytes(),
        req.run_id.as_deref().unwrap_or("").as_bytes(),
        &[u8::from(req.run_id.is_some())],
        req.format.name().as_bytes(),
        req.path.as_bytes(),
        &params,
    ])
}

/// What every front end asks: the service, the answers kept, and the bounds of every answer.
pub struct Door {
    service: Arc<Service>,
    cache: AnswerCache,
    /// The JSON text of the current snapshot's cells, for pages of runs; none with
    /// `--plain cells`, every page then written from its frame.
    cells: Option<TableJsonCache>,
    /// Largest `limit` a run list accepts.
    max_rows: usize,
    /// Samples answers estimated at this many bytes or more are sent as they are written, not
    /// held (a filter over many runs reaches gigabytes).
    stream_bytes: usize,
    /// The places costly questions take while they are computed.
    places: Places,
    /// Questions answered here (from the cache or computed), by their place in `QUERIES`.
    asked: [std::sync::atomic::AtomicU64; QUERIES.len()],
}

impl Door {
    /// A door to `service` keeping at most `cache_bytes` of answers, with pages of at most
    /// `max_rows` rows, holding no samples answer of `stream_bytes` or more.
    pub fn new(
        service: Arc<Service>,
        cache_bytes: u64,
        max_rows: usize,
        stream_bytes: usize,
    ) -> Door {
        Door {
            service,
            cache: answer_cache(cache_bytes),
            cells: Some(TableJsonCache::default()),
            max_rows,
            stream_bytes,
            places: Places::new(usize::MAX),
            asked: Default::default(),
        }
    }

    /// At most `max` costly questions computed at once, from every front end.
    pub fn set_costly_places(&mut self, max: usize) {
        self.places = Places::new(max);
    }

    /// A place for costly work (a question, or a front end's own costly route), or the refusal
    /// when all are taken.
    pub fn costly_place(&self) -> Result<Place<'_>, ServiceError> {
        self.places.take()
    }

    /// Costly questions refused for want of a place, since start.
    pub fn costly_refused(&self) -> u64 {
        self.places.refused()
    }

    /// The door with the pieces of speed machinery of `plain` switched off.
    pub fn set_plain(&mut self, plain: Plain) {
        if !plain.on(Piece::Cells) {
            self.cells = None;
        }
    }

    /// Questions answered here since start, by name (`QUERIES`), those asked at least once.
    pub fn asked(&self) -> Vec<(&'static str, u64)> {
        QUERIES
            .iter()
            .zip(&self.asked)
            .map(|((name, _), n)| (*name, n.load(std::sync::atomic::Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The largest page a list answers.
    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// The answers kept, shared with the front ends that keep answers of their own making.
    pub fn cache(&self) -> &AnswerCache {
        &self.cache
    }

    /// The answer to `req`, from the cache or computed and kept. Refusals are not kept, nor an
    /// answer sent as it is made.
    pub async fn ask(&self, req: &Request) -> Result<Reply, ServiceError> {
        let question = self.count(req.question);
        // `changes` is of two revisions: from `from` to `to`, encoded as of `to`.
        let (snapshot, from) = match req.question {
            Question::Changes => {
                let (from, to) = req.params.from_to()?;
                let from = self.service.snapshot_at(Some(from)).await?;
                (self.service.snapshot_at(to).await?, Some(from))
            }
            _ => (
                self.service.snapshot_at(req.params.revision()?).await?,
                None,
            ),
        };
        let key = match &from {
            Some(from) => key(req, question, &[from.generation, snapshot.generation]),
            None => key(req, question, &[snapshot.generation]),
        };
        if let Some(hit) = self.cache.get(&key) {
            return Ok(Reply::Whole(hit));
        }
        let _place = req
            .question
            .costly()
            .then(|| self.places.take())
            .transpose()?;
        if let Some(kind) = super::samples::Kind::of(req)? {
            let made =
                super::samples::answer(&self.service, req, &snapshot, kind, self.stream_bytes)
                    .await?;
            return Ok(match made {
                super::samples::Made::Whole(encoded) => {
                    Reply::Whole(keep(&self.cache, key, *encoded))
                }
                super::samples::Made::Sent(sent) => Reply::Sent(sent),
            });
        }
        let encoded = match &from {
            Some(from) => super::changes::answer(req, from, &snapshot)?.encode(
                req.format,
                &snapshot,
                self.cells.as_ref(),
            )?,
            None => self.compute(req, &snapshot).await?,
        };
        Ok(Reply::Whole(keep(&self.cache, key, encoded)))
    }

    /// `question` asked once more: its place in `QUERIES`, what it is counted under and its part
    /// of an answer's key.
    fn count(&self, question: Question) -> Option<usize> {
        let i = QUERIES.iter().position(|(_, q)| *q == question)?;
        self.asked[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(i)
    }

    /// The answer to a question of `snapshot`'s run table (runs, one run, groups, a frontier,
    /// the best runs) before it is written, for a front end that shows it its own way (the
    /// explorer's pages, which keep the pages they make).
    pub fn answer(&self, req: &Request, snapshot: &Snapshot) -> Result<Answer, ServiceError> {
        self.count(req.question);
        super::runs::answer(req, snapshot, self.max_rows).unwrap_or_else(|| {
            Err(ServiceError::Internal(format!(
                "{:?} is not a question of the run table",
                req.question
            )))
        })
    }

    /// The answer to a question about a model of the caller's own data, computed on a place for
    /// costly work.
    pub async fn model(&self, req: ModelRequest) -> Result<serde_json::Value, ServiceError> {
        let _place = self.places.take()?;
        req.answer().await
    }

    /// The leaderboard file at `path` (`index.json`, `tasks/…`, `models/…`) of the snapshot
    /// `revision` names (none: the served one), made now from raw files if it needs them;
    /// refused naming the files of its kind when the leaderboard has no such file. The files are
    /// held per snapshot, not in the answer cache.
    pub async fn leaderboard_file(
        &self,
        path: &str,
        revision: Option<&str>,
    ) -> Result<Arc<SiteFile>, ServiceError> {
        let snapshot = self.service.snapshot_at(revision).await?;
        let site = self.service.leaderboard_site(&snapshot);
        if let Some(file) = self
            .service
            .leaderboard_file(&site, &snapshot, path)
            .await?
        {
            return Ok(file);
        }
        let (dir, name) = path.split_once('/').unwrap_or(("", path));
        let allowed = site
            .paths()
            .into_iter()
            .filter_map(|p| p.strip_prefix(&format!("{dir}/")).map(str::to_string))
            .collect();
        Err(ServiceError::UnknownLeaderboardFile {
            kind: if dir == "tasks" { "task" } else { "model" },
            name: name.to_string(),
            allowed,
        })
    }

    /// The Croissant metadata of the snapshot `revision` names (none: the served one), its files
    /// at `base` (this server's origin).
    pub async fn croissant(
        &self,
        revision: Option<&str>,
        base: &str,
    ) -> Result<serde_json::Value, ServiceError> {
        use crate::service::croissant::{SummaryFile, document};
        let snapshot = self.service.snapshot_at(revision).await?;
        let mut files = Vec::new();
        for domain in crate::engine::Domain::ALL {
            files.push((
                domain,
                SummaryFile::of(&self.service, &snapshot, domain).await?,
            ));
        }
        document(&snapshot, base, &files)
    }

    /// The run summary of `domain` of the snapshot `revision` names, as its source stores it.
    pub async fn summary_file(
        &self,
        domain: crate::engine::Domain,
        revision: Option<&str>,
    ) -> Result<crate::service::croissant::SummaryFile, ServiceError> {
        let snapshot = self.service.snapshot_at(revision).await?;
        crate::service::croissant::SummaryFile::of(&self.service, &snapshot, domain).await
    }

    async fn compute(
        &self,
        req: &Request,
        snapshot: &Arc<Snapshot>,
    ) -> Result<Encoded, ServiceError> {
        if let Some(chart) = super::charts::answer(&self.service, req, snapshot).await {
            return chart;
        }
        let answer = match req.question {
            Question::Sweep => super::fits::sweep(&self.service, req, snapshot).await?,
            ITL_MIXTURE_ONE | ITL_MIXTURE_MANY => {
                super::fits::mixtures(&self.service, req, snapshot).await?
            }
            _ if super::raw::answers(req)? => {
                super::raw::answer(&self.service, req, snapshot).await?
            }
            _ => super::runs::answer(req, snapshot, self.max_rows)
                .or_else(|| super::predict::answer(req, snapshot))
                .unwrap_or_else(|| {
                    Err(ServiceError::Internal(format!(
                        "{:?} is not answered at the door",
                        req.question
                    )))
                })?,
        };
        Ok(answer.encode(req.format, snapshot, self.cells.as_ref())?)
    }
}

/// The key of an answer: the first 128 bits of the keyed BLAKE3 digest of what it is the answer to
/// (the snapshot's generation, the representation and the request URI; or an MCP call's text).
/// Fixed-size, so that the cache's map hashes and compares 16 bytes, not a URI of hundreds: under
/// a stream of distinct requests the map evicts without pause and rebuilds its table each time a
/// tenth of it is tombstones, hashing every key again (with the text as key, that and the key
/// comparisons were a large part of a fresh REST query's CPU). The digest's key is drawn when the
/// process starts, so the keys are uniform and no client can choose texts whose keys collide or
/// share the bits the map indexes by; the map hashes a key to its own bits (`KeyBits`). Two texts
/// share a key with probability 2⁻¹²⁸.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AnswerKey(u128);

/// The key of the answer keys' digest: 256 random bits (two version 4 UUIDs' 244) per process.
static DIGEST_KEY: std::sync::LazyLock<[u8; 32]> = std::sync::LazyLock::new(|| {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key
});

impl AnswerKey {
    /// The key of `parts`, each length-prefixed (no two lists of parts make the same input).
    pub(crate) fn of(parts: &[&[u8]]) -> AnswerKey {
        let mut h = blake3::Hasher::new_keyed(&DIGEST_KEY);
        for part in parts {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
        let digest = h.finalize();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest.as_bytes()[..16]);
        AnswerKey(u128::from_le_bytes(first))
    }

    /// The key of a text of the caller's making (`mcp`).
    #[cfg(feature = "mcp")]
    pub(crate) fn of_text(text: &str) -> AnswerKey {
        AnswerKey::of(&[b"keyed", text.as_bytes()])
    }
}

impl std::hash::Hash for AnswerKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.0 as u64 ^ (self.0 >> 64) as u64);
    }
}

/// The answer cache's hasher: an `AnswerKey` is already a secret-keyed digest, so its bits are
/// its hash.
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyBits;

impl std::hash::BuildHasher for KeyBits {
    type Hasher = KeyBitsHasher;

    fn build_hasher(&self) -> KeyBitsHasher {
        KeyBitsHasher(0)
    }
}

pub(crate) struct KeyBitsHasher(u64);

impl std::hash::Hasher for KeyBitsHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, bits: u64) {
        self.0 ^= bits;
    }

    /// Not reached by `AnswerKey`; any other input is folded in byte by byte (FNV-1a's step).
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Encoded answers by (snapshot, format, request URI), weighed by bytes, with how many answers
/// it gave and how many had to be computed (`/metrics`).
#[derive(Clone)]
pub struct AnswerCache {
    entries: moka::sync::Cache<AnswerKey, Arc<Encoded>, KeyBits>,
    /// Answers given from the cache, answers computed: shared by the clones.
    counts: Arc<[std::sync::atomic::AtomicU64; 2]>,
    /// Whether it may hold anything (a cache of no bytes is neither asked nor given answers).
    enabled: bool,
}

impl AnswerCache {
    /// Whether answers are kept at all (a budget above zero).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub(crate) fn get(&self, key: &AnswerKey) -> Option<Arc<Encoded>> {
        if !self.enabled {
            return None;
        }
        let hit = self.entries.get(key);
        if hit.is_some() {
            self.counts[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        hit
    }

    /// An answer kept under a key of the caller's making (`mcp`: a tool call's result by the
    /// snapshot, protocol version and call), counted with the others.
    #[cfg(feature = "mcp")]
    pub(crate) fn get_keyed(&self, key: &str) -> Option<Bytes> {
        self.get(&AnswerKey::of_text(key)).map(|e| e.body.clone())
    }

    /// Keep `body` under `key` (see `get_keyed`).
    #[cfg(feature = "mcp")]
    pub(crate) fn put_keyed(&self, key: String, content_type: &'static str, body: Bytes) {
        self.counts[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if !self.enabled {
            return;
        }
        self.entries.insert(
            AnswerKey::of_text(&key),
            Arc::new(Encoded::new(content_type, body)),
        );
    }

    /// Count an answer given from the cache before its handler (`transport`'s kept responses).
    pub(crate) fn count_hit(&self) {
        self.counts[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Answers given from the cache, and answers computed (and offered to it), since start.
    pub fn counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.counts[0].load(Relaxed), self.counts[1].load(Relaxed))
    }
}

/// An answer cache of at most `bytes`.
pub fn answer_cache(bytes: u64) -> AnswerCache {
    let entries = moka::sync::Cache::builder()
        .max_capacity(bytes)
        // The compressed forms are made after the entry is weighed: counted at half the body
        // (three codings of JSON, each much smaller than it).
        .weigher(|_: &AnswerKey, v: &Arc<Encoded>| {
            let head = v.head.as_ref().map_or(0, Head::bytes);
            u32::try_from(16 + v.body.len() * 3 / 2 + head + v.next.as_ref().map_or(0, String::len))
                .unwrap_or(u32::MAX)
        })
        .build_with_hasher(KeyBits);
    AnswerCache {
        entries,
        counts: Default::default(),
        enabled: bytes > 0,
    }
}

/// Keep an answer computed after a lookup missed (no second lookup), and answer with it.
pub fn keep(cache: &AnswerCache, key: AnswerKey, mut encoded: Encoded) -> Arc<Encoded> {
    cache.counts[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if !cache.enabled {
        return Arc::new(encoded);
    }
    // Kept in an allocation of its own length: an encoder's buffer is reserved by estimate and
    // grows by doubling, and a body made from it keeps all of it.
    encoded.body = Bytes::copy_from_slice(&encoded.body);
    let encoded = Arc::new(encoded);
    cache.entries.insert(key, encoded.clone());
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer's key is fixed by its parts, in order and each whole: moving bytes from one part
    /// to the next, swapping parts, or a part more or less is another key.
    #[test]
    fn answer_keys_tell_their_parts_apart() {
        let key = AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpqa"]);
        assert_eq!(
            key,
            AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpqa"])
        );
        for other in [
            AnswerKey::of(&[b"8", b"json", b"/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"7", b"csv", b"/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpq"]),
            AnswerKey::of(&[b"7", b"jso", b"n/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"json", b"7", b"/v1/llm/runs?task=gpqa"]),
            AnswerKey::of(&[b"7", b"json", b"/v1/llm/runs?task=gpqa", b""]),
            AnswerKey::of(&[b"7json/v1/llm/runs?task=gpqa"]),
        ] {
            assert_ne!(key, other);
        }
    }

    /// A cache of some bytes keeps an answer; a cache of none neither keeps nor finds one, and
    /// counts each answer computed.
    #[test]
    fn a_cache_of_no_bytes_keeps_nothing() {
        let encoded = || Encoded::new("application/json", Bytes::from_static(b"[1]"));
        let key = AnswerKey::of(&[b"test"]);
        let some = answer_cache(1 << 20);
        keep(&some, key, encoded());
        assert_eq!(
            some.get(&key).map(|e| e.body.clone()),
            Some(Bytes::from_static(b"[1]"))
        );
        assert_eq!(some.counts(), (1, 1));
        let none = answer_cache(0);
        for _ in 0..2 {
            keep(&none, key, encoded());
            assert!(none.get(&key).is_none());
        }
        none.entries.run_pending_tasks();
        assert_eq!((none.entries.entry_count(), none.counts()), (0, (0, 2)));
    }
}
