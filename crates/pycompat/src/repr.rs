//! Python's `repr(float)`, which the toolkit's stability reasons embed
//! (`short_steady_state:15.3`, `invalid_energy_per_token:1e-05`): the shortest round-trip digits,
//! positional when the decimal exponent is in (-4, 16], else `d.ddde±XX`, and `.0` on integers.

/// `repr(x)` as CPython writes it.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0.0");
    }
    // Shortest round-trip digits from ryu, normalised to 0.DIGITS x 10^decpt.
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(x.abs());
    let (mantissa, exp) = match s.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().expect("ryu exponent")),
        None => (s, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all = format!("{int_part}{frac_part}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0');
    let decpt = int_part.len() as i32 - lead as i32 + exp;
    let n = digits.len() as i32;
    if decpt <= -4 || decpt > 16 {
        let e = decpt - 1;
        let mant = if n == 1 {
            digits.to_string()
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        format!(
            "{sign}{mant}e{}{:02}",
            if e < 0 { '-' } else { '+' },
            e.abs()
        )
    } else if decpt <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-decpt) as usize))
    } else if decpt >= n {
        format!("{sign}{digits}{}.0", "0".repeat((decpt - n) as usize))
    } else {
        format!(
            "{sign}{}.{}",
            &digits[..decpt as usize],
            &digits[decpt as usize..]
        )
    }
}

#[cfg(test)]
mod tests {
    use super::python_float_repr as r;

    #[test]
    fn matches_cpython() {
        // Each right-hand side is what CPython 3.11 prints for repr() of the left-hand side.
        for (x, want) in [
            (15.3, "15.3"),
            (20.0, "20.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.25, "0.25"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1.5e-7, "1.5e-07"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (-2.5, "-2.5"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.1 + 0.2, "0.30000000000000004"),
            (19.999999999999996, "19.999999999999996"),
            (12345.678, "12345.678"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(r(x), want, "{x:e}");
        }
        assert_eq!(r(f64::NAN), "nan");
    }
}
