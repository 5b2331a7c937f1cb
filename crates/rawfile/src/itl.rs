//! Inter-token latencies (docs/toolkit.md §11.2): the chunked-prefill smoothing of one
//! request's `itl` list, and the run-level statistics over the pooled smoothed values.

use mlenergy_pycompat::numpy::{np_mean, np_percentiles};

/// Spread each positive gap over the exact zeros that follow it (tokens that arrived in the same
/// chunk): `v` followed by `z` zeros becomes `z + 1` copies of `v / (z + 1)`. Leading non-positive
/// values are dropped, other non-positive values not absorbed by a preceding positive are
/// skipped, and a negative value does not extend a zero run. NaN and infinities pass through.
pub fn smooth_chunked_itl(itl: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(itl.len());
    smooth_into(itl, &mut out);
    out
}

/// `smooth_chunked_itl`, appending to `out` (a run's pool grows request by request).
pub fn smooth_into(itl: &[f64], out: &mut Vec<f64>) {
    let Some(first) = itl.iter().position(|&v| v > 0.0) else {
        return;
    };
    let a = &itl[first..];
    let mut i = 0;
    while i < a.len() {
        let v = a[i];
        if v <= 0.0 {
            i += 1;
            continue;
        }
        let zeros = a[i + 1..].iter().take_while(|&&x| x == 0.0).count();
        if zeros == 0 {
            out.push(v);
        } else {
            let share = v / (zeros + 1) as f64;
            out.extend(std::iter::repeat_n(share, zeros + 1));
        }
        i += zeros + 1;
    }
}

/// Run-level ITL statistics in milliseconds, as the LLM row fields hold them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItlStats {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

/// Statistics over a pool of smoothed ITLs in seconds (numpy mean and linear percentiles, then
/// x 1000); `None` for an empty pool, which makes the toolkit drop the run.
pub fn itl_stats(pool: &[f64]) -> Option<ItlStats> {
    let p = np_percentiles(pool, &[50.0, 90.0, 95.0, 99.0])?;
    Some(ItlStats {
        mean_ms: np_mean(pool)? * 1000.0,
        p50_ms: p[0] * 1000.0,
        p90_ms: p[1] * 1000.0,
        p95_ms: p[2] * 1000.0,
        p99_ms: p[3] * 1000.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_vectors() {
        let third = 0.01 / 3.0;
        assert_eq!(
            smooth_chunked_itl(&[0.01, 0.0, 0.0, 0.02]),
            vec![third, third, third, 0.02]
        );
        assert_eq!(
            smooth_chunked_itl(&[0.0, 0.0, 100.0, 0.0, 0.0, 0.0]),
            vec![25.0; 4]
        );
        assert_eq!(
            smooth_chunked_itl(&[100.0, 0.0, 50.0, 0.0]),
            vec![50.0, 50.0, 25.0, 25.0]
        );
        let fifty_thirds = 50.0 / 3.0;
        assert_eq!(
            smooth_chunked_itl(&[100.0, 50.0, 0.0, 0.0]),
            vec![100.0, fifty_thirds, fifty_thirds, fifty_thirds]
        );
        assert_eq!(
            smooth_chunked_itl(&[25.0, 30.0, 0.0]),
            vec![25.0, 15.0, 15.0]
        );
        assert_eq!(smooth_chunked_itl(&[0.0, 0.0]), Vec::<f64>::new());
        assert_eq!(smooth_chunked_itl(&[10.0, -1.0, 0.0]), vec![10.0]);
        assert_eq!(smooth_chunked_itl(&[]), Vec::<f64>::new());
        assert_eq!(smooth_chunked_itl(&[-1.0, 2.0]), vec![2.0]);
        // Checked against mlenergy-data 0.4.0's _smooth_chunked_itl: zeros after a negative are
        // dropped, and a leading NaN goes with the other values before the first positive.
        assert_eq!(
            smooth_chunked_itl(&[1.0, 0.0, -1.0, 0.0, 0.0, 3.0]),
            vec![0.5, 0.5, 3.0]
        );
        assert_eq!(smooth_chunked_itl(&[f64::NAN, 1.0, 0.0]), vec![0.5, 0.5]);
    }

    #[test]
    fn non_finite_values_pass_through() {
        let out = smooth_chunked_itl(&[1.0, f64::INFINITY, 0.0]);
        assert_eq!(out, vec![1.0, f64::INFINITY, f64::INFINITY]);
        let nan = smooth_chunked_itl(&[1.0, f64::NAN]);
        assert_eq!(nan.len(), 2);
        assert!(nan[1].is_nan());
    }

    #[test]
    fn fixture_run_statistics() {
        // docs/toolkit.md §15: requests [0.01,0,0,0.02] and [0.01,0.01].
        let mut pool = smooth_chunked_itl(&[0.01, 0.0, 0.0, 0.02]);
        pool.extend(smooth_chunked_itl(&[0.01, 0.01]));
        let s = itl_stats(&pool).unwrap();
        assert_eq!(s.mean_ms, 8.333333333333334);
        assert_eq!(s.p50_ms, 6.666666666666667);
        assert_eq!(s.p90_ms, 15.0);
        assert_eq!(s.p95_ms, 17.5);
        assert_eq!(s.p99_ms, 19.500000000000004);
        assert_eq!(itl_stats(&[]), None);
    }
}
