//! Lenient reading of other tools' JSON: every field optional, a field of the wrong type is a
//! warning (and read as absent), never an error; the keys a reader does not know are kept.

use std::cell::RefCell;

use serde_json::{Map, Value};

/// Parse warnings of one run (or one file), in the order they were found.
#[derive(Debug, Default)]
pub struct Warnings(RefCell<Vec<String>>);

impl Warnings {
    pub fn push(&self, w: impl Into<String>) {
        let w = w.into();
        let mut v = self.0.borrow_mut();
        if !v.contains(&w) {
            v.push(w);
        }
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

/// A JSON value with the dotted path it was reached by, for warnings.
#[derive(Clone, Copy)]
pub struct J<'a> {
    pub v: Option<&'a Value>,
    pub path: &'a str,
    pub w: &'a Warnings,
}

impl<'a> J<'a> {
    pub fn root(v: &'a Value, w: &'a Warnings) -> Self {
        J {
            v: Some(v),
            path: "",
            w,
        }
    }

    /// The member `key` (absent when this is not an object or has no such key; null is absent).
    pub fn at(self, key: &'a str) -> J<'a> {
        let v = match self.v {
            Some(Value::Object(m)) => m.get(key).filter(|v| !v.is_null()),
            _ => None,
        };
        J {
            v,
            path: key,
            w: self.w,
        }
    }

    /// Follow a dotted path of members.
    pub fn path(self, dotted: &'a str) -> J<'a> {
        let mut j = self;
        for k in dotted.split('.') {
            j = j.at(k);
        }
        J { path: dotted, ..j }
    }

    pub fn exists(self) -> bool {
        self.v.is_some()
    }

    fn wrong(self, expected: &str) {
        if let Some(v) = self.v {
            let got = match v {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            };
            self.w.push(format!(
                "{}: expected {expected}, found {got}; read as missing",
                self.path
            ));
        }
    }

    /// A finite number (a numeric string such as "1.5" is accepted; NaN and infinities are absent).
    pub fn f64(self) -> Option<f64> {
        let x = match self.v? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(x) if x.is_finite() => Some(x),
            Some(_) => None,
            None => {
                self.wrong("a number");
                None
            }
        }
    }

    /// An integer (a float with no fraction is accepted).
    pub fn i64(self) -> Option<i64> {
        match self.v? {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15)
                    .map(|x| x as i64)
            }),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
        .or_else(|| {
            self.wrong("an integer");
            None
        })
    }

    pub fn str(self) -> Option<&'a str> {
        match self.v? {
            Value::String(s) => Some(s.as_str()),
            _ => {
                self.wrong("a string");
                None
            }
        }
    }

    /// A string, or a number written as text.
    pub fn text(self) -> Option<String> {
        match self.v? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => {
                self.wrong("a string");
                None
            }
        }
    }

    pub fn bool(self) -> Option<bool> {
        match self.v? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.wrong("a boolean");
                None
            }
        }
    }

    pub fn array(self) -> &'a [Value] {
        match self.v {
            Some(Value::Array(a)) => a,
            Some(_) => {
                self.wrong("an array");
                &[]
            }
            None => &[],
        }
    }

    pub fn object(self) -> Option<&'a Map<String, Value>> {
        match self.v? {
            Value::Object(m) => Some(m),
            _ => {
                self.wrong("an object");
                None
            }
        }
    }

    /// The numbers of an array (members that are not finite numbers are skipped, with a warning).
    pub fn f64s(self) -> Option<Vec<f64>> {
        self.v?;
        let a = self.array();
        let mut out = Vec::with_capacity(a.len());
        let mut bad = 0;
        for x in a {
            match x.as_f64().filter(|x| x.is_finite()) {
                Some(x) => out.push(x),
                None => bad += 1,
            }
        }
        if bad > 0 {
            self.w.push(format!(
                "{}: {bad} members that are not numbers were skipped",
                self.path
            ));
        }
        Some(out)
    }

    /// The members of this object whose keys are not in `known`, as a JSON object (`None` when there
    /// are none).
    pub fn unknown(self, known: &[&str]) -> Option<Map<String, Value>> {
        let m = match self.v? {
            Value::Object(m) => m,
            _ => return None,
        };
        let extra: Map<String, Value> = m
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!extra.is_empty()).then_some(extra)
    }
}

/// Parse a JSON document, or say why not.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}"))
}
