//! Hyperbolic caching: evict the sampled block with the lowest references
//! per unit of time cached.

use super::{BlockKey, Capacity, Lookup, Policy, RANDOM_SEED, Weight, check_capacity, splitmix64};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, Slab};

/// Blocks sampled per eviction, as libCacheSim's default `n-sample`.
pub const HYPERBOLIC_SAMPLES: usize = 64;

/// A cached block's references since it was cached, the request that
/// cached it, and its place in the dense array sampled from.
#[derive(Clone, Copy, Debug)]
struct Meta {
    freq: u64,
    entered: u64,
    pos: u32,
}

/// Hyperbolic caching (Blankstein, Sen and Freedman, "Hyperbolic caching:
/// flexible caching for web applications", USENIX ATC 2017), as
/// libCacheSim's `Hyperbolic`. A block's priority is its references since
/// it was cached divided by the requests since it was cached,
/// `10^8 * freq / age`; the victim is the lowest of
/// [`HYPERBOLIC_SAMPLES`] blocks drawn uniformly with replacement (the
/// first drawn among equals). A hit only counts the reference.
///
/// The priority decays continuously, so a block hot long ago loses out to
/// a newer block with fewer references (LFU's weakness) without the
/// discrete aging of LFUDA; sampling keeps every request O(1) without an
/// ordered structure. It suits web and key-value workloads with skewed,
/// drifting popularity; it needs many references to tell blocks apart, so
/// on recency-driven traces it trails LRU, and its choices are
/// approximate.
///
/// libCacheSim draws from its hash table's own generator, which cannot be
/// reproduced here, so its miss counts are not matched exactly: the draws
/// come from a seeded SplitMix64 held by the cache (a run repeats), and the
/// policy is validated against a brute-force model drawing the same
/// numbers (`tests/model.rs`); its miss ratios on the golden traces stay
/// within sampling noise of libCacheSim's.
#[derive(Clone, Debug)]
pub struct Hyperbolic<K, W = u32> {
    index: Index,
    slab: Slab<K, Meta, W>,
    /// Every cached block (for sizes and iteration), newest at the head.
    cached: List,
    /// Cached blocks in a dense array, to draw from.
    dense: Vec<Idx>,
    /// SplitMix64 state.
    state: u64,
    /// Requests seen: the clock ages are measured in.
    requests: u64,
    capacity: usize,
}

impl<K: BlockKey> Hyperbolic<K> {
    /// An empty hyperbolic cache of `capacity` blocks or bytes (at least
    /// 1) drawing from `seed`.
    pub fn new(capacity: impl Into<Capacity>, seed: u64) -> Result<Self, CapacityError> {
        Self::with_seed(capacity, seed)
    }
}

impl<K: BlockKey, W: Weight> Hyperbolic<K, W> {
    /// An empty hyperbolic cache of `capacity` drawing from `seed`,
    /// storing sizes as `W`.
    pub fn with_seed(capacity: impl Into<Capacity>, seed: u64) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("hyperbolic", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Hyperbolic {
            index: Index::with_capacity(hint),
            slab: Slab::with_capacity(hint),
            cached: List::default(),
            dense: Vec::with_capacity(hint),
            state: seed,
            requests: 0,
            capacity: units,
        })
    }

    /// An empty hyperbolic cache of `capacity` drawing from
    /// [`RANDOM_SEED`].
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_seed(capacity, RANDOM_SEED)
    }

    /// An empty hyperbolic cache of `capacity` drawing from `params.seed`.
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: super::RandomParams,
    ) -> Result<Self, CapacityError> {
        Self::with_seed(capacity, params.seed)
    }

    /// libCacheSim's score: references per request cached, scaled.
    #[inline]
    fn score(&self, idx: Idx) -> f64 {
        let m = self.slab.meta(idx);
        let age = self.requests.saturating_sub(m.entered) as f64;
        1.0e8 * m.freq as f64 / age
    }

    /// The victim of the draws from `state`, and the state after them.
    fn draw(&self, mut state: u64) -> (Option<Idx>, u64) {
        let mut best: Option<(Idx, f64)> = None;
        if self.dense.is_empty() {
            return (None, state);
        }
        for _ in 0..HYPERBOLIC_SAMPLES {
            let pos = (splitmix64(&mut state) % self.dense.len() as u64) as usize;
            let idx = self.dense[pos];
            let score = self.score(idx);
            // Strictly lower: the first drawn wins a tie, as libCacheSim.
            if best.is_none_or(|(_, s)| score < s) {
                best = Some((idx, score));
            }
        }
        (best.map(|(idx, _)| idx), state)
    }

    /// Unindexes, unlinks and frees node `idx`; returns its key.
    fn forget(&mut self, idx: Idx) -> K {
        let pos = self.slab.meta(idx).pos as usize;
        self.dense.swap_remove(pos);
        if let Some(&moved) = self.dense.get(pos) {
            self.slab.meta_mut(moved).pos = pos as u32;
        }
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.cached, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Hyperbolic<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "hyperbolic"
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
        self.requests += 1;
        match self.index.find(&self.slab, key) {
            Some(idx) => {
                self.slab.meta_mut(idx).freq += 1;
                Lookup::Hit
            }
            None => Lookup::Miss(()),
        }
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        self.draw(self.state).0.map(|idx| self.slab.key(idx))
    }

    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let (victim, state) = self.draw(self.state);
        self.state = state;
        victim.map(|idx| self.forget(idx))
    }

    fn insert(&mut self, key: K, size: u32, _: ()) {
        let meta = Meta {
            freq: 1,
            entered: self.requests,
            pos: self.dense.len() as u32,
        };
        let idx = self.slab.alloc(key, size, meta);
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

    /// Cached blocks by score, the lowest (the likeliest victim) first.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let mut order = self.dense.clone();
        order.sort_by(|&a, &b| self.score(a).total_cmp(&self.score(b)));
        order.into_iter().map(|i| self.slab.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    #[test]
    fn evicts_the_fewest_references_per_request_cached() {
        let mut cache = Hyperbolic::new(2, 7).unwrap();
        let mut evicted = Vec::new();
        // 1 is referenced 4 times in 5 requests, 2 once in 2: with 64
        // draws of 2 blocks, both are drawn (bar odds of 2^-63).
        for k in [1, 1, 1, 2, 1, 3] {
            access(&mut cache, k, 1, |v| evicted.push(v));
        }
        assert_eq!(evicted, [2]);
        assert_eq!(cache.iter_oldest_first().count(), 2);
    }

    #[test]
    fn the_same_seed_replays_the_same_victims() {
        let trace: Vec<u64> = (0..2000u64)
            .map(|i| (i * 7919) % 97 % (1 + i % 13))
            .collect();
        let victims = |seed| {
            let mut cache = Hyperbolic::new(8, seed).unwrap();
            let mut evicted = Vec::new();
            for &k in &trace {
                access(&mut cache, k, 1, |v| evicted.push(v));
            }
            evicted
        };
        assert_eq!(victims(3), victims(3));
    }
}
