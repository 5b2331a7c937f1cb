//! The sweep fits a run table has made (`models::sweep`), remembered: a fit depends on its batch
//! sizes and y values only, and the same groups recur across queries that filter differently. Below
//! the table (which owns one per snapshot) and the logistic model alone, so the table does not
//! import the sweep code that reads it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;

use super::logistic::{FitQuality, Grid, LogisticModel, batch_x};

/// Grids kept per table (one per distinct set of batch sizes; a grid of n batch sizes holds
/// 2,400 × n floats).
const MAX_GRIDS: usize = 64;
/// Fits kept per table (about 200 bytes each; the sample's default sweep is a few hundred).
const MAX_FITS: usize = 16_384;

/// The sweep fits a table has made, by batch sizes and y (bit for bit), and the grids they used.
/// Bounded: a map at its limit is emptied before it takes a new entry (a table's queries mostly
/// repeat the same groups, so it refills with what they use).
#[derive(Debug, Default)]
pub(crate) struct SweepMemo {
    grids: Mutex<HashMap<Vec<i64>, Arc<Grid>>>,
    fits: Mutex<HashMap<FitKey, (LogisticModel, FitQuality)>>,
}

type FitKey = (Vec<i64>, Vec<u64>);

fn put<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, limit: usize, key: K, value: V) {
    if map.len() >= limit && !map.contains_key(&key) {
        map.clear();
    }
    map.insert(key, value);
}

impl SweepMemo {
    /// The fit of each sweep (batch sizes ascending, y): remembered ones as they were, the rest
    /// fitted in parallel (one grid per distinct set of batch sizes) and remembered.
    pub(crate) fn fit_all(
        &self,
        sweeps: &[(Vec<i64>, Vec<f64>)],
    ) -> Vec<(LogisticModel, FitQuality)> {
        let keys: Vec<FitKey> = sweeps
            .iter()
            .map(|(b, y)| (b.clone(), y.iter().map(|v| v.to_bits()).collect()))
            .collect();
        let mut out: Vec<Option<(LogisticModel, FitQuality)>> = {
            let fits = self.fits.lock().unwrap_or_else(PoisonError::into_inner);
            keys.iter().map(|k| fits.get(k).copied()).collect()
        };
        let missing: Vec<usize> = (0..sweeps.len()).filter(|&i| out[i].is_none()).collect();
        if missing.is_empty() {
            return out.into_iter().flatten().collect();
        }
        let grids = self.grids_for(missing.iter().map(|&i| &sweeps[i].0));
        let fitted: Vec<(LogisticModel, FitQuality)> = missing
            .par_iter()
            .map(|&i| match grids.get(&sweeps[i].0) {
                Some(grid) => grid.fit(&sweeps[i].1),
                None => LogisticModel::fit_with_quality(&[], &[]),
            })
            .collect();
        let mut fits = self.fits.lock().unwrap_or_else(PoisonError::into_inner);
        for (&i, fit) in missing.iter().zip(fitted) {
            put(&mut fits, MAX_FITS, keys[i].clone(), fit);
            out[i] = Some(fit);
        }
        out.into_iter().flatten().collect()
    }

    /// The grid of each non-empty set of batch sizes: remembered ones, the rest built in parallel.
    fn grids_for<'a>(
        &self,
        batches: impl Iterator<Item = &'a Vec<i64>>,
    ) -> HashMap<Vec<i64>, Arc<Grid>> {
        let mut found: HashMap<Vec<i64>, Arc<Grid>> = HashMap::new();
        let mut build: Vec<Vec<i64>> = Vec::new();
        {
            let grids = self.grids.lock().unwrap_or_else(PoisonError::into_inner);
            for b in batches {
                if b.is_empty() || found.contains_key(b) || build.contains(b) {
                    continue;
                }
                match grids.get(b) {
                    Some(g) => {
                        found.insert(b.clone(), g.clone());
                    }
                    None => build.push(b.clone()),
                }
            }
        }
        let built: Vec<(Vec<i64>, Arc<Grid>)> = build
            .into_par_iter()
            .map(|b| {
                let x: Vec<f64> = b.iter().map(|&v| batch_x(v as f64)).collect();
                (b, Arc::new(Grid::new(&x)))
            })
            .collect();
        let mut grids = self.grids.lock().unwrap_or_else(PoisonError::into_inner);
        for (b, g) in built {
            put(&mut grids, MAX_GRIDS, b.clone(), g.clone());
            found.insert(b, g);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered fit is the fit made afresh, and a full memo starts over rather than grow.
    #[test]
    fn remembered_fits_are_fresh_fits() {
        let memo = SweepMemo::default();
        let sweeps = vec![
            (vec![8, 16, 32, 64], vec![200.0, 260.0, 410.0, 470.0]),
            (vec![8, 16, 32, 64], vec![0.9, 0.7, 0.4, 0.35]),
            (vec![1, 2], vec![5.0, 9.0]),
            (vec![], vec![]),
        ];
        let fresh: Vec<(LogisticModel, FitQuality)> = sweeps
            .iter()
            .map(|(b, y)| {
                let x: Vec<f64> = b.iter().map(|&v| batch_x(v as f64)).collect();
                LogisticModel::fit_with_quality(&x, y)
            })
            .collect();
        let first = memo.fit_all(&sweeps);
        assert_eq!(memo.fits.lock().unwrap().len(), 4);
        // Two grids: the empty sweep has none.
        assert_eq!(memo.grids.lock().unwrap().len(), 2);
        let again = memo.fit_all(&sweeps);
        for ((a, b), c) in first.iter().zip(&again).zip(&fresh) {
            assert_eq!(a.0, c.0);
            assert_eq!(b.0, c.0);
            // NaN quality fields (r2 of a constant y) compare by bits.
            for (p, q) in [(a.1, c.1), (b.1, c.1)] {
                assert_eq!(p.mse.to_bits(), q.mse.to_bits());
                assert_eq!(p.r2.to_bits(), q.r2.to_bits());
                assert_eq!(p.degenerate, q.degenerate);
            }
        }
        assert_eq!(first[0].0.x0, fresh[0].0.x0);
        assert!(first[0].0.l > 0.0 && first[1].0.l < 0.0);

        let mut map = HashMap::new();
        for i in 0..5 {
            put(&mut map, 3, i, i);
        }
        assert_eq!(map.len(), 2, "emptied at the limit, then 3 and 4");
        put(&mut map, 3, 4, 40);
        assert_eq!(map.get(&4), Some(&40));
    }
}
