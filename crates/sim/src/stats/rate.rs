//! Requests over time in a bounded number of buckets whose width doubles
//! as the trace goes on, so one pass needs neither the trace's duration
//! beforehand nor memory that grows with it.

use serde::Serialize;

/// Most buckets kept; past it, pairs of buckets merge and the width
/// doubles (so a trace ends with between half and all of them).
const MAX_BUCKETS: usize = 256;

/// Requests per time bucket, from the first request's time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RequestRate {
    /// Time of the first request (the trace's unit).
    pub start: u64,
    /// Width of a bucket, in the trace's unit.
    pub width: u64,
    /// Requests in each bucket: bucket `i` covers
    /// `start + i * width .. start + (i + 1) * width`.
    pub counts: Vec<u64>,
    /// Requests timed before the first request (unsorted traces), counted
    /// in bucket 0.
    pub early: u64,
    #[serde(skip)]
    started: bool,
}

impl Default for RequestRate {
    fn default() -> Self {
        RequestRate {
            start: 0,
            width: 1,
            counts: Vec::new(),
            early: 0,
            started: false,
        }
    }
}

impl RequestRate {
    /// Counts a request at `time`.
    pub fn add(&mut self, time: u64) {
        if !self.started {
            self.started = true;
            self.start = time;
        }
        if time < self.start {
            self.early += 1;
        }
        let offset = time.saturating_sub(self.start);
        let mut bucket = offset / self.width;
        while bucket >= MAX_BUCKETS as u64 {
            self.coarsen();
            bucket = offset / self.width;
        }
        let bucket = bucket as usize;
        if self.counts.len() <= bucket {
            self.counts.resize(bucket + 1, 0);
        }
        self.counts[bucket] += 1;
    }

    /// Doubles the width, merging neighbouring buckets.
    fn coarsen(&mut self) {
        self.width = self.width.saturating_mul(2);
        self.counts = self
            .counts
            .chunks(2)
            .map(|pair| pair.iter().sum())
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_double_to_stay_bounded_and_keep_every_request() {
        let mut r = RequestRate::default();
        for t in 1000..1000 + 1024u64 {
            r.add(t);
        }
        assert_eq!(r.start, 1000);
        assert_eq!(r.width, 4);
        assert_eq!(r.counts.len(), 256);
        assert!(r.counts.iter().all(|&c| c == 4));
        r.add(3);
        assert_eq!((r.early, r.counts[0]), (1, 5));
    }
}
