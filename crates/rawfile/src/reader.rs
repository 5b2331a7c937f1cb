//! Reading one run's `results.json` into [`RunDerived`] in one pass with bounded memory (no DOM of
//! the request list or the timeline): the serde reader (`read_run`), which is the reference for
//! every answer and error message, and the fast paths (`read_run_fast` through a window of the
//! file, `read_run_at` in pieces at offsets), which read the same into the same accumulator or give
//! up with `Fallback`, after which the caller reads through `read_run`.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

pub use super::derived::{ItlSamples, ResultsList, RunDerived, itl_samples, output_lengths};
pub use super::error::RawError;

/// What to read of a `results.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The request list (`results`: output lengths, success flags, ITL samples). LLM files.
    pub requests: bool,
    /// The timeline series. When false the timeline is still checked to be valid JSON (the
    /// toolkit's `json.load` refuses the whole file otherwise), but not kept.
    pub timeline: bool,
    /// Top-level keys whose values are kept whole (`RunDerived::top`), the last one of a repeated
    /// key, as Python's `json` keeps it.
    pub keep: &'static [&'static str],
    /// ITL samples as `inter_token_latencies()` gives them, positive and finite only (true), or
    /// the smoothed pool as it is, which the toolkit's row statistics are computed over (false:
    /// a NaN or infinite `itl` value stays in it).
    pub finite_itl: bool,
}

impl Reading {
    /// What the raw endpoints serve: the requests of an LLM file and the timeline.
    pub const fn derived(llm: bool) -> Reading {
        Reading {
            requests: llm,
            timeline: true,
            keep: &[],
            finite_itl: true,
        }
    }
}

/// Read a run's `results.json` (`llm`: also the request list) in one pass with bounded memory.
pub fn read_run(
    reader: impl std::io::Read,
    label: &str,
    llm: bool,
) -> Result<RunDerived, RawError> {
    read_with(reader, label, Reading::derived(llm))
}

/// `read_run` of what `spec` names.
pub fn read_with(
    reader: impl std::io::Read,
    label: &str,
    spec: Reading,
) -> Result<RunDerived, RawError> {
    use serde::de::DeserializeSeed;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, reader));
    let unreadable = |e: serde_json::Error| RawError::Unreadable {
        path: label.to_string(),
        detail: e.to_string(),
    };
    let out = runfile::RunFileSeed { spec }
        .deserialize(&mut de)
        .map_err(unreadable)?;
    de.end().map_err(unreadable)?;
    Ok(out)
}

/// `read_run` through slices of a sliding window, which serde_json parses faster than a reader;
/// `Fallback` when the file is not what it expects (then `read_run` gives the answer or the error).
pub fn read_run_fast(
    reader: impl std::io::Read,
    llm: bool,
) -> Result<RunDerived, super::window::Fallback> {
    runfile::read_fast(super::window::Plain(reader), None, Reading::derived(llm))
}

/// `read_run_fast` of a source read at offsets (a file): an indented request list is read in
/// pieces by two threads, each piece straight from the source.
pub fn read_run_at(
    src: &dyn super::window::ReadAt,
    llm: bool,
) -> Result<RunDerived, super::window::Fallback> {
    read_at_with(src, Reading::derived(llm))
}

/// `read_run_at` of what `spec` names.
pub fn read_at_with(
    src: &dyn super::window::ReadAt,
    spec: Reading,
) -> Result<RunDerived, super::window::Fallback> {
    runfile::read_at_spec(src, spec, runfile::PIECE)
}

/// A `results.json` on disk read as `spec` says: at offsets (the fast readers), else, where they
/// give up, through the serde reader, whose answer or error is the reference. `label` names the
/// file in errors.
pub fn read_path(path: &Path, spec: Reading) -> Result<RunDerived, RawError> {
    let open = || {
        File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RawError::NotFound(path.display().to_string()),
            _ => RawError::Unreadable {
                path: path.display().to_string(),
                detail: e.to_string(),
            },
        })
    };
    let file = open()?;
    match read_at_with(&file, spec) {
        Ok(d) => Ok(d),
        Err(_) => read_with(open()?, &path.display().to_string(), spec),
    }
}

mod runfile {
    //! The streaming reader behind `read_run`: serde visitors that accumulate straight into
    //! `RunDerived` (requests one at a time, ITLs smoothed as they arrive); and the fast path
    //! behind `read_run_fast` / `read_run_at`, which reads the same into the same accumulator
    //! through `window::Window` and the readers of `common_shapes`, on up to three threads.

    use std::fmt;
    use std::io::Read;

    use serde::de::{
        self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
    };
    use serde_json::Value;

    use super::{ItlSamples, Reading, ResultsList, RunDerived};
    use crate::common_shapes::{self as usual, Seen};
    use crate::itl::smooth_into;
    use crate::python_values::{ItlSeed, scalars_answer};
    use crate::timeline::Timeline;
    use crate::window::{AtReader, Fallback, Forward, ReadAt, Window};
    use mlenergy_pycompat::value::{py_int, truthy};

    #[derive(Default)]
    struct Acc {
        non_object: bool,
        success: Vec<bool>,
        output_len: Vec<Option<i64>>,
        bad_output_len: Vec<(usize, String)>,
        pool: Vec<f64>,
        /// Pools of earlier parts, in order, before `pool` (see `merge`).
        done: Vec<Vec<f64>>,
        itl_error: Option<String>,
        scratch: Vec<f64>,
    }

    impl Acc {
        /// For the requests of `len` bytes of text: the ITL pool reserved at once for as many
        /// values as that text can plausibly hold (an indented value and its separator take 16
        /// bytes or more), so it is not grown by copying. Reserved pages that are never written
        /// cost nothing, and `finish` gives the spare capacity back.
        fn for_text(len: usize) -> Acc {
            Acc {
                pool: Vec::with_capacity(len / 16),
                ..Acc::default()
            }
        }
    }

    pub(super) struct RunFileSeed {
        pub(super) spec: Reading,
    }

    impl<'de> DeserializeSeed<'de> for RunFileSeed {
        type Value = RunDerived;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RunDerived, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for RunFileSeed {
        type Value = RunDerived;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a results object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RunDerived, A::Error> {
            let mut acc = Acc::default();
            let mut results = ResultsList::Missing;
            let mut timeline = Timeline::Missing;
            let mut top = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "results" if self.spec.requests => {
                        // A repeated key: the last one counts, as in Python.
                        acc = Acc {
                            scratch: std::mem::take(&mut acc.scratch),
                            ..Acc::default()
                        };
                        results = map.next_value_seed(RequestsSeed(&mut acc))?;
                    }
                    "timeline" if self.spec.timeline => timeline = map.next_value::<Timeline>()?,
                    k if self.spec.keep.contains(&k) => {
                        let v = map.next_value::<Value>()?;
                        keep(&mut top, key, v);
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(finish(acc, results, timeline, top, self.spec.finite_itl))
        }
    }

    /// Keep a top-level value: a repeated key replaces the earlier value.
    fn keep(top: &mut Vec<(String, Value)>, key: String, v: Value) {
        top.retain(|(k, _)| *k != key);
        top.push((key, v));
    }

    fn finish(
        acc: Acc,
        results: ResultsList,
        timeline: Timeline,
        top: Vec<(String, Value)>,
        finite_itl: bool,
    ) -> RunDerived {
        let itl = match (results, acc.itl_error) {
            (ResultsList::NotAList, _) => Err("'results' is not a list".to_string()),
            (_, Some(e)) => Err(e),
            _ => {
                let samples = ItlSamples::from_chunks(acc.done.into_iter().chain([acc.pool]).map(
                    |mut pool| {
                        if finite_itl {
                            pool.retain(|x| *x > 0.0 && x.is_finite());
                        }
                        pool.shrink_to_fit();
                        pool.into()
                    },
                ));
                if samples.is_empty() {
                    Err("No valid ITL samples in run".to_string())
                } else {
                    Ok(samples)
                }
            }
        };
        RunDerived {
            results,
            non_object: acc.non_object,
            success: acc.success,
            output_len: acc.output_len,
            bad_output_len: acc.bad_output_len,
            itl,
            timeline,
            top,
        }
    }

    /// Request records copied out of the window, parsed together.
    #[derive(Default)]
    struct Batch {
        bytes: Vec<u8>,
        ends: Vec<usize>,
    }

    /// Bytes of request records per batch.
    const BATCH_BYTES: usize = 1 << 20;

    fn parse_batch(b: &Batch) -> Result<Acc, Fallback> {
        let mut acc = Acc::for_text(b.bytes.len());
        let mut start = 0;
        for &end in &b.ends {
            if record(&mut acc, &b.bytes[start..end])? != end - start {
                return Err(Fallback);
            }
            start = end;
        }
        acc.scratch = Vec::new();
        Ok(acc)
    }

    /// Fold the request record at the start of `bytes` into `acc`: read by `common_shapes` in the usual
    /// shape, else by the serde visitor. Its length.
    fn record(acc: &mut Acc, bytes: &[u8]) -> Result<usize, Fallback> {
        if let Some((f, n)) = usual::request_prefix(bytes, &mut acc.scratch) {
            fold(acc, f.success, true, Ok(f.output_len));
            return Ok(n);
        }
        let n = usual::value_len(bytes).ok_or(Fallback)?;
        let mut de = serde_json::Deserializer::from_slice(&bytes[..n]);
        RequestSeed(acc)
            .deserialize(&mut de)
            .map_err(|_| Fallback)?;
        Ok(n)
    }

    /// The parts' requests, in order, in one accumulator (each request vector allocated once, at
    /// its size; the ITL pools kept as they are, as chunks).
    fn merge(parts: Vec<Acc>) -> Acc {
        let total = |f: fn(&Acc) -> usize| parts.iter().map(f).sum::<usize>();
        let mut acc = Acc {
            success: Vec::with_capacity(total(|a| a.success.len())),
            output_len: Vec::with_capacity(total(|a| a.output_len.len())),
            done: Vec::with_capacity(parts.len()),
            ..Acc::default()
        };
        for b in parts {
            let offset = acc.success.len();
            acc.non_object |= b.non_object;
            acc.success.extend(b.success);
            acc.output_len.extend(b.output_len);
            acc.bad_output_len
                .extend(b.bad_output_len.into_iter().map(|(i, t)| (i + offset, t)));
            if acc.itl_error.is_none() {
                acc.itl_error = b.itl_error;
            }
            acc.done.extend(b.done);
            acc.done.push(b.pool);
        }
        acc
    }

    /// The `results` list, if the next value is one. This thread finds the records and copies them
    /// into batches of about 1 MB; a second thread parses the batches it is handed, this one the
    /// batches that find the second one's queue full (number parsing is most of the work); the
    /// parts are merged in file order. Batch buffers go back and forth rather than being
    /// allocated anew (fresh pages cost page faults).
    fn requests_parallel<R: Read>(w: &mut Window<R>) -> Result<Option<Acc>, Fallback> {
        let (to_worker, batches) = std::sync::mpsc::sync_channel::<(usize, Batch)>(2);
        let (give_back, returned) = std::sync::mpsc::channel::<Batch>();
        std::thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let mut parts = Vec::new();
                for (i, mut b) in batches {
                    parts.push((i, parse_batch(&b)));
                    b.bytes.clear();
                    b.ends.clear();
                    // The scanner may have finished; then the buffer is simply dropped.
                    let _ = give_back.send(b);
                }
                parts
            });
            let fresh = || Batch {
                bytes: Vec::with_capacity(BATCH_BYTES + BATCH_BYTES / 2),
                ends: Vec::new(),
            };
            let mut parts: Vec<(usize, Result<Acc, Fallback>)> = Vec::new();
            let mut batch = fresh();
            let mut n = 0usize;
            // A full batch goes to the worker when its queue has room, else this thread parses
            // it: the split follows whichever side is slower (scanning here, or parsing there).
            let mut dispatch = |b: Batch, parts: &mut Vec<(usize, Result<Acc, Fallback>)>| {
                let i = n;
                n += 1;
                match to_worker.try_send((i, b)) {
                    Ok(()) => returned.try_recv().unwrap_or_else(|_| fresh()),
                    Err(std::sync::mpsc::TrySendError::Full((_, mut b))) => {
                        parts.push((i, parse_batch(&b)));
                        b.bytes.clear();
                        b.ends.clear();
                        b
                    }
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => {
                        parts.push((i, Err(Fallback)));
                        fresh()
                    }
                }
            };
            let is_list = w.array(|w| {
                w.take_raw(|bytes| {
                    batch.bytes.extend_from_slice(bytes);
                    batch.ends.push(batch.bytes.len());
                })?;
                if batch.bytes.len() >= BATCH_BYTES {
                    let full = std::mem::take(&mut batch);
                    batch = dispatch(full, &mut parts);
                }
                Ok(())
            });
            if !batch.ends.is_empty() {
                dispatch(batch, &mut parts);
            }
            drop(to_worker);
            parts.extend(worker.join().map_err(|_| Fallback)?);
            if !is_list? {
                return Ok(None);
            }
            parts.sort_by_key(|p| p.0);
            let parts = parts
                .into_iter()
                .map(|(_, part)| part)
                .collect::<Result<Vec<Acc>, Fallback>>()?;
            Ok(Some(merge(parts)))
        })
    }

    /// Bytes of the request list per piece read by `requests_in_pieces`.
    pub(super) const PIECE: u64 = 1 << 20;

    /// Bytes read past a piece's nominal end to find where its last record ends (more when a
    /// record is longer).
    const OVERHANG: usize = 64 << 10;

    /// The `results` list at offset `at` of `src` (its `[`), when it is written one record per
    /// indented line as `json.dump(..., indent=...)` writes it: the requests parsed by two threads
    /// in pieces of about `piece` bytes, each read straight from `src`, and the offset just past
    /// the list. `None` for any other layout (then the window reads the list).
    ///
    /// A piece starts at the first record boundary (`,` newline, the first record's indentation,
    /// `{`) at or after its nominal start, and ends where the next piece starts. No such boundary
    /// can be inside a string (JSON strings hold no raw newline), and a piece's parse must end
    /// exactly at the next piece's start: the first piece starts at the first record, so each
    /// piece that ends where the next starts proves that the next one starts at a record. Any
    /// mismatch is `Fallback`.
    fn requests_in_pieces(
        src: &dyn ReadAt,
        at: u64,
        piece: u64,
    ) -> Result<Option<(Acc, u64)>, Fallback> {
        let size = src.size().map_err(|_| Fallback)?;
        let mut head = vec![0u8; 4096];
        let n = src.read_at(&mut head, at).map_err(|_| Fallback)?;
        let head = &head[..n];
        // `[`, a newline, the indentation, `{`.
        let Some(indent) = head
            .get(2..)
            .and_then(|rest| rest.iter().position(|&b| b != b' '))
        else {
            return Ok(None);
        };
        if head[..2] != *b"[\n" || head[2 + indent] != b'{' {
            return Ok(None);
        }
        let first = at + 2 + indent as u64;
        let mut needle = b",\n".to_vec();
        needle.extend(std::iter::repeat_n(b' ', indent));
        needle.push(b'{');
        let finder = memchr::memmem::Finder::new(&needle);
        let count = (size.saturating_sub(first)).div_ceil(piece).max(1);
        let span = Span {
            src,
            finder: &finder,
            first,
            piece,
            size,
        };
        let next = std::sync::atomic::AtomicU64::new(0);
        let work = || {
            let mut buf = Vec::new();
            let mut done = Vec::new();
            loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if k >= count {
                    return done;
                }
                done.push((k, span.read(k, &mut buf)));
            }
        };
        let mut parts = std::thread::scope(|scope| {
            let helper = scope.spawn(work);
            let mut parts = work();
            parts.extend(helper.join().map_err(|_| Fallback)?);
            Ok::<_, Fallback>(parts)
        })?;
        parts.sort_by_key(|p| p.0);
        let mut accs = Vec::with_capacity(parts.len());
        let mut end = None;
        for (_, part) in parts {
            match part? {
                None => {}
                // Nothing may follow the piece that closed the list.
                Some(_) if end.is_some() => return Err(Fallback),
                Some((acc, closed)) => {
                    end = closed;
                    accs.push(acc);
                }
            }
        }
        let end = end.ok_or(Fallback)?;
        Ok(Some((merge(accs), end)))
    }

    /// Where the pieces of a request list are, in a source.
    struct Span<'a> {
        src: &'a dyn ReadAt,
        finder: &'a memchr::memmem::Finder<'a>,
        /// Offset of the first record.
        first: u64,
        piece: u64,
        size: u64,
    }

    impl Span<'_> {
        /// Piece `k` read (through `buf`) and parsed: `None` when no record starts in it, else its
        /// requests and, for the piece that closes the list, the offset just past the `]`.
        fn read(&self, k: u64, buf: &mut Vec<u8>) -> Result<Option<(Acc, Option<u64>)>, Fallback> {
            let from = self.first + k * self.piece;
            let to = (from + self.piece).min(self.size);
            let mut got = self.fill(buf, from, 0, (to - from) as usize + OVERHANG)?;
            // The needle's `{` is where a record starts.
            let brace = self.finder.needle().len() - 1;
            let start = if k == 0 {
                0
            } else {
                match self.finder.find(&buf[..got]) {
                    Some(s) if from + (s as u64) < to => s + brace,
                    _ => return Ok(None),
                }
            };
            // The next piece starts at the first boundary at or after `to`.
            let nominal = (to - from) as usize;
            let end = loop {
                if let Some(s) = buf.get(nominal..got).and_then(|b| self.finder.find(b)) {
                    break Some(nominal + s + brace);
                }
                let more = (got - start).max(OVERHANG);
                let now = self.fill(buf, from, got, more)?;
                if now == got {
                    break None;
                }
                got = now;
            };
            let bytes = &buf[start..end.unwrap_or(got)];
            let (acc, closed) = parse_piece(bytes)?;
            match (closed, end) {
                (None, Some(_)) => Ok(Some((acc, None))),
                (Some(past), None) => Ok(Some((acc, Some(from + (start + past) as u64)))),
                _ => Err(Fallback),
            }
        }

        /// Read up to `more` bytes of the source at `from + have` into `buf[have..]`; the bytes
        /// of `buf` now held (short at the end of the source).
        fn fill(
            &self,
            buf: &mut Vec<u8>,
            from: u64,
            have: usize,
            more: usize,
        ) -> Result<usize, Fallback> {
            let want = have + more;
            if buf.len() < want {
                buf.resize(want, 0);
            }
            let n = self
                .src
                .read_at(&mut buf[have..want], from + have as u64)
                .map_err(|_| Fallback)?;
            Ok(have + n)
        }
    }

    /// The requests of a piece of the list (from a record to the next piece's start, or to the
    /// end of the source): their accumulator and, when the list closed in it, the offset just past
    /// its `]`. The piece must end right after a `,` and its whitespace, or at the `]`.
    fn parse_piece(bytes: &[u8]) -> Result<(Acc, Option<usize>), Fallback> {
        let mut acc = Acc::for_text(bytes.len());
        let mut i = 0;
        loop {
            i += record(&mut acc, &bytes[i..])?;
            let (sep, n) = usual::after_item(&bytes[i..]).ok_or(Fallback)?;
            i += n;
            if sep == b']' {
                acc.scratch = Vec::new();
                return Ok((acc, Some(i)));
            }
            if i == bytes.len() {
                acc.scratch = Vec::new();
                return Ok((acc, None));
            }
        }
    }

    /// Where the `timeline` value's text is: held (a buffer and its range in it), or in the
    /// source at an offset, of a length (read by the thread that parses it).
    enum TimelineText<'a> {
        Held(Vec<u8>, std::ops::Range<usize>),
        At(&'a dyn ReadAt, u64, u64),
    }

    impl<'a> TimelineText<'a> {
        /// Consume the value at the window: found in the source by its closing line when the
        /// window reads `src` and the file is indented, else taken from the window.
        fn take(
            w: &mut Window<impl Forward>,
            pieces: Option<(&'a dyn ReadAt, u64)>,
        ) -> Result<Self, Fallback> {
            if let Some((src, _)) = pieces
                && let Some(len) = w.indented_object_len(src)?
            {
                let start = w.position();
                w.forward_to(start + len)?;
                return Ok(TimelineText::At(src, start, len));
            }
            Ok(match w.take_indented_object()? {
                Some((buf, range)) => TimelineText::Held(buf, range),
                None => {
                    let (buf, range) = w.take_value()?;
                    TimelineText::Held(buf, range)
                }
            })
        }

        /// That the timeline text is one valid JSON value, without reading it into a timeline.
        fn check(self) -> Result<(), Fallback> {
            let buf;
            let text: &[u8] = match &self {
                TimelineText::Held(held, range) => &held[range.clone()],
                TimelineText::At(src, start, len) => {
                    let len = usize::try_from(*len).map_err(|_| Fallback)?;
                    let mut read = vec![0u8; len];
                    if src.read_at(&mut read, *start).map_err(|_| Fallback)? < len {
                        return Err(Fallback);
                    }
                    buf = read;
                    &buf
                }
            };
            serde_json::from_slice::<IgnoredAny>(text)
                .map(drop)
                .map_err(|_| Fallback)
        }

        /// The timeline: read a series at a time in the usual shape (`timeline_by_series`), else the
        /// text is held whole (read from the source if need be) and serde reads it.
        fn read(self) -> Result<Timeline, Fallback> {
            let (buf, range) = match self {
                TimelineText::Held(buf, range) => {
                    if let Ok(t) = timeline_by_series(&buf[range.clone()]) {
                        return Ok(t);
                    }
                    (buf, range)
                }
                TimelineText::At(src, start, len) => {
                    if let Ok(t) = timeline_by_series(AtReader { src, pos: start }.take(len)) {
                        return Ok(t);
                    }
                    let len = usize::try_from(len).map_err(|_| Fallback)?;
                    let mut buf = vec![0u8; len];
                    if src.read_at(&mut buf, start).map_err(|_| Fallback)? < len {
                        return Err(Fallback);
                    }
                    (buf, 0..len)
                }
            };
            serde_json::from_slice::<Timeline>(&buf[range]).map_err(|_| Fallback)
        }
    }

    /// The `timeline` value that is all of what `reader` reads, in the usual shape: an object
    /// whose `power` object holds `device_instant`/`device_average` series, whose `temperature`
    /// is a series, whose steady-state bounds are numbers or `null`, every series
    /// `{gpu: [[t, v], ...]}` of numbers. It is read through a window a series at a time rather
    /// than held whole (the series are most of it), each GPU's points by `usual::points`. Any
    /// other shape (a repeated key, another type) is `Fallback`, and the caller reads the text
    /// with serde, whose answer is the reference.
    pub(super) fn timeline_by_series(reader: impl Read) -> Result<Timeline, Fallback> {
        use crate::timeline::{Power, Series};

        /// Each member of the object value next, its bytes handed to `read` with its key: found
        /// by its closing line when the object is indented, so only one member is held at a time.
        fn members<R: Read>(
            w: &mut Window<R>,
            mut read: impl FnMut(&str, &[u8]) -> Result<(), Fallback>,
        ) -> Result<(), Fallback> {
            let indent = w.member_indent()?;
            w.inner_object(|key, w| {
                let mut got = Err(Fallback);
                let take = |b: &[u8]| got = read(key, b);
                match indent {
                    Some(k) => w.take_raw_closed(k, take)?,
                    None => w.take_raw(take)?,
                }
                got
            })
        }
        fn series<R: Read>(w: &mut Window<R>) -> Result<Series, Fallback> {
            let mut devices: Vec<(String, crate::timeline::Points)> = Vec::new();
            members(w, |key, b| {
                if devices.iter().any(|(k, _)| k == key) {
                    return Err(Fallback);
                }
                let points = usual::points(b).ok_or(Fallback)?;
                devices.push((key.to_string(), Ok(points)));
                Ok(())
            })?;
            Ok(Series::Devices(devices))
        }
        /// Skip a value not read (validated as serde does); an object (such as another power
        /// series) a member at a time, so it is never held whole.
        fn skip<R: Read>(w: &mut Window<R>) -> Result<(), Fallback> {
            if w.peek()? != Some(b'{') {
                return w.skip();
            }
            members(w, |_, b| {
                serde_json::from_slice::<serde::de::IgnoredAny>(b)
                    .map(drop)
                    .map_err(|_| Fallback)
            })
        }
        /// A series under a key not read before (a repeat is left to the caller).
        fn series_once<R: Read>(
            seen: &mut Seen,
            key: u8,
            w: &mut Window<R>,
            into: &mut Option<Series>,
        ) -> Result<(), Fallback> {
            seen.first(key).ok_or(Fallback)?;
            *into = Some(series(w)?);
            Ok(())
        }

        let mut w = Window::new(reader);
        let (mut power, mut temperature) = (Power::Missing, None);
        let (mut steady_start, mut steady_end) = (None, None);
        let mut seen = Seen::default();
        let bound = |w: &mut Window<_>, at: &mut Option<f64>| {
            let mut got = None;
            w.take_raw(|b| got = usual::number_or_null(b))?;
            *at = got.ok_or(Fallback)?;
            Ok(())
        };
        w.object(|key, w| match key {
            "power" => {
                seen.first(0).ok_or(Fallback)?;
                let (mut instant, mut average, mut inner) = (None, None, Seen::default());
                w.inner_object(|key, w| match key {
                    "device_instant" => series_once(&mut inner, 0, w, &mut instant),
                    "device_average" => series_once(&mut inner, 1, w, &mut average),
                    _ => skip(w),
                })?;
                power = Power::Object {
                    device_instant: instant,
                    device_average: average,
                };
                Ok(())
            }
            "temperature" => series_once(&mut seen, 1, w, &mut temperature),
            "steady_state_start_time" => {
                seen.first(2).ok_or(Fallback)?;
                bound(w, &mut steady_start)
            }
            "steady_state_end_time" => {
                seen.first(3).ok_or(Fallback)?;
                bound(w, &mut steady_end)
            }
            _ => skip(w),
        })?;
        Ok(Timeline::Object {
            power,
            temperature,
            steady_state_start_time: steady_start,
            steady_state_end_time: steady_end,
        })
    }

    /// `read_fast` over `src` read at offsets, its request list in pieces of about `piece` bytes.
    #[cfg(test)]
    pub(super) fn read_at(src: &dyn ReadAt, llm: bool, piece: u64) -> Result<RunDerived, Fallback> {
        read_at_spec(src, Reading::derived(llm), piece)
    }

    /// `read_at` of what `spec` names.
    pub(super) fn read_at_spec(
        src: &dyn ReadAt,
        spec: Reading,
        piece: u64,
    ) -> Result<RunDerived, Fallback> {
        read_fast(AtReader { src, pos: 0 }, Some((src, piece)), spec)
    }

    /// The same reading through `window::Window` (slices instead of a reader). The `timeline` value
    /// (which comes before the long request list) is parsed on a second thread meanwhile. With
    /// `pieces` (the reader's own source, read at offsets), an indented request list is read in
    /// pieces (`requests_in_pieces`) and the window moves on past it.
    pub(super) fn read_fast(
        reader: impl Forward,
        pieces: Option<(&dyn ReadAt, u64)>,
        spec: Reading,
    ) -> Result<RunDerived, Fallback> {
        let mut w = Window::new(reader);
        let mut acc = Acc::default();
        let mut results = ResultsList::Missing;
        let mut top = Vec::new();
        std::thread::scope(|scope| {
            let mut timeline: Option<
                std::thread::ScopedJoinHandle<'_, Result<Timeline, Fallback>>,
            > = None;
            w.object(|key, w| {
                match key {
                    "results" if spec.requests => {
                        acc = Acc {
                            scratch: std::mem::take(&mut acc.scratch),
                            ..Acc::default()
                        };
                        let split = match pieces {
                            Some((src, piece)) if w.peek()? == Some(b'[') => {
                                requests_in_pieces(src, w.position(), piece)?
                            }
                            _ => None,
                        };
                        let parsed = match split {
                            Some((parsed, end)) => {
                                w.forward_to(end)?;
                                Some(parsed)
                            }
                            None => requests_parallel(w)?,
                        };
                        results = match parsed {
                            Some(parsed) => {
                                acc = parsed;
                                ResultsList::List
                            }
                            None => w.parse(RequestsSeed(&mut acc))?,
                        };
                    }
                    "timeline" => {
                        // A repeated key: the last one counts, and each one is checked (an
                        // earlier one's reading is joined here, its error kept; fuzzing found
                        // `{"timeline":,"timeline": {}}` read, its first value never checked).
                        let text = TimelineText::take(w, pieces)?;
                        if let Some(earlier) = timeline.take() {
                            earlier.join().map_err(|_| Fallback)??;
                        }
                        timeline = Some(if spec.timeline {
                            scope.spawn(move || text.read())
                        } else {
                            scope.spawn(move || text.check().map(|()| Timeline::Missing))
                        });
                    }
                    k if spec.keep.contains(&k) => {
                        let v = w.parse(std::marker::PhantomData::<Value>)?;
                        keep(&mut top, k.to_string(), v);
                    }
                    _ => w.skip()?,
                }
                Ok(())
            })?;
            let timeline = match timeline {
                Some(t) => t.join().map_err(|_| Fallback)??,
                None => Timeline::Missing,
            };
            Ok(finish(acc, results, timeline, top, spec.finite_itl))
        })
    }

    struct RequestsSeed<'a>(&'a mut Acc);

    impl<'de> DeserializeSeed<'de> for RequestsSeed<'_> {
        type Value = ResultsList;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ResultsList, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for RequestsSeed<'_> {
        type Value = ResultsList;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the results list")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ResultsList, A::Error> {
            while seq.next_element_seed(RequestSeed(&mut *self.0))?.is_some() {}
            Ok(ResultsList::List)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultsList, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(ResultsList::NotAList)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<ResultsList, E> {
            Ok(ResultsList::NotAList)
        }
        scalars_answer!(ResultsList::NotAList);
    }

    /// Fold one request into the accumulator, its `itl` values being in `acc.scratch`: `itl_ok`
    /// false where `float()` of one raises; `output_len` as `int()` of it, or its JSON text where
    /// that raises.
    fn fold(acc: &mut Acc, success: bool, itl_ok: bool, output_len: Result<Option<i64>, String>) {
        if success && acc.itl_error.is_none() {
            if itl_ok {
                smooth_into(&acc.scratch, &mut acc.pool);
            } else {
                acc.itl_error = Some("a request's itl holds a value that is not a number".into());
            }
        }
        let index = acc.success.len();
        acc.success.push(success);
        acc.output_len.push(output_len.unwrap_or_else(|text| {
            acc.bad_output_len.push((index, text));
            None
        }));
    }

    /// One request record, folded into the accumulator.
    struct RequestSeed<'a>(&'a mut Acc);

    impl RequestSeed<'_> {
        fn not_object(self) {
            let acc = self.0;
            acc.non_object = true;
            acc.itl_error
                .get_or_insert_with(|| "a request record is not an object".into());
            acc.success.push(false);
            acc.output_len.push(None);
        }
    }

    impl<'de> DeserializeSeed<'de> for RequestSeed<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for RequestSeed<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a request record")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let acc = self.0;
            let (mut success, mut output_len) = (None, None);
            let mut itl_ok = true;
            acc.scratch.clear();
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "success" => success = Some(map.next_value::<Value>()?),
                    "itl" => itl_ok = map.next_value_seed(ItlSeed(&mut acc.scratch))?,
                    "output_len" => output_len = Some(map.next_value::<Value>()?),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            let output_len = match output_len.filter(|v| !v.is_null()) {
                None => Ok(None),
                Some(v) => py_int(&v).map(Some).map_err(|_| v.to_string()),
            };
            fold(acc, truthy(success.as_ref()), itl_ok, output_len);
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            self.not_object();
            Ok(())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
            self.not_object();
            Ok(())
        }
        scalars_answer!(|s| s.not_object());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Power, Series, Timeline};
    use crate::window::Fallback;

    const PIECE_TEST: u64 = runfile::PIECE;

    fn raw(json: &str) -> RunDerived {
        read_run(json.as_bytes(), "test", true).unwrap()
    }

    /// The fast path reads what the reader path reads, or gives up where the reader path fails.
    #[test]
    fn fast_path_agrees_with_the_reader_path() {
        let docs = [
            r#"{"results": [{"success": true, "itl": [0.01, 0, 0.02], "output_len": 3, "prompt": "a \"}] {"},
                            {"success": false, "output_len": "x"}, 7, [1, {"a": "]"}], "s", null, true, -1.5e3],
               "timeline": {"power": {"device_instant": {"0": [[1, 2e0]], "1": [[1, 3]]}}, "temperature": 4}}"#,
            r#"  {"results": {"a": [1]}, "x": "\u007b", "results": [], "timeline": [1]}  "#,
            r#"{"results": "abc", "n": 12, "t": true, "f": false, "z": null}"#,
            r#"{"results": 5}"#,
            r#"{}"#,
            "{\"results\": [\n{\"success\": 1, \"itl\": \"12\"}\n]\n}\n",
        ];
        for doc in docs {
            let slow = read_run(doc.as_bytes(), "t", true).unwrap();
            assert_eq!(read_run_fast(doc.as_bytes(), true).unwrap(), slow, "{doc}");
            assert_eq!(
                runfile::read_at(&doc.as_bytes(), true, 16).unwrap(),
                slow,
                "{doc}"
            );
            let diffusion = read_run(doc.as_bytes(), "t", false).unwrap();
            assert_eq!(
                read_run_fast(doc.as_bytes(), false).unwrap(),
                diffusion,
                "{doc}"
            );
        }
        let broken = [
            r#"{"results": [{"success": true}"#,
            r#"{"results": [{"success": true}]} x"#,
            r#"[1, 2]"#,
            r#"{"results": [1 2]}"#,
            r#"{"a": "unterminated}"#,
            r#"{"a": 1,}"#,
            r#"{"a" 1}"#,
            "",
        ];
        for doc in broken {
            assert!(read_run(doc.as_bytes(), "t", true).is_err(), "{doc}");
            assert!(read_run_fast(doc.as_bytes(), true).is_err(), "{doc}");
            assert!(
                runfile::read_at(&doc.as_bytes(), true, 16).is_err(),
                "{doc}"
            );
        }
    }

    /// Values that straddle the window's reads.
    #[test]
    fn fast_path_reads_across_chunks() {
        let mut doc = String::from(r#"{"pad": ""#);
        doc.push_str(&"x".repeat((1 << 20) - 12));
        doc.push_str(r#"\"", "results": ["#);
        for i in 0..40_000 {
            if i > 0 {
                doc.push(',');
            }
            match i {
                // In later batches than the first (the batches are parsed on two threads).
                35_000 => doc.push_str(r#"{"success": true, "itl": [0.1], "output_len": "x"}"#),
                36_000 => doc.push('7'),
                37_000 => doc.push_str(r#"{"success": true, "itl": [null], "output_len": 1}"#),
                _ => doc.push_str(&format!(
                    r#"{{"success": true, "itl": [0.0{}, 0, 0.5], "output_len": {i}}}"#,
                    i % 7 + 1
                )),
            }
        }
        doc.push_str("], \"last\": 12345}");
        let slow = read_run(doc.as_bytes(), "t", true).unwrap();
        let fast = read_run_fast(std::io::Cursor::new(doc.as_bytes()), true).unwrap();
        assert_eq!(fast, slow);
        assert_eq!(fast.success.len(), 40_000);
        assert_eq!(fast.output_len[39_999], Some(39_999));
        assert_eq!(fast.bad_output_len, vec![(35_000, "\"x\"".to_string())]);
        assert!(fast.non_object);
        assert_eq!(fast.itl, Err("a request record is not an object".into()));
    }

    /// An indented request list read in pieces, at many piece sizes, reads what the reader path
    /// reads; a truncated file is refused; a list whose boundaries lie gives up.
    #[test]
    fn pieces_agree_with_the_reader_path() {
        let records: Vec<serde_json::Value> = (0..300)
            .map(|i| match i % 50 {
                7 => serde_json::json!(7),
                13 => serde_json::json!({"success": true, "itl": [0.25], "output_len": "x"}),
                21 => serde_json::json!({"success": true, "itl": [0.5, null], "output_len": 2}),
                33 => serde_json::json!({"prompt": "},\n  {\"success\": true}", "success": 1,
                                         "nested": [{"a": [1, {"b": "]"}]}, {}], "output_len": 3.0}),
                _ => serde_json::json!({
                    "success": i % 9 != 0,
                    "itl": (0..i % 11).map(|j| 0.001 * f64::from(j + i)).collect::<Vec<_>>(),
                    "output_len": if i % 17 == 0 { serde_json::Value::Null } else { i.into() },
                    "prompt_len": 40,
                }),
            })
            .collect();
        let clean: Vec<serde_json::Value> = records
            .iter()
            .filter(|r| r.is_object() && r.get("output_len") != Some(&"x".into()))
            .filter(|r| {
                !r["itl"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| v.is_null()))
            })
            .cloned()
            .collect();
        let doc = |list: &[serde_json::Value]| {
            serde_json::to_string_pretty(&serde_json::json!({
                "model_id": "org/m",
                "timeline": {"power": {"device_instant": {"0": [[1.0, 2.0], [2.0, 3.5]]}}},
                "results": list,
                "after": {"x": [1, 2]},
            }))
            .unwrap()
        };
        for list in [&records[..], &clean[..], &records[..1], &[]] {
            let text = doc(list);
            let slow = read_run(text.as_bytes(), "t", true).unwrap();
            for piece in [40, 333, 4096, PIECE_TEST] {
                let fast = runfile::read_at(&text.as_bytes(), true, piece).unwrap();
                assert_eq!(fast, slow, "piece {piece}");
            }
            for cut in [text.len() / 3, text.len() / 2, text.len() - 3] {
                let part = &text.as_bytes()[..cut];
                assert!(read_run(part, "t", true).is_err());
                assert!(runfile::read_at(&part, true, 64).is_err(), "cut at {cut}");
            }
        }
        assert_eq!(
            runfile::read_at(&doc(&clean).as_bytes(), true, 50)
                .unwrap()
                .success
                .len(),
            clean.len()
        );
        // An inner list written at the records' indentation: a boundary inside a record.
        let liar = "{\"results\": [\n  {\"a\": [\n  {\"x\": 1},\n  {\"y\": 2}],\n \"success\": true, \
                    \"itl\": [0.1]},\n  {\"success\": false}\n]}";
        assert_eq!(
            read_run(liar.as_bytes(), "t", true).unwrap().success,
            vec![true, false]
        );
        let mut refused = 0;
        for piece in 1..=60 {
            match runfile::read_at(&liar.as_bytes(), true, piece) {
                Ok(d) => assert_eq!(d.success, vec![true, false], "piece {piece}"),
                Err(Fallback) => refused += 1,
            }
        }
        // Piece sizes whose boundary falls on the inner list give up; the others read it.
        assert!(refused > 0 && refused < 60, "{refused}");
    }

    /// A timeline object found by its closing line; one whose inner lines are not indented
    /// deeper gives up (and the reader path reads it).
    #[test]
    fn indented_timeline() {
        let good = "{\n  \"timeline\": {\n    \"power\": {\"device_instant\": {\"0\": [[1, 2]]}},\n    \
                    \"x\": {\n      \"a\": \"\\n  }\"\n    }\n  },\n  \"results\": [\n    {\"success\": true, \
                    \"itl\": [0.5]}\n  ]\n}\n";
        let slow = read_run(good.as_bytes(), "t", true).unwrap();
        assert!(matches!(slow.timeline, Timeline::Object { .. }));
        assert_eq!(runfile::read_at(&good.as_bytes(), true, 8).unwrap(), slow);
        assert_eq!(read_run_fast(good.as_bytes(), true).unwrap(), slow);
        let liar = "{\n  \"timeline\": {\n \"x\": {\n  },\n \"power\": {}},\n  \"results\": []\n}";
        assert!(read_run(liar.as_bytes(), "t", true).is_ok());
        assert!(read_run_fast(liar.as_bytes(), true).is_err());
        assert!(runfile::read_at(&liar.as_bytes(), true, 8).is_err());
    }

    /// A timeline read a series at a time is the whole text's reading; any other shape (a
    /// repeated key, a series that is not `{gpu: [[t, v], ...]}`) is left to the whole text.
    /// `text` read by `runfile::timeline_by_series`, from a slice and from a larger source at an
    /// offset (the two must agree).
    fn timeline_by_series(text: &str) -> Result<Timeline, Fallback> {
        use std::io::Read;

        let held = runfile::timeline_by_series(text.as_bytes());
        let padded = format!("xx{text}yy");
        let src = padded.as_bytes();
        let at = crate::window::AtReader { src: &src, pos: 2 };
        let at = runfile::timeline_by_series(at.take(text.len() as u64));
        assert_eq!(held, at, "{text}");
        held
    }

    #[test]
    fn timeline_read_by_series() {
        let two_gpus = serde_json::json!({
            "power": {
                "device_instant": {"0": [[1.5, 200.25], [2.0, 201.0]], "1": [[1.5, 180.0]]},
                "device_average": {"0": [[1.0, 150.0]], "1": []},
                "other": {"x": [1, "]"]}
            },
            "temperature": {"0": [[1.0, 40.0]], "1": [[1.1, 41.5e0]]},
            "memory": {"0": [[1.0, 2.0]], "1": {"nested": ["]", [3]]}},
            "steady_state_start_time": 1.25,
            "steady_state_end_time": null,
            "note": "}}"
        });
        let hand_written = r#"{
          "benchmark_start_time": 1700000000.0,
          "power": {
            "device_instant": {"0": [[1700000000.5, 300], [1700000001.0, 310.25]], "1": []},
            "device_energy": {"0": [[1, 2]]},
            "device_average": {"1": [
              [
                1700000000.5,
                2.5e2
              ]
            ]}
          },
          "temperature": {"0": [[1700000000.0, 41]]},
          "steady_state_start_time": 1700000000.25,
          "steady_state_end_time": null,
          "other": [{"x": "]"}]
        }"#;
        let good = [
            serde_json::to_string_pretty(&two_gpus).unwrap(),
            serde_json::to_string(&two_gpus).unwrap(),
            hand_written.to_string(),
            r#"{"temperature": {}}"#.to_string(),
            r#"{}"#.to_string(),
            r#" {"power": {"device_average": {"\u0030": [[0, 1]]}}, "steady_state_end_time": 7} "#
                .to_string(),
        ];
        for text in &good {
            let whole: Timeline = serde_json::from_str(text).unwrap();
            assert_eq!(timeline_by_series(text), Ok(whole), "{text}");
        }
        // The values themselves, not only serde's agreement.
        let Ok(Timeline::Object {
            power:
                Power::Object {
                    device_instant: Some(Series::Devices(devices)),
                    device_average: Some(Series::Devices(average)),
                },
            steady_state_start_time,
            steady_state_end_time,
            ..
        }) = timeline_by_series(hand_written)
        else {
            panic!("power read");
        };
        assert_eq!(
            devices,
            vec![
                (
                    "0".to_string(),
                    Ok(vec![(1700000000.5, 300.0), (1700000001.0, 310.25)])
                ),
                ("1".to_string(), Ok(vec![]))
            ]
        );
        assert_eq!(
            average,
            vec![("1".to_string(), Ok(vec![(1700000000.5, 250.0)]))]
        );
        assert_eq!(
            (steady_state_start_time, steady_state_end_time),
            (Some(1700000000.25), None)
        );
        // A list whose inner lines are not all deeper than its key: the first closing line is
        // not its end, so the bytes up to it are not a value and the whole text is read instead.
        let liar = "{\"temperature\": {\n  \"0\": [\n  [1,\n  2\n  ], [3, 4]\n  ]\n}}";
        assert!(serde_json::from_str::<Timeline>(liar).is_ok());
        let odd = [
            liar,
            r#"{"power": null}"#,
            r#"{"power": 3}"#,
            r#"{"power": {}, "power": {}}"#,
            r#"{"power": {"device_instant": [1]}}"#,
            r#"{"power": {"device_instant": {"0": {"a": 1}}}}"#,
            r#"{"power": {"device_instant": {"0": [[1]]}}}"#,
            r#"{"power": {"device_instant": {"0": [[1, 2],]}}}"#,
            r#"{"power": {"device_instant": {"0": [[1, 2]]}, "device_instant": {}}}"#,
            // A value not read is still validated, member by member.
            r#"{"power": {"memory_average": {"0": [[1, 2],]}}}"#,
            r#"{"power": {"memory_average": {"0": [[1, 2]] "1": []}}}"#,
            r#"{"temperature": {"0": [[1, 2]], "0": [[1, 3]]}}"#,
            r#"{"temperature": {"0": [[1, 2]]}, "temperature": {}}"#,
            r#"{"temperature": {"0": [[1, "2"]]}}"#,
            r#"{"temperature": {"0": [[1, 2, 3]]}}"#,
            r#"{"steady_state_start_time": "1"}"#,
            r#"{"steady_state_end_time": true}"#,
            r#"{"temperature": {"0": [[1, 2]]}"#,
            r#"[1]"#,
        ];
        for text in odd {
            assert_eq!(timeline_by_series(text), Err(Fallback), "{text}");
        }
    }

    #[test]
    fn output_length_rules() {
        let r = raw(
            r#"{"results": [{"success": true, "output_len": 4}, {"success": false, "output_len": 0},
                                     {"success": false}, {"success": true, "output_len": 2.0}]}"#,
        );
        assert_eq!(output_lengths(&r, false), Ok(vec![4, 2]));
        assert_eq!(output_lengths(&r, true), Ok(vec![4, 0, 2]));
        let missing = raw(r#"{"results": [{"success": true}]}"#);
        assert!(
            matches!(output_lengths(&missing, false), Err(RawError::Content(m)) if m.contains("output_len"))
        );
        assert_eq!(
            output_lengths(&raw("{}"), false),
            Err(RawError::Content("Missing required 'results' list".into()))
        );
    }

    #[test]
    fn itl_samples_are_the_positive_finite_smoothed_pool() {
        let r = raw(
            r#"{"results": [{"success": true, "itl": [0.01, 0, 0, 0.02]}, {"success": false, "itl": [5]},
                                     {"success": true, "itl": [0.01, 0.01]}]}"#,
        );
        let third = 0.01 / 3.0;
        assert_eq!(
            itl_samples(&r),
            Ok(&ItlSamples::from(vec![
                third, third, third, 0.02, 0.01, 0.01
            ]))
        );
        let none = raw(r#"{"results": [{"success": false, "itl": [0.1]}]}"#);
        assert_eq!(
            itl_samples(&none),
            Err(RawError::Content("No valid ITL samples in run".into()))
        );
        let bad = raw(r#"{"results": [{"success": true, "itl": [null]}]}"#);
        assert!(itl_samples(&bad).is_err());
    }

    /// What the build reads (`rawtree::results`): kept top-level values, the smoothed ITL pool
    /// unfiltered, the request records read leniently (truthy `success`, string numbers in
    /// `itl`), the timeline checked but not kept; the fast paths read the same, and give up where
    /// the serde reader errs.
    #[test]
    fn a_reading_for_the_build() {
        const SPEC: Reading = Reading {
            requests: true,
            timeline: false,
            keep: &["steady_state_energy", "completed"],
            finite_itl: false,
        };
        let read = |text: &str| {
            let slow = read_with(text.as_bytes(), "t", SPEC);
            let fast = runfile::read_at_spec(&text.as_bytes(), SPEC, 16);
            match &slow {
                Ok(d) => assert_eq!(fast.as_ref(), Ok(d), "{text}"),
                Err(_) => assert!(fast.is_err(), "{text}"),
            }
            slow
        };
        let d = read(
            r#"{"steady_state_energy": 100.0, "timeline": {"power": {"0": [[1, 2]]}},
                "results": [{"success": true, "itl": [0.01, 0, "0.02", "nan"], "output_len": 3, "prompt": "x"},
                            {"success": 0, "itl": [0.1]}, {"itl": [null]}],
                "steady_state_energy": 200.0, "completed": "3"}"#,
        )
        .unwrap();
        assert_eq!(
            d.top,
            vec![
                ("steady_state_energy".to_string(), serde_json::json!(200.0)),
                ("completed".to_string(), serde_json::json!("3")),
            ]
        );
        assert_eq!(d.success, vec![true, false, false]);
        assert_eq!(d.output_len, vec![Some(3), None, None]);
        assert_eq!(d.timeline, Timeline::Missing);
        let pool: Vec<f64> = d.itl.unwrap().iter().collect();
        assert_eq!(pool[..3], [0.005, 0.005, 0.02]);
        assert!(
            pool[3].is_nan(),
            "the row statistics see a NaN the samples endpoint drops"
        );

        let odd = read(r#"{"results": [{"success": true, "itl": [0.01]}, 7]}"#).unwrap();
        assert!(odd.non_object && odd.itl.is_err());
        let not_a_list = read(r#"{"results": {"a": 1}}"#).unwrap();
        assert_eq!(not_a_list.results, ResultsList::NotAList);
        // A timeline that is not valid JSON fails the whole file, as json.load does.
        assert!(read(r#"{"timeline": {"power": [1, }, "results": []}"#).is_err());
        // An earlier value of a repeated key is checked too.
        assert!(read(r#"{"timeline":,"timeline": {}}"#).is_err());
        assert!(read(r#"{"timeline": [1,], "timeline": {}}"#).is_err());
    }

    /// Fuzzing's find (CI, seed 1): a request member without a value was read as 0 by the fast
    /// readers while serde refuses the document.
    #[test]
    fn a_member_without_a_value_is_refused_by_every_reader() {
        let doc = "{\n  \"model_id\": \"a/b\",\n  \"results\": [\n    {\n      \"success\": true,\n      \"output_len\":,\n      \"prompt\": \"}]{\\\"x\\\"\"\n    }\n  ]\n}";
        for llm in [true, false] {
            assert!(read_run(doc.as_bytes(), "fuzz", llm).is_err());
            assert!(read_run_fast(doc.as_bytes(), llm).is_err());
            assert!(read_run_at(&doc.as_bytes(), llm).is_err());
        }
    }
}
