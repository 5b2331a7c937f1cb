//! Power and temperature timelines (docs/toolkit.md §11.3): the lowest GPU's timestamps as
//! the axis, other GPUs joined on exactly equal timestamps, forward fill, and the sum over GPUs.

use std::collections::HashMap;

use super::error::RawError;
use mlenergy_pycompat::numpy::np_mean;
use mlenergy_pycompat::value::coerce_int;

/// A timeline metric the toolkit exposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    DeviceInstant,
    DeviceAverage,
    Temperature,
}

impl Metric {
    pub const NAMES: [&'static str; 3] = [
        "power.device_instant",
        "power.device_average",
        "temperature",
    ];

    pub fn parse(s: &str) -> Option<Metric> {
        match s {
            "power.device_instant" => Some(Metric::DeviceInstant),
            "power.device_average" => Some(Metric::DeviceAverage),
            "temperature" => Some(Metric::Temperature),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Metric::NAMES[self as usize]
    }

    /// Column label (`power_device_instant`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Metric::DeviceInstant => "power_device_instant",
            Metric::DeviceAverage => "power_device_average",
            Metric::Temperature => "temperature",
        }
    }
}

/// One device series as read: its points, or the toolkit's error for it (message ready).
pub type Points = Result<Vec<(f64, f64)>, String>;

/// A metric's `{gpu_id: [[t, v], ...]}` object: keys in file order (a repeated key keeps its
/// first position and its last value, as in Python's dict), or not an object.
#[derive(Debug, Clone, PartialEq)]
pub enum Series {
    NotObject,
    Devices(Vec<(String, Points)>),
}

/// `timeline.power`.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Power {
    #[default]
    Missing,
    NotObject,
    Object {
        device_instant: Option<Series>,
        device_average: Option<Series>,
    },
}

/// What the toolkit reads of a results file's `timeline`: the three metric series and the
/// steady-state bounds (`float(...)`, None when absent or not a number). Every other key is
/// skipped while parsing.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Timeline {
    #[default]
    Missing,
    NotObject,
    Object {
        power: Power,
        temperature: Option<Series>,
        steady_state_start_time: Option<f64>,
        steady_state_end_time: Option<f64>,
    },
}

/// One run's aligned timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceTimeline {
    pub timestamp: Vec<f64>,
    pub relative_time_s: Vec<f64>,
    /// Per GPU id (ascending): values on the axis, forward-filled; leading gaps stay `None`.
    pub devices: Vec<(i64, Vec<Option<f64>>)>,
    /// Sum over GPUs skipping gaps, in GPU order (0.0 where every GPU has a gap).
    pub total: Vec<f64>,
}

fn content(msg: impl Into<String>) -> RawError {
    RawError::Content(msg.into())
}

impl Timeline {
    /// Approximate memory, for cache weighing.
    pub fn weight(&self) -> usize {
        let series = |s: &Option<Series>| match s {
            Some(Series::Devices(d)) => d
                .iter()
                .map(|(k, p)| k.len() + 48 + p.as_ref().map_or_else(String::len, |v| v.len() * 16))
                .sum(),
            _ => 0,
        };
        match self {
            Timeline::Object {
                power, temperature, ..
            } => {
                let p = match power {
                    Power::Object {
                        device_instant,
                        device_average,
                    } => series(device_instant) + series(device_average),
                    _ => 0,
                };
                64 + p + series(temperature)
            }
            _ => 64,
        }
    }
}

/// Parsing: `Timeline` reads straight from the JSON parser (no `Value` tree of the series).
mod parse {
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{
        self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
    };
    use serde_json::Value;

    use super::{Points, Power, Series, Timeline};
    use crate::python_values::scalars_answer;
    use mlenergy_pycompat::value::coerce_int;
    use mlenergy_pycompat::value::safe_float;

    /// Drain the rest of a sequence.
    fn drain<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }

    /// One `[t, v]` point; `Err(text of the point)` when it is not a pair of numbers.
    struct Point(Result<(f64, f64), Value>);

    impl<'de> Deserialize<'de> for Point {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Point;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a [time, value] pair")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Point, A::Error> {
                    let a = seq.next_element::<Value>()?;
                    let b = if a.is_some() {
                        seq.next_element::<Value>()?
                    } else {
                        None
                    };
                    let more = if b.is_some() {
                        seq.next_element::<Value>()?
                    } else {
                        None
                    };
                    if let (Some(a), Some(b), None) = (&a, &b, &more)
                        && let (Some(t), Some(v)) = (safe_float(Some(a)), safe_float(Some(b)))
                    {
                        return Ok(Point(Ok((t, v))));
                    }
                    let mut all: Vec<Value> = [a, b, more].into_iter().flatten().collect();
                    while let Some(x) = seq.next_element::<Value>()? {
                        all.push(x);
                    }
                    Ok(Point(Err(Value::Array(all))))
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Point, A::Error> {
                    let v = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                    Ok(Point(Err(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Point, E> {
                    Ok(Point(Err(Value::from(v))))
                }
                fn visit_unit<E: de::Error>(self) -> Result<Point, E> {
                    Ok(Point(Err(Value::Null)))
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<Point, E> {
                    Ok(Point(Err(Value::from(v))))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Point, E> {
                    Ok(Point(Err(Value::from(v))))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Point, E> {
                    Ok(Point(Err(Value::from(v))))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Point, E> {
                    Ok(Point(Err(Value::from(v))))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// A device's point list; `gpu` names it in messages as the toolkit does (the integer id).
    struct PointsSeed<'a> {
        gpu: &'a str,
    }

    impl<'de> DeserializeSeed<'de> for PointsSeed<'_> {
        type Value = Points;
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Points, D::Error> {
            struct V<'a>(&'a str);
            impl<'de> Visitor<'de> for V<'_> {
                type Value = Points;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a list of points")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Points, A::Error> {
                    let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1024));
                    while let Some(Point(p)) = seq.next_element::<Point>()? {
                        match p {
                            Ok(p) => out.push(p),
                            Err(bad) => {
                                drain(&mut seq)?;
                                return Ok(Err(format!(
                                    "timeline sample of GPU {} is not [time, value]: {bad}",
                                    self.0
                                )));
                            }
                        }
                    }
                    Ok(Ok(out))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Points, A::Error> {
                    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                    Ok(self.not_a_list())
                }
                fn visit_str<E: de::Error>(self, _: &str) -> Result<Points, E> {
                    Ok(self.not_a_list())
                }
                scalars_answer!(|v| v.not_a_list());
            }
            impl V<'_> {
                fn not_a_list(&self) -> Points {
                    Err(format!("timeline series of GPU {} is not a list", self.0))
                }
            }
            d.deserialize_any(V(self.gpu))
        }
    }

    /// Runs `f` for maps and answers `other` for every other JSON value (consumed).
    macro_rules! object_or {
        ($ty:ty, $other:expr, $expect:literal, |$map:ident| $body:block) => {
            impl<'de> Deserialize<'de> for $ty {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    struct V;
                    impl<'de> Visitor<'de> for V {
                        type Value = $ty;
                        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                            f.write_str($expect)
                        }
                        fn visit_map<A: MapAccess<'de>>(self, mut $map: A) -> Result<$ty, A::Error> $body
                        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$ty, A::Error> {
                            drain(&mut seq)?;
                            Ok($other)
                        }
                        fn visit_str<E: de::Error>(self, _: &str) -> Result<$ty, E> {
                            Ok($other)
                        }
                        scalars_answer!($other);
                    }
                    d.deserialize_any(V)
                }
            }
        };
    }

    object_or!(Series, Series::NotObject, "a map of GPU series", |map| {
        let mut devices: Vec<(String, Points)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let gpu = coerce_int(Some(&key)).map_or_else(|| key.clone(), |i| i.to_string());
            let points = map.next_value_seed(PointsSeed { gpu: &gpu })?;
            match devices.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = points,
                None => devices.push((key, points)),
            }
        }
        Ok(Series::Devices(devices))
    });

    object_or!(Power, Power::NotObject, "the power object", |map| {
        let (mut device_instant, mut device_average) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "device_instant" => device_instant = Some(map.next_value::<Series>()?),
                "device_average" => device_average = Some(map.next_value::<Series>()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Power::Object {
            device_instant,
            device_average,
        })
    });

    object_or!(
        Timeline,
        Timeline::NotObject,
        "the timeline object",
        |map| {
            let mut power = Power::Missing;
            let (mut temperature, mut start, mut end) = (None, None, None);
            while let Some(key) = map.next_key::<String>()? {
                match key.as_str() {
                    "power" => power = map.next_value::<Power>()?,
                    "temperature" => temperature = Some(map.next_value::<Series>()?),
                    "steady_state_start_time" => {
                        start = safe_float(Some(&map.next_value::<Value>()?))
                    }
                    "steady_state_end_time" => end = safe_float(Some(&map.next_value::<Value>()?)),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(Timeline::Object {
                power,
                temperature,
                steady_state_start_time: start,
                steady_state_end_time: end,
            })
        }
    );
}

/// A device's values at the axis timestamps: exact float equality of timestamps, the last
/// duplicate winning. Sorted series (the usual case) are merged in one pass; anything else goes
/// through a hash map of the timestamps' bits.
fn join_on_axis(
    axis: &[f64],
    pts: &[(f64, f64)],
    inside: &dyn Fn(f64) -> bool,
) -> Vec<Option<f64>> {
    let axis_sorted = axis.windows(2).all(|w| w[0] <= w[1]);
    let pts_increasing = pts.windows(2).all(|w| w[0].0 < w[1].0);
    if axis_sorted && pts_increasing {
        let mut j = 0;
        return axis
            .iter()
            .map(|&t| {
                while j < pts.len() && pts[j].0 < t {
                    j += 1;
                }
                (j < pts.len() && pts[j].0 == t && inside(pts[j].0)).then(|| pts[j].1)
            })
            .collect();
    }
    let by_time: HashMap<u64, f64> = pts
        .iter()
        .filter(|p| inside(p.0))
        .map(|&(t, v)| ((t + 0.0).to_bits(), v))
        .collect();
    axis.iter()
        .map(|t| by_time.get(&(t + 0.0).to_bits()).copied())
        .collect()
}

/// `extract_device_timeline`: `window` (inclusive) applies when both bounds are known.
pub fn extract_device_timeline(
    series: &[(String, Points)],
    window: Option<(f64, f64)>,
) -> Result<DeviceTimeline, RawError> {
    if series.is_empty() {
        return Err(content("device_series is empty"));
    }
    let mut ids = series
        .iter()
        .map(|(k, _)| {
            coerce_int(Some(k)).ok_or_else(|| content(format!("GPU id '{k}' is not an integer")))
        })
        .collect::<Result<Vec<i64>, _>>()?;
    ids.sort_unstable();
    let inside = |t: f64| window.is_none_or(|(a, b)| a <= t && t <= b);
    // The toolkit indexes the series by str(gpu_id).
    let lookup = |id: i64| {
        let key = id.to_string();
        match series.iter().find(|(k, _)| *k == key) {
            Some((_, Ok(p))) => Ok(p),
            Some((_, Err(e))) => Err(content(e.clone())),
            None => Err(content(format!("no series under GPU id '{id}'"))),
        }
    };
    let base = lookup(ids[0])?;
    let axis: Vec<f64> = base.iter().map(|p| p.0).filter(|&t| inside(t)).collect();
    if axis.is_empty() {
        return Err(content("No timeline samples found in selected range"));
    }
    let t0 = window.map_or(axis[0], |(a, _)| a);
    let mut devices = Vec::with_capacity(ids.len());
    for &id in &ids {
        let pts = lookup(id)?;
        devices.push((id, join_on_axis(&axis, pts, &inside)));
    }
    // Sort rows by relative time (stable), then forward-fill each device.
    let mut order: Vec<usize> = (0..axis.len()).collect();
    order.sort_by(|&a, &b| (axis[a] - t0).total_cmp(&(axis[b] - t0)));
    let timestamp: Vec<f64> = order.iter().map(|&i| axis[i]).collect();
    let relative_time_s: Vec<f64> = timestamp.iter().map(|t| t - t0).collect();
    for (_, vals) in &mut devices {
        let mut sorted: Vec<Option<f64>> = order.iter().map(|&i| vals[i]).collect();
        let mut last = None;
        for v in &mut sorted {
            match v {
                Some(x) if !x.is_nan() => last = Some(*x),
                _ => *v = last,
            }
        }
        *vals = sorted;
    }
    let total = (0..timestamp.len())
        .map(|r| {
            devices
                .iter()
                .filter_map(|(_, v)| v[r])
                .fold(0.0, |acc, x| acc + x)
        })
        .collect();
    Ok(DeviceTimeline {
        timestamp,
        relative_time_s,
        devices,
        total,
    })
}

/// A run's timeline for `metric`: LLM runs are windowed to the steady state (and require it),
/// diffusion runs use the whole series.
pub fn run_timeline(
    timeline: &Timeline,
    metric: Metric,
    steady_state: bool,
) -> Result<DeviceTimeline, RawError> {
    let Timeline::Object {
        power,
        temperature,
        steady_state_start_time,
        steady_state_end_time,
    } = timeline
    else {
        return Err(content("Missing required 'timeline' object"));
    };
    let series = match metric {
        Metric::Temperature => temperature,
        Metric::DeviceInstant | Metric::DeviceAverage => match power {
            Power::Object {
                device_instant,
                device_average,
            } => {
                if metric == Metric::DeviceInstant {
                    device_instant
                } else {
                    device_average
                }
            }
            _ => return Err(content("Missing required 'timeline.power' object")),
        },
    };
    let Some(Series::Devices(series)) = series else {
        return Err(content(format!(
            "Missing required 'timeline.{}' object",
            metric.name()
        )));
    };
    let window = if steady_state {
        match (steady_state_start_time, steady_state_end_time) {
            (Some(a), Some(b)) => Some((*a, *b)),
            _ => {
                return Err(content(
                    "Missing required 'timeline.steady_state_start_time'/'steady_state_end_time'",
                ));
            }
        }
    } else {
        None
    };
    extract_device_timeline(series, window)
}

/// Downsample for charts: one row per `every`-second bucket of relative time (buckets with no
/// sample are absent), holding the bucket's first timestamp and relative time and the mean of each
/// device and of the total (numpy mean; a device with no value in the bucket stays empty).
pub fn downsample(t: &DeviceTimeline, every: f64) -> DeviceTimeline {
    let mut out = DeviceTimeline {
        timestamp: Vec::new(),
        relative_time_s: Vec::new(),
        devices: t.devices.iter().map(|(id, _)| (*id, Vec::new())).collect(),
        total: Vec::new(),
    };
    let mut start = 0;
    while start < t.timestamp.len() {
        let bucket = (t.relative_time_s[start] / every).floor();
        let mut end = start + 1;
        while end < t.timestamp.len() && (t.relative_time_s[end] / every).floor() == bucket {
            end += 1;
        }
        out.timestamp.push(t.timestamp[start]);
        out.relative_time_s.push(t.relative_time_s[start]);
        for ((_, src), (_, dst)) in t.devices.iter().zip(out.devices.iter_mut()) {
            let vals: Vec<f64> = src[start..end].iter().flatten().copied().collect();
            dst.push(np_mean(&vals));
        }
        out.total
            .push(np_mean(&t.total[start..end]).unwrap_or(f64::NAN));
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices(json: &str) -> Vec<(String, Points)> {
        match serde_json::from_str::<Series>(json).unwrap() {
            Series::Devices(d) => d,
            Series::NotObject => panic!("not an object"),
        }
    }

    #[test]
    fn spec_ffill_vector() {
        // docs/toolkit.md §14.2 test_extract_power_timeline_with_ffill.
        let series = devices(r#"{"0": [[10,100],[11,110],[12,120]], "1": [[10,200],[12,220]]}"#);
        let t = extract_device_timeline(&series, Some((10.0, 12.0))).unwrap();
        assert_eq!(t.relative_time_s, vec![0.0, 1.0, 2.0]);
        assert_eq!(t.devices[1].1, vec![Some(200.0), Some(200.0), Some(220.0)]);
        assert_eq!(t.total, vec![300.0, 310.0, 340.0]);
    }

    #[test]
    fn merge_and_hash_joins_agree() {
        let inside = |t: f64| (1.0..=9.0).contains(&t);
        let axis = [1.0, 2.0, 2.0, 3.5, 5.0, 9.0];
        let sorted = [
            (0.5, 1.0),
            (2.0, 2.0),
            (3.5, 3.0),
            (4.0, 4.0),
            (9.0, 5.0),
            (10.0, 6.0),
        ];
        let want = vec![None, Some(2.0), Some(2.0), Some(3.0), None, Some(5.0)];
        assert_eq!(join_on_axis(&axis, &sorted, &inside), want);
        // Unsorted, with a duplicate timestamp (the last wins) and -0.0 equal to 0.0.
        let shuffled = [(9.0, 5.0), (2.0, 7.0), (3.5, 3.0), (2.0, 2.0), (-0.0, 8.0)];
        assert_eq!(join_on_axis(&axis, &shuffled, &inside), want);
        assert_eq!(join_on_axis(&[0.0], &shuffled, &|_| true), vec![Some(8.0)]);
        assert_eq!(
            join_on_axis(&[0.0], &[(-0.0, 8.0)], &|_| true),
            vec![Some(8.0)]
        );
    }

    #[test]
    fn leading_gaps_stay_empty_and_sum_as_zero() {
        let series = devices(r#"{"1": [[5,10],[6,11]], "10": [[6,3]], "2": [[4,1]]}"#);
        let t = extract_device_timeline(&series, None).unwrap();
        assert_eq!(
            t.devices.iter().map(|d| d.0).collect::<Vec<_>>(),
            vec![1, 2, 10]
        );
        assert_eq!(t.devices[2].1, vec![None, Some(3.0)]);
        assert_eq!(t.devices[1].1, vec![None, None]);
        assert_eq!(t.total, vec![10.0, 14.0]);
        assert_eq!(t.relative_time_s, vec![0.0, 1.0]);
        let err = extract_device_timeline(&series, Some((100.0, 200.0))).unwrap_err();
        assert_eq!(
            err,
            RawError::Content("No timeline samples found in selected range".into())
        );
    }

    #[test]
    fn downsampling_averages_each_bucket() {
        let series = devices(r#"{"0": [[0,1],[0.4,3],[1.0,5],[2.5,7]], "1": [[0.4,10],[2.5,20]]}"#);
        let t = extract_device_timeline(&series, None).unwrap();
        let d = downsample(&t, 1.0);
        assert_eq!(d.relative_time_s, vec![0.0, 1.0, 2.5]);
        assert_eq!(d.devices[0].1, vec![Some(2.0), Some(5.0), Some(7.0)]);
        assert_eq!(d.devices[1].1, vec![Some(10.0), Some(10.0), Some(20.0)]);
        assert_eq!(d.total, vec![7.0, 15.0, 27.0]);
    }

    #[test]
    fn llm_timelines_need_the_steady_state() {
        let tl: Timeline =
            serde_json::from_str(r#"{"power": {"device_instant": {"0": [[1, 5]]}}}"#).unwrap();
        assert!(run_timeline(&tl, Metric::DeviceInstant, true).is_err());
        assert_eq!(
            run_timeline(&tl, Metric::DeviceInstant, false)
                .unwrap()
                .total,
            vec![5.0]
        );
        assert!(run_timeline(&tl, Metric::Temperature, false).is_err());
        assert!(run_timeline(&Timeline::Missing, Metric::Temperature, false).is_err());
        assert!(run_timeline(&Timeline::NotObject, Metric::Temperature, false).is_err());
    }

    #[test]
    fn parse_keeps_what_the_toolkit_reads() {
        let tl: Timeline = serde_json::from_str(
            r#"{"steady_state_start_time": "10", "steady_state_end_time": null, "other": [1, {"a": 2}],
                "power": {"device_instant": {"0": [[1, 5], [2, "6.5"]], "0": [[3, 4]], "1": 7},
                          "memory_average": {"0": [[1, 2]]}},
                "temperature": {"0": [[1, 40], [2, 41, 9]], "1": [{"t": 1}]}}"#,
        )
        .unwrap();
        let Timeline::Object {
            power:
                Power::Object {
                    device_instant: Some(Series::Devices(di)),
                    device_average: None,
                },
            temperature: Some(Series::Devices(temp)),
            steady_state_start_time,
            steady_state_end_time,
        } = tl
        else {
            panic!("{tl:?}")
        };
        assert_eq!(
            (steady_state_start_time, steady_state_end_time),
            (Some(10.0), None)
        );
        // A repeated key keeps its first position and its last value.
        assert_eq!(di[0], ("0".to_string(), Ok(vec![(3.0, 4.0)])));
        assert_eq!(
            di[1],
            (
                "1".to_string(),
                Err("timeline series of GPU 1 is not a list".into())
            )
        );
        assert_eq!(
            temp[0].1,
            Err("timeline sample of GPU 0 is not [time, value]: [2,41,9]".into())
        );
        assert_eq!(
            temp[1].1,
            Err(r#"timeline sample of GPU 1 is not [time, value]: {"t":1}"#.into())
        );
        let none: Timeline = serde_json::from_str("[1, 2]").unwrap();
        assert_eq!(none, Timeline::NotObject);
    }
}
