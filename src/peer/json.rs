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
///
/// Most documents are read by [`fast`], a reader of the usual shapes that builds the same
/// `Value` serde_json builds, several times faster on the number arrays that make up most of a
/// LEM result. Anything it does not read the usual way (an escaped or control character in a
/// string, `-0`, a number out of range, deep nesting, malformed JSON) is parsed by serde_json,
/// whose answer or error is the reference: the fast reader never decides an edge case.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    match fast(bytes) {
        Some(v) => Ok(v),
        None => serde_json::from_slice(bytes).map_err(|e| format!("not valid JSON: {e}")),
    }
}

/// The document as serde_json (with `float_roundtrip` and `preserve_order`) would parse it, when
/// it is valid JSON in the usual shapes; `None` otherwise.
pub fn fast(bytes: &[u8]) -> Option<Value> {
    let mut c = Reader { b: bytes, i: 0 };
    c.ws();
    let v = c.value(0)?;
    c.ws();
    (c.i == bytes.len()).then_some(v)
}

/// serde_json refuses documents nested deeper than 128; well below that, the fast reader leaves
/// them to it.
const MAX_DEPTH: usize = 100;

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skip JSON whitespace (space, tab, line feed, carriage return); the indentation of a
    /// pretty-printed document, most of its bytes, eight spaces at a time.
    fn ws(&mut self) {
        loop {
            while let Some(chunk) = self.b.get(self.i..self.i + 8) {
                if chunk != b"        " {
                    break;
                }
                self.i += 8;
            }
            match self.peek() {
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.i += 1,
                _ => return,
            }
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> Option<Value> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| {
            self.i = end;
            v
        })
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(Value::String),
            b't' => self.literal(b"true", Value::Bool(true)),
            b'f' => self.literal(b"false", Value::Bool(false)),
            b'n' => self.literal(b"null", Value::Null),
            b'-' | b'0'..=b'9' => self.number().map(Value::Number),
            _ => None,
        }
    }

    /// The members of an array or object, after its opening byte: `member` reads one (and its
    /// key), a comma goes on to the next and `close` ends them.
    fn members(
        &mut self,
        depth: usize,
        close: u8,
        mut member: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        loop {
            member(self)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b if b == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        let mut items = Vec::new();
        self.members(depth, b']', |c| {
            items.push(c.value(depth)?);
            Some(())
        })?;
        Some(Value::Array(items))
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        let mut map = Map::new();
        self.members(depth, b'}', |c| {
            if c.peek()? != b'"' {
                return None;
            }
            let key = c.string()?;
            c.ws();
            if c.peek()? != b':' {
                return None;
            }
            c.i += 1;
            c.ws();
            // A repeated key keeps its first place and takes the last value, as serde_json's
            // map does.
            map.insert(key, c.value(depth)?);
            Some(())
        })?;
        Some(Value::Object(map))
    }

    /// A string without escapes or control characters (UTF-8 checked).
    fn string(&mut self) -> Option<String> {
        let start = self.i + 1;
        let len = memchr::memchr2(b'"', b'\\', self.b.get(start..)?)?;
        let raw = &self.b[start..start + len];
        if self.b[start + len] != b'"' || raw.iter().any(|&b| b < 0x20) {
            return None;
        }
        let s = std::str::from_utf8(raw).ok()?;
        self.i = start + len + 1;
        Some(s.to_owned())
    }

    /// A number in JSON's grammar, typed as serde_json types it: an integer without fraction or
    /// exponent is a u64 (non-negative) or an i64 (negative); any other is an f64, correctly
    /// rounded. What serde_json would treat otherwise (`-0`, integers of 19 digits or more,
    /// numbers out of range) is left to it.
    fn number(&mut self) -> Option<serde_json::Number> {
        let start = self.i;
        let b = self.b;
        let mut i = start;
        let negative = b.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        // The decimal significand (its first 19 digits; `digits` counts them all) and the
        // power of ten it is scaled by.
        let mut m: u64 = 0;
        let mut digits = 0usize;
        let mut scale: i64 = 0;
        let mut digit = |d: u8, m: &mut u64| {
            if digits < 19 {
                *m = *m * 10 + u64::from(d - b'0');
            }
            digits += 1;
        };
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while let Some(&d @ b'0'..=b'9') = b.get(i) {
                    digit(d, &mut m);
                    i += 1;
                }
            }
            _ => return None,
        }
        let mut float = false;
        if b.get(i) == Some(&b'.') {
            float = true;
            i += 1;
            let from = i;
            while let Some(&d @ b'0'..=b'9') = b.get(i) {
                // Leading zeros of a fraction (0.000123) scale without being digits.
                if m == 0 && d == b'0' {
                    scale -= 1;
                } else {
                    digit(d, &mut m);
                    scale -= 1;
                }
                i += 1;
            }
            if i == from {
                return None;
            }
        }
        if let Some(b'e' | b'E') = b.get(i) {
            float = true;
            i += 1;
            let sign = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    -1
                }
                Some(b'+') => {
                    i += 1;
                    1
                }
                _ => 1,
            };
            let from = i;
            let mut e: i64 = 0;
            while let Some(&d @ b'0'..=b'9') = b.get(i) {
                e = (e * 10 + i64::from(d - b'0')).min(1 << 20);
                i += 1;
            }
            if i == from {
                return None;
            }
            scale += sign * e;
        }
        let n = if float {
            // Exact significand and power of ten: one correctly rounded operation (Clinger's
            // fast path). Otherwise lexical-core's correctly rounded parse of the text.
            const POW10: [f64; 23] = [
                1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
                1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
            ];
            let x = if digits <= 19 && m <= 1 << 53 && (-22..=22).contains(&scale) {
                let x = m as f64;
                let x = if scale < 0 {
                    x / POW10[(-scale) as usize]
                } else {
                    x * POW10[scale as usize]
                };
                if negative { -x } else { x }
            } else {
                lexical_core::parse(&b[start..i]).ok()?
            };
            serde_json::Number::from_f64(x)?
        } else {
            if digits > 18 {
                return None;
            }
            match (negative, m) {
                (false, m) => m.into(),
                (true, 0) => return None,
                (true, m) => (-(m as i64)).into(),
            }
        };
        self.i = i;
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `parse` answers what serde_json answers: the same value (numbers of the same type), or an
    /// error.
    fn alike(doc: &str) -> Result<Value, String> {
        let reference = serde_json::from_str::<Value>(doc);
        let ours = parse(doc.as_bytes());
        match (&reference, &ours) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{doc:?}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{doc:?}: serde_json {reference:?}, ours {ours:?}"),
        }
        if let Some(v) = fast(doc.as_bytes()) {
            assert_eq!(Some(&v), reference.as_ref().ok(), "{doc:?}: fast path");
        }
        ours
    }

    #[test]
    fn the_usual_shapes_take_the_fast_path_and_read_as_serde_reads_them() {
        let doc = r#"{
          "schema_version": "2.0.0", "experiment_id": "0001_c2", "total_energy_j": 82004.5708,
          "process_results": [{"process_index": 0, "gpu_id": -1, "gpu_mig_profile": null,
            "gpu_is_mig": false, "ok": true, "name": "NVIDIA H100 80GB HBM3 – µ",
            "latency_measurements": {"ttft_ms": [249.719, 48.844, 1e-3, 2E+5, -0.5, 0.1],
              "n": [0, 999999999999999999, -999999999999999999]}}],
          "dup": 1, "empty": {}, "none": [], "dup": [2]
        }"#;
        assert!(fast(doc.as_bytes()).is_some());
        let v = alike(doc).unwrap();
        // A repeated key keeps its first place and its last value.
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys[4], "dup");
        assert_eq!(v["dup"], serde_json::json!([2]));
        assert!(v["process_results"][0]["gpu_id"].is_i64());
        assert!(v["process_results"][0]["process_index"].is_u64());
        assert_eq!(v["total_energy_j"].as_f64(), Some(82004.5708));
    }

    #[test]
    fn numbers_are_typed_and_rounded_as_serde_does() {
        for n in [
            "0",
            "-1",
            "7",
            "1.0",
            "-0.0",
            "0.1",
            "2.5e-324",
            "1e-400",
            "4.9406564584124654e-324",
            "1.7976931348623157e308",
            "9007199254740993",
            "9007199254740993.0",
            "0.30000000000000004",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567890",
            "123456789012345678901234",
            "-9223372036854775808",
            "-9223372036854775809",
            "1E2",
            "1e+2",
            "1e-2",
            "0e0",
            "100e-2",
            "2.2250738585072011e-308",
            "2.2250738585072012e-308",
            "0.1000000000000000055511151231257827021181583404541015625",
        ] {
            alike(n).unwrap();
            alike(&format!("[{n}, {{\"x\": {n}}}]")).unwrap();
        }
    }

    #[test]
    fn edge_cases_are_left_to_serde() {
        // serde_json reads `-0` as the float -0.0, and an integer past u64 as a float.
        assert!(fast(b"-0").is_none());
        assert!(alike("-0").unwrap().is_f64());
        assert!(alike("123456789012345678901").unwrap().is_f64());
        // Escapes are decoded by serde.
        assert!(fast(br#""a\"b""#).is_none());
        assert_eq!(
            alike(r#"{"k\u00e9y": "a\nb\"\\\/\ud83d\ude00"}"#).unwrap()["kéy"],
            "a\nb\"\\/😀"
        );
    }

    #[test]
    fn what_serde_refuses_is_refused() {
        for doc in [
            "",
            " ",
            "{",
            "[1,]",
            "[1 2]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "01",
            "1.",
            ".5",
            "-",
            "+1",
            "1e",
            "1e+",
            "--1",
            "0x10",
            "1e400",
            "-1e400",
            "NaN",
            "Infinity",
            "tru",
            "nul",
            "[1]]",
            "{} {}",
            "\"\u{1}\"",
            "\"abc",
            "[\"a\\u12\"]",
            "[\"\\ud800\"]",
            "\u{feff}{}",
        ] {
            assert!(alike(doc).is_err(), "{doc:?}");
        }
        // Invalid UTF-8 in a string.
        assert!(parse(b"[\"\xff\"]").is_err());
        assert!(fast(b"[\"\xff\"]").is_none());
        // Nesting: serde refuses 128 levels or more; the fast reader leaves deep documents to it.
        for depth in [99, 100, 101, 127, 128, 200] {
            let doc = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(alike(&doc).is_ok(), depth < 128, "depth {depth}");
        }
    }
}
