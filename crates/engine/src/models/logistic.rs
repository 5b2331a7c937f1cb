//! The four-parameter logistic model of a batch sweep (docs/toolkit.md §12.1):
//! `y = b0 + L·σ(k·(x − x0))` with `x = log2(batch)`, fitted as the toolkit fits it: a 40 × 60 grid
//! of (x0, k), x0-outer, least squares of y on `[1, σ]` at each point, the first point with a
//! strictly smaller mean squared error kept. No refinement and no bounds.

use serde::{Deserialize, Serialize};

use mlenergy_pycompat::numpy::{np_mean, np_sum};

/// Fitted parameters, in the toolkit's `to_dict` order.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogisticModel {
    #[serde(rename = "L")]
    pub l: f64,
    pub x0: f64,
    pub k: f64,
    pub b0: f64,
}

/// Number of x0 grid values (evenly spaced over [min(x) − 1, max(x) + 1]).
pub const X0_STEPS: usize = 40;
/// Number of k grid values (log-spaced over [0.01, 100]).
pub const K_STEPS: usize = 60;

/// The logistic function, computed so that neither branch overflows.
fn sigmoid(a: f64) -> f64 {
    if a >= 0.0 {
        1.0 / (1.0 + (-a).exp())
    } else {
        let e = a.exp();
        e / (1.0 + e)
    }
}

/// `np.linspace(start, stop, n)`: `start + i·step`, the last value `stop` exactly.
fn linspace(start: f64, stop: f64, n: usize) -> Vec<f64> {
    let step = (stop - start) / (n - 1) as f64;
    let mut v: Vec<f64> = (0..n).map(|i| i as f64 * step + start).collect();
    v[n - 1] = stop;
    v
}

/// The k grid: `np.logspace(-2, 2, 60)`, ten to the powers of an evenly spaced grid.
pub fn k_grid() -> Vec<f64> {
    linspace(-2.0, 2.0, K_STEPS)
        .into_iter()
        .map(|p| 10f64.powf(p))
        .collect()
}

/// How a fit came out, besides its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitQuality {
    /// Mean squared error of the fit over the points.
    pub mse: f64,
    /// Coefficient of determination; NaN when y has no variance.
    pub r2: f64,
    /// Largest |residual| / |y| over the points (NaN where y is 0 everywhere).
    pub max_rel_residual: f64,
    /// No grid search was made: no points, one point, or y (nearly) constant.
    pub degenerate: bool,
}

impl LogisticModel {
    /// At a continuous x (typically log2 of a batch size).
    pub fn eval_x(&self, x: f64) -> f64 {
        self.b0 + self.l * sigmoid(self.k * (x - self.x0))
    }

    /// dy/dx at a continuous x.
    pub fn deriv_wrt_x(&self, x: f64) -> f64 {
        let s = sigmoid(self.k * (x - self.x0));
        self.l * (self.k * s * (1.0 - s))
    }

    /// At a batch size: `eval_x(log2(max(int(batch), 1)))` (the batch truncated toward zero, and
    /// at least 1).
    pub fn eval(&self, batch: f64) -> f64 {
        self.eval_x(batch_x(batch))
    }

    /// The toolkit's fit of y against x.
    pub fn fit(x: &[f64], y: &[f64]) -> LogisticModel {
        Self::fit_with_quality(x, y).0
    }

    /// The fit, with its quality over the points. `x` and `y` have the same length.
    pub fn fit_with_quality(x: &[f64], y: &[f64]) -> (LogisticModel, FitQuality) {
        assert_eq!(x.len(), y.len(), "x and y of one length");
        let n = x.len();
        if n == 0 {
            let m = LogisticModel {
                l: 0.0,
                x0: 0.0,
                k: 1.0,
                b0: 0.0,
            };
            return (m, quality(&m, x, y, true));
        }
        Grid::new(x).fit(y)
    }
}

/// The sigmoid columns of every grid point for one x: they depend on x only, so fits of many y
/// over the same batch sizes (every field of a sweep, every group with those batch sizes) share
/// them, and each fit is only the least squares at each point.
#[derive(Debug, Clone)]
pub struct Grid {
    x: Vec<f64>,
    points: Vec<GridPoint>,
}

#[derive(Debug, Clone)]
struct GridPoint {
    x0: f64,
    k: f64,
    s: Vec<f64>,
    /// Mean of s, and the sum of squared deviations from it.
    s_mean: f64,
    sxx: f64,
}

impl Grid {
    /// The grid over `x` (non-empty): x0 outer, k inner, as the toolkit scans it.
    pub fn new(x: &[f64]) -> Grid {
        let (lo, hi) = x
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
                (l.min(v), h.max(v))
            });
        let n = x.len() as f64;
        let mut points = Vec::with_capacity(X0_STEPS * K_STEPS);
        for &x0 in &linspace(lo - 1.0, hi + 1.0, X0_STEPS) {
            for &k in &k_grid() {
                // The plain formula, as the toolkit evaluates it (exp may overflow to inf: s = 0).
                let s: Vec<f64> = x
                    .iter()
                    .map(|xi| 1.0 / (1.0 + (-k * (xi - x0)).exp()))
                    .collect();
                let s_mean = np_sum(&s) / n;
                let sxx = s.iter().map(|si| (si - s_mean) * (si - s_mean)).sum();
                points.push(GridPoint {
                    x0,
                    k,
                    s,
                    s_mean,
                    sxx,
                });
            }
        }
        Grid {
            x: x.to_vec(),
            points,
        }
    }

    /// The fit of `y` (one value per x), with its quality: the degenerate cases as the toolkit
    /// has them, else the first grid point with the strictly smallest mean squared error.
    pub fn fit(&self, y: &[f64]) -> (LogisticModel, FitQuality) {
        let x = &self.x;
        assert_eq!(x.len(), y.len(), "x and y of one length");
        let n = x.len();
        let y0 = y[0];
        if n == 1 || y.iter().all(|v| (v - y0).abs() <= 1e-8 + 1e-5 * y0.abs()) {
            let m = LogisticModel {
                l: 0.0,
                x0: x[0],
                k: 1.0,
                b0: np_mean(y).unwrap_or(f64::NAN),
            };
            return (m, quality(&m, x, y, true));
        }
        let y_mean = np_sum(y) / n as f64;
        let mut best = (
            f64::INFINITY,
            LogisticModel {
                l: 0.0,
                x0: np_mean(x).unwrap_or(f64::NAN),
                k: 1.0,
                b0: y_mean,
            },
        );
        let mut resid = vec![0.0; n];
        for p in &self.points {
            let (b0, l) = least_squares(p, y, y_mean);
            for ((r, si), yi) in resid.iter_mut().zip(&p.s).zip(y) {
                let d = yi - (b0 + l * si);
                *r = d * d;
            }
            let mse = np_sum(&resid) / n as f64;
            if mse < best.0 {
                best = (
                    mse,
                    LogisticModel {
                        l,
                        x0: p.x0,
                        k: p.k,
                        b0,
                    },
                );
            }
        }
        let m = best.1;
        (m, quality(&m, x, y, false))
    }
}

/// x of a batch size: `log2(max(int(batch), 1))`.
pub fn batch_x(batch: f64) -> f64 {
    let b = batch.trunc();
    if b >= 1.0 { b.log2() } else { 0.0 }
}

/// Least squares of y on `[1, s]` at a grid point: `(b0, L)`. Centred, so that it is accurate
/// where s varies little. Where s does not vary at all the two columns are proportional and the
/// answer is the minimum-norm one, as numpy's `lstsq` gives it.
fn least_squares(p: &GridPoint, y: &[f64], y_mean: f64) -> (f64, f64) {
    if p.sxx == 0.0 {
        // Columns [1, c]: the minimum-norm solution of b0 + c·L = ȳ.
        let c = p.s_mean;
        let norm = 1.0 + c * c;
        return (y_mean / norm, c * y_mean / norm);
    }
    let sxy: f64 =
        p.s.iter()
            .zip(y)
            .map(|(si, yi)| (si - p.s_mean) * (yi - y_mean))
            .sum();
    let l = sxy / p.sxx;
    (y_mean - l * p.s_mean, l)
}

fn quality(m: &LogisticModel, x: &[f64], y: &[f64], degenerate: bool) -> FitQuality {
    let n = x.len();
    if n == 0 {
        return FitQuality {
            mse: f64::NAN,
            r2: f64::NAN,
            max_rel_residual: f64::NAN,
            degenerate,
        };
    }
    let resid: Vec<f64> = x
        .iter()
        .zip(y)
        .map(|(&xi, &yi)| yi - m.eval_x(xi))
        .collect();
    let sq: Vec<f64> = resid.iter().map(|r| r * r).collect();
    let sse = np_sum(&sq);
    let y_mean = np_sum(y) / n as f64;
    let tot: Vec<f64> = y.iter().map(|v| (v - y_mean) * (v - y_mean)).collect();
    let sst = np_sum(&tot);
    let max_rel = resid
        .iter()
        .zip(y)
        .filter(|(_, yi)| **yi != 0.0)
        .map(|(r, yi)| (r / yi).abs())
        .fold(f64::NAN, f64::max);
    FitQuality {
        mse: sse / n as f64,
        r2: if sst > 0.0 { 1.0 - sse / sst } else { f64::NAN },
        max_rel_residual: max_rel,
        degenerate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs())
    }

    /// docs/toolkit.md §15: the guide's example picks x0 index 20, k index 28, with these values.
    #[test]
    fn the_guide_example() {
        let x: Vec<f64> = [8.0f64, 16.0, 32.0, 64.0, 128.0, 256.0]
            .iter()
            .map(|b| b.log2())
            .collect();
        let y = [200.0, 250.0, 320.0, 400.0, 480.0, 530.0];
        let (m, q) = LogisticModel::fit_with_quality(&x, &y);
        assert_eq!(m.x0, 2.0 + 20.0 * 7.0 / 39.0);
        assert_eq!(m.x0, 5.589743589743589);
        assert_eq!(m.k, k_grid()[28]);
        assert!(close(m.k, 0.7912342618981323, 1e-12), "{}", m.k);
        assert!(close(m.l, 433.91040535614763, 1e-9), "{}", m.l);
        assert!(close(m.b0, 151.78348105429524, 1e-9), "{}", m.b0);
        assert!(close(q.mse, 3.7992610582460684, 1e-9), "{}", q.mse);
        assert!(close(m.eval(128.0), 478.6121128158837, 1e-9));
        assert!(close(m.eval(1.0), 156.92892803780444, 1e-9));
        assert_eq!(m.eval(0.0), m.eval(1.0));
        assert_eq!(m.eval(-3.0), m.eval(1.0));
        assert_eq!(m.eval(128.9), m.eval(128.0));
        assert!(q.r2 > 0.99 && !q.degenerate);
    }

    #[test]
    fn degenerate_inputs() {
        let m = LogisticModel::fit(&[], &[]);
        assert_eq!((m.l, m.x0, m.k, m.b0), (0.0, 0.0, 1.0, 0.0));
        let m = LogisticModel::fit(&[3.0], &[7.0]);
        assert_eq!((m.l, m.x0, m.k, m.b0), (0.0, 3.0, 1.0, 7.0));
        // Close to y[0] within numpy's allclose: no grid search.
        let (m, q) = LogisticModel::fit_with_quality(&[1.0, 2.0, 3.0], &[100.0, 100.0005, 99.9996]);
        assert_eq!((m.l, m.x0, m.k), (0.0, 1.0, 1.0));
        assert!(q.degenerate);
    }

    #[test]
    fn the_stable_sigmoid_and_its_derivative() {
        let m = LogisticModel {
            l: 2.0,
            x0: 1.0,
            k: 3.0,
            b0: 0.5,
        };
        assert_eq!(m.eval_x(1.0), 1.5);
        assert_eq!(m.eval_x(1e6), 2.5);
        assert_eq!(m.eval_x(-1e6), 0.5);
        assert_eq!(m.deriv_wrt_x(1.0), 2.0 * 3.0 * 0.25);
        // A numerical derivative agrees.
        let h = 1e-6;
        let num = (m.eval_x(1.3 + h) - m.eval_x(1.3 - h)) / (2.0 * h);
        assert!(close(num, m.deriv_wrt_x(1.3), 1e-6));
    }

    #[test]
    fn a_constant_sigmoid_gives_numpys_minimum_norm_answer() {
        // s = [c, c]: lstsq of y on [1, c] gives b0 = ȳ/(1+c²), L = c·ȳ/(1+c²).
        let point = |s: Vec<f64>| GridPoint {
            x0: 0.0,
            k: 1.0,
            s_mean: np_sum(&s) / s.len() as f64,
            sxx: 0.0,
            s,
        };
        assert_eq!(
            least_squares(&point(vec![1.0, 1.0]), &[3.0, 5.0], 4.0),
            (2.0, 2.0)
        );
        assert_eq!(
            least_squares(&point(vec![0.0; 3]), &[1.0, 2.0, 3.0], 2.0),
            (2.0, 0.0)
        );
    }

    /// One grid shared by several y fits each as a grid of its own.
    #[test]
    fn a_shared_grid_fits_as_a_fresh_one() {
        let x = [3.0, 4.0, 5.0, 6.0, 7.0];
        let grid = Grid::new(&x);
        for y in [[1.0, 2.0, 4.0, 7.0, 8.0], [9.0, 8.0, 6.0, 3.0, 2.5]] {
            assert_eq!(grid.fit(&y), LogisticModel::fit_with_quality(&x, &y));
        }
    }
}
