//! SLRU: segmented LRU, four LRU segments a block climbs one hit at a time.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::NIL;
use crate::queue::{IndexedLists, ListTag};

/// Most segments [`SlruParams`] allows: the lists are allocated for them.
const MAX_SEGMENTS: usize = 16;

/// SLRU's knob, libCacheSim's `SLRU` parameter (`slru(segments=4)` is the
/// default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlruParams {
    /// LRU segments, each an equal share of the cache (`n-seg`).
    pub segments: u8,
}

impl Default for SlruParams {
    fn default() -> Self {
        SlruParams { segments: 4 }
    }
}

impl Knobs for SlruParams {
    const KNOBS: &'static [Knob] = &[Knob {
        name: "segments",
        libcachesim: "n-seg",
        min: 1.0,
        max: MAX_SEGMENTS as f64,
        unit: KnobUnit::Integer,
        help: "LRU segments, each an equal share of the cache",
    }];

    fn get(&self, _: usize) -> f64 {
        f64::from(self.segments)
    }

    fn set(&mut self, _: usize, value: f64) {
        self.segments = value as u8;
    }
}

/// The segment a node is on: 0 the lowest (probationary), 3 the highest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment(u8);

impl ListTag for Segment {
    fn list(self) -> usize {
        self.0 as usize
    }
}

/// Segmented LRU (Karedla, Love and Wherry, "Caching strategies to improve
/// disk system performance", IEEE Computer 1994), with four segments of a
/// quarter of the cache each, as libCacheSim's `SLRU`. A new block enters
/// the lowest segment that has room for it (the lowest, once the cache is
/// full); a hit moves a block to the head of the next segment up (the top
/// segment's blocks to its own head), and a segment over its share pushes
/// its least recent blocks down one segment, to the head. The victim is
/// the least recent block of the lowest segment that holds any.
///
/// A block must be hit several times to reach the protected segments, so a
/// scan or a burst of one-hit blocks flushes only the lowest quarter; it
/// suits traces mixing a stable hot set with scans (databases, storage
/// caches) and trails LRU where recency alone matters.
///
/// Same as libCacheSim's `SLRU`, in blocks and in bytes (objects larger
/// than a segment are not admitted). As there, a new block finding no
/// segment with room enters the lowest even if that overfills it (the
/// segments' shares round down, or sizes differ), and a hit's push-down
/// into an overfull lowest segment then drops its least recent blocks
/// during the hit. Those drops are not reported as evictions, so SLRU is a
/// simulation policy: a cooperative node refuses it
/// ([`PolicyKind::drops_on_hit`](super::PolicyKind::drops_on_hit)).
#[derive(Clone, Debug)]
pub struct Slru<K, W = u32> {
    segments: IndexedLists<K, Segment, MAX_SEGMENTS, W>,
    /// Segments in use.
    n_seg: usize,
    /// Most each segment holds, in the cache's unit.
    segment_capacity: u64,
    capacity: usize,
}

impl<K: BlockKey> Slru<K> {
    /// An empty SLRU cache of `capacity` blocks or bytes (at least 4, a
    /// block per segment).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Slru<K, W> {
    /// An empty SLRU cache of `capacity` blocks or bytes (at least 4),
    /// storing sizes as `W`.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity, SlruParams::default())
    }

    /// An empty SLRU cache of `capacity` with `params` (at least a block
    /// per segment), storing sizes as `W`.
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: SlruParams,
    ) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let n_seg = usize::from(params.segments).clamp(1, MAX_SEGMENTS);
        let units = check_capacity("slru", capacity, n_seg)?;
        Ok(Slru {
            segments: IndexedLists::with_capacity(capacity.objects_hint()),
            n_seg,
            segment_capacity: (units / n_seg) as u64,
            capacity: units,
        })
    }

    fn size_of(&self, segment: usize) -> u64 {
        self.segments.list(segment).size()
    }

    /// Pushes segment `s`'s least recent block down one segment and, while
    /// the segment below is over its share, that one's too; below the
    /// lowest, blocks leave the cache.
    fn cool(&mut self, s: usize) {
        let tail = self.segments.list(s).tail();
        if s == 0 {
            self.segments.forget(tail);
            return;
        }
        self.segments.relocate(tail, Segment(s as u8 - 1));
        while self.size_of(s - 1) > self.segment_capacity {
            self.cool(s - 1);
        }
    }

    /// The lowest segment holding a block.
    fn lowest(&self) -> Option<usize> {
        (0..self.n_seg).find(|&s| self.segments.list(s).tail() != NIL)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Slru<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "slru"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        (0..self.n_seg).map(|s| self.segments.list(s).len()).sum()
    }

    fn used(&self) -> usize {
        (0..self.n_seg).map(|s| self.size_of(s)).sum::<u64>() as usize
    }

    /// Objects must fit a segment.
    fn admits(&self, size: u32, _: &()) -> bool {
        u64::from(size) <= self.segment_capacity
    }

    fn contains(&self, key: K) -> bool {
        self.segments.find(key).is_some()
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        let Some(idx) = self.segments.find(key) else {
            return Lookup::Miss(());
        };
        let s = self.segments.meta(idx).list();
        if s == self.n_seg - 1 {
            self.segments.move_to_head(idx);
        } else {
            self.segments.relocate(idx, Segment(s as u8 + 1));
            while self.size_of(s + 1) > self.segment_capacity {
                self.cool(s + 1);
            }
        }
        Lookup::Hit
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        self.segments.tail_key(self.lowest()?)
    }

    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let tail = self.segments.list(self.lowest()?).tail();
        Some(self.segments.forget(tail))
    }

    /// Into the lowest segment with room, else the lowest.
    fn insert(&mut self, key: K, size: u32, _: ()) {
        let s = (0..self.n_seg)
            .find(|&s| self.size_of(s) + u64::from(size) <= self.segment_capacity)
            .unwrap_or(0);
        self.segments.push(key, size, Segment(s as u8));
    }

    fn remove(&mut self, key: K) -> bool {
        self.segments
            .find(key)
            .map(|idx| self.segments.forget(idx))
            .is_some()
    }

    fn metadata_bytes(&self) -> usize {
        self.segments.metadata_bytes()
    }

    /// The lowest segment from its least recent block, then the next up.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        (0..self.n_seg)
            .flat_map(|s| self.segments.iter_from_tail(s))
            .map(|i| self.segments.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    #[test]
    fn a_hit_block_climbs_and_outlives_a_scan() {
        let mut cache = Slru::new(8).unwrap();
        let mut evicted = Vec::new();
        // 1 and 2 hit twice climb to segment 2; a scan of 20 blocks passes
        // through the lowest segments without dropping them.
        for k in [1, 2, 1, 2, 1, 2].into_iter().chain(100..120) {
            access(&mut cache, k, 1, |v| evicted.push(v));
        }
        assert!(cache.contains(1) && cache.contains(2), "{evicted:?}");
        assert_eq!(cache.len(), 8);
        assert!(cache.remove(1));
        assert_eq!(cache.len(), 7);
    }
}
