//! libCacheSim's random numbers: a Lehmer (multiplicative congruential)
//! generator over 128 bits.

/// The state libCacheSim's generator starts from (`g_lehmer64_state`, per
/// thread, in `utils/mymath.c`): a policy seeded with it draws exactly
/// libCacheSim's numbers when libCacheSim runs one cache per thread.
pub const LIBCACHESIM_SEED: u64 = 0xdead_beef;

/// libCacheSim's `next_rand()` (lehmer64, Lemire's fast generator after
/// Lehmer 1951 and L'Ecuyer 1999): the state is multiplied by a 64-bit
/// constant modulo 2^128 and the high 64 bits are the number drawn.
///
/// libCacheSim keeps one state per thread, shared by every cache on it;
/// here each cache owns its generator, so a run repeats whatever else runs
/// beside it, and matches libCacheSim's draws when libCacheSim runs the
/// same cache alone on a fresh thread (or forked process) from
/// [`LIBCACHESIM_SEED`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lehmer64 {
    state: u128,
}

impl Lehmer64 {
    /// A generator at `seed` (libCacheSim's `set_rand_seed`).
    pub fn new(seed: u64) -> Self {
        Lehmer64 {
            state: u128::from(seed),
        }
    }

    /// The next number drawn.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_mul(0xda94_2042_e4dd_58b5);
        (self.state >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_the_high_half_of_the_product() {
        let mut rng = Lehmer64::new(LIBCACHESIM_SEED);
        let product = 0xdead_beef_u128 * 0xda94_2042_e4dd_58b5;
        assert_eq!(rng.next_u64(), (product >> 64) as u64);
        let again = product.wrapping_mul(0xda94_2042_e4dd_58b5);
        assert_eq!(rng.next_u64(), (again >> 64) as u64);
    }
}
