//! The door's bound on costly work: questions that read raw files, run SQL, fit models or draw
//! charts each take a place while they are computed, from every front end alike; with none free
//! the question is refused at once (busy) rather than queued. An answer from the cache takes none.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::service::ServiceError;

/// The places, how many are taken, and how many questions were refused for want of one.
#[derive(Debug)]
pub struct Places {
    max: usize,
    taken: AtomicUsize,
    refused: AtomicU64,
}

/// A place taken, given back when dropped.
#[derive(Debug)]
pub struct Place<'a>(&'a AtomicUsize);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Places {
    /// `max` places.
    pub fn new(max: usize) -> Places {
        Places {
            max,
            taken: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// A place, or the refusal when all are taken.
    pub fn take(&self) -> Result<Place<'_>, ServiceError> {
        if self.taken.fetch_add(1, Ordering::AcqRel) >= self.max {
            self.taken.fetch_sub(1, Ordering::AcqRel);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(ServiceError::Busy(format!(
                "{} requests for raw-derived data, SQL, fits or charts are in flight, the most this server takes at once; try again shortly",
                self.max
            )));
        }
        Ok(Place(&self.taken))
    }

    /// Questions refused for want of a place, since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places are taken up to the bound, refused beyond it (and counted), and given back when
    /// dropped.
    #[test]
    fn places_are_bounded_and_given_back() {
        let places = Places::new(2);
        let a = places.take().unwrap();
        let b = places.take().unwrap();
        let refused = places.take().unwrap_err();
        assert!(matches!(&refused, ServiceError::Busy(d) if d.starts_with("2 requests")));
        assert_eq!(places.refused(), 1);
        drop(a);
        let c = places.take().unwrap();
        drop((b, c));
        assert_eq!(places.taken.load(Ordering::Relaxed), 0);
        assert!(Places::new(0).take().is_err());
    }

    /// The questions that take a place: raw-derived data, fits and charts; the run table's do
    /// not.
    #[test]
    fn costly_questions() {
        use crate::service::ask::{ITL_ONE, PARETO_CHART, Question, RATING_CHART, TIMELINE_MANY};
        for q in [
            ITL_ONE,
            TIMELINE_MANY,
            PARETO_CHART,
            RATING_CHART,
            Question::Sweep,
        ] {
            assert!(q.costly(), "{q:?}");
        }
        for q in [
            Question::List,
            Question::One,
            Question::Group,
            Question::Pareto,
        ] {
            assert!(!q.costly(), "{q:?}");
        }
    }
}
