//! The two-component log-normal mixture of inter-token latencies (docs/toolkit.md §12.2):
//! ITL = loc + Y, Y log-normal "steady" with probability pi_steady, else log-normal "stall". Fitted
//! as the toolkit fits it: the samples shifted by loc, logged, and a two-component Gaussian
//! mixture fitted to the logs by at most 80 EM iterations from a fixed start.
//!
//! Random draws (subsampling, `sample_one`, `sample_avg`) come from ChaCha8 seeded with `seed`,
//! not from numpy's PCG64: the same distributions, other streams.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Normal};
use serde::{Deserialize, Serialize};

use mlenergy_pycompat::numpy::{np_mean, np_percentile, np_std, np_sum};

/// Fitted parameters, in the toolkit's `to_dict` order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ItlMixtureModel {
    pub loc: f64,
    pub pi_steady: f64,
    pub sigma_steady: f64,
    pub scale_steady: f64,
    pub pi_stall: f64,
    pub sigma_stall: f64,
    pub scale_stall: f64,
}

/// The seven parameter names, in order.
pub const PARAMETERS: [&str; 7] = [
    "loc",
    "pi_steady",
    "sigma_steady",
    "scale_steady",
    "pi_stall",
    "sigma_stall",
    "scale_stall",
];

/// EM iterations at most (there is no tolerance test; a component that loses all its weight stops
/// it early).
pub const MAX_ITERATIONS: usize = 80;

/// Below this many replicas `sample_avg` averages exact draws; above it, a normal from the
/// analytic mean and variance (the central limit theorem).
pub const EXACT_THRESHOLD: usize = 30;

/// The parameters of a fit with no samples.
pub const DEFAULT: ItlMixtureModel = ItlMixtureModel {
    loc: 0.0,
    pi_steady: 1.0,
    sigma_steady: 0.1,
    scale_steady: 1e-3,
    pi_stall: 0.0,
    sigma_stall: 0.1,
    scale_stall: 2e-3,
};

fn lognormal_mean_var(sigma: f64, scale: f64) -> (f64, f64) {
    let s2 = sigma * sigma;
    (
        scale * (0.5 * s2).exp(),
        (scale * scale) * (s2.exp() - 1.0) * s2.exp(),
    )
}

/// A seeded random stream.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

impl ItlMixtureModel {
    /// The weights normalised by `max(pi_steady + pi_stall, 1e-12)`.
    fn weights(&self) -> (f64, f64) {
        let ps = (self.pi_steady + self.pi_stall).max(1e-12);
        (self.pi_steady / ps, self.pi_stall / ps)
    }

    /// The mixture's mean and variance in seconds, analytic.
    pub fn mean_var(&self) -> (f64, f64) {
        let (p1, p2) = self.weights();
        let (m1, v1) = lognormal_mean_var(self.sigma_steady, self.scale_steady);
        let (m2, v2) = lognormal_mean_var(self.sigma_stall, self.scale_stall);
        let m1x = self.loc + m1;
        let m2x = self.loc + m2;
        let mx = p1 * m1x + p2 * m2x;
        let ex2 = p1 * (v1 + m1x * m1x) + p2 * (v2 + m2x * m2x);
        (mx, (ex2 - mx * mx).max(0.0))
    }

    /// One ITL draw: a uniform picks the component, then a log-normal draw from it.
    pub fn sample_one(&self, rng: &mut impl Rng) -> f64 {
        let (p1, _) = self.weights();
        let (scale, sigma) = if rng.random::<f64>() < p1 {
            (self.scale_steady, self.sigma_steady)
        } else {
            (self.scale_stall, self.sigma_stall)
        };
        let mu = scale.max(1e-15).ln();
        let y = match LogNormal::new(mu, sigma.max(0.0)) {
            Ok(d) => d.sample(rng),
            Err(_) => f64::NAN,
        };
        self.loc + y
    }

    /// The mean ITL over `n_replicas` replicas: NaN for none, the mean of exact draws up to
    /// `EXACT_THRESHOLD`, else a normal draw with the analytic mean and variance / n, at least 0.
    pub fn sample_avg(&self, n_replicas: i64, rng: &mut impl Rng) -> f64 {
        if n_replicas <= 0 {
            return f64::NAN;
        }
        let n = n_replicas as usize;
        if n <= EXACT_THRESHOLD {
            let draws: Vec<f64> = (0..n).map(|_| self.sample_one(rng)).collect();
            return np_mean(&draws).unwrap_or(f64::NAN);
        }
        let (mu, var) = self.mean_var();
        let sd = (var / n as f64).max(0.0).sqrt();
        let x = match Normal::new(mu, sd) {
            Ok(d) => d.sample(rng),
            Err(_) => f64::NAN,
        };
        x.max(0.0)
    }

    /// The toolkit's fit: finite positive samples only; with `max_samples`, a random subset of
    /// that many (without replacement, seeded) when there are more.
    pub fn fit(samples: &[f64], max_samples: Option<usize>, seed: u64) -> ItlMixtureModel {
        let mut x: Vec<f64> = samples
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        if let Some(m) = max_samples
            && x.len() > m
        {
            x = subsample(&x, m, seed);
        }
        Self::fit_all(&x)
    }

    /// The fit of every sample given (already finite and positive).
    fn fit_all(x: &[f64]) -> ItlMixtureModel {
        if x.is_empty() {
            return DEFAULT;
        }
        let min = x.iter().copied().fold(f64::INFINITY, f64::min);
        let loc = (min - 1e-6).max(0.0);
        let z: Vec<f64> = x.iter().map(|v| (v - loc).max(1e-12).ln()).collect();
        let n = z.len();
        let sd = np_std(&z).unwrap_or(f64::NAN);
        if n < 5 || sd < 1e-6 {
            let m = np_mean(&z).unwrap_or(f64::NAN);
            let s = sd.max(0.1);
            return ItlMixtureModel {
                loc,
                pi_steady: 1.0,
                sigma_steady: s,
                scale_steady: m.exp(),
                pi_stall: 0.0,
                sigma_stall: s,
                scale_stall: (m + s).exp(),
            };
        }
        let mut mu1 = np_percentile(&z, 35.0).unwrap_or(f64::NAN);
        let mut mu2 = np_percentile(&z, 85.0).unwrap_or(f64::NAN);
        let mut s1 = (sd * 0.5).max(0.1);
        let mut s2 = sd.max(0.1);
        let (mut pi1, mut pi2) = (0.8, 0.2);
        let (mut r1, mut r2) = (vec![0.0; n], vec![0.0; n]);
        let mut buf = vec![0.0; n];
        for _ in 0..MAX_ITERATIONS {
            for (i, &zi) in z.iter().enumerate() {
                let a = (zi - mu1) / s1;
                let b = (zi - mu2) / s2;
                let p1 = pi1 * (-0.5 * (a * a)).exp() / (s1 + 1e-12);
                let p2 = pi2 * (-0.5 * (b * b)).exp() / (s2 + 1e-12);
                let den = p1 + p2 + 1e-12;
                r1[i] = p1 / den;
                r2[i] = p2 / den;
            }
            let w1 = np_sum(&r1);
            let w2 = np_sum(&r2);
            if w1 <= 1e-9 || w2 <= 1e-9 {
                break;
            }
            pi1 = w1 / n as f64;
            pi2 = 1.0 - pi1;
            let weighted = |r: &[f64], buf: &mut Vec<f64>, f: &dyn Fn(f64) -> f64| {
                for ((b, ri), zi) in buf.iter_mut().zip(r).zip(&z) {
                    *b = ri * f(*zi);
                }
                np_sum(buf)
            };
            mu1 = weighted(&r1, &mut buf, &|zi| zi) / w1;
            mu2 = weighted(&r2, &mut buf, &|zi| zi) / w2;
            let (m1, m2) = (mu1, mu2);
            s1 = (weighted(&r1, &mut buf, &|zi| (zi - m1) * (zi - m1)) / w1)
                .sqrt()
                .max(0.05);
            s2 = (weighted(&r2, &mut buf, &|zi| (zi - m2) * (zi - m2)) / w2)
                .sqrt()
                .max(0.05);
        }
        if mu1 <= mu2 {
            ItlMixtureModel {
                loc,
                pi_steady: pi1,
                sigma_steady: s1,
                scale_steady: mu1.exp(),
                pi_stall: pi2,
                sigma_stall: s2,
                scale_stall: mu2.exp(),
            }
        } else {
            ItlMixtureModel {
                loc,
                pi_steady: pi2,
                sigma_steady: s2,
                scale_steady: mu2.exp(),
                pi_stall: pi1,
                sigma_stall: s1,
                scale_stall: mu1.exp(),
            }
        }
    }

    /// The seven parameters' values, in `PARAMETERS`' order.
    pub fn parameters(&self) -> [f64; 7] {
        [
            self.loc,
            self.pi_steady,
            self.sigma_steady,
            self.scale_steady,
            self.pi_stall,
            self.sigma_stall,
            self.scale_stall,
        ]
    }

    /// From the toolkit's `to_dict` shape, each key as is or with the `itl_mix_` prefix (the plain
    /// key preferred); `None` names the first key that is missing or not a number.
    pub fn from_map(get: impl Fn(&str) -> Option<f64>) -> Result<ItlMixtureModel, String> {
        let read = |key: &str| {
            get(key)
                .or_else(|| get(&format!("itl_mix_{key}")))
                .ok_or_else(|| key.to_string())
        };
        Ok(ItlMixtureModel {
            loc: read("loc")?,
            pi_steady: read("pi_steady")?,
            sigma_steady: read("sigma_steady")?,
            scale_steady: read("scale_steady")?,
            pi_stall: read("pi_stall")?,
            sigma_stall: read("sigma_stall")?,
            scale_stall: read("scale_stall")?,
        })
    }
}

/// `m` of `x` drawn without replacement (a partial Fisher–Yates shuffle), in the order drawn.
fn subsample(x: &[f64], m: usize, seed: u64) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    let mut r = rng(seed);
    for i in 0..m {
        let j = r.random_range(i..idx.len());
        idx.swap(i, j);
    }
    idx[..m].iter().map(|&i| x[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs())
    }

    /// docs/toolkit.md §15 reference values.
    #[test]
    fn reference_values() {
        let d = ItlMixtureModel::fit(&[], None, 0);
        assert_eq!(d, DEFAULT);
        let (m, v) = d.mean_var();
        assert!(close(m, 0.001005012520859401, 1e-12) && close(v, 1.0151172942587619e-08, 1e-9));

        let f = ItlMixtureModel::fit(&[0.01; 10], None, 0);
        assert_eq!(f.loc, 0.009999000000000001);
        assert_eq!((f.pi_steady, f.sigma_steady, f.pi_stall), (1.0, 0.1, 0.0));
        assert!(
            close(f.scale_steady, 9.999999999992652e-07, 1e-9),
            "{}",
            f.scale_steady
        );
        assert!(close(f.scale_stall, 1.105170918074835e-06, 1e-9));
        assert!(close(f.mean_var().0, 0.01000000501252086, 1e-9));

        let f = ItlMixtureModel::fit(&[0.02, 0.03], None, 0);
        assert!(close(f.loc, 0.019999, 1e-12));
        assert!(close(f.sigma_steady, 4.6052201834877575, 1e-9));
        assert_eq!(f.sigma_steady, f.sigma_stall);
        assert!(close(f.scale_steady, 1.0000499987505626e-4, 1e-9));
        assert!(close(f.scale_stall, 0.010000999999999996, 1e-9));
        let (m, v) = f.mean_var();
        assert!(
            close(m, 4.0498769684802625, 1e-9) && close(v, 2.637e10, 1e-3),
            "{m} {v}"
        );

        let mut x: Vec<f64> = (0..100).map(|i| 0.010 + 0.0001 * i as f64).collect();
        x.extend((0..20).map(|i| 0.05 + 0.001 * i as f64));
        let f = ItlMixtureModel::fit(&x, None, 0);
        assert_eq!(f.loc, 0.009999000000000001);
        for (got, want) in [
            (f.pi_steady, 0.57670801),
            (f.sigma_steady, 1.94442713),
            (f.scale_steady, 0.00486229),
            (f.pi_stall, 0.42329199),
            (f.sigma_stall, 0.32435923),
            (f.scale_stall, 0.00621201),
        ] {
            assert!(close(got, want, 1e-6), "{got} vs {want}");
        }
        let (m, v) = f.mean_var();
        assert!(
            close(m, 0.0313394, 1e-5) && close(v, 0.0257826, 1e-5),
            "{m} {v}"
        );
    }

    #[test]
    fn subsampling_is_seeded_and_without_replacement() {
        let x: Vec<f64> = (1..=5000).map(|i| i as f64 * 1e-4).collect();
        let a = subsample(&x, 2048, 7);
        assert_eq!(a, subsample(&x, 2048, 7));
        assert_ne!(a, subsample(&x, 2048, 8));
        let mut sorted = a.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.dedup();
        assert_eq!(sorted.len(), 2048);
        // Fewer samples than the cap: every sample is fitted.
        assert_eq!(
            ItlMixtureModel::fit(&x[..100], Some(2048), 3),
            ItlMixtureModel::fit(&x[..100], None, 0)
        );
    }

    /// The draws follow the model: many sample_avg draws have the analytic mean, and variance / n.
    #[test]
    fn sampling_matches_the_analytic_moments() {
        let m = ItlMixtureModel {
            loc: 0.005,
            pi_steady: 0.7,
            sigma_steady: 0.3,
            scale_steady: 0.01,
            pi_stall: 0.3,
            sigma_stall: 0.5,
            scale_stall: 0.03,
        };
        let (mean, var) = m.mean_var();
        let mut r = rng(1);
        for n in [1i64, 10, 100] {
            let draws: Vec<f64> = (0..200_000).map(|_| m.sample_avg(n, &mut r)).collect();
            let dm = np_mean(&draws).unwrap();
            let dv = np_std(&draws).unwrap().powi(2);
            let want_v = var / n as f64;
            // Standard error of the mean is sqrt(var/n/200000); allow five of them.
            assert!(
                (dm - mean).abs() < 5.0 * (want_v / 200_000.0).sqrt(),
                "n={n}: {dm} vs {mean}"
            );
            assert!(close(dv, want_v, 0.05), "n={n}: {dv} vs {want_v}");
        }
        assert!(m.sample_avg(0, &mut r).is_nan());
    }

    #[test]
    fn from_the_toolkits_dict_shapes() {
        let plain = |k: &str| PARAMETERS.iter().position(|p| *p == k).map(|i| i as f64);
        let m = ItlMixtureModel::from_map(plain).unwrap();
        assert_eq!((m.loc, m.scale_stall), (0.0, 6.0));
        let prefixed = |k: &str| {
            k.strip_prefix("itl_mix_")
                .and_then(|k| PARAMETERS.iter().position(|p| *p == k))
                .map(|i| i as f64 + 10.0)
        };
        assert_eq!(ItlMixtureModel::from_map(prefixed).unwrap().loc, 10.0);
        let missing = |k: &str| (!k.ends_with("sigma_stall")).then_some(1.0);
        assert_eq!(
            ItlMixtureModel::from_map(missing).err().unwrap(),
            "sigma_stall"
        );
    }
}
