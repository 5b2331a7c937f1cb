//! Python's conversions of JSON (and YAML) values, as the toolkit applies them to raw files:
//! `float(v)` with `None` on failure, truthiness, `int(v)`, and `int(str)` for configuration
//! values (docs/toolkit.md §3, §6).
//!
//! Leaf: imports nothing of the crate.

use serde_json::Value;

/// Python's `int(str)` for configuration values: surrounding whitespace, an optional sign, and
/// `_` between digits are accepted; anything else (`"16.0"`, `"None"`, `""`) gives `None`, as does
/// a value outside i64.
pub fn coerce_int(v: Option<&str>) -> Option<i64> {
    let t = v?.trim();
    let (neg, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    if !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    let n: i64 = clean.parse().ok()?;
    Some(if neg { -n } else { n })
}

/// Python `float(s)` for a string: surrounding whitespace, `inf`/`infinity`/`nan` in any case.
pub fn py_float_str(s: &str) -> Option<f64> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        let neg = lower.starts_with('-');
        let v = if body == "nan" {
            f64::NAN
        } else {
            f64::INFINITY
        };
        return Some(if neg { -v } else { v });
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
    {
        return None;
    }
    t.parse().ok()
}

/// The toolkit's `_safe_float`: Python `float(v)`, `None` on TypeError/ValueError.
pub fn safe_float(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => py_float_str(s),
        _ => None,
    }
}

/// Python truthiness.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// Python `int(v)` of a JSON (or YAML-converted) scalar: numbers truncate (`int(2.7) == 2`),
/// numeric strings parse (`int(" 4 ") == 4`), booleans are 0/1; anything else raises.
pub fn py_int(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| {
                n.as_f64()
                    .filter(|x| x.is_finite())
                    .map(|x| x.trunc() as i64)
            })
            .ok_or_else(|| format!("cannot convert {n} to int")),
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::String(s) => {
            coerce_int(Some(s)).ok_or_else(|| format!("invalid literal for int(): {s:?}"))
        }
        other => Err(format!("int() argument must be a number, not {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_and_truthiness() {
        assert_eq!(safe_float(Some(&Value::from(2))), Some(2.0));
        assert_eq!(safe_float(Some(&Value::from(true))), Some(1.0));
        assert_eq!(safe_float(Some(&Value::from(" 12.5 "))), Some(12.5));
        assert!(safe_float(Some(&Value::from("NaN"))).unwrap().is_nan());
        assert_eq!(
            safe_float(Some(&Value::from("-Infinity"))),
            Some(f64::NEG_INFINITY)
        );
        assert_eq!(safe_float(Some(&Value::from("abc"))), None);
        assert_eq!(safe_float(Some(&Value::Null)), None);
        assert_eq!(safe_float(Some(&serde_json::json!([1]))), None);
        assert_eq!(safe_float(None), None);
        assert!(!truthy(Some(&Value::from(0))) && truthy(Some(&Value::from("x"))) && !truthy(None));
    }

    #[test]
    fn python_int_coercion() {
        for (s, want) in [
            ("16", Some(16)),
            (" 16 ", Some(16)),
            ("+8", Some(8)),
            ("-3", Some(-3)),
            ("1_024", Some(1024)),
            ("16.0", None),
            ("None", None),
            ("", None),
            ("_1", None),
            ("1__0", None),
            ("0x10", None),
        ] {
            assert_eq!(coerce_int(Some(s)), want, "{s:?}");
        }
        assert_eq!(coerce_int(None), None);
    }
}
