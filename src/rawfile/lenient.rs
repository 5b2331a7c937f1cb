//! A lenient typed model of an LLM `results.json` as the toolkit reads it (serde visitors that
//! never build a DOM of the possibly 400 MB request list: only `success`, `itl` and `output_len`
//! of each request are kept, and `timeline` and every other large key are skipped while parsing),
//! and `float(x)` of an `itl` element read straight from the parser.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::pycompat::value::{py_float_str, safe_float, truthy};

/// The toolkit's ITL pool of a run: the smoothed `itl` lists of the successful requests, in
/// request order. `Err` where its computation raises: `results` not a list, a request that is not
/// an object, a successful request whose `itl` holds a non-number.
pub fn itl_pool(results: &RequestList) -> Result<Vec<f64>, String> {
    let reqs = match results {
        RequestList::Missing => return Ok(Vec::new()),
        RequestList::List(r) => r,
        RequestList::NotAList => return Err("'results' is not a list".into()),
    };
    let mut pool = Vec::new();
    for r in reqs {
        match r {
            Request::NotObject => return Err("a request record is not an object".into()),
            Request::Object { success: false, .. } => {}
            Request::Object { itl: Err(()), .. } => {
                return Err("a request's itl holds a value that is not a number".into());
            }
            Request::Object { itl: Ok(v), .. } => pool.extend(super::itl::smooth_chunked_itl(v)),
        }
    }
    Ok(pool)
}

/// Visitor methods answering `$value` for every JSON scalar other than a string: what iterating or
/// indexing such a value in Python would raise on.
macro_rules! scalars_answer {
    (|$s:ident| $value:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            let $s = self;
            Ok($value)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            let $s = self;
            Ok($value)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            let $s = self;
            Ok($value)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            let $s = self;
            Ok($value)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            let $s = self;
            Ok($value)
        }
    };
    ($value:expr) => {
        $crate::rawfile::lenient::scalars_answer!(|_visitor| $value);
    };
}
pub(crate) use scalars_answer;

/// One request record: what the toolkit reads of it.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Object {
        /// `bool(req.get("success", False))`.
        success: bool,
        /// `[float(x) for x in req.get("itl", [])]`; `Err` when that raises.
        itl: Result<Vec<f64>, ()>,
        /// `req.get("output_len")` (small scalar, kept as JSON).
        output_len: Option<Value>,
    },
    /// Not a JSON object: `.get` raises in Python.
    NotObject,
}

/// The `results` key: a list of requests, or something else (iterating it raises or yields junk).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum RequestList {
    #[default]
    Missing,
    List(Vec<Request>),
    NotAList,
}

struct ItlList(Result<Vec<f64>, ()>);

/// One element of an `itl` list as Python's `float(x)`: numbers, booleans and numeric strings;
/// `None` for anything else (null, lists, objects), which makes the toolkit raise. Read straight
/// from the parser, without building a `Value`.
pub(crate) struct PyFloat(pub Option<f64>);

impl<'de> Deserialize<'de> for PyFloat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PyFloat;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<PyFloat, E> {
                Ok(PyFloat(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<PyFloat, E> {
                Ok(PyFloat(Some(v as f64)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<PyFloat, E> {
                Ok(PyFloat(Some(v as f64)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<PyFloat, E> {
                Ok(PyFloat(Some(if v { 1.0 } else { 0.0 })))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PyFloat, E> {
                Ok(PyFloat(py_float_str(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<PyFloat, E> {
                Ok(PyFloat(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PyFloat, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(PyFloat(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PyFloat, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(PyFloat(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Reads an `itl` value into a reused buffer: `Ok(false)` when Python's
/// `[float(x) for x in itl]` would raise.
pub(crate) struct ItlSeed<'a>(pub &'a mut Vec<f64>);

impl<'de> de::DeserializeSeed<'de> for ItlSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        struct V<'a>(&'a mut Vec<f64>);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = bool;
            scalars_answer!(false);
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an itl list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
                let mut ok = true;
                while let Some(PyFloat(v)) = seq.next_element::<PyFloat>()? {
                    match v {
                        Some(x) if ok => self.0.push(x),
                        _ => ok = false,
                    }
                }
                Ok(ok)
            }
            // A string iterates as characters in Python; float() of each may still succeed.
            fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
                for c in s.chars() {
                    match py_float_str(&c.to_string()) {
                        Some(x) => self.0.push(x),
                        None => return Ok(false),
                    }
                }
                Ok(true)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
                // Iterating a dict yields its keys.
                let mut ok = true;
                while let Some((k, _)) = map.next_entry::<String, IgnoredAny>()? {
                    match py_float_str(&k) {
                        Some(x) if ok => self.0.push(x),
                        _ => ok = false,
                    }
                }
                Ok(ok)
            }
        }
        self.0.clear();
        d.deserialize_any(V(self.0))
    }
}

impl<'de> Deserialize<'de> for ItlList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut v = Vec::new();
        let ok = de::DeserializeSeed::deserialize(ItlSeed(&mut v), d)?;
        Ok(ItlList(if ok { Ok(v) } else { Err(()) }))
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Request;
            scalars_answer!(Request::NotObject);
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request record")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Request, A::Error> {
                let (mut success, mut itl, mut output_len) = (None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "success" => success = Some(map.next_value::<Value>()?),
                        "itl" => itl = Some(map.next_value::<ItlList>()?.0),
                        "output_len" => output_len = Some(map.next_value::<Value>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Request::Object {
                    success: truthy(success.as_ref()),
                    itl: itl.unwrap_or(Ok(Vec::new())),
                    output_len,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Request, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Request::NotObject)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Request, E> {
                Ok(Request::NotObject)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RequestList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RequestList;
            scalars_answer!(RequestList::NotAList);
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the results list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RequestList, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(1024));
                while let Some(r) = seq.next_element::<Request>()? {
                    out.push(r);
                }
                Ok(RequestList::List(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RequestList, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(RequestList::NotAList)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<RequestList, E> {
                Ok(RequestList::NotAList)
            }
        }
        d.deserialize_any(V)
    }
}

/// The keys of an LLM `results.json` the toolkit reads; everything else is skipped unread.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct LlmResults {
    pub steady_state_energy: Option<Value>,
    pub steady_state_duration: Option<Value>,
    pub steady_state_energy_per_token: Option<Value>,
    pub energy_per_token_joules: Option<Value>,
    pub completed: Option<Value>,
    pub total_output_tokens: Option<Value>,
    pub output_throughput: Option<Value>,
    pub results: RequestList,
}

impl LlmResults {
    /// Energy per token with the toolkit's fallback key.
    pub fn energy_per_token(&self) -> Option<f64> {
        safe_float(self.steady_state_energy_per_token.as_ref())
            .or_else(|| safe_float(self.energy_per_token_joules.as_ref()))
    }
}

/// The part of `prometheus.json` the toolkit reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Prometheus {
    pub steady_state_stats: Option<Value>,
}

impl Prometheus {
    /// `steady_state_stats["vllm:num_requests_running"]` as a float, if there is one.
    pub fn avg_batch_size(&self) -> Option<f64> {
        match &self.steady_state_stats {
            Some(Value::Object(m)) => safe_float(m.get("vllm:num_requests_running")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_request_list() {
        let r: LlmResults = serde_json::from_str(
            r#"{"steady_state_energy": 200.0, "timeline": {"power": {"0": [[1, 2]]}},
                "results": [{"success": true, "itl": [0.01, 0, "0.02"], "output_len": 3, "prompt": "x"},
                            {"success": 0, "itl": [0.1]}, {"itl": [null]}, 7]}"#,
        )
        .unwrap();
        let RequestList::List(reqs) = r.results else {
            panic!("list")
        };
        assert_eq!(
            reqs[0],
            Request::Object {
                success: true,
                itl: Ok(vec![0.01, 0.0, 0.02]),
                output_len: Some(Value::from(3))
            }
        );
        assert_eq!(
            reqs[1],
            Request::Object {
                success: false,
                itl: Ok(vec![0.1]),
                output_len: None
            }
        );
        assert_eq!(
            reqs[2],
            Request::Object {
                success: false,
                itl: Err(()),
                output_len: None
            }
        );
        assert_eq!(reqs[3], Request::NotObject);
        assert_eq!(safe_float(r.steady_state_energy.as_ref()), Some(200.0));
        let none: LlmResults = serde_json::from_str(r#"{"results": {"a": 1}}"#).unwrap();
        assert_eq!(none.results, RequestList::NotAList);
    }
}
