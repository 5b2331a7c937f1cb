//! Repeat statistics: Student's t distribution (exact quantiles and tail probabilities, also at
//! fractional degrees of freedom for Welch), the per-group summary (n, mean, sample std, SEM, 95%
//! interval, CV, min, max, trimmed) and the two-sample Welch comparison.
//!
//! The t quantile is exact (to the last bits of a double), not a table: LLM Energy Measure's table
//! stops at n = 10 and answers 1.96 from n = 11, which understates the interval for small samples.
//! The distribution function is the regularized incomplete beta function, I_x(ν/2, 1/2) with
//! x = ν/(ν+t²) for the two-sided tail, evaluated by its continued fraction; the quantile is found by
//! bisection on that tail to the resolution of a double.

use mlenergy_pycompat::numpy::{np_mean, np_sum};

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms; relative error about 1e-15).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz), valid for
/// x < (a+1)/(a+b+2).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let away_from_zero = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / away_from_zero(1.0 - qab * x / qap);
    let mut h = d;
    // One Lentz step with the continued fraction's coefficient `aa`: the factor h is multiplied by.
    let mut step = |aa: f64| {
        d = 1.0 / away_from_zero(1.0 + aa * d);
        c = away_from_zero(1.0 + aa / c);
        d * c
    };
    for m in 1..100_000 {
        let m = m as f64;
        let m2 = 2.0 * m;
        h *= step(m * (b - m) * x / ((qam + m2) * (a + m2)));
        let del = step(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// ln(Γ(a+½)/Γ(a)) without the cancellation of two large log-gammas: for a ≥ 10 from Stirling's
/// series (the ratio's leading terms in closed form, the series' corrections to x⁻¹⁵), else directly.
fn ln_gamma_half_ratio(a: f64) -> f64 {
    if a < 10.0 {
        return ln_gamma(a + 0.5) - ln_gamma(a);
    }
    // S(x) = lnΓ(x) − ((x−½)ln x − x + ½ln 2π), the Stirling remainder.
    fn stirling(x: f64) -> f64 {
        let x2 = x * x;
        let mut term = 1.0 / x;
        let mut s = 0.0;
        for c in [
            1.0 / 12.0,
            -1.0 / 360.0,
            1.0 / 1260.0,
            -1.0 / 1680.0,
            1.0 / 1188.0,
            -691.0 / 360_360.0,
            1.0 / 156.0,
            -3617.0 / 122_400.0,
        ] {
            s += c * term;
            term /= x2;
        }
        s
    }
    a * (0.5 / a).ln_1p() + 0.5 * a.ln() - 0.5 + (stirling(a + 0.5) - stirling(a))
}

/// ln B(a, b).
fn ln_beta(a: f64, b: f64) -> f64 {
    if b == 0.5 {
        0.5 * std::f64::consts::PI.ln() - ln_gamma_half_ratio(a)
    } else {
        ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
    }
}

/// The regularized incomplete beta function I_x(a, b), for a, b > 0, with x and y = 1 − x both
/// given (so that neither loses digits to the subtraction).
fn incomplete_beta_xy(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let ln_front = a * x.ln() + b * y.ln() - ln_beta(a, b);
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, y) / b
    }
}

/// The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 ≤ x ≤ 1.
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    incomplete_beta_xy(a, b, x.clamp(0.0, 1.0), (1.0 - x).clamp(0.0, 1.0))
}

/// Two-sided tail of Student's t: P(|T| ≥ |t|) with `df` degrees of freedom (df > 0, may be
/// fractional). This is the two-sided p-value of a t statistic.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    if t == 0.0 {
        return 1.0;
    }
    let t2 = t * t;
    // x = ν/(ν+t²) and 1 − x = t²/(ν+t²), each computed directly.
    let (x, y) = if t2 < df {
        (1.0 / (1.0 + t2 / df), t2 / (df + t2))
    } else {
        (df / (df + t2), 1.0 / (1.0 + df / t2))
    };
    incomplete_beta_xy(df / 2.0, 0.5, x, y)
}

/// The quantile t(p, df) of Student's t for 0.5 < p < 1 and df > 0 (fractional allowed): the value
/// whose upper tail is 1 − p. `None` outside that domain.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(p > 0.5 && p < 1.0 && df > 0.0 && df.is_finite()) {
        return None;
    }
    let target = 2.0 * (1.0 - p);
    // Bracket: the two-sided tail falls as t grows.
    let mut hi = 2.0;
    while t_two_sided_p(hi, df) > target {
        hi *= 2.0;
        if hi > 1e300 {
            return None;
        }
    }
    let mut lo = 0.0;
    // Bisection to adjacent doubles.
    for _ in 0..2_000 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if t_two_sided_p(mid, df) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // Of the two neighbours, the one whose tail is nearer the target.
    let (dl, dh) = (
        (t_two_sided_p(lo, df) - target).abs(),
        (t_two_sided_p(hi, df) - target).abs(),
    );
    Some(if dl < dh { lo } else { hi })
}

/// Summary statistics of one group of repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for n = 1.
    pub std: f64,
    /// std / √n.
    pub sem: f64,
    /// t(0.975, n − 1); `None` for n = 1 (no interval).
    pub t: Option<f64>,
    /// mean ± t·SEM; the mean itself for n = 1.
    pub ci95_lo: f64,
    pub ci95_hi: f64,
    /// std / |mean|; 0 when the mean is 0.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
}

/// Statistics of the values (NaN and infinities must be dropped by the caller). `None` when empty.
pub fn describe(values: &[f64]) -> Option<Describe> {
    let n = values.len();
    let mean = np_mean(values)?;
    let std = if n > 1 {
        let dev: Vec<f64> = values.iter().map(|x| (x - mean) * (x - mean)).collect();
        (np_sum(&dev) / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let sem = std / (n as f64).sqrt();
    let t = if n > 1 {
        t_quantile(0.975, (n - 1) as f64)
    } else {
        None
    };
    let half = t.map_or(0.0, |t| t * sem);
    Some(Describe {
        n,
        mean,
        std,
        sem,
        t,
        ci95_lo: mean - half,
        ci95_hi: mean + half,
        cv: if mean == 0.0 { 0.0 } else { std / mean.abs() },
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// How many values `trim` drops from each end of a sorted group of `n`: none when `trim` is 0 or
/// n < 4, else max(1, ⌊trim·n⌋) (the rule of IPW's `normalized_statistics`), never leaving fewer
/// than two values.
pub fn trim_count(n: usize, trim: f64) -> usize {
    if trim <= 0.0 || n < 4 {
        return 0;
    }
    let k = ((trim * n as f64).floor() as usize).max(1);
    k.min((n - 2) / 2)
}

/// The values without the `trim_count` lowest and highest (order of the rest: ascending).
pub fn trimmed(values: &[f64], trim: f64) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let k = trim_count(v.len(), trim);
    v[k..v.len() - k].to_vec()
}

/// A two-sample comparison, A − B, with Welch's unequal-variance t test.
#[derive(Debug, Clone, PartialEq)]
pub struct Welch {
    pub difference: f64,
    /// mean_a / mean_b (`None` when mean_b is 0).
    pub ratio: Option<f64>,
    /// √(s_a²/n_a + s_b²/n_b).
    pub se: f64,
    /// Welch–Satterthwaite degrees of freedom; `None` when both variances are 0 or a group has one value.
    pub df: Option<f64>,
    pub t_statistic: Option<f64>,
    /// Two-sided p-value.
    pub p_value: Option<f64>,
    /// difference ± t(0.975, df)·se.
    pub ci95_lo: Option<f64>,
    pub ci95_hi: Option<f64>,
    /// Cohen's d with the pooled standard deviation.
    pub cohens_d: Option<f64>,
    /// Hedges' g: d with the small-sample correction 1 − 3/(4(n_a+n_b) − 9).
    pub hedges_g: Option<f64>,
}

/// Welch's comparison of two described groups.
pub fn welch(a: &Describe, b: &Describe) -> Welch {
    let difference = a.mean - b.mean;
    let (na, nb) = (a.n as f64, b.n as f64);
    let (va, vb) = (a.std * a.std / na, b.std * b.std / nb);
    let se = (va + vb).sqrt();
    let df = (a.n > 1 && b.n > 1 && se > 0.0)
        .then(|| (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0)));
    let t_statistic = df.map(|_| difference / se);
    let p_value = df.zip(t_statistic).map(|(df, t)| t_two_sided_p(t, df));
    let half = df.and_then(|df| t_quantile(0.975, df)).map(|t| t * se);
    let pooled = (a.n + b.n > 2).then(|| {
        (((na - 1.0) * a.std * a.std + (nb - 1.0) * b.std * b.std) / (na + nb - 2.0)).sqrt()
    });
    let cohens_d = pooled.filter(|s| *s > 0.0).map(|s| difference / s);
    let hedges_g = cohens_d
        .filter(|_| a.n + b.n > 3)
        .map(|d| d * (1.0 - 3.0 / (4.0 * (na + nb) - 9.0)));
    Welch {
        difference,
        ratio: (b.mean != 0.0).then(|| a.mean / b.mean),
        se,
        df,
        t_statistic,
        p_value,
        ci95_lo: half.map(|h| difference - h),
        ci95_hi: half.map(|h| difference + h),
        cohens_d,
        hedges_g,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn known_quantiles() {
        // Classic table values (to their printed digits) and the normal limit.
        assert!(close(
            t_quantile(0.975, 1.0).unwrap(),
            12.706_204_736_174_7,
            1e-13
        ));
        assert!(close(
            t_quantile(0.975, 2.0).unwrap(),
            4.302_652_729_749_464,
            1e-13
        ));
        assert!(close(
            t_quantile(0.975, 10.0).unwrap(),
            2.228_138_851_986_274,
            1e-13
        ));
        assert!(close(t_quantile(0.975, 1e7).unwrap(), 1.959_964_3, 1e-6));
        assert_eq!(t_quantile(0.975, 0.0), None);
        assert_eq!(t_quantile(0.4, 3.0), None);
    }

    #[test]
    fn two_sided_p_is_the_inverse_of_the_quantile() {
        for df in [1.0, 2.5, 7.0, 30.0, 123.4] {
            let t = t_quantile(0.975, df).unwrap();
            assert!(close(t_two_sided_p(t, df), 0.05, 1e-12), "df {df}");
        }
        assert_eq!(t_two_sided_p(0.0, 3.0), 1.0);
    }

    #[test]
    fn describe_matches_hand_values() {
        let d = describe(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(d.n, 4);
        assert_eq!(d.mean, 2.5);
        assert!(close(d.std, (5.0f64 / 3.0).sqrt(), 1e-15));
        assert!(close(d.sem, d.std / 2.0, 1e-15));
        let t = t_quantile(0.975, 3.0).unwrap();
        assert!(close(d.ci95_hi, 2.5 + t * d.sem, 1e-15));
        assert!(close(d.cv, d.std / 2.5, 1e-15));
        assert_eq!((d.min, d.max), (1.0, 4.0));
        let one = describe(&[5.0]).unwrap();
        assert_eq!(
            (one.std, one.t, one.ci95_lo, one.ci95_hi),
            (0.0, None, 5.0, 5.0)
        );
        assert_eq!(describe(&[]), None);
        assert_eq!(describe(&[0.0, 0.0]).unwrap().cv, 0.0);
    }

    #[test]
    fn trimming_follows_ipw() {
        assert_eq!(trim_count(3, 0.05), 0);
        assert_eq!(trim_count(4, 0.05), 1);
        assert_eq!(trim_count(40, 0.05), 2);
        assert_eq!(trim_count(100, 0.1), 10);
        assert_eq!(trim_count(10, 0.0), 0);
        assert_eq!(
            trimmed(&[9.0, 1.0, 5.0, 3.0, 100.0], 0.05),
            vec![3.0, 5.0, 9.0]
        );
    }

    #[test]
    fn welch_matches_a_hand_computation() {
        // Two groups with known variances: a = [1,2,3,4] (s² = 5/3), b = [2,4,6] (s² = 4).
        let a = describe(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        let b = describe(&[2.0, 4.0, 6.0]).unwrap();
        let w = welch(&a, &b);
        let (va, vb): (f64, f64) = (5.0 / 3.0 / 4.0, 4.0 / 3.0);
        assert!(close(w.se, (va + vb).sqrt(), 1e-15));
        let df = (va + vb) * (va + vb) / (va * va / 3.0 + vb * vb / 2.0);
        assert!(close(w.df.unwrap(), df, 1e-14));
        assert!(close(
            w.t_statistic.unwrap(),
            -1.5 / (va + vb).sqrt(),
            1e-15
        ));
        let pooled = ((3.0 * 5.0 / 3.0 + 2.0 * 4.0) / 5.0f64).sqrt();
        assert!(close(w.cohens_d.unwrap(), -1.5 / pooled, 1e-15));
        assert!(close(
            w.hedges_g.unwrap(),
            -1.5 / pooled * (1.0 - 3.0 / 19.0),
            1e-15
        ));
        assert_eq!(w.ratio, Some(2.5 / 4.0));
        assert!(w.p_value.unwrap() > 0.0 && w.p_value.unwrap() < 1.0);
    }
}
