//! Numerics that must agree with numpy to the last bit (docs/toolkit.md §18): pairwise
//! summation as in `np.add.reduce` for float64, the mean as sum / n, and the median as numpy's
//! mean of the two middle values.

/// numpy's `pairwise_sum` for contiguous float64: blocks of 8 accumulators up to 128 elements,
/// recursive halving (rounded down to a multiple of 8) above.
fn pairwise(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0;
        for &x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - (n % 8) {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise(&a[..n2]) + pairwise(&a[n2..])
    }
}

/// `np.sum` of a float64 array: the reduction starts from -0.0 and adds the pairwise sum.
pub fn np_sum(a: &[f64]) -> f64 {
    -0.0 + pairwise(a)
}

/// `np.mean`: `np.sum / n`; `None` for an empty slice (numpy would answer NaN with a warning).
pub fn np_mean(a: &[f64]) -> Option<f64> {
    if a.is_empty() {
        None
    } else {
        Some(np_sum(a) / a.len() as f64)
    }
}

/// `np.std(a)` (population, `ddof=0`): the square root of the mean squared deviation from the
/// mean, both means numpy's pairwise ones. `None` for an empty slice.
pub fn np_std(a: &[f64]) -> Option<f64> {
    let m = np_mean(a)?;
    let sq: Vec<f64> = a
        .iter()
        .map(|x| {
            let d = x - m;
            d * d
        })
        .collect();
    Some((np_sum(&sq) / a.len() as f64).sqrt())
}

/// `np.median`: the middle value, or the mean of the two middle values.
pub fn np_median(a: &[f64]) -> Option<f64> {
    if a.is_empty() {
        return None;
    }
    let mut v = a.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        Some(v[n / 2])
    } else {
        np_mean(&v[n / 2 - 1..n / 2 + 1])
    }
}

/// numpy's linear percentile (`np.percentile(a, q)`), with numpy's two-sided lerp so that the
/// endpoints stay exact (§18.1). `None` for an empty slice.
pub fn np_percentile(a: &[f64], q: f64) -> Option<f64> {
    np_percentiles(a, &[q]).map(|v| v[0])
}

/// Several numpy linear percentiles of one array. Only the order statistics they need are
/// found (successive selections, O(n) each), not a whole sort: they are the values a sort would
/// put at those ranks, so the answers are the same.
pub fn np_percentiles(a: &[f64], qs: &[f64]) -> Option<Vec<f64>> {
    if a.is_empty() {
        return None;
    }
    if a.iter().any(|x| x.is_nan()) {
        return Some(vec![f64::NAN; qs.len()]);
    }
    let n = a.len();
    let ranks = |q: &f64| {
        let h = (n - 1) as f64 * (q / 100.0);
        let lo = h.floor() as usize;
        (h, lo, (lo + 1).min(n - 1))
    };
    let mut wanted: Vec<usize> = qs
        .iter()
        .flat_map(|q| {
            let (_, lo, hi) = ranks(q);
            [lo, hi]
        })
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut v = a.to_vec();
    let mut start = 0;
    for &r in &wanted {
        // Everything before `start` is at most v[start - 1], already in place.
        if r >= start {
            v[start..].select_nth_unstable_by(r - start, f64::total_cmp);
            start = r + 1;
        }
    }
    Some(
        qs.iter()
            .map(|q| {
                let (h, lo, hi) = ranks(q);
                let g = h - lo as f64;
                let (a_lo, a_hi) = (v[lo], v[hi]);
                let diff = a_hi - a_lo;
                if g >= 0.5 {
                    a_hi - diff * (1.0 - g)
                } else {
                    a_lo + diff * g
                }
            })
            .collect(),
    )
}

/// `np.histogram(a, bins)` with equal-width bins over [min, max] (or [x - 0.5, x + 0.5] when all
/// values are equal): `bins + 1` edges as `np.linspace`, counts with the last bin closed on the
/// right, and numpy's edge corrections for values that land next to a computed boundary.
pub fn np_histogram(a: &[f64], bins: usize) -> (Vec<f64>, Vec<u64>) {
    let (mut lo, mut hi) = a
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    if a.is_empty() {
        (lo, hi) = (0.0, 1.0);
    }
    if lo == hi {
        (lo, hi) = (lo - 0.5, hi + 0.5);
    }
    // np.linspace(lo, hi, bins + 1): start + i * step, the last edge exactly `hi`.
    let step = (hi - lo) / bins as f64;
    let mut edges: Vec<f64> = (0..=bins).map(|i| lo + i as f64 * step).collect();
    edges[bins] = hi;
    let norm = bins as f64 / (hi - lo);
    let mut counts = vec![0u64; bins];
    for &x in a {
        if !(x >= lo && x <= hi) {
            continue;
        }
        let mut i = (((x - lo) * norm) as usize).min(bins - 1);
        if x < edges[i] {
            i -= 1;
        } else if i != bins - 1 && x >= edges[i + 1] {
            i += 1;
        }
        counts[i] += 1;
    }
    (edges, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sums_are_sequential() {
        assert_eq!(np_sum(&[0.1, 0.2, 0.3]), (0.1 + 0.2) + 0.3);
        assert_eq!(np_sum(&[]), -0.0);
    }

    #[test]
    fn blocked_sum_differs_from_naive_like_numpy() {
        // 0.1 repeated 10 times: numpy's 8-accumulator block gives 1.0, naive summation 0.9999999999999999.
        let a = [0.1; 10];
        assert_eq!(np_sum(&a), 1.0);
        assert_eq!(a.iter().fold(0.0, |s, x| s + x), 0.9999999999999999);
    }

    #[test]
    fn percentile_matches_spec_vector() {
        // docs/toolkit.md §15: pool [1/300,1/300,1/300,0.02,0.01,0.01] s.
        let pool = [1.0 / 300.0, 1.0 / 300.0, 1.0 / 300.0, 0.02, 0.01, 0.01];
        assert_eq!(
            np_percentile(&pool, 99.0).unwrap() * 1000.0,
            19.500000000000004
        );
        assert_eq!(np_percentile(&pool, 90.0).unwrap() * 1000.0, 15.0);
        assert_eq!(np_percentile(&pool, 95.0).unwrap() * 1000.0, 17.5);
        assert_eq!(
            np_percentile(&pool, 50.0).unwrap() * 1000.0,
            6.666666666666667
        );
        assert_eq!(np_mean(&pool).unwrap() * 1000.0, 8.333333333333334);
    }

    #[test]
    fn histogram_like_numpy() {
        let (edges, counts) = np_histogram(&[1.0, 2.0, 2.0, 3.0, 4.0], 3);
        assert_eq!(edges, vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(counts, vec![1, 2, 2]);
        let (edges, counts) = np_histogram(&[5.0, 5.0], 2);
        assert_eq!((edges, counts), (vec![4.5, 5.0, 5.5], vec![0, 2]));
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(np_median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(np_median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(np_median(&[]), None);
    }

    /// Selecting the order statistics gives what a whole sort gives, bit for bit, on arrays with
    /// duplicates, signed zeros, infinities and every length from 1 up.
    #[test]
    fn percentiles_by_selection_equal_a_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let qs = [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0];
        for n in (1..60).chain([97, 1000, 4097]) {
            let v: Vec<f64> = (0..n)
                .map(|_| match next() % 10 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => f64::INFINITY,
                    3 => (next() % 5) as f64,
                    _ => (next() % 1_000_000) as f64 / 977.0 - 300.0,
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let want: Vec<u64> = qs
                .iter()
                .map(|q| {
                    let h = (n - 1) as f64 * (q / 100.0);
                    let lo = h.floor() as usize;
                    let hi = (lo + 1).min(n - 1);
                    let g = h - lo as f64;
                    let d = sorted[hi] - sorted[lo];
                    let x = if g >= 0.5 {
                        sorted[hi] - d * (1.0 - g)
                    } else {
                        sorted[lo] + d * g
                    };
                    x.to_bits()
                })
                .collect();
            let got: Vec<u64> = np_percentiles(&v, &qs)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_eq!(got, want, "n = {n}");
        }
    }
}
