//! SHARDS fixed-rate spatial sampling (Waldspurger, Park, Garthwaite and
//! Ahmad, "Efficient MRC Construction with SHARDS", FAST'15).
//!
//! A reference is kept iff its object's id hashes below a threshold, so
//! every reference to a kept object is kept and about a fraction `R` of
//! the objects are. The distances between kept references then estimate
//! `R` times the full trace's, so the sampled stack, its distances scaled
//! by `1/R`, estimates the whole curve with `R` of the memory and time
//! spent in the stack. SHARDS_adj's correction (the curve divides by the
//! reads expected in the sample, `R` times all reads, not by those
//! sampled) is in [`LruCurve::point`](super::LruCurve::point).

/// The hash space: a reference is kept iff `hash(id) mod P < T`.
const MODULUS: u64 = 1 << 24;

/// A fixed sampling rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shards {
    threshold: u64,
}

impl Shards {
    /// Sampling about `rate` of the objects (`0 < rate <= 1`, at least one
    /// in 2^24); `None` for a rate outside that.
    pub fn new(rate: f64) -> Option<Shards> {
        let threshold = (rate * MODULUS as f64).round();
        (rate > 0.0 && rate <= 1.0 && threshold >= 1.0).then_some(Shards {
            threshold: threshold as u64,
        })
    }

    /// The fraction of the hash space kept.
    pub fn rate(self) -> f64 {
        self.threshold as f64 / MODULUS as f64
    }

    /// Whether references to `id` are kept.
    #[inline]
    pub fn samples(self, id: u64) -> bool {
        mix(id) % MODULUS < self.threshold
    }
}

/// SplitMix64's finaliser: ids that differ in one bit land far apart, so
/// sequential block numbers are sampled as evenly as random ones.
fn mix(id: u64) -> u64 {
    let mut state = id;
    coopcache_core::policy::splitmix64(&mut state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_the_rate_of_ids_is_kept() {
        let s = Shards::new(0.01).unwrap();
        let kept = (0..1_000_000u64).filter(|&id| s.samples(id)).count();
        assert!((9_000..11_000).contains(&kept), "{kept}");
        assert!(Shards::new(0.0).is_none());
        assert!(Shards::new(1.5).is_none());
        assert!(Shards::new(1.0).unwrap().samples(42));
    }
}
