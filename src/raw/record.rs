//! A hand-written reader for the usual shape of one request record of an LLM `results.json`:
//! an object whose `success` is `true`/`false`, whose `output_len` is an integer or `null` and
//! whose `itl` is a list of numbers. Those three are read here in one pass (the `itl` numbers are
//! most of the bytes of a large file), and every other value is skipped by serde_json, which
//! validates it as before.
//!
//! Anything else (another type for one of the three keys, a repeated key, an escaped key, a
//! number out of range, malformed JSON) answers `None`, and the caller reads the record through
//! the serde visitors, whose answer or error is the reference. So this reader never decides an
//! edge case; it only makes the common case fast.

use serde::de::IgnoredAny;

/// What the toolkit reads of a record in the usual shape (the `itl` numbers go to a buffer).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Fields {
    /// `bool(req.get("success", False))`.
    pub success: bool,
    /// `req.get("output_len")` when an integer; `None` when missing or `null`.
    pub output_len: Option<i64>,
}

/// Read `rec` (exactly one JSON value, possibly with surrounding whitespace), putting its `itl`
/// numbers into `itl` (cleared first; left empty when the key is missing). `None`: not the usual
/// shape, or not valid JSON; read it with serde instead.
pub(super) fn read(rec: &[u8], itl: &mut Vec<f64>) -> Option<Fields> {
    itl.clear();
    let mut c = Cursor { b: rec, i: 0 };
    let mut fields = Fields {
        success: false,
        output_len: None,
    };
    let mut seen = 0u8;
    let mut once = |bit: u8| {
        let first = seen & bit == 0;
        seen |= bit;
        first.then_some(())
    };
    c.ws();
    c.eat(b'{')?;
    c.ws();
    if c.peek() == Some(b'}') {
        c.i += 1;
    } else {
        loop {
            let key = c.key()?;
            c.ws();
            c.eat(b':')?;
            c.ws();
            match key {
                b"success" => {
                    once(1)?;
                    fields.success = c.boolean()?;
                }
                b"itl" => {
                    once(2)?;
                    c.numbers(itl)?;
                }
                b"output_len" => {
                    once(4)?;
                    fields.output_len = c.int_or_null()?;
                }
                _ => c.skip_value()?,
            }
            c.ws();
            match c.next()? {
                b',' => c.ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    c.ws();
    (c.i == rec.len()).then_some(fields)
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

    /// JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
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

    /// The end of a JSON number starting here, and whether it is an integer (no fraction or
    /// exponent); `None` where the grammar is broken (`01` reads as `0`, and the caller then
    /// finds no delimiter).
    fn number_end(&self) -> Option<(usize, bool)> {
        let b = self.b;
        let digits = |mut i: usize| {
            while let Some(b'0'..=b'9') = b.get(i) {
                i += 1;
            }
            i
        };
        let mut i = self.i;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        i = match b.get(i)? {
            b'0' => i + 1,
            b'1'..=b'9' => digits(i + 1),
            _ => return None,
        };
        let mut integer = true;
        if b.get(i) == Some(&b'.') {
            integer = false;
            let end = digits(i + 1);
            if end == i + 1 {
                return None;
            }
            i = end;
        }
        if let Some(b'e' | b'E') = b.get(i) {
            integer = false;
            i += 1;
            if let Some(b'+' | b'-') = b.get(i) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return None;
            }
            i = end;
        }
        Some((i, integer))
    }

    /// A number as Python's `float()` of what `json` parsed: the correctly rounded double (an
    /// integer too converts with one rounding). Out of range (serde_json refuses it): `None`.
    fn number(&mut self) -> Option<f64> {
        let (end, _) = self.number_end()?;
        let token = &self.b[self.i..end];
        let v = if token == b"0" {
            0.0
        } else {
            lexical_core::parse::<f64>(token).ok()?
        };
        self.i = end;
        v.is_finite().then_some(v)
    }

    /// `[number, ...]` into `out`.
    fn numbers(&mut self, out: &mut Vec<f64>) -> Option<()> {
        self.eat(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Some(());
        }
        loop {
            out.push(self.number()?);
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Some(()),
                _ => return None,
            }
        }
    }

    /// `null`, or an integer token that fits an i64.
    fn int_or_null(&mut self) -> Option<Option<i64>> {
        if self.literal(b"null") {
            return Some(None);
        }
        let (end, integer) = self.number_end()?;
        if !integer {
            return None;
        }
        let v = std::str::from_utf8(&self.b[self.i..end])
            .ok()?
            .parse()
            .ok()?;
        self.i = end;
        Some(Some(v))
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

    fn read_all(s: &str) -> Option<(Fields, Vec<f64>)> {
        let mut itl = vec![9.0];
        read(s.as_bytes(), &mut itl).map(|f| (f, itl))
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
}
