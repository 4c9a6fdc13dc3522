//! LHD over a trace long enough to rescale its ages, against libCacheSim.
//!
//! LHD refits its model every 2^20 updates and, at the 6th refit only
//! (and the 26th), changes how finely it counts ages, stretching or
//! compressing the counts it has; no golden trace is that long. This
//! synthetic trace (`scripts/golden-lhd-long.py`, which gives libCacheSim's
//! counts below) is: at 5,000 blocks the ages get finer, at 400,000
//! coarser.

use coopcache_core::policy::{Lhd, access};

/// The trace of `scripts/golden-lhd-long.py`: a 64-bit LCG; four requests
/// in five to 3,000 hot blocks, the fifth to a million cold ones. Of its
/// 7.5M requests libCacheSim misses 1,758,140 at 5,000 blocks and 999,070
/// at 400,000.
fn trace() -> impl Iterator<Item = u64> {
    let mut s: u64 = 12345;
    (0..7_500_000).map(move |_| {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = s >> 33;
        if !(s >> 20).is_multiple_of(5) {
            r % 3000
        } else {
            3000 + r % 1_000_000
        }
    })
}

fn misses(blocks: usize) -> u64 {
    let mut cache = Lhd::new(blocks).unwrap();
    trace()
        .map(|k| u64::from(!access(&mut cache, k, 1, |_| {})))
        .sum()
}

#[test]
fn finer_ages_match_libcachesim() {
    assert_eq!(misses(5000), 1_758_140);
}

#[test]
fn coarser_ages_match_libcachesim() {
    assert_eq!(misses(400_000), 999_070);
}
