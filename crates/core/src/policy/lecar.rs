//! LeCaR: an LRU expert and an LFU expert, weighted by regret.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::lehmer::{LIBCACHESIM_SEED, Lehmer64};
use super::param_error::ParamError;
use super::random::SEED_KNOB;
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, NIL, Slab};

/// LeCaR's parameters, libCacheSim's defaults by [`Default`], and its
/// knobs: `lecar(update=0,lru=0.3)` are libCacheSim's two parameters
/// (`update-weight=0,lru-weight=0.3`); `lr`, `discount` and `seed` are
/// values libCacheSim fixes, offered here to explore around the paper's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeCaRParams {
    /// libCacheSim's `update-weight`: whether ghost hits move the weights
    /// (true). Without it the experts keep their initial weights.
    pub update_weight: bool,
    /// libCacheSim's `lru-weight`: the LRU expert's initial weight (0.5),
    /// in 0..=1. The LFU expert starts at 0.5 whatever this is, as in
    /// libCacheSim.
    pub lru_weight: f64,
    /// libCacheSim's `lr` (fixed there): the learning rate, 0.45 as in the
    /// paper.
    pub learning_rate: f64,
    /// The base of libCacheSim's discount rate `dr = base^(1/cache size)`
    /// (fixed there at 0.005, the paper's): a regret weighs
    /// `dr^(requests since the eviction)`. In (0, 1].
    pub discount_base: f64,
    /// Not a libCacheSim parameter: the generator's seed. The default,
    /// libCacheSim's initial state, draws libCacheSim's numbers.
    pub seed: u64,
}

impl Default for LeCaRParams {
    fn default() -> Self {
        LeCaRParams {
            update_weight: true,
            lru_weight: 0.5,
            learning_rate: 0.45,
            discount_base: 0.005,
            seed: LIBCACHESIM_SEED,
        }
    }
}

impl Knobs for LeCaRParams {
    // Ranges within `check`, so a knobbed build refuses only a capacity.
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "update",
            libcachesim: "update-weight",
            min: 0.0,
            max: 1.0,
            unit: KnobUnit::Integer,
            help: "1 lets regrets move the experts' weights, 0 keeps the initial ones",
        },
        Knob {
            name: "lru",
            libcachesim: "lru-weight",
            min: 0.0,
            max: 1.0,
            unit: KnobUnit::Real,
            help: "the LRU expert's initial weight (the LFU expert's is 0.5 whatever this is)",
        },
        Knob {
            name: "lr",
            libcachesim: "none, fixed at 0.45",
            min: 0.0,
            max: 100.0,
            unit: KnobUnit::Real,
            help: "the learning rate: a regret scales its expert's weight by exp(-lr * discount)",
        },
        Knob {
            name: "discount",
            libcachesim: "none, fixed at 0.005",
            min: 1e-6,
            max: 1.0,
            unit: KnobUnit::Real,
            help: "a regret's weight after as many requests as the cache holds",
        },
        SEED_KNOB,
    ];

    fn get(&self, i: usize) -> f64 {
        [
            f64::from(u8::from(self.update_weight)),
            self.lru_weight,
            self.learning_rate,
            self.discount_base,
            self.seed as f64,
        ][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.update_weight = value != 0.0,
            1 => self.lru_weight = value,
            2 => self.learning_rate = value,
            3 => self.discount_base = value,
            _ => self.seed = value as u64,
        }
    }
}

impl LeCaRParams {
    /// The first parameter out of range, if any.
    fn check(&self) -> Result<(), ParamError> {
        let out = |name, value: f64, expected| ParamError::OutOfRange {
            policy: "lecar",
            name,
            value: value.to_string(),
            expected,
        };
        if !(0.0..=1.0).contains(&self.lru_weight) {
            return Err(out("lru-weight", self.lru_weight, "0 to 1"));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate >= 0.0) {
            return Err(out("lr", self.learning_rate, "a finite number >= 0"));
        }
        if !(self.discount_base > 0.0 && self.discount_base <= 1.0) {
            return Err(out("dr", self.discount_base, "above 0, at most 1"));
        }
        Ok(())
    }
}

/// Which expert evicted a ghost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Cached,
    /// Evicted on the LRU expert's advice (libCacheSim's `evict_expert` 1).
    GhostLru,
    /// Evicted on the LFU expert's advice (`evict_expert` 2).
    GhostLfu,
}

/// A node's state. A cached block sits on the recency list (the slab's
/// links) and on its count's bucket (`older`/`newer`); a ghost sits on its
/// expert's ghost list (the slab's links).
#[derive(Clone, Copy, Debug)]
struct Meta {
    place: Place,
    /// References since cached.
    freq: u64,
    /// The request that evicted a ghost.
    evicted_at: u64,
    bucket: Idx,
    older: Idx,
    newer: Idx,
}

/// The cached blocks with one reference count, oldest to reach it first,
/// and the neighbouring counts that have blocks.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    freq: u64,
    oldest: Idx,
    newest: Idx,
    /// The bucket of the next higher count, or the next free bucket.
    higher: Idx,
    lower: Idx,
}

/// LeCaR (Vietri, Rodriguez, Martinez, Lyons, Liu, Rangaswami, Zhao and
/// Narasimhan, "Driving Cache Replacement with ML-based LeCaR", HotStorage
/// 2018), as libCacheSim's `LeCaR` (not `LeCaRv0`). Two experts advise on
/// every eviction: LRU (the least recently used block) and LFU (the least
/// frequently used since cached, the first to reach that count on a tie).
/// When they agree, that block goes; otherwise one is followed at random
/// with the probability of its weight. A block evicted on one expert's
/// advice is remembered in that expert's ghost list (half the cache each,
/// FIFO); a miss on such a ghost is that expert's regret and shifts weight
/// to the other by `w *= exp(-lr * dr^t)`, `t` the requests since the
/// eviction, `dr = 0.005^(1/cache size)`, then renormalises. A block
/// evicted when both experts agree leaves no ghost.
///
/// It learns per workload whether recency or frequency pays, so it follows
/// traces that switch between scans and hot sets better than either
/// expert, especially in small caches (the paper's case); it is slow to
/// adapt in large caches, where regrets are rare and discounted, and its
/// draws make single runs noisy.
///
/// libCacheSim draws from its thread's generator ([`Lehmer64`] from
/// [`LIBCACHESIM_SEED`]); here each cache owns one, seeded the same, so the
/// miss counts are libCacheSim's when libCacheSim runs the cache alone on
/// a fresh thread, as the golden scripts do (`tests/golden.rs`,
/// `tests/golden_sizes.rs`). In a byte cache `dr` is taken over the size in
/// bytes, as libCacheSim does (so regrets barely decay), and the ghost
/// lists hold half the bytes. Departures: a hit keeps the size the block
/// was cached with, and [`remove`](Policy::remove) leaves ghosts alone
/// (libCacheSim would unlink a ghost from the recency list it is not on).
#[derive(Clone, Debug)]
pub struct LeCaR<K, W = u32> {
    index: Index,
    slab: Slab<K, Meta, W>,
    /// Cached blocks, most recently used at the head.
    recency: List,
    ghost_lru: List,
    ghost_lfu: List,
    buckets: Vec<Bucket>,
    free_bucket: Idx,
    /// The bucket of the smallest count, [`NIL`] when nothing is cached.
    lowest: Idx,
    w_lru: f64,
    w_lfu: f64,
    learning_rate: f64,
    discount: f64,
    update_weight: bool,
    rng: Lehmer64,
    /// Requests seen (libCacheSim's `n_req`), the clock regrets decay by.
    requests: u64,
    capacity: usize,
}

impl<K: BlockKey> LeCaR<K> {
    /// An empty LeCaR cache of `capacity` blocks or bytes (at least 1)
    /// with libCacheSim's parameters.
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> LeCaR<K, W> {
    /// An empty LeCaR cache of `capacity` with libCacheSim's parameters,
    /// storing sizes as `W`.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::build(capacity.into(), LeCaRParams::default())
    }

    /// An empty LeCaR cache of `capacity` with `params`, checked.
    pub fn with_params(capacity: Capacity, params: LeCaRParams) -> Result<Self, ParamError> {
        params.check()?;
        Ok(Self::build(capacity, params)?)
    }

    fn build(capacity: Capacity, params: LeCaRParams) -> Result<Self, CapacityError> {
        let units = check_capacity("lecar", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(LeCaR {
            index: Index::with_capacity(2 * hint),
            slab: Slab::with_capacity(2 * hint),
            recency: List::default(),
            ghost_lru: List::default(),
            ghost_lfu: List::default(),
            buckets: Vec::new(),
            free_bucket: NIL,
            lowest: NIL,
            w_lru: params.lru_weight,
            w_lfu: 0.5,
            learning_rate: params.learning_rate,
            discount: params.discount_base.powf(1.0 / units as f64),
            update_weight: params.update_weight,
            rng: Lehmer64::new(params.seed),
            requests: 0,
            capacity: units,
        })
    }

    /// The experts' current weights, LRU's then LFU's.
    pub fn weights(&self) -> (f64, f64) {
        (self.w_lru, self.w_lfu)
    }

    /// libCacheSim's `update_weight`: the regretted expert's weight
    /// `w_update` falls, both renormalise (each floored by 1e-10).
    fn regret(&mut self, evicted_at: u64, lru_regrets: bool) {
        if !self.update_weight {
            return;
        }
        let (mut w_update, mut w_no_update) = if lru_regrets {
            (self.w_lru, self.w_lfu)
        } else {
            (self.w_lfu, self.w_lru)
        };
        let r = self.discount.powf((self.requests - evicted_at) as f64);
        w_update = w_update * (-self.learning_rate * r).exp() + 1e-10;
        let s = w_update + w_no_update + 2e-10;
        w_update /= s;
        w_no_update = (w_no_update + 1e-10) / s;
        (self.w_lru, self.w_lfu) = if lru_regrets {
            (w_update, w_no_update)
        } else {
            (w_no_update, w_update)
        };
    }

    /// The victim and the expert it is a ghost of (`None` when both agree),
    /// drawing from `rng`.
    fn choose(&self, rng: &mut Lehmer64) -> Option<(Idx, Option<Place>)> {
        let lru = self.recency.tail();
        if lru == NIL {
            return None;
        }
        let lfu = self.buckets[self.lowest as usize].oldest;
        if lru == lfu {
            return Some((lru, None));
        }
        let r = (rng.next_u64() % 100) as f64 / 100.0;
        Some(if r < self.w_lru {
            (lru, Some(Place::GhostLru))
        } else {
            (lfu, Some(Place::GhostLfu))
        })
    }

    /// A bucket for count `freq` between `lower` and `higher` (either may
    /// be [`NIL`]), reusing a freed one if there is one.
    fn new_bucket(&mut self, freq: u64, lower: Idx, higher: Idx) -> Idx {
        let bucket = Bucket {
            freq,
            oldest: NIL,
            newest: NIL,
            higher,
            lower,
        };
        let b = if self.free_bucket == NIL {
            self.buckets.push(bucket);
            (self.buckets.len() - 1) as Idx
        } else {
            let b = self.free_bucket;
            self.free_bucket = self.buckets[b as usize].higher;
            self.buckets[b as usize] = bucket;
            b
        };
        match lower {
            NIL => self.lowest = b,
            l => self.buckets[l as usize].higher = b,
        }
        if higher != NIL {
            self.buckets[higher as usize].lower = b;
        }
        b
    }

    /// Appends cached node `idx` to bucket `b` as its newest.
    fn join_bucket(&mut self, b: Idx, idx: Idx) {
        let newest = self.buckets[b as usize].newest;
        let m = self.slab.meta_mut(idx);
        (m.bucket, m.older, m.newer) = (b, newest, NIL);
        match newest {
            NIL => self.buckets[b as usize].oldest = idx,
            n => self.slab.meta_mut(n).newer = idx,
        }
        self.buckets[b as usize].newest = idx;
    }

    /// Takes cached node `idx` off its bucket, freeing the bucket if that
    /// empties it.
    fn leave_bucket(&mut self, idx: Idx) {
        let Meta {
            bucket: b,
            older,
            newer,
            ..
        } = self.slab.meta(idx);
        match older {
            NIL => self.buckets[b as usize].oldest = newer,
            o => self.slab.meta_mut(o).newer = newer,
        }
        match newer {
            NIL => self.buckets[b as usize].newest = older,
            n => self.slab.meta_mut(n).older = older,
        }
        let Bucket {
            oldest,
            lower,
            higher,
            ..
        } = self.buckets[b as usize];
        if oldest != NIL {
            return;
        }
        match lower {
            NIL => self.lowest = higher,
            l => self.buckets[l as usize].higher = higher,
        }
        if higher != NIL {
            self.buckets[higher as usize].lower = lower;
        }
        self.buckets[b as usize].higher = self.free_bucket;
        self.free_bucket = b;
    }

    /// Moves cached node `idx` to the next count's bucket, as newest.
    fn count_hit(&mut self, idx: Idx) {
        let b = self.slab.meta(idx).bucket;
        let Bucket { freq, higher, .. } = self.buckets[b as usize];
        // Made before leaving `b`, which may free it: `b` is its lower.
        let up = if higher != NIL && self.buckets[higher as usize].freq == freq + 1 {
            higher
        } else {
            self.new_bucket(freq + 1, b, higher)
        };
        self.leave_bucket(idx);
        self.join_bucket(up, idx);
        self.slab.meta_mut(idx).freq = freq + 1;
    }

    /// Unindexes and frees ghost `idx` on `list`.
    fn forget_ghost(&mut self, idx: Idx, expert: Place) {
        self.index.remove(&self.slab, idx);
        let list = match expert {
            Place::GhostLru => &mut self.ghost_lru,
            _ => &mut self.ghost_lfu,
        };
        self.slab.unlink(list, idx);
        self.slab.release(idx);
    }

    /// Takes cached node `idx` off the recency list and its bucket.
    fn uncache(&mut self, idx: Idx) {
        self.slab.unlink(&mut self.recency, idx);
        self.leave_bucket(idx);
    }

    /// Cached nodes in the LFU expert's order: by count, oldest first.
    fn lfu_order(&self) -> impl Iterator<Item = Idx> + '_ {
        let buckets = std::iter::successors((self.lowest != NIL).then_some(self.lowest), |&b| {
            let next = self.buckets[b as usize].higher;
            (next != NIL).then_some(next)
        });
        buckets.flat_map(|b| {
            let first = self.buckets[b as usize].oldest;
            std::iter::successors((first != NIL).then_some(first), |&i| {
                let next = self.slab.meta(i).newer;
                (next != NIL).then_some(next)
            })
        })
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for LeCaR<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "lecar"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.recency.len()
    }

    fn used(&self) -> usize {
        self.recency.size() as usize
    }

    fn contains(&self, key: K) -> bool {
        self.index
            .find(&self.slab, key)
            .is_some_and(|idx| self.slab.meta(idx).place == Place::Cached)
    }

    /// A hit updates both experts' orders; a miss on a ghost is its
    /// expert's regret, and the ghost goes.
    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        self.requests += 1;
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(());
        };
        let Meta {
            place, evicted_at, ..
        } = self.slab.meta(idx);
        match place {
            Place::Cached => {
                self.slab.move_to_head(&mut self.recency, idx);
                self.count_hit(idx);
                return Lookup::Hit;
            }
            Place::GhostLru => self.regret(evicted_at, true),
            Place::GhostLfu => self.regret(evicted_at, false),
        }
        self.forget_ghost(idx, place);
        Lookup::Miss(())
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        let mut rng = self.rng;
        self.choose(&mut rng).map(|(idx, _)| self.slab.key(idx))
    }

    /// Follows an expert; the block becomes that expert's ghost, and its
    /// ghost list drops its oldest while over half the cache.
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let mut rng = self.rng;
        let (idx, expert) = self.choose(&mut rng)?;
        self.rng = rng;
        let key = self.slab.key(idx);
        self.uncache(idx);
        let Some(expert) = expert else {
            self.index.remove(&self.slab, idx);
            self.slab.release(idx);
            return Some(key);
        };
        let m = self.slab.meta_mut(idx);
        (m.place, m.evicted_at) = (expert, self.requests);
        let list = match expert {
            Place::GhostLru => &mut self.ghost_lru,
            _ => &mut self.ghost_lfu,
        };
        self.slab.push_head(list, idx);
        while list.size() > self.capacity as u64 / 2 {
            let oldest = list.tail();
            self.index.remove(&self.slab, oldest);
            self.slab.unlink(list, oldest);
            self.slab.release(oldest);
        }
        Some(key)
    }

    fn insert(&mut self, key: K, size: u32, _: ()) {
        let meta = Meta {
            place: Place::Cached,
            freq: 1,
            evicted_at: 0,
            bucket: NIL,
            older: NIL,
            newer: NIL,
        };
        let idx = self.slab.alloc(key, size, meta);
        self.slab.push_head(&mut self.recency, idx);
        self.index.insert(&self.slab, idx);
        let one = match self.lowest {
            NIL => self.new_bucket(1, NIL, NIL),
            b if self.buckets[b as usize].freq == 1 => b,
            b => self.new_bucket(1, NIL, b),
        };
        self.join_bucket(one, idx);
    }

    fn remove(&mut self, key: K) -> bool {
        match self.index.find(&self.slab, key) {
            Some(idx) if self.slab.meta(idx).place == Place::Cached => {
                self.uncache(idx);
                self.index.remove(&self.slab, idx);
                self.slab.release(idx);
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.index.allocated_bytes()
            + self.slab.allocated_bytes()
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }

    /// Cached blocks in the order of the expert with the larger weight.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let by_recency = self.w_lru >= self.w_lfu;
        let lru = by_recency.then(|| self.slab.iter_from_tail(&self.recency));
        let lfu = (!by_recency).then(|| self.lfu_order());
        lru.into_iter()
            .flatten()
            .chain(lfu.into_iter().flatten())
            .map(|i| self.slab.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    #[test]
    fn agreeing_experts_evict_without_drawing() {
        let mut cache = LeCaR::new(2).unwrap();
        let mut evicted = Vec::new();
        // 1 is both least recent and least frequent when 3 arrives.
        for k in [1, 2, 2, 3] {
            access(&mut cache, k, 1, |v| evicted.push(v));
        }
        assert_eq!(evicted, [1]);
        assert_eq!(cache.rng, Lehmer64::new(LIBCACHESIM_SEED));
    }

    #[test]
    fn a_ghost_hit_shifts_weight_away_from_its_expert() {
        let mut cache = LeCaR::new(4).unwrap();
        // Make LRU and LFU disagree (1 is frequent but old), then bring
        // every victim back until one expert has regretted.
        for k in [1, 1, 1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 1] {
            access(&mut cache, k, 1, |_| {});
        }
        let (lru, lfu) = cache.weights();
        assert!((lru + lfu - 1.0).abs() < 1e-9, "{lru} + {lfu}");
        assert_ne!(lru, 0.5, "no regret was recorded");
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        let params = LeCaRParams {
            lru_weight: 1.5,
            ..LeCaRParams::default()
        };
        let err = LeCaR::<u64>::with_params(Capacity::Blocks(8), params).unwrap_err();
        assert!(err.to_string().contains("lru-weight"), "{err}");
        let nan = LeCaRParams {
            discount_base: f64::NAN,
            ..LeCaRParams::default()
        };
        assert!(LeCaR::<u64>::with_params(Capacity::Blocks(8), nan).is_err());
        assert!(LeCaR::<u64>::with_params(Capacity::Blocks(0), LeCaRParams::default()).is_err());
    }
}
