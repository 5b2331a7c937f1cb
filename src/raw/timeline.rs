//! Power and temperature timelines (toolkit-behaviour.md §11.3): the lowest GPU's timestamps as
//! the axis, other GPUs joined on exactly equal timestamps, forward fill, and the sum over GPUs.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::bulk::RawError;
use super::path::coerce_int;
use super::pyjson::safe_float;
use crate::engine::numeric::np_mean;

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

/// Just the `timeline` object of a results file (every other key is skipped while parsing).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TimelineDoc {
    pub timeline: Option<Value>,
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

fn points(series: &Value, gpu: &str) -> Result<Vec<(f64, f64)>, RawError> {
    let Value::Array(items) = series else {
        return Err(content(format!(
            "timeline series of GPU {gpu} is not a list"
        )));
    };
    items
        .iter()
        .map(|p| match p {
            Value::Array(pair) if pair.len() == 2 => {
                match (safe_float(Some(&pair[0])), safe_float(Some(&pair[1]))) {
                    (Some(t), Some(v)) => Ok((t, v)),
                    _ => Err(content(format!(
                        "timeline sample of GPU {gpu} is not [time, value]: {p}"
                    ))),
                }
            }
            _ => Err(content(format!(
                "timeline sample of GPU {gpu} is not [time, value]: {p}"
            ))),
        })
        .collect()
}

/// `extract_device_timeline`: `window` (inclusive) applies when both bounds are known.
pub fn extract_device_timeline(
    series: &serde_json::Map<String, Value>,
    window: Option<(f64, f64)>,
) -> Result<DeviceTimeline, RawError> {
    if series.is_empty() {
        return Err(content("device_series is empty"));
    }
    let mut ids = series
        .keys()
        .map(|k| {
            coerce_int(Some(k)).ok_or_else(|| content(format!("GPU id '{k}' is not an integer")))
        })
        .collect::<Result<Vec<i64>, _>>()?;
    ids.sort_unstable();
    let inside = |t: f64| window.is_none_or(|(a, b)| a <= t && t <= b);
    let lookup = |id: i64| {
        series
            .get(&id.to_string())
            .ok_or_else(|| content(format!("no series under GPU id '{id}'")))
    };
    let base = points(lookup(ids[0])?, &ids[0].to_string())?;
    let axis: Vec<f64> = base.iter().map(|p| p.0).filter(|&t| inside(t)).collect();
    if axis.is_empty() {
        return Err(content("No timeline samples found in selected range"));
    }
    let t0 = window.map_or(axis[0], |(a, _)| a);
    let mut devices = Vec::with_capacity(ids.len());
    for &id in &ids {
        let pts = points(lookup(id)?, &id.to_string())?;
        // Exact float equality of timestamps; the last duplicate wins.
        let by_time: HashMap<u64, f64> = pts
            .iter()
            .filter(|p| inside(p.0))
            .map(|&(t, v)| ((t + 0.0).to_bits(), v))
            .collect();
        devices.push((
            id,
            axis.iter()
                .map(|t| by_time.get(&(t + 0.0).to_bits()).copied())
                .collect::<Vec<_>>(),
        ));
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
    timeline: Option<&Value>,
    metric: Metric,
    steady_state: bool,
) -> Result<DeviceTimeline, RawError> {
    let Some(Value::Object(tl)) = timeline else {
        return Err(content("Missing required 'timeline' object"));
    };
    let series = match metric {
        Metric::Temperature => tl.get("temperature"),
        Metric::DeviceInstant | Metric::DeviceAverage => match tl.get("power") {
            Some(Value::Object(p)) => p.get(if metric == Metric::DeviceInstant {
                "device_instant"
            } else {
                "device_average"
            }),
            _ => return Err(content("Missing required 'timeline.power' object")),
        },
    };
    let Some(Value::Object(series)) = series else {
        return Err(content(format!(
            "Missing required 'timeline.{}' object",
            metric.name()
        )));
    };
    let window = if steady_state {
        let start = safe_float(tl.get("steady_state_start_time"));
        let end = safe_float(tl.get("steady_state_end_time"));
        match (start, end) {
            (Some(a), Some(b)) => Some((a, b)),
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

    #[test]
    fn spec_ffill_vector() {
        // toolkit-behaviour.md §14.2 test_extract_power_timeline_with_ffill.
        let series: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{"0": [[10,100],[11,110],[12,120]], "1": [[10,200],[12,220]]}"#,
        )
        .unwrap();
        let t = extract_device_timeline(&series, Some((10.0, 12.0))).unwrap();
        assert_eq!(t.relative_time_s, vec![0.0, 1.0, 2.0]);
        assert_eq!(t.devices[1].1, vec![Some(200.0), Some(200.0), Some(220.0)]);
        assert_eq!(t.total, vec![300.0, 310.0, 340.0]);
    }

    #[test]
    fn leading_gaps_stay_empty_and_sum_as_zero() {
        let series: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"1": [[5,10],[6,11]], "10": [[6,3]], "2": [[4,1]]}"#).unwrap();
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
        let series: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{"0": [[0,1],[0.4,3],[1.0,5],[2.5,7]], "1": [[0.4,10],[2.5,20]]}"#,
        )
        .unwrap();
        let t = extract_device_timeline(&series, None).unwrap();
        let d = downsample(&t, 1.0);
        assert_eq!(d.relative_time_s, vec![0.0, 1.0, 2.5]);
        assert_eq!(d.devices[0].1, vec![Some(2.0), Some(5.0), Some(7.0)]);
        assert_eq!(d.devices[1].1, vec![Some(10.0), Some(10.0), Some(20.0)]);
        assert_eq!(d.total, vec![7.0, 15.0, 27.0]);
    }

    #[test]
    fn llm_timelines_need_the_steady_state() {
        let tl: Value =
            serde_json::from_str(r#"{"power": {"device_instant": {"0": [[1, 5]]}}}"#).unwrap();
        assert!(run_timeline(Some(&tl), Metric::DeviceInstant, true).is_err());
        assert_eq!(
            run_timeline(Some(&tl), Metric::DeviceInstant, false)
                .unwrap()
                .total,
            vec![5.0]
        );
        assert!(run_timeline(Some(&tl), Metric::Temperature, false).is_err());
        assert!(run_timeline(None, Metric::Temperature, false).is_err());
    }
}
