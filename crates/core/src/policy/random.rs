//! Random: evict a block chosen uniformly at random.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, Slab};

/// The seed [`Random::with_weights`] uses, so that runs repeat.
pub const RANDOM_SEED: u64 = 0x5eed_cafe_f00d_0001;

/// Random replacement (Belady's RAND, 1966; libCacheSim's `Random`): the
/// victim is a cached block drawn uniformly, whatever its history. A hit
/// changes nothing.
///
/// The baseline every policy should beat; it cannot be thrashed by a loop
/// larger than the cache (it keeps a random part of it, where LRU keeps
/// none), and needs no per-hit work. Its draws come from a seeded
/// generator (SplitMix64) held by the cache, so a run repeats exactly; they
/// are not libCacheSim's draws, so its miss counts differ from
/// libCacheSim's by chance, and it is validated against a brute-force
/// model drawing the same numbers instead (`tests/model.rs`).
#[derive(Clone, Debug)]
pub struct Random<K, W = u32> {
    index: Index,
    /// Each cached block's payload is its place in `dense`.
    slab: Slab<K, u32, W>,
    /// Every cached block (for sizes and iteration).
    cached: List,
    /// Cached blocks in a dense array, to draw from.
    dense: Vec<Idx>,
    /// SplitMix64 state.
    state: u64,
    capacity: usize,
}

/// The seed knob of the randomised policies ([`Random`],
/// [`Hyperbolic`](super::Hyperbolic)): not a
/// libCacheSim parameter (its generator is global), so `random(seed=7)`
/// replays another draw of the same policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomParams {
    /// The generator's seed.
    pub seed: u64,
}

impl Default for RandomParams {
    fn default() -> Self {
        RandomParams { seed: RANDOM_SEED }
    }
}

/// The `seed` knob: whole numbers up to 2^53, exact in the `f64` a knob
/// carries.
pub(super) const SEED_KNOB: Knob = Knob {
    name: "seed",
    libcachesim: "none, coopcache's own",
    min: 0.0,
    max: (1u64 << 53) as f64,
    unit: KnobUnit::Integer,
    help: "the seed of the policy's random draws",
};

impl Knobs for RandomParams {
    const KNOBS: &'static [Knob] = &[SEED_KNOB];

    fn get(&self, _: usize) -> f64 {
        self.seed as f64
    }

    fn set(&mut self, _: usize, value: f64) {
        self.seed = value as u64;
    }
}

impl<K: BlockKey> Random<K> {
    /// An empty random cache of `capacity` blocks or bytes (at least 1)
    /// drawing from `seed`.
    pub fn new(capacity: impl Into<Capacity>, seed: u64) -> Result<Self, CapacityError> {
        Self::with_seed(capacity, seed)
    }
}

/// The next number of a SplitMix64 generator at `state`.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<K: BlockKey, W: Weight> Random<K, W> {
    /// An empty random cache of `capacity` drawing from `seed`, storing
    /// sizes as `W`.
    pub fn with_seed(capacity: impl Into<Capacity>, seed: u64) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("random", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Random {
            index: Index::with_capacity(hint),
            slab: Slab::with_capacity(hint),
            cached: List::default(),
            dense: Vec::with_capacity(hint),
            state: seed,
            capacity: units,
        })
    }

    /// An empty random cache of `capacity` drawing from [`RANDOM_SEED`].
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_seed(capacity, RANDOM_SEED)
    }

    /// An empty random cache of `capacity` drawing from `params.seed`.
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: RandomParams,
    ) -> Result<Self, CapacityError> {
        Self::with_seed(capacity, params.seed)
    }

    /// The place in `dense` of the next victim, without drawing.
    fn next_draw(&self) -> Option<usize> {
        let mut state = self.state;
        (!self.dense.is_empty())
            .then(|| (splitmix64(&mut state) % self.dense.len() as u64) as usize)
    }

    /// Unindexes, unlinks and frees node `idx`; returns its key.
    fn forget(&mut self, idx: Idx) -> K {
        let pos = self.slab.meta(idx) as usize;
        self.dense.swap_remove(pos);
        if let Some(&moved) = self.dense.get(pos) {
            *self.slab.meta_mut(moved) = pos as u32;
        }
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.cached, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Random<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "random"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.dense.len()
    }

    fn used(&self) -> usize {
        self.cached.size() as usize
    }

    fn contains(&self, key: K) -> bool {
        self.index.find(&self.slab, key).is_some()
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        match self.index.find(&self.slab, key) {
            Some(_) => Lookup::Hit,
            None => Lookup::Miss(()),
        }
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        self.next_draw().map(|pos| self.slab.key(self.dense[pos]))
    }

    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let pos = self.next_draw()?;
        splitmix64(&mut self.state);
        Some(self.forget(self.dense[pos]))
    }

    fn insert(&mut self, key: K, size: u32, _: ()) {
        let idx = self.slab.alloc(key, size, self.dense.len() as u32);
        self.slab.push_head(&mut self.cached, idx);
        self.index.insert(&self.slab, idx);
        self.dense.push(idx);
    }

    fn remove(&mut self, key: K) -> bool {
        self.index
            .find(&self.slab, key)
            .map(|idx| self.forget(idx))
            .is_some()
    }

    fn metadata_bytes(&self) -> usize {
        self.index.allocated_bytes()
            + self.slab.allocated_bytes()
            + self.dense.capacity() * std::mem::size_of::<Idx>()
    }

    /// Cached blocks from the oldest inserted (all are equally likely to go).
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        self.slab
            .iter_from_tail(&self.cached)
            .map(|i| self.slab.key(i))
    }
}
