//! `RunDerived` as a compact Arrow IPC stream, persisted next to the raw cache so a restart answers
//! from it without reading `results.json` again.
//!
//! The stream holds record batches of one row whose columns are lists (each list one contiguous
//! buffer): `success`, `output_len`, `itl_s`, and the timeline series flattened as
//! `series_metric`, `series_key`, `series_points` and the points' `t`, `v`. The first batch holds
//! the per-request and per-series columns; `itl_s` is spread over the batches a chunk of samples
//! each (so the samples are written and loaded without being joined), and `t`, `v` up to 65,536
//! points each (so writing never copies a whole timeline); other lists are empty. The few
//! states and messages that are not columns (which keys were missing, the toolkit's error texts)
//! are JSON in the schema metadata under `mlenergy.derived`, with its format version.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, RecordBatch, StringArray,
    UInt8Array, UInt64Array,
};
use arrow::buffer::{Buffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::reader::StreamDecoder;
use arrow::ipc::writer::StreamEncoder;
use serde::{Deserialize, Serialize};

use super::derived::{ItlSamples, ResultsList, RunDerived};
use super::timeline::{Points, Power, Series, Timeline};

/// Bumped whenever the layout or the derivation changes; older files are then ignored.
pub const FORMAT_VERSION: u32 = 3;
const META_KEY: &str = "mlenergy.derived";

/// Whether a key was absent, not an object, or present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Presence {
    Missing,
    NotObject,
    Object,
}

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    version: u32,
    results: String,
    non_object: bool,
    bad_output_len: Vec<(usize, String)>,
    itl_error: Option<String>,
    timeline: Presence,
    power: Presence,
    /// Per metric (instant, average, temperature).
    series: [Presence; 3],
    /// Series entries (index into the series columns) whose points could not be read.
    series_errors: Vec<(usize, String)>,
    /// `f64::to_bits` of the steady-state bounds (they may be NaN or infinite).
    steady_state_start_bits: Option<u64>,
    steady_state_end_bits: Option<u64>,
}

/// The list field of `list`'s arrays, of values of `ty`.
fn item(ty: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", ty, true))
}

fn list(values: ArrayRef) -> ArrayRef {
    Arc::new(ListArray::new(
        item(values.data_type().clone()),
        OffsetBuffer::from_lengths([values.len()]),
        values,
        None,
    ))
}

/// Encode `d` as an Arrow IPC stream.
pub fn to_ipc(d: &RunDerived) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    write_ipc(d, &mut out)?;
    Ok(out)
}

/// The timeline's states that are not columns (which parts are present, the steady-state
/// bounds as bits), kept in the metadata.
struct TimelineStates {
    timeline: Presence,
    power: Presence,
    /// Per metric (instant, average, temperature).
    series: [Presence; 3],
    start: Option<u64>,
    end: Option<u64>,
}

/// The timeline flattened into the series columns, one entry per (metric, device), with its
/// states and the series whose points could not be read.
struct FlatTimeline<'a> {
    metric: Vec<u8>,
    key: Vec<&'a str>,
    points: Vec<u64>,
    /// Series entries (index into the columns) whose points could not be read.
    errors: Vec<(usize, String)>,
    /// The series' points in order; they go out `POINTS` at a time.
    all_points: Vec<&'a [(f64, f64)]>,
    states: TimelineStates,
}

impl<'a> FlatTimeline<'a> {
    /// `timeline` flattened: the series of each metric (instant, average, temperature) in turn,
    /// their devices in the timeline's order.
    fn new(timeline: &'a Timeline) -> Self {
        let mut flat = FlatTimeline {
            metric: Vec::new(),
            key: Vec::new(),
            points: Vec::new(),
            errors: Vec::new(),
            all_points: Vec::new(),
            states: TimelineStates {
                timeline: Presence::Missing,
                power: Presence::Missing,
                series: [Presence::Missing; 3],
                start: None,
                end: None,
            },
        };
        if let Timeline::NotObject = timeline {
            flat.states.timeline = Presence::NotObject;
        }
        if let Timeline::Object {
            power: p,
            temperature,
            steady_state_start_time,
            steady_state_end_time,
        } = timeline
        {
            flat.states.timeline = Presence::Object;
            flat.states.start = steady_state_start_time.map(f64::to_bits);
            flat.states.end = steady_state_end_time.map(f64::to_bits);
            let (instant, average) = match p {
                Power::Missing => (&None, &None),
                Power::NotObject => {
                    flat.states.power = Presence::NotObject;
                    (&None, &None)
                }
                Power::Object {
                    device_instant,
                    device_average,
                } => {
                    flat.states.power = Presence::Object;
                    (device_instant, device_average)
                }
            };
            for (m, s) in [instant, average, temperature].into_iter().enumerate() {
                match s {
                    None => {}
                    Some(Series::NotObject) => flat.states.series[m] = Presence::NotObject,
                    Some(Series::Devices(devs)) => {
                        flat.states.series[m] = Presence::Object;
                        flat.push_devices(m, devs);
                    }
                }
            }
        }
        flat
    }

    /// Metric `m`'s device series appended to the columns (one that could not be read as no
    /// points, its error noted).
    fn push_devices(&mut self, m: usize, devs: &'a [(String, Points)]) {
        for (key, pts) in devs {
            match pts {
                Ok(p) => {
                    self.points.push(p.len() as u64);
                    self.all_points.push(p);
                }
                Err(e) => {
                    self.errors.push((self.key.len(), e.clone()));
                    self.points.push(0);
                }
            }
            self.metric.push(m as u8);
            self.key.push(key.as_str());
        }
    }
}

impl Meta {
    /// The metadata of `d`: its format version and the states and messages that are not columns.
    fn new(d: &RunDerived, states: TimelineStates, series_errors: Vec<(usize, String)>) -> Self {
        Meta {
            version: FORMAT_VERSION,
            results: match d.results {
                ResultsList::Missing => "missing",
                ResultsList::NotAList => "not_a_list",
                ResultsList::List => "list",
            }
            .into(),
            non_object: d.non_object,
            bad_output_len: d.bad_output_len.clone(),
            itl_error: d.itl.as_ref().err().cloned(),
            timeline: states.timeline,
            power: states.power,
            series: states.series,
            series_errors,
            steady_state_start_bits: states.start,
            steady_state_end_bits: states.end,
        }
    }
}

/// The stream's schema: each first-batch column and `t`, `v` as a list, the metadata under
/// [`META_KEY`].
fn schema_of(first: &[(&str, ArrayRef)], meta: &Meta) -> Result<Arc<Schema>, String> {
    let fields: Vec<Field> = first
        .iter()
        .map(|(name, a)| (*name, a.data_type().clone()))
        .chain([("t", DataType::Float64), ("v", DataType::Float64)])
        .map(|(name, ty)| Field::new(name, DataType::List(item(ty)), false))
        .collect();
    let meta = serde_json::to_string(meta).map_err(|e| e.to_string())?;
    Ok(Arc::new(
        Schema::new(fields).with_metadata([(META_KEY.to_string(), meta)].into()),
    ))
}

/// Write `d` as an Arrow IPC stream to `out`. The batches are framed by arrow's `StreamEncoder`,
/// whose buffers are written as they are, so nothing larger than one batch's timeline points is
/// copied on the way.
pub fn write_ipc(d: &RunDerived, mut out: impl std::io::Write) -> Result<(), String> {
    let flat = FlatTimeline::new(&d.timeline);
    let meta = Meta::new(d, flat.states, flat.errors);
    let chunks = d.itl.as_ref().map(|s| s.chunks()).unwrap_or_default();
    let itl = |i: usize| -> ArrayRef {
        Arc::new(Float64Array::new(
            chunks.get(i).cloned().unwrap_or_default(),
            None,
        ))
    };
    let mut groups = PointGroups::new(&flat.all_points);
    let first: Vec<(&str, ArrayRef)> = vec![
        ("success", Arc::new(BooleanArray::from(d.success.clone()))),
        (
            "output_len",
            Arc::new(Int64Array::from(d.output_len.clone())),
        ),
        ("itl_s", itl(0)),
        ("series_metric", Arc::new(UInt8Array::from(flat.metric))),
        ("series_key", Arc::new(StringArray::from(flat.key))),
        ("series_points", Arc::new(UInt64Array::from(flat.points))),
    ];
    let schema = schema_of(&first, &meta)?;
    let mut encoder = StreamEncoder::try_new(&schema).map_err(|e| e.to_string())?;
    let mut write = |buffers: Vec<Buffer>| {
        buffers
            .iter()
            .try_for_each(|b| out.write_all(b.as_slice()))
            .map_err(|e| e.to_string())
    };
    let batches = chunks.len().max(groups.len()).max(1);
    for i in 0..batches {
        let (t, v) = groups.next().unwrap_or_default();
        let mut arrays: Vec<ArrayRef> = if i == 0 {
            first.iter().map(|(_, a)| list(a.clone())).collect()
        } else {
            first
                .iter()
                .map(|(name, a)| match *name {
                    "itl_s" => list(itl(i)),
                    _ => list(a.slice(0, 0)),
                })
                .collect()
        };
        arrays.push(list(Arc::new(Float64Array::from(t))));
        arrays.push(list(Arc::new(Float64Array::from(v))));
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())?;
        write(encoder.encode(&batch).map_err(|e| e.to_string())?)?;
    }
    write(encoder.finish().map_err(|e| e.to_string())?)
}

/// The series' points as `(t, v)` column pieces of at most `POINTS` points, in order.
struct PointGroups<'a> {
    series: &'a [&'a [(f64, f64)]],
    /// The next point: the series and the point in it.
    at: (usize, usize),
    total: usize,
}

impl<'a> PointGroups<'a> {
    const POINTS: usize = 1 << 16;

    fn new(series: &'a [&'a [(f64, f64)]]) -> Self {
        let total = series.iter().map(|s| s.len()).sum();
        PointGroups {
            series,
            at: (0, 0),
            total,
        }
    }

    /// How many pieces there are in all.
    fn len(&self) -> usize {
        self.total.div_ceil(Self::POINTS)
    }
}

impl Iterator for PointGroups<'_> {
    type Item = (Vec<f64>, Vec<f64>);

    fn next(&mut self) -> Option<Self::Item> {
        let (mut t, mut v) = (Vec::new(), Vec::new());
        while t.len() < Self::POINTS {
            let Some(s) = self.series.get(self.at.0) else {
                break;
            };
            let take = &s[self.at.1..(self.at.1 + Self::POINTS - t.len()).min(s.len())];
            t.extend(take.iter().map(|p| p.0));
            v.extend(take.iter().map(|p| p.1));
            self.at.1 += take.len();
            if self.at.1 == s.len() {
                self.at = (self.at.0 + 1, 0);
            }
        }
        (!t.is_empty()).then_some((t, v))
    }
}

/// The columns whose values are all in the first batch.
const NOT_CHUNKED: [&str; 5] = [
    "success",
    "output_len",
    "series_metric",
    "series_key",
    "series_points",
];

fn is_empty_list(batch: &RecordBatch, name: &str) -> bool {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<ListArray>())
        .is_some_and(|l| l.len() == 1 && l.value_length(0) == 0)
}

fn values<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, String> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| format!("no column {name}"))?;
    let l = col
        .as_any()
        .downcast_ref::<ListArray>()
        .ok_or_else(|| format!("{name} is not a list"))?;
    if l.len() != 1 || l.value_offsets()[0] != 0 {
        return Err(format!("{name} is not a single list"));
    }
    l.values()
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| format!("{name} has type {}", l.values().data_type()))
}

/// The metadata of the first batch, refused when it is missing or of another format version.
fn read_meta(batch: &RecordBatch) -> Result<Meta, String> {
    let meta: Meta = serde_json::from_str(
        batch
            .schema_ref()
            .metadata()
            .get(META_KEY)
            .ok_or("no mlenergy.derived metadata")?,
    )
    .map_err(|e| e.to_string())?;
    if meta.version != FORMAT_VERSION {
        return Err(format!(
            "format version {} (expected {FORMAT_VERSION})",
            meta.version
        ));
    }
    Ok(meta)
}

/// The columns spread over the batches, each batch's piece in order (slices of the stream's
/// bytes).
struct Chunked {
    itl: Vec<ScalarBuffer<f64>>,
    /// Each batch's `t` and `v`.
    points: Vec<(ScalarBuffer<f64>, ScalarBuffer<f64>)>,
}

/// The ITL chunks and points of the first batch and of every batch after it, to the end of the
/// stream; a later batch whose other columns are not empty is refused.
fn read_chunked(
    decoder: &mut StreamDecoder,
    buf: &mut Buffer,
    first: &RecordBatch,
) -> Result<Chunked, String> {
    let mut itl = vec![values::<Float64Array>(first, "itl_s")?.values().clone()];
    let mut points = Vec::new();
    let mut points_of = |b: &RecordBatch| -> Result<(), String> {
        let (bt, bv) = (
            values::<Float64Array>(b, "t")?,
            values::<Float64Array>(b, "v")?,
        );
        if bt.len() != bv.len() {
            return Err("column lengths disagree".into());
        }
        points.push((bt.values().clone(), bv.values().clone()));
        Ok(())
    };
    points_of(first)?;
    while let Some(more) = decoder.decode(buf).map_err(|e| e.to_string())? {
        for name in NOT_CHUNKED {
            if !is_empty_list(&more, name) {
                return Err(format!("{name} is not empty after the first batch"));
            }
        }
        itl.push(values::<Float64Array>(&more, "itl_s")?.values().clone());
        points_of(&more)?;
    }
    decoder.finish().map_err(|e| e.to_string())?;
    Ok(Chunked { itl, points })
}

/// The series entries' device series, per metric (instant, average, temperature): each takes its
/// count of points from the batches' points in order, or is the error noted for it.
fn device_series(
    metric: &UInt8Array,
    key: &StringArray,
    points: &UInt64Array,
    series_errors: Vec<(usize, String)>,
    point_batches: &[(ScalarBuffer<f64>, ScalarBuffer<f64>)],
) -> Result<[Vec<(String, Points)>; 3], String> {
    let mut devices: [Vec<(String, Points)>; 3] = Default::default();
    let mut errors = series_errors.into_iter().peekable();
    let mut left: usize = point_batches.iter().map(|(t, _)| t.len()).sum();
    let mut all_points = point_batches
        .iter()
        .flat_map(|(t, v)| t.iter().copied().zip(v.iter().copied()));
    for i in 0..key.len() {
        let n = points.value(i) as usize;
        let pts = match errors.next_if(|e| e.0 == i) {
            Some((_, e)) => Err(e),
            None => {
                left = left.checked_sub(n).ok_or("series points overrun")?;
                let mut p = Vec::with_capacity(n);
                p.extend(all_points.by_ref().take(n));
                Ok(p)
            }
        };
        let m = metric.value(i) as usize;
        devices
            .get_mut(m)
            .ok_or("bad series metric")?
            .push((key.value(i).to_string(), pts));
    }
    Ok(devices)
}

/// The timeline as the metadata's states say it was, with the device series read back.
fn timeline_of(meta: &Meta, devices: [Vec<(String, Points)>; 3]) -> Timeline {
    let [instant, average, temperature] = devices;
    let series = |p: Presence, d: Vec<(String, Points)>| match p {
        Presence::Missing => None,
        Presence::NotObject => Some(Series::NotObject),
        Presence::Object => Some(Series::Devices(d)),
    };
    match meta.timeline {
        Presence::Missing => Timeline::Missing,
        Presence::NotObject => Timeline::NotObject,
        Presence::Object => Timeline::Object {
            power: match meta.power {
                Presence::Missing => Power::Missing,
                Presence::NotObject => Power::NotObject,
                Presence::Object => Power::Object {
                    device_instant: series(meta.series[0], instant),
                    device_average: series(meta.series[1], average),
                },
            },
            temperature: series(meta.series[2], temperature),
            steady_state_start_time: meta.steady_state_start_bits.map(f64::from_bits),
            steady_state_end_time: meta.steady_state_end_bits.map(f64::from_bits),
        },
    }
}

/// Decode what `to_ipc` wrote; `Err` for another format version or a damaged file. The arrays
/// are slices of `bytes` where they can be (the ITL samples are not copied).
pub fn from_ipc(bytes: bytes::Bytes) -> Result<RunDerived, String> {
    // Some damage in the data area makes arrow's reader panic (an offset or length past its
    // buffer) rather than refuse the file: such a file is refused like any other damage. Nothing
    // outlives a panic here but `bytes`, which the decoder only reads.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || decode(bytes)))
        .unwrap_or_else(|_| Err("damaged: the file could not be decoded".into()))
}

/// `from_ipc`'s decoding.
fn decode(bytes: bytes::Bytes) -> Result<RunDerived, String> {
    // A stream written whole ends with the end-of-stream marker.
    const EOS: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
    if !bytes.ends_with(&EOS) {
        return Err("no end-of-stream marker".into());
    }
    let mut buf = Buffer::from(bytes);
    let mut decoder = StreamDecoder::new();
    let batch = decoder
        .decode(&mut buf)
        .map_err(|e| e.to_string())?
        .ok_or("no record batch")?;
    let mut meta = read_meta(&batch)?;
    let success = values::<BooleanArray>(&batch, "success")?;
    let output_len = values::<Int64Array>(&batch, "output_len")?;
    let chunked = read_chunked(&mut decoder, &mut buf, &batch)?;
    let metric = values::<UInt8Array>(&batch, "series_metric")?;
    let key = values::<StringArray>(&batch, "series_key")?;
    let points = values::<UInt64Array>(&batch, "series_points")?;
    if success.len() != output_len.len() || metric.len() != key.len() || key.len() != points.len() {
        return Err("column lengths disagree".into());
    }
    let devices = device_series(
        metric,
        key,
        points,
        std::mem::take(&mut meta.series_errors),
        &chunked.points,
    )?;
    let timeline = timeline_of(&meta, devices);
    Ok(RunDerived {
        results: match meta.results.as_str() {
            "missing" => ResultsList::Missing,
            "not_a_list" => ResultsList::NotAList,
            "list" => ResultsList::List,
            other => return Err(format!("unknown results state {other}")),
        },
        non_object: meta.non_object,
        success: success.iter().map(|b| b.unwrap_or(false)).collect(),
        output_len: output_len.iter().collect(),
        bad_output_len: meta.bad_output_len,
        itl: match meta.itl_error {
            Some(e) => Err(e),
            None => Ok(ItlSamples::from_chunks(chunked.itl)),
        },
        timeline,
        // Only what the raw endpoints read (`Reading::derived`) is persisted: nothing is kept.
        top: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::read_run;

    #[test]
    fn round_trips_every_state() {
        let docs = [
            r#"{"timeline": {"steady_state_start_time": "nan", "steady_state_end_time": 12.5,
                 "power": {"device_instant": {"0": [[1, 5], [2, 6]], "1": [[1, 7]], "x": [3]},
                           "device_average": [1]},
                 "temperature": {"0": [[1, 40]]}},
                "results": [{"success": true, "itl": [0.01, 0, 0.02], "output_len": 3},
                            {"success": false, "output_len": "x"}, {"success": true, "output_len": null}, 4]}"#,
            r#"{"results": {"a": 1}, "timeline": [1]}"#,
            r#"{"timeline": {"power": 3}}"#,
            r#"{}"#,
        ];
        for doc in docs {
            let d = read_run(doc.as_bytes(), "test", true).unwrap();
            let back = from_ipc(to_ipc(&d).unwrap().into()).unwrap();
            // NaN != NaN: compare the steady-state bounds bit for bit, the rest as values.
            assert_eq!(format!("{back:?}"), format!("{d:?}"), "{doc}");
        }
    }

    #[test]
    fn other_versions_and_damage_are_refused() {
        let d = read_run(r#"{"results": []}"#.as_bytes(), "test", true).unwrap();
        let bytes = to_ipc(&d).unwrap();
        let read = |b: &[u8]| from_ipc(bytes::Bytes::copy_from_slice(b));
        assert!(read(&bytes).is_ok());
        assert!(read(&bytes[..bytes.len() / 2]).is_err());
        // Cut before the end-of-stream marker, at a message boundary.
        assert!(read(&bytes[..bytes.len() - 8]).is_err());
        // Something after a whole stream.
        let mut twice = bytes.clone();
        twice.extend_from_slice(&bytes);
        assert!(read(&twice).is_err());
        let mut old = bytes.clone();
        let at = old
            .windows(10)
            .position(|w| w == b"\"version\":")
            .expect("version in the metadata");
        old[at + 10] = b'0';
        assert!(read(&old).unwrap_err().contains("version"));
    }

    /// A file with any one byte changed is read or refused, never a panic out of the reader.
    #[test]
    fn a_changed_byte_is_read_or_refused() {
        let doc = r#"{"results": [{"success": true, "output_len": 3, "itl": [0.1, 0.2]},
            {"success": false, "output_len": 1, "itl": []}],
            "timeline": {"power": {"device_instant": {"0": [[1.0, 100.0], [2.0, 110.0]]}}}}"#;
        let d = read_run(doc.as_bytes(), "test", true).unwrap();
        let bytes = to_ipc(&d).unwrap();
        assert_eq!(
            format!("{:?}", from_ipc(bytes::Bytes::from(bytes.clone())).unwrap()),
            format!("{d:?}")
        );
        let mut refused = 0;
        for at in 0..bytes.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut changed = bytes.clone();
                changed[at] ^= flip;
                if let Err(e) = from_ipc(bytes::Bytes::from(changed)) {
                    assert!(!e.is_empty(), "byte {at} ^ {flip:#x}: a refusal says why");
                    refused += 1;
                }
            }
        }
        // The end-of-stream marker alone is eight bytes whose change is always refused.
        assert!(refused >= 8 * 3, "{refused} changes refused");
    }

    /// A timeline of more points than one batch holds, a series split between batches and one
    /// unreadable series among them, with fewer ITL chunks than point batches: read back as it was.
    #[test]
    fn long_timelines_span_batches() {
        let pts = |n: usize, k: f64| -> Points { Ok((0..n).map(|i| (i as f64 + k, k)).collect()) };
        let mut d = read_run(r#"{"results": []}"#.as_bytes(), "test", true).unwrap();
        d.timeline = Timeline::Object {
            power: Power::Object {
                device_instant: Some(Series::Devices(vec![
                    ("0".into(), pts(50_000, 0.5)),
                    ("1".into(), Err("not a list".into())),
                    ("2".into(), pts(100_000, 1.5)),
                ])),
                device_average: None,
            },
            temperature: Some(Series::Devices(vec![("0".into(), pts(3, 2.5))])),
            steady_state_start_time: Some(1.0),
            steady_state_end_time: None,
        };
        d.itl = Ok(ItlSamples::from_chunks([vec![0.25].into()]));
        let one: &[(f64, f64)] = &[(0.0, 0.0)];
        assert_eq!(PointGroups::new(&[one; 3]).len(), 1);
        let bytes = to_ipc(&d).unwrap();
        let batches = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(&bytes), None)
            .unwrap()
            .count();
        assert_eq!(batches, 150_003usize.div_ceil(1 << 16));
        assert_eq!(from_ipc(bytes.into()).unwrap(), d);
    }

    /// ITL samples in several chunks are written and loaded as those chunks.
    #[test]
    fn chunked_samples_round_trip_unjoined() {
        let mut d = read_run(
            r#"{"results": [{"success": true, "itl": [0.5], "output_len": 1}],
                "timeline": {"power": {"device_instant": {"0": [[1.0, 2.0]]}}}}"#
                .as_bytes(),
            "test",
            true,
        )
        .unwrap();
        let chunks: Vec<Vec<f64>> = vec![vec![0.1, 0.2], vec![0.3], vec![0.4, 0.5, 0.6]];
        d.itl = Ok(ItlSamples::from_chunks(
            chunks.iter().map(|c| c.clone().into()),
        ));
        let bytes = bytes::Bytes::from(to_ipc(&d).unwrap());
        let within = bytes.as_ptr_range();
        let back = from_ipc(bytes.clone()).unwrap();
        assert_eq!(back, d);
        // Read in place, not copied.
        for chunk in back.itl.as_ref().unwrap().chunks() {
            assert!(within.contains(&chunk.as_ptr().cast()));
        }
        let got: Vec<Vec<f64>> = back
            .itl
            .as_ref()
            .unwrap()
            .chunks()
            .iter()
            .map(|c| c.to_vec())
            .collect();
        assert_eq!(got, chunks);
        assert_eq!(back.success, vec![true]);
        // Weighed as all of the bytes, which the samples keep alive (once, though three chunks
        // share them); parsed samples as their own buffers.
        let held = back.itl.as_ref().unwrap().held_bytes();
        assert_eq!(held, bytes.len());
        assert!(back.weight() > bytes.len());
        assert_eq!(d.itl.as_ref().unwrap().held_bytes(), 6 * 8);
    }
}
