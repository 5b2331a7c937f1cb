//! JSON written as Python's `json.dump(value, f, indent=2, sort_keys=True)` writes it (the
//! leaderboard's files): keys sorted, two-space indentation, `,` at line ends and `: ` after keys,
//! non-ASCII escaped (`ensure_ascii`), floats as `repr` writes them, no trailing newline.

use std::collections::BTreeMap;

use super::repr::python_float_repr;

/// A JSON value that keeps Python's distinction between an int and a float.
#[derive(Debug, Clone, PartialEq)]
pub enum PyJson {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<PyJson>),
    Object(BTreeMap<String, PyJson>),
}

impl PyJson {
    pub fn object(members: impl IntoIterator<Item = (impl Into<String>, PyJson)>) -> PyJson {
        PyJson::Object(members.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The text, as `json.dumps(self, indent=2, sort_keys=True)`.
    pub fn dumps(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, 0);
        out
    }

    fn write(&self, out: &mut String, level: usize) {
        match self {
            PyJson::Null => out.push_str("null"),
            PyJson::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            PyJson::Int(i) => out.push_str(&i.to_string()),
            PyJson::Float(x) => out.push_str(&float(*x)),
            PyJson::Str(s) => string(out, s),
            PyJson::Array(items) if items.is_empty() => out.push_str("[]"),
            PyJson::Object(members) if members.is_empty() => out.push_str("{}"),
            PyJson::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    v.write(out, level + 1);
                }
                newline(out, level);
                out.push(']');
            }
            PyJson::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, level + 1);
                    string(out, k);
                    out.push_str(": ");
                    v.write(out, level + 1);
                }
                newline(out, level);
                out.push('}');
            }
        }
    }
}

fn newline(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// `float.__repr__`, and Python's names for the non-finite values (`allow_nan`).
fn float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        python_float_repr(x)
    }
}

/// A string literal with `ensure_ascii`: `\uXXXX` for everything outside ASCII (surrogate pairs
/// above the basic plane) and for control characters without a short escape.
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_python_writes_it() {
        let v = PyJson::object([
            (
                "b",
                PyJson::Array(vec![
                    PyJson::Int(1),
                    PyJson::Float(14.0),
                    PyJson::Float(0.1),
                ]),
            ),
            ("a", PyJson::Str("PixArt-Σ \"x\"\n😀".into())),
            ("e", PyJson::Array(vec![])),
            (
                "d",
                PyJson::object([("y", PyJson::Null), ("x", PyJson::Bool(true))]),
            ),
            ("c", PyJson::Object(BTreeMap::new())),
        ]);
        assert_eq!(
            v.dumps(),
            "{\n  \"a\": \"PixArt-\\u03a3 \\\"x\\\"\\n\\ud83d\\ude00\",\n  \"b\": [\n    1,\n    14.0,\n    0.1\n  ],\n  \"c\": {},\n  \"d\": {\n    \"x\": true,\n    \"y\": null\n  },\n  \"e\": []\n}"
        );
        assert_eq!(PyJson::Float(1e16).dumps(), "1e+16");
        assert_eq!(PyJson::Float(1e-5).dumps(), "1e-05");
    }
}
