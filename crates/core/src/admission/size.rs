//! Size-threshold admission: cache only objects below a size.

use super::Admission;
use crate::policy::BlockKey;
use crate::policy::knobs::{Knob, KnobUnit, Knobs};

/// The size threshold's knob, libCacheSim's `size` admissioner parameter
/// `size=` (default: every object admitted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeParams {
    /// Objects of this many bytes or more are refused.
    pub below: u64,
}

impl Default for SizeParams {
    fn default() -> Self {
        // libCacheSim's INT64_MAX, kept within a knob's exact range.
        SizeParams { below: 1 << 53 }
    }
}

impl Knobs for SizeParams {
    const KNOBS: &'static [Knob] = &[Knob {
        name: "below",
        libcachesim: "size",
        min: 1.0,
        max: (1u64 << 53) as f64,
        unit: KnobUnit::Bytes,
        help: "objects of this size or larger are not cached",
    }];

    fn get(&self, _: usize) -> f64 {
        self.below as f64
    }

    fn set(&mut self, _: usize, value: f64) {
        self.below = value as u64;
    }
}

/// Admits objects smaller than a threshold (`size < below`, strictly, as
/// libCacheSim's `size` admissioner), keeping large objects from flushing
/// many small ones. Suits byte caches of web and CDN traces whose sizes
/// span orders of magnitude; in a block cache every object has size 1.
#[derive(Clone, Copy, Debug)]
pub struct SizeThreshold {
    below: u64,
}

impl SizeThreshold {
    /// A threshold of `params.below` bytes.
    pub fn new(params: SizeParams) -> Self {
        SizeThreshold {
            below: params.below,
        }
    }
}

impl<K: BlockKey> Admission<K> for SizeThreshold {
    #[inline]
    fn admit(&mut self, _: K, size: u32) -> bool {
        u64::from(size) < self.below
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_objects_at_or_above_the_threshold() {
        let mut a = SizeThreshold::new(SizeParams { below: 100 });
        assert!(Admission::<u64>::admit(&mut a, 1, 99));
        assert!(!Admission::<u64>::admit(&mut a, 1, 100));
        assert!(!Admission::<u64>::admit(&mut a, 1, 5000));
    }
}
