//! Histograms with power-of-two buckets, for distances, times and sizes
//! that span many orders of magnitude.

use serde::Serialize;

/// Counts of values in buckets `[0, 1)`, `[1, 2)`, `[2, 4)`, `[4, 8)`, ...
/// (bucket 0 holds zeros, bucket `k >= 1` the values with `k` significant
/// bits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log2Histogram {
    counts: Vec<u64>,
}

/// One bucket: values `lo..hi` (`hi` exclusive) and how many fell there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Bucket {
    /// Smallest value of the bucket.
    pub lo: u64,
    /// One past its largest (saturating at `u64::MAX`).
    pub hi: u64,
    /// Values counted.
    pub count: u64,
}

impl Log2Histogram {
    /// Counts `value`.
    pub fn add(&mut self, value: u64) {
        let k = (u64::BITS - value.leading_zeros()) as usize;
        if self.counts.len() <= k {
            self.counts.resize(k + 1, 0);
        }
        self.counts[k] += 1;
    }

    /// Values counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The buckets from the first to the last non-empty one.
    pub fn buckets(&self) -> Vec<Bucket> {
        let first = self.counts.iter().position(|&c| c > 0);
        let Some(first) = first else {
            return Vec::new();
        };
        (first..self.counts.len())
            .map(|k| {
                let lo = if k == 0 { 0 } else { 1u64 << (k - 1) };
                let hi = if k == 0 {
                    1
                } else {
                    1u64.checked_shl(k as u32).unwrap_or(u64::MAX)
                };
                Bucket {
                    lo,
                    hi,
                    count: self.counts[k],
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fall_in_their_power_of_two_bucket() {
        let mut h = Log2Histogram::default();
        for v in [0, 1, 2, 3, 4, 7, 8, u64::MAX] {
            h.add(v);
        }
        let b = h.buckets();
        let shape: Vec<(u64, u64, u64)> = b.iter().map(|b| (b.lo, b.hi, b.count)).collect();
        assert_eq!(
            &shape[..5],
            &[(0, 1, 1), (1, 2, 1), (2, 4, 2), (4, 8, 2), (8, 16, 1)]
        );
        assert_eq!(shape.last(), Some(&(1 << 63, u64::MAX, 1)));
        assert_eq!(h.total(), 8);
    }

    #[test]
    fn leading_empty_buckets_are_left_out() {
        let mut h = Log2Histogram::default();
        h.add(5);
        assert_eq!(
            h.buckets(),
            [Bucket {
                lo: 4,
                hi: 8,
                count: 1
            }]
        );
        assert!(Log2Histogram::default().buckets().is_empty());
    }
}
