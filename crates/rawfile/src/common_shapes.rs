//! Hand-written readers for the usual shapes of the values of an LLM `results.json` that hold its
//! numbers, in one pass each, where serde_json's generic path spends most of its time:
//! - a request record whose `success` is `true`/`false`, whose `output_len` is an integer or
//!   `null` and whose `itl` is a list of numbers (the `itl` numbers are most of a large file);
//! - a `timeline` series' point list, `[[t, v], ...]` of numbers, and a steady-state bound, a
//!   number or `null` (the timeline object around them is walked by `reader`'s
//!   `timeline_by_series`).
//!
//! Every other value is skipped by serde_json, which validates it as before. Anything else
//! (another type for a key that is read, a repeated key, an escaped key, a number out of range,
//! malformed JSON) answers `None`, and the caller reads the value through the serde visitors,
//! whose answer or error is the reference. So these readers never decide an edge case; they only
//! make the common case fast.

use serde::de::IgnoredAny;

/// What the toolkit reads of a request record in the usual shape (the `itl` numbers go to a
/// buffer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Fields {
    /// `bool(req.get("success", False))`.
    pub success: bool,
    /// `req.get("output_len")` when an integer; `None` when missing or `null`.
    pub output_len: Option<i64>,
}

/// Read the request record at the start of `bytes` (more may follow it), putting its `itl`
/// numbers into `itl` (cleared first; left empty when the key is missing): its fields and
/// length. `None`: not the usual shape, or not valid JSON; read it with serde instead.
pub(super) fn request_prefix(bytes: &[u8], itl: &mut Vec<f64>) -> Option<(Fields, usize)> {
    let mut c = Cursor { b: bytes, i: 0 };
    let fields = c.request(itl)?;
    Some((fields, c.i))
}

/// The length of the JSON value at the start of `bytes` (validated by serde_json).
pub(super) fn value_len(bytes: &[u8]) -> Option<usize> {
    let mut c = Cursor { b: bytes, i: 0 };
    c.skip_value()?;
    Some(c.i)
}

/// What follows an item of a list at the start of `bytes`: whitespace, then `,` and whitespace
/// (more items follow) or `]` (the list ends); the byte and how far `bytes` was read.
pub(super) fn after_item(bytes: &[u8]) -> Option<(u8, usize)> {
    let mut c = Cursor { b: bytes, i: 0 };
    c.ws();
    match c.next()? {
        b',' => {
            c.ws();
            Some((b',', c.i))
        }
        b']' => Some((b']', c.i)),
        _ => None,
    }
}

/// A `timeline` series' point list, `[[t, v], ...]` of numbers, that is all of `bytes` (for a
/// timeline read a series at a time).
pub(super) fn points(bytes: &[u8]) -> Option<Vec<(f64, f64)>> {
    // Every point closes with `]`, as the list does: reserved once, exactly (growing by doubling
    // held up to twice the points, and the overshoot stayed in the cached timeline).
    let closing = memchr::memchr_iter(b']', bytes).count();
    whole(bytes, |c| c.points(closing.saturating_sub(1)))
}

/// A number or `null` that is all of `bytes`.
pub(super) fn number_or_null(bytes: &[u8]) -> Option<Option<f64>> {
    whole(bytes, Cursor::number_or_null)
}

/// `read` over all of `bytes`: only whitespace may surround the value.
fn whole<'a, T>(bytes: &'a [u8], read: impl FnOnce(&mut Cursor<'a>) -> Option<T>) -> Option<T> {
    let mut c = Cursor { b: bytes, i: 0 };
    c.ws();
    let value = read(&mut c)?;
    c.ws();
    (c.i == bytes.len()).then_some(value)
}

/// Which of up to eight read keys have been met; a repeat is left to serde (the last one counts).
#[derive(Default)]
pub(super) struct Seen(u8);

impl Seen {
    pub(super) fn first(&mut self, key: u8) -> Option<()> {
        let bit = 1 << key;
        let first = self.0 & bit == 0;
        self.0 |= bit;
        first.then_some(())
    }
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// A request record in the usual shape (see `request_prefix`).
    fn request(&mut self, itl: &mut Vec<f64>) -> Option<Fields> {
        itl.clear();
        let mut fields = Fields {
            success: false,
            output_len: None,
        };
        let mut seen = Seen::default();
        self.object(|key, c| {
            match key {
                b"success" => {
                    seen.first(0)?;
                    fields.success = c.boolean()?;
                }
                b"itl" => {
                    seen.first(1)?;
                    c.numbers(itl)?;
                }
                b"output_len" => {
                    seen.first(2)?;
                    fields.output_len = c.int_or_null()?;
                }
                _ => c.skip_value()?,
            }
            Some(())
        })?;
        Some(fields)
    }

    /// `open` item (`,` item)* `close`, or `open` `close`, with whitespace around the items; each
    /// item is read by `item`.
    fn sequence(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// An object, each key handed to `on_key` with the cursor at its value (which it consumes).
    fn object(&mut self, mut on_key: impl FnMut(&'a [u8], &mut Self) -> Option<()>) -> Option<()> {
        self.sequence(b'{', b'}', |c| {
            let key = c.key()?;
            c.ws();
            c.eat(b':')?;
            c.ws();
            on_key(key, c)
        })
    }

    /// `[[t, v], ...]`, room for `expect` points reserved.
    fn points(&mut self, expect: usize) -> Option<Vec<(f64, f64)>> {
        let mut out = Vec::with_capacity(expect);
        self.sequence(b'[', b']', |c| {
            c.eat(b'[')?;
            c.ws();
            let t = c.number()?;
            c.ws();
            c.eat(b',')?;
            c.ws();
            let v = c.number()?;
            c.ws();
            c.eat(b']')?;
            out.push((t, v));
            Some(())
        })?;
        Some(out)
    }

    /// A number (as `float()`), or `null`.
    fn number_or_null(&mut self) -> Option<Option<f64>> {
        if self.literal(b"null") {
            Some(None)
        } else {
            self.number().map(Some)
        }
    }

    /// JSON whitespace (runs of indentation spaces eight bytes at a time).
    fn ws(&mut self) {
        const SPACES: u64 = u64::from_le_bytes(*b"        ");
        while let Some(&b) = self.b.get(self.i) {
            match b {
                b' ' => {
                    self.i += match self.b.get(self.i..self.i + 8) {
                        Some(w) => {
                            // The first byte is a space, so this advances by at least one.
                            let x = u64::from_le_bytes(w.try_into().unwrap_or_default()) ^ SPACES;
                            if x == 0 {
                                8
                            } else {
                                (x.trailing_zeros() / 8) as usize
                            }
                        }
                        None => 1,
                    }
                }
                b'\n' | b'\r' | b'\t' => self.i += 1,
                _ => return,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let hit = self.b[self.i..].starts_with(word);
        if hit {
            self.i += word.len();
        }
        hit
    }

    /// A key without escapes or control characters, in valid UTF-8 (as serde_json requires).
    fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let len = memchr::memchr2(b'"', b'\\', &self.b[start..])?;
        let key = &self.b[start..start + len];
        if self.b[start + len] != b'"' || key.iter().any(|&b| b < 0x20) {
            return None;
        }
        if !key.is_ascii() {
            std::str::from_utf8(key).ok()?;
        }
        self.i = start + len + 1;
        Some(key)
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// A number as Python's `float()` of what `json` parsed: the correctly rounded double (an
    /// integer too converts with one rounding), read in one pass with the JSON number grammar
    /// (no `+`, `.5`, `1.`, `01`, `NaN`). Out of range (serde_json refuses it): `None`.
    fn number(&mut self) -> Option<f64> {
        const OPTIONS: lexical_core::ParseFloatOptions = lexical_core::ParseFloatOptions::new();
        self.lexical::<f64>(&OPTIONS).filter(|v| v.is_finite())
    }

    /// The number at the cursor as lexical-core parses `N` with the JSON number grammar.
    fn lexical<N: lexical_core::FromLexicalWithOptions>(
        &mut self,
        options: &N::Options,
    ) -> Option<N> {
        let (v, n) = lexical_core::parse_partial_with_options::<N, { lexical_core::format::JSON }>(
            &self.b[self.i..],
            options,
        )
        .ok()?;
        // lexical reads no digits, or a lone sign, as the number 0 (fuzzing found
        // `"output_len":,` read as 0): a number has a digit.
        if !self.b[self.i..self.i + n].iter().any(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(v)
    }

    /// `[number, ...]` into `out`.
    fn numbers(&mut self, out: &mut Vec<f64>) -> Option<()> {
        self.sequence(b'[', b']', |c| {
            out.push(c.number()?);
            Some(())
        })
    }

    /// `null`, or an integer that fits an i64 (JSON grammar). A fraction or exponent after it
    /// stops the caller at the next delimiter, so `3.0` and `1e5` are left to serde.
    fn int_or_null(&mut self) -> Option<Option<i64>> {
        const OPTIONS: lexical_core::ParseIntegerOptions = lexical_core::ParseIntegerOptions::new();
        if self.literal(b"null") {
            return Some(None);
        }
        self.lexical::<i64>(&OPTIONS).map(Some)
    }

    /// Any other value, skipped (and validated) by serde_json.
    fn skip_value(&mut self) -> Option<()> {
        let mut values =
            serde_json::Deserializer::from_slice(&self.b[self.i..]).into_iter::<IgnoredAny>();
        values.next()?.ok()?;
        self.i += values.byte_offset();
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s` read as exactly one request record (whitespace may follow it).
    fn read_all(s: &str) -> Option<(Fields, Vec<f64>)> {
        let mut itl = vec![9.0];
        let (f, n) = request_prefix(s.as_bytes(), &mut itl)?;
        s.as_bytes()[n..]
            .trim_ascii()
            .is_empty()
            .then_some((f, itl))
    }

    /// A member without a value is not JSON: never read (fuzzing found `"output_len":,` read).
    #[test]
    fn a_missing_value_is_refused() {
        for s in [
            r#"{"success": true, "output_len":, "prompt": "x"}"#,
            r#"{"success": true, "output_len": }"#,
            r#"{"success":, "output_len": 3}"#,
            r#"{"itl":, "output_len": 3}"#,
            r#"{"output_len": -}"#,
        ] {
            assert_eq!(read_all(s), None, "{s}");
        }
    }

    #[test]
    fn the_usual_shape() {
        let (f, itl) = read_all(
            "{\n  \"prompt\": \"a \\\"quoted\\\" [prompt] {x}\",\n  \"success\": true,\n  \"itl\": [\n    0,\n    \
             0.041204837895929813,\n    1.2e-05,\n    -0,\n    3\n  ],\n  \"output_len\": 5,\n  \
             \"latency\": 12.5, \"extra\": {\"a\": [1, null, \"]\"]}\n}\n",
        )
        .expect("usual shape");
        assert_eq!(
            f,
            Fields {
                success: true,
                output_len: Some(5)
            }
        );
        let long: f64 = "0.041204837895929813".parse().unwrap();
        assert_eq!(itl, vec![0.0, long, 1.2e-05, -0.0, 3.0]);
        assert!(itl[3].is_sign_negative());
        let (f, itl) = read_all(r#"{"success": false, "output_len": null}"#).unwrap();
        assert_eq!(
            f,
            Fields {
                success: false,
                output_len: None
            }
        );
        assert!(itl.is_empty());
        assert_eq!(
            read_all("{}").unwrap().0,
            Fields {
                success: false,
                output_len: None
            }
        );
    }

    #[test]
    fn every_float_is_the_correctly_rounded_double() {
        // Long mantissas, exponents, subnormals, integers beyond 2^53 and beyond u64.
        let texts = [
            "0.1",
            "0.041204837895929813",
            "1.7976931348623157e308",
            "2.2250738585072011e-308",
            "4.9e-324",
            "9007199254740993",
            "123456789012345678901234567890",
            "0.30000000000000004441",
            "1E+2",
            "-12.5e-3",
        ];
        let list = format!("{{\"itl\": [{}]}}", texts.join(", "));
        let (_, itl) = read_all(&list).unwrap();
        let want: Vec<f64> = texts.iter().map(|t| t.parse().unwrap()).collect();
        assert_eq!(itl.len(), want.len());
        for (got, want) in itl.iter().zip(&want) {
            assert_eq!(got.to_bits(), want.to_bits());
        }
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        for s in [
            // Other types for the three keys.
            r#"{"success": 1}"#,
            r#"{"success": "yes"}"#,
            r#"{"output_len": 3.0}"#,
            r#"{"output_len": "3"}"#,
            r#"{"output_len": 99999999999999999999}"#,
            r#"{"itl": [0.1, "0.2"]}"#,
            r#"{"itl": [0.1, null]}"#,
            r#"{"itl": "0.1"}"#,
            // Repeated or escaped keys.
            r#"{"itl": [1], "itl": [2]}"#,
            r#"{"succ\u0065ss": true}"#,
            // Out of range, and not JSON.
            r#"{"itl": [1e400]}"#,
            r#"{"itl": [01]}"#,
            r#"{"itl": [1.]}"#,
            r#"{"itl": [.5]}"#,
            r#"{"itl": [+1]}"#,
            r#"{"itl": [NaN]}"#,
            r#"{"itl": [1,]}"#,
            r#"{"itl": [1] "success": true}"#,
            r#"{"prompt": "unterminated}"#,
            r#"{"prompt": "bad \q escape"}"#,
            "{\"prompt\": \"raw\ncontrol\"}",
            r#"{"a": 1,}"#,
            r#"{"a": 1} x"#,
            r#"[1, 2]"#,
            "7",
        ] {
            assert_eq!(read_all(s), None, "{s}");
        }
    }

    #[test]
    fn points_are_reserved_exactly() {
        let text = "[\n  [\n    1.5,\n    200\n  ],\n  [2, 201.25], [3,4]\n]";
        let p = points(text.as_bytes()).unwrap();
        assert_eq!(p, vec![(1.5, 200.0), (2.0, 201.25), (3.0, 4.0)]);
        assert_eq!(p.capacity(), 3);
        assert_eq!(points(b" [] ").unwrap().capacity(), 0);
        assert_eq!(points(b"[[1, 2]] x"), None);
    }
}
