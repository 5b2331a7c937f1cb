//! Lenient reading of other tools' JSON: every field optional, a field of the wrong type is a
//! warning (and read as absent), never an error; the keys a reader does not know are kept.

use std::cell::RefCell;

use std::borrow::Cow;
use std::collections::HashMap;

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

/// A JSON document as the peer readers see it: serde_json's data model, with strings and keys
/// borrowed from the document's bytes where they need no unescaping, and an object's members
/// kept in document order in a vector (no key is allocated or hashed). A repeated key reads as
/// serde_json's map reads it: the first place, the last value.
#[derive(Debug, Clone)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    /// The member `key` of an object (its last value when the key is repeated).
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An object's members in order, each key once (at its first place, with its last value).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Node<'a>)> {
        let m: &[(Cow<'a, str>, Node<'a>)] = match self {
            Node::Object(m) => m,
            _ => &[],
        };
        // A small object is scanned; a large one (a document may hold any number of keys) gets
        // a map of each key's first and last place, so that this stays linear.
        const SCANNED: usize = 16;
        let places: Option<HashMap<&str, (usize, usize)>> = (m.len() > SCANNED).then(|| {
            let mut places = HashMap::with_capacity(m.len());
            for (i, (k, _)) in m.iter().enumerate() {
                places
                    .entry(k.as_ref())
                    .and_modify(|p: &mut (usize, usize)| p.1 = i)
                    .or_insert((i, i));
            }
            places
        });
        m.iter().enumerate().filter_map(move |(i, (k, v))| {
            let (first, last) = match &places {
                Some(places) => {
                    let (first, last) = places[k.as_ref()];
                    (first == i, &m[last].1)
                }
                None => (
                    !m[..i].iter().any(|(earlier, _)| earlier == k),
                    m[i + 1..]
                        .iter()
                        .rev()
                        .find(|(later, _)| later == k)
                        .map_or(v, |(_, later)| later),
                ),
            };
            first.then_some((k.as_ref(), last))
        })
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Node::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Node::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Node::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The same document as serde_json's `Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::String(s) => Value::String(s.to_string()),
            Node::Array(a) => Value::Array(a.iter().map(Node::to_value).collect()),
            Node::Object(m) => {
                let mut map = Map::with_capacity(m.len());
                for (k, v) in m {
                    map.insert(k.to_string(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }

    /// The document with every string its own (no longer borrowing the bytes it was read from).
    pub fn into_owned(self) -> Node<'static> {
        match self {
            Node::Null => Node::Null,
            Node::Bool(b) => Node::Bool(b),
            Node::Number(n) => Node::Number(n),
            Node::String(s) => Node::String(Cow::Owned(s.into_owned())),
            Node::Array(a) => Node::Array(a.into_iter().map(Node::into_owned).collect()),
            Node::Object(m) => Node::Object(
                m.into_iter()
                    .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                    .collect(),
            ),
        }
    }
}

impl From<Value> for Node<'static> {
    fn from(v: Value) -> Self {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(b),
            Value::Number(n) => Node::Number(n),
            Value::String(s) => Node::String(Cow::Owned(s)),
            Value::Array(a) => Node::Array(a.into_iter().map(Node::from).collect()),
            Value::Object(m) => Node::Object(
                m.into_iter()
                    .map(|(k, v)| (Cow::Owned(k), Node::from(v)))
                    .collect(),
            ),
        }
    }
}

/// Written as serde_json writes the `Value` it reads as.
impl serde::Serialize for Node<'_> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self {
            Node::Null => ser.serialize_unit(),
            Node::Bool(b) => ser.serialize_bool(*b),
            Node::Number(n) => n.serialize(ser),
            Node::String(s) => ser.serialize_str(s),
            Node::Array(a) => {
                let mut seq = ser.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Node::Object(_) => {
                let mut map = ser.serialize_map(None)?;
                for (k, v) in self.entries() {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// A JSON value with the dotted path it was reached by, for warnings.
#[derive(Clone, Copy)]
pub struct J<'a> {
    pub v: Option<&'a Node<'a>>,
    pub path: &'a str,
    pub w: &'a Warnings,
}

impl<'a> J<'a> {
    pub fn root(v: &'a Node<'a>, w: &'a Warnings) -> Self {
        J {
            v: Some(v),
            path: "",
            w,
        }
    }

    /// The member `key` (absent when this is not an object or has no such key; null is absent).
    pub fn at(self, key: &'a str) -> J<'a> {
        let v = self.v.and_then(|v| v.get(key)).filter(|v| !v.is_null());
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
                Node::Null => "null",
                Node::Bool(_) => "a boolean",
                Node::Number(_) => "a number",
                Node::String(_) => "a string",
                Node::Array(_) => "an array",
                Node::Object(_) => "an object",
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
            Node::Number(n) => n.as_f64(),
            Node::String(s) => s.trim().parse::<f64>().ok(),
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
            Node::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15)
                    .map(|x| x as i64)
            }),
            Node::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        }
        .or_else(|| {
            self.wrong("an integer");
            None
        })
    }

    pub fn str(self) -> Option<&'a str> {
        match self.v? {
            Node::String(s) => Some(s),
            _ => {
                self.wrong("a string");
                None
            }
        }
    }

    /// A string, or a number written as text.
    pub fn text(self) -> Option<String> {
        match self.v? {
            Node::String(s) => Some(s.to_string()),
            Node::Number(n) => Some(n.to_string()),
            _ => {
                self.wrong("a string");
                None
            }
        }
    }

    pub fn bool(self) -> Option<bool> {
        match self.v? {
            Node::Bool(b) => Some(*b),
            _ => {
                self.wrong("a boolean");
                None
            }
        }
    }

    pub fn array(self) -> &'a [Node<'a>] {
        match self.v {
            Some(Node::Array(a)) => a,
            Some(_) => {
                self.wrong("an array");
                &[]
            }
            None => &[],
        }
    }

    /// The members of an object, each key once (see [`Node::entries`]).
    pub fn object(self) -> Option<impl Iterator<Item = (&'a str, &'a Node<'a>)>> {
        match self.v? {
            v @ Node::Object(_) => Some(v.entries()),
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
        let v = self.v?;
        let extra: Map<String, Value> = v
            .entries()
            .filter(|(k, _)| !known.contains(k))
            .map(|(k, v)| (k.to_string(), v.to_value()))
            .collect();
        (!extra.is_empty()).then_some(extra)
    }
}

/// Parse a JSON document, or say why not.
///
/// Most documents are read by [`fast`], a reader of the usual shapes that builds the same
/// document serde_json reads, faster on the number arrays and many keys that make up most of a
/// LEM result. Anything it does not read the usual way (an escaped or control character in a
/// string, `-0`, a number out of range, deep nesting, malformed JSON) is parsed by serde_json,
/// whose answer or error is the reference: the fast reader never decides an edge case.
pub fn parse(bytes: &[u8]) -> Result<Node<'_>, String> {
    match fast(bytes) {
        Some(v) => Ok(v),
        None => serde_json::from_slice::<Value>(bytes)
            .map(Node::from)
            .map_err(|e| format!("not valid JSON: {e}")),
    }
}

/// The document as serde_json (with `float_roundtrip` and `preserve_order`) would parse it, when
/// it is valid JSON in the usual shapes; `None` otherwise.
pub fn fast(bytes: &[u8]) -> Option<Node<'_>> {
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

impl<'a> Reader<'a> {
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

    fn literal(&mut self, word: &[u8], v: Node<'a>) -> Option<Node<'a>> {
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| {
            self.i = end;
            v
        })
    }

    fn value(&mut self, depth: usize) -> Option<Node<'a>> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(Node::String),
            b't' => self.literal(b"true", Node::Bool(true)),
            b'f' => self.literal(b"false", Node::Bool(false)),
            b'n' => self.literal(b"null", Node::Null),
            b'-' | b'0'..=b'9' => self.number().map(Node::Number),
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

    fn array(&mut self, depth: usize) -> Option<Node<'a>> {
        let mut items = Vec::new();
        self.members(depth, b']', |c| {
            items.push(c.value(depth)?);
            Some(())
        })?;
        Some(Node::Array(items))
    }

    fn object(&mut self, depth: usize) -> Option<Node<'a>> {
        let mut members = Vec::new();
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
            // Kept in order, repeated or not: `Node` reads a repeated key as serde_json does.
            members.push((key, c.value(depth)?));
            Some(())
        })?;
        Some(Node::Object(members))
    }

    /// A string without escapes or control characters (UTF-8 checked), borrowed.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.i + 1;
        let len = memchr::memchr2(b'"', b'\\', self.b.get(start..)?)?;
        let raw = &self.b[start..start + len];
        if self.b[start + len] != b'"' || raw.iter().any(|&b| b < 0x20) {
            return None;
        }
        let s = std::str::from_utf8(raw).ok()?;
        self.i = start + len + 1;
        Some(Cow::Borrowed(s))
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
        let ours = parse(doc.as_bytes()).map(|n| n.to_value());
        match (&reference, &ours) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{doc:?}");
                // Written back, the document is what serde_json writes of its own reading.
                let node = parse(doc.as_bytes()).unwrap();
                assert_eq!(serde_json::to_string(&node).unwrap(), a.to_string());
            }
            (Err(_), Err(_)) => {}
            _ => panic!("{doc:?}: serde_json {reference:?}, ours {ours:?}"),
        }
        if let Some(v) = fast(doc.as_bytes()) {
            assert_eq!(
                Some(&v.to_value()),
                reference.as_ref().ok(),
                "{doc:?}: fast path"
            );
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
        // The node reads a repeated key as the map does, and borrows the document's strings.
        let node = fast(doc.as_bytes()).unwrap();
        assert_eq!(node.get("dup").unwrap().to_value(), serde_json::json!([2]));
        let keys: Vec<&str> = node.entries().map(|(k, _)| k).collect();
        assert_eq!(keys.len(), 7);
        assert_eq!(keys[4], "dup");
        assert!(matches!(
            node.get("schema_version"),
            Some(Node::String(Cow::Borrowed("2.0.0")))
        ));
        let w = Warnings::default();
        let extra = J::root(&node, &w)
            .unknown(&["process_results", "empty"])
            .unwrap();
        assert_eq!(
            serde_json::to_string(&extra).unwrap(),
            r#"{"schema_version":"2.0.0","experiment_id":"0001_c2","total_energy_j":82004.5708,"dup":[2],"none":[]}"#
        );
    }

    #[test]
    fn a_large_object_with_repeated_keys_reads_as_serde_reads_it() {
        // Past the size that is scanned, the first and last places come from a map.
        let members: Vec<String> = (0..40)
            .map(|i| format!("\"k{}\": {i}", i % 25))
            .chain(["\"k3\": null".to_string(), "\"z\": [1]".to_string()])
            .collect();
        let doc = format!("{{{}}}", members.join(", "));
        let node = fast(doc.as_bytes()).unwrap();
        let reference: Value = serde_json::from_str(&doc).unwrap();
        let keys: Vec<&str> = node.entries().map(|(k, _)| k).collect();
        let expected: Vec<&str> = reference
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, expected);
        assert_eq!(keys.len(), 26);
        assert_eq!(serde_json::to_string(&node).unwrap(), reference.to_string());
        assert_eq!(node.get("k3").map(Node::is_null), Some(true));
        assert_eq!(node.get("k24").and_then(Node::as_f64), Some(24.0));
        assert_eq!(node.get("k0").and_then(Node::as_f64), Some(25.0));
    }

    #[test]
    fn a_node_from_serde_reads_and_writes_as_its_value() {
        // Escapes leave the document to serde_json; its value becomes a node of owned strings.
        let doc = r#"{"a\u00e9": [1, -0, 2.5], "b": {"c": "x\ny", "c": null}, "d": true}"#;
        assert!(fast(doc.as_bytes()).is_none());
        let node = parse(doc.as_bytes()).unwrap();
        let reference: Value = serde_json::from_str(doc).unwrap();
        assert_eq!(node.to_value(), reference);
        assert_eq!(serde_json::to_string(&node).unwrap(), reference.to_string());
        let w = Warnings::default();
        let j = J::root(&node, &w);
        assert_eq!(j.path("b.c").text(), None);
        assert_eq!(j.at("d").bool(), Some(true));
        assert_eq!(j.at("aé").f64s(), Some(vec![1.0, -0.0, 2.5]));
        assert_eq!(node.clone().into_owned().to_value(), reference);
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
