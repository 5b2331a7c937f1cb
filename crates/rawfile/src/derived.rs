//! What one run's `results.json` yields for the raw endpoints (`RunDerived`), and the toolkit's
//! rules over it: output lengths (docs/toolkit.md §11.1) and ITL samples (§11.2).

use super::error::RawError;
use super::timeline::Timeline;

/// What the `results` key held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsList {
    Missing,
    NotAList,
    List,
}

/// Everything the raw endpoints need of one run's `results.json`, read in one streaming pass
/// (the request list and the timeline are never held as JSON): output lengths with success flags,
/// the smoothed ITL samples and the timeline series. Diffusion runs fill only `timeline`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDerived {
    pub results: ResultsList,
    /// Some request record is not an object (`req.get` raises in the toolkit).
    pub non_object: bool,
    /// Per request: `bool(req.get("success", False))`.
    pub success: Vec<bool>,
    /// Per request: `int(output_len)`, None when null, absent or not an integer.
    pub output_len: Vec<Option<i64>>,
    /// Requests whose `output_len` is not an integer: (index, its JSON text), ascending.
    pub bad_output_len: Vec<(usize, String)>,
    /// `inter_token_latencies()`: positive finite smoothed samples, or why the toolkit raises.
    pub itl: Result<ItlSamples, String>,
    pub timeline: Timeline,
    /// Top-level values kept whole when the reading asked for them (`Reading::keep`), in file
    /// order of their last occurrence.
    pub top: Vec<(String, serde_json::Value)>,
}

impl RunDerived {
    /// Approximate memory, for cache weighing.
    pub fn weight(&self) -> usize {
        self.success.len() * 17
            + self
                .itl
                .as_ref()
                .map_or(0, |p| p.held_bytes() + p.chunks().len() * 64)
            + self
                .bad_output_len
                .iter()
                .map(|b| b.1.len() + 32)
                .sum::<usize>()
            + self.timeline.weight()
            + 128
    }
}

/// ITL samples in file order, in one or more Arrow buffers (as the pieces of a file were read:
/// joining them would copy every sample once more; persisting and loading copies nothing).
/// Equal when the samples are, however they are split.
#[derive(Debug, Clone, Default)]
pub struct ItlSamples {
    chunks: Vec<arrow::buffer::ScalarBuffer<f64>>,
    len: usize,
}

impl ItlSamples {
    /// The samples of `chunks`, in order (empty ones dropped).
    pub fn from_chunks(chunks: impl IntoIterator<Item = arrow::buffer::ScalarBuffer<f64>>) -> Self {
        let chunks: Vec<_> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let len = chunks.iter().map(|c| c.len()).sum();
        ItlSamples { chunks, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffers, in order, none empty.
    pub fn chunks(&self) -> &[arrow::buffer::ScalarBuffer<f64>] {
        &self.chunks
    }

    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        self.chunks.iter().flat_map(|c| c.iter().copied())
    }

    /// All the samples in one buffer (shared, not copied, when there is one chunk).
    pub fn joined(&self) -> arrow::buffer::ScalarBuffer<f64> {
        match &self.chunks[..] {
            [one] => one.clone(),
            _ => self.iter().collect::<Vec<f64>>().into(),
        }
    }

    /// The memory the chunks keep alive: each allocation under them counted once, whole. A
    /// chunk read from a persisted file is a slice of all of its bytes, which it holds.
    pub fn held_bytes(&self) -> usize {
        let mut seen: Vec<std::ptr::NonNull<u8>> = Vec::new();
        let mut held = 0;
        for chunk in &self.chunks {
            let buffer = chunk.inner();
            if !seen.contains(&buffer.data_ptr()) {
                seen.push(buffer.data_ptr());
                held += buffer.capacity().max(buffer.len());
            }
        }
        held
    }
}

impl From<Vec<f64>> for ItlSamples {
    fn from(v: Vec<f64>) -> Self {
        ItlSamples::from_chunks([v.into()])
    }
}

impl PartialEq for ItlSamples {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self
                .iter()
                .map(f64::to_bits)
                .eq(other.iter().map(f64::to_bits))
    }
}

/// `LLMRun.output_lengths(include_unsuccessful=...)` (§11.1).
pub fn output_lengths(raw: &RunDerived, include_unsuccessful: bool) -> Result<Vec<i64>, RawError> {
    if raw.results != ResultsList::List {
        return Err(RawError::Content("Missing required 'results' list".into()));
    }
    if raw.non_object {
        return Err(RawError::Content(
            "a request record in 'results' is not an object".into(),
        ));
    }
    let mut out = Vec::with_capacity(raw.success.len());
    for (i, (success, len)) in raw.success.iter().zip(&raw.output_len).enumerate() {
        if !success && !include_unsuccessful {
            continue;
        }
        match len {
            Some(v) => out.push(*v),
            None => {
                if let Ok(k) = raw.bad_output_len.binary_search_by_key(&i, |b| b.0) {
                    return Err(RawError::Content(format!(
                        "'output_len' of request {i} is not an integer: {}",
                        raw.bad_output_len[k].1
                    )));
                }
                if *success {
                    return Err(RawError::Content(format!(
                        "Missing required 'output_len' in successful request {i}"
                    )));
                }
            }
        }
    }
    Ok(out)
}

/// `LLMRun.inter_token_latencies()` (§11.2): the smoothed pool, positive and finite values only.
pub fn itl_samples(raw: &RunDerived) -> Result<&ItlSamples, RawError> {
    raw.itl.as_ref().map_err(|e| RawError::Content(e.clone()))
}
