//! W-TinyLFU: a small LRU window in front of a segmented LRU, with a
//! frequency sketch deciding which of their victims stays.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::{IndexedLists, ListTag};
use std::any::Any;
use std::hash::BuildHasher;

mod sketch;
use sketch::Sketch;

/// The share of the cache the window gets, as libCacheSim's default
/// `window-size=0.01`.
pub const WTINYLFU_WINDOW: f64 = 0.01;

/// Where a block is: the window, or the main cache's probation or
/// protected segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place(u8);

const WINDOW: usize = 0;
const PROBATION: usize = 1;
const PROTECTED: usize = 2;

impl ListTag for Place {
    fn list(self) -> usize {
        self.0 as usize
    }
}

/// W-TinyLFU (Einziger, Friedman and Manes, "TinyLFU: a highly efficient
/// cache admission policy", ACM Transactions on Storage 2017; Caffeine's
/// policy), as libCacheSim's `WTinyLFU` with its defaults: a window LRU of
/// 1% of the cache ([`WTINYLFU_WINDOW`]) in front of a main cache that is a
/// segmented LRU of a probation segment (a fifth) and a protected one
/// (four fifths), and a counting Bloom filter estimating each object's
/// frequency. New objects enter the window. When room is needed, the
/// window's least recent object moves to the main cache if that has room;
/// otherwise it competes with the main cache's victim and the one the
/// sketch estimates less frequent leaves (the window's on a tie). Each
/// insertion, each hit in the main cache and each window victim counts in
/// the sketch, which halves its counters every `32 x` main-cache-capacity
/// main-cache hits.
///
/// Frequency-based admission keeps one-hit wonders and scans out of the
/// main cache while the window gives new objects a chance to prove
/// themselves, so it is strong on skewed key-value, search and web
/// workloads; the fixed 1% window makes it slower than LRU to follow
/// bursts of recency.
///
/// Same as libCacheSim's `WTinyLFU`, in blocks and in bytes, including its
/// sizes (the window `floor(0.01 x capacity)`, so caches under 100 units
/// have no window and cache nothing; objects must fit the window and the
/// probation segment), its sketch (XXH64 of the object id; keys other than
/// `u64` are first hashed to one) and its departures from the paper: no
/// doorkeeper, window hits not counted, the window not bounded by its size
/// (it only gives up objects under pressure), and a main-cache object
/// entering the lowest segment with room, the protected one included. The
/// main cache is libCacheSim's `SLRU`, whose hits can push objects out of
/// it during the hit, unreported: W-TinyLFU is a simulation policy
/// ([`PolicyKind::drops_on_hit`](super::PolicyKind::drops_on_hit)).
#[derive(Clone, Debug)]
pub struct WTinyLfu<K, W = u32> {
    lists: IndexedLists<K, Place, 3, W>,
    sketch: Sketch,
    window_capacity: u64,
    main_capacity: u64,
    /// Most the probation and protected segments hold.
    segment_capacity: [u64; 2],
    /// Main-cache hits since the sketch last decayed, and how many make it
    /// decay.
    hits: u64,
    hits_per_decay: u64,
    hasher: foldhash::fast::FixedState,
    capacity: usize,
}

/// W-TinyLFU's knob, libCacheSim's `WTinyLFU` parameter
/// (`wtinylfu(window=0.01)` is the default; its main cache is always SLRU).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WTinyLfuParams {
    /// The window LRU's share of the cache (`window-size`).
    pub window: f64,
}

impl Default for WTinyLfuParams {
    fn default() -> Self {
        WTinyLfuParams {
            window: WTINYLFU_WINDOW,
        }
    }
}

impl Knobs for WTinyLfuParams {
    const KNOBS: &'static [Knob] = &[Knob {
        name: "window",
        libcachesim: "window-size",
        min: 0.0,
        max: 0.999,
        unit: KnobUnit::Real,
        help: "the window LRU's share of the cache",
    }];

    fn get(&self, _: usize) -> f64 {
        self.window
    }

    fn set(&mut self, _: usize, value: f64) {
        self.window = value;
    }
}

impl<K: BlockKey> WTinyLfu<K> {
    /// An empty W-TinyLFU cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> WTinyLfu<K, W> {
    /// An empty W-TinyLFU cache of `capacity` blocks or bytes (at least 1),
    /// storing sizes as `W`.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity, WTinyLfuParams::default())
    }

    /// An empty W-TinyLFU cache of `capacity` with `params` (at least 1),
    /// storing sizes as `W`.
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: WTinyLfuParams,
    ) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("wtinylfu", capacity, 1)?;
        // libCacheSim: `cache_size *= window_size` on an integer, then the
        // main cache gets the rest, split 1:4 by `(double)1 / 5 * size`.
        let window = (units as f64 * params.window) as u64;
        let main = units as u64 - window;
        let segment_capacity = [
            (1.0 / 5.0 * main as f64) as u64,
            (4.0 / 5.0 * main as f64) as u64,
        ];
        Ok(WTinyLfu {
            lists: IndexedLists::with_capacity(capacity.objects_hint()),
            sketch: Sketch::new(main),
            window_capacity: window,
            main_capacity: main,
            segment_capacity,
            hits: 0,
            hits_per_decay: 32 * main,
            hasher: foldhash::fast::FixedState::default(),
            capacity: units,
        })
    }

    /// The object id the sketch hashes: the key itself for `u64` keys (as
    /// libCacheSim's ids), a hash of it otherwise.
    #[inline]
    fn id(&self, key: K) -> u64 {
        match (&key as &dyn Any).downcast_ref::<u64>() {
            Some(&id) => id,
            None => self.hasher.hash_one(key),
        }
    }

    fn size_of(&self, list: usize) -> u64 {
        self.lists.list(list).size()
    }

    fn main_used(&self) -> u64 {
        self.size_of(PROBATION) + self.size_of(PROTECTED)
    }

    /// The main cache's victim: the least recent of its lowest segment
    /// that holds any.
    fn main_victim(&self) -> Idx {
        match self.lists.list(PROBATION).tail() {
            NIL => self.lists.list(PROTECTED).tail(),
            tail => tail,
        }
    }

    /// libCacheSim's `SLRU_cool`: segment `list`'s least recent object goes
    /// down one segment, or out of the cache from probation.
    fn cool(&mut self, list: usize) {
        let tail = self.lists.list(list).tail();
        if list == PROBATION {
            self.lists.forget(tail);
            return;
        }
        self.lists.relocate(tail, Place(PROBATION as u8));
        while self.size_of(PROBATION) > self.segment_capacity[0] {
            self.cool(PROBATION);
        }
    }

    /// libCacheSim's `SLRU_insert` of node `idx` (leaving the window): into
    /// the lowest segment with room for it, else, after the main cache
    /// evicts until the object fits, into probation.
    fn enter_main(&mut self, idx: Idx) {
        let size = u64::from(self.lists.size(idx));
        let segment = if self.size_of(PROBATION) + size <= self.segment_capacity[0] {
            PROBATION
        } else if self.size_of(PROTECTED) + size <= self.segment_capacity[1] {
            PROTECTED
        } else {
            while self.main_used() + size > self.main_capacity {
                let victim = self.main_victim();
                if victim == NIL {
                    break;
                }
                self.lists.forget(victim);
            }
            PROBATION
        };
        self.lists.relocate(idx, Place(segment as u8));
    }

    /// What [`evict`](Policy::evict) would drop, worked out without
    /// changing anything: the window objects that would first move to the
    /// main cache while it has room, and the sketch counts they add,
    /// decide the contest that follows.
    fn plan(&self) -> Option<Idx> {
        let mut moved: Vec<u64> = Vec::new();
        let mut used = [self.size_of(PROBATION), self.size_of(PROTECTED)];
        // The first object moved into each segment: the segment's least
        // recent if it was empty.
        let mut first_in = [NIL, NIL];
        let mut wv = self.lists.list(WINDOW).tail();
        let main_victim = |first_in: &[Idx; 2]| {
            [PROBATION, PROTECTED]
                .into_iter()
                .zip(first_in)
                .map(|(s, &first)| match self.lists.list(s).tail() {
                    NIL => first,
                    tail => tail,
                })
                .find(|&v| v != NIL)
        };
        while wv != NIL {
            let size = u64::from(self.lists.size(wv));
            if used[0] + used[1] + size <= self.main_capacity {
                let s = if used[0] + size <= self.segment_capacity[0] {
                    0
                } else if used[1] + size <= self.segment_capacity[1] {
                    1
                } else {
                    0
                };
                used[s] += size;
                if first_in[s] == NIL {
                    first_in[s] = wv;
                }
                moved.push(self.id(self.lists.key(wv)));
                wv = self.lists.slab.newer(wv);
                continue;
            }
            let mv = main_victim(&first_in)?;
            let w = self
                .sketch
                .estimate_with(self.id(self.lists.key(wv)), &moved);
            let m = self
                .sketch
                .estimate_with(self.id(self.lists.key(mv)), &moved);
            return Some(if w > m { mv } else { wv });
        }
        main_victim(&first_in)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for WTinyLfu<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "wtinylfu"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        (0..3).map(|l| self.lists.list(l).len()).sum()
    }

    fn used(&self) -> usize {
        (self.size_of(WINDOW) + self.main_used()) as usize
    }

    /// Objects must fit the window and the probation segment.
    fn admits(&self, size: u32, _: &()) -> bool {
        let size = u64::from(size);
        size <= self.capacity as u64
            && size <= self.window_capacity
            && size <= self.main_capacity
            && size <= self.segment_capacity[0]
    }

    fn contains(&self, key: K) -> bool {
        self.lists.find(key).is_some()
    }

    /// A window hit refreshes the object in the window; a main-cache hit
    /// climbs the segmented LRU and counts in the sketch.
    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        let Some(idx) = self.lists.find(key) else {
            return Lookup::Miss(());
        };
        match self.lists.meta(idx).list() {
            WINDOW => {
                self.lists.move_to_head(idx);
                return Lookup::Hit;
            }
            PROTECTED => self.lists.move_to_head(idx),
            _ => {
                self.lists.relocate(idx, Place(PROTECTED as u8));
                while self.size_of(PROTECTED) > self.segment_capacity[1] {
                    self.cool(PROTECTED);
                }
            }
        }
        self.sketch.add(self.id(key));
        self.hits += 1;
        if self.hits >= self.hits_per_decay {
            self.hits = 0;
            self.sketch.decay();
        }
        Lookup::Hit
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        self.plan().map(|idx| self.lists.key(idx))
    }

    /// libCacheSim's `WTinyLFU_evict`: window objects move to the main
    /// cache while it has room; then the window's victim and the main
    /// cache's contest, and one of them leaves.
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        loop {
            let wv = self.lists.list(WINDOW).tail();
            if wv == NIL {
                let victim = self.main_victim();
                return (victim != NIL).then(|| self.lists.forget(victim));
            }
            let wid = self.id(self.lists.key(wv));
            let size = u64::from(self.lists.size(wv));
            if self.main_used() + size <= self.main_capacity {
                self.enter_main(wv);
                self.sketch.add(wid);
                continue;
            }
            let mv = self.main_victim();
            if mv == NIL {
                return None;
            }
            let mid = self.id(self.lists.key(mv));
            let evicted = if self.sketch.estimate(wid) > self.sketch.estimate(mid) {
                let key = self.lists.forget(mv);
                self.enter_main(wv);
                key
            } else {
                self.lists.forget(wv)
            };
            self.sketch.add(wid);
            return Some(evicted);
        }
    }

    fn insert(&mut self, key: K, size: u32, _: ()) {
        self.lists.push(key, size, Place(WINDOW as u8));
        self.sketch.add(self.id(key));
    }

    fn remove(&mut self, key: K) -> bool {
        self.lists
            .find(key)
            .map(|idx| self.lists.forget(idx))
            .is_some()
    }

    fn metadata_bytes(&self) -> usize {
        self.lists.metadata_bytes() + self.sketch.bytes()
    }

    /// The window from its least recent, then probation, then protected.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        [WINDOW, PROBATION, PROTECTED]
            .into_iter()
            .flat_map(|l| self.lists.iter_from_tail(l))
            .map(|i| self.lists.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    #[test]
    fn a_frequent_block_survives_a_scan() {
        let mut cache = WTinyLfu::new(200).unwrap();
        let mut evicted = Vec::new();
        for round in 0..20u64 {
            for k in 0..50 {
                access(&mut cache, k, 1, |v| evicted.push(v));
            }
            for k in 0..20 {
                access(&mut cache, 1000 + round * 20 + k, 1, |v| evicted.push(v));
            }
        }
        assert!((0..50).all(|k| cache.contains(k)), "{evicted:?}");
        assert!(cache.used() <= 200);
    }

    #[test]
    fn a_cache_under_100_blocks_has_no_window_and_caches_nothing() {
        let mut cache = WTinyLfu::new(50).unwrap();
        assert!(!access(&mut cache, 1, 1, |_| {}));
        assert!(!access(&mut cache, 1, 1, |_| {}));
        assert!(cache.is_empty());
    }
}
