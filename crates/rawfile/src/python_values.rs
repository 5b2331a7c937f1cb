//! JSON values read as the toolkit's Python code reads them, straight from the parser: `float(x)`
//! of an `itl` element, a whole `itl` list into a reused buffer, and what iterating or indexing a
//! scalar gives (`scalars_answer!`, for the reader's visitors).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use mlenergy_pycompat::value::py_float_str;

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
        $crate::python_values::scalars_answer!(|_visitor| $value);
    };
}
pub(crate) use scalars_answer;

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
