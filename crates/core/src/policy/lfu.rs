//! LFU: evict the least frequently used block, the oldest of them on a tie.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, NIL, Slab};

/// The blocks referenced the same number of times since they were cached,
/// in the order they reached that count (head newest), and the neighbouring
/// counts that have blocks.
#[derive(Clone, Debug)]
struct Bucket {
    freq: u64,
    blocks: List,
    /// The bucket of the next higher count, or the next free bucket.
    higher: Idx,
    lower: Idx,
}

/// Least frequently used (the classic policy; libCacheSim's `LFU`): every
/// cached block counts its references since it was cached, the victim is a
/// block with the smallest count and, among those, the one that reached
/// that count first (FIFO within a count). A block forgets its count when
/// it leaves, so it comes back with count 1 (no ageing, no history).
///
/// Blocks sharing a count sit on one list per count, the counts on a list
/// of their own (the O(1) LFU of Shah, Mitra and Matani, "An O(1) algorithm
/// for implementing the LFU cache eviction scheme", 2010), so a hit or an
/// eviction costs a few link updates and no allocation once warm.
///
/// It suits workloads whose popularity is skewed and stable (Zipf-like
/// key-value and CDN traces); it adapts badly when popularity shifts (blocks
/// that were hot stay however cold they become) and a burst of references
/// pins a block long after it is useful.
///
/// Same as libCacheSim's `LFU` (not `LFUCpp`, which breaks ties otherwise).
#[derive(Clone, Debug)]
pub struct Lfu<K, W = u32> {
    index: Index,
    /// Cached blocks; each node's payload is the bucket it is on.
    slab: Slab<K, Idx, W>,
    buckets: Vec<Bucket>,
    /// Head of the chain of free buckets, linked through `higher`.
    free_bucket: Idx,
    /// The bucket of the smallest count, [`NIL`] when the cache is empty.
    lowest: Idx,
    len: usize,
    used: u64,
    capacity: usize,
}

impl<K: BlockKey> Lfu<K> {
    /// An empty LFU cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Lfu<K, W> {
    /// An empty LFU cache of `capacity` blocks or bytes (at least 1).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new` builds) for any
    /// cache, [`Unit`](super::Unit) for a block cache.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("lfu", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Lfu {
            index: Index::with_capacity(hint),
            slab: Slab::with_capacity(hint),
            buckets: Vec::new(),
            free_bucket: NIL,
            lowest: NIL,
            len: 0,
            used: 0,
            capacity: units,
        })
    }

    /// A bucket for count `freq`, linked between `lower` and `higher`
    /// (either may be [`NIL`]), reusing a freed one if there is one.
    fn new_bucket(&mut self, freq: u64, lower: Idx, higher: Idx) -> Idx {
        let bucket = Bucket {
            freq,
            blocks: List::default(),
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

    /// Unlinks bucket `b` from the counts and frees it if it holds no block.
    fn drop_if_empty(&mut self, b: Idx) {
        let Bucket {
            blocks,
            lower,
            higher,
            ..
        } = self.buckets[b as usize];
        if !blocks.is_empty() {
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

    /// Unindexes, unlinks and frees node `idx`; returns its key.
    fn forget(&mut self, idx: Idx) -> K {
        let b = self.slab.meta(idx);
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.buckets[b as usize].blocks, idx);
        self.len -= 1;
        self.used -= u64::from(self.slab.size(idx));
        self.slab.release(idx);
        self.drop_if_empty(b);
        self.slab.key(idx)
    }

    /// Cached blocks in eviction order: by count, the oldest at a count
    /// first.
    fn iter_nodes(&self) -> impl Iterator<Item = Idx> + '_ {
        let buckets = std::iter::successors((self.lowest != NIL).then_some(self.lowest), |&b| {
            let next = self.buckets[b as usize].higher;
            (next != NIL).then_some(next)
        });
        buckets.flat_map(|b| self.slab.iter_from_tail(&self.buckets[b as usize].blocks))
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Lfu<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "lfu"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.len
    }

    fn used(&self) -> usize {
        self.used as usize
    }

    fn contains(&self, key: K) -> bool {
        self.index.find(&self.slab, key).is_some()
    }

    /// A hit moves the block to the newest end of the next count's list.
    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(());
        };
        let b = self.slab.meta(idx);
        let Bucket { freq, higher, .. } = self.buckets[b as usize];
        let up = if higher != NIL && self.buckets[higher as usize].freq == freq + 1 {
            higher
        } else {
            self.new_bucket(freq + 1, b, higher)
        };
        self.slab.unlink(&mut self.buckets[b as usize].blocks, idx);
        self.slab
            .push_head(&mut self.buckets[up as usize].blocks, idx);
        *self.slab.meta_mut(idx) = up;
        self.drop_if_empty(b);
        Lookup::Hit
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        self.iter_nodes().next().map(|i| self.slab.key(i))
    }

    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        if self.lowest == NIL {
            return None;
        }
        let tail = self.buckets[self.lowest as usize].blocks.tail();
        Some(self.forget(tail))
    }

    fn insert(&mut self, key: K, size: u32, _: ()) {
        let lowest = self.lowest;
        let one = if lowest != NIL && self.buckets[lowest as usize].freq == 1 {
            lowest
        } else {
            self.new_bucket(1, NIL, lowest)
        };
        let idx = self.slab.alloc(key, size, one);
        self.slab
            .push_head(&mut self.buckets[one as usize].blocks, idx);
        self.index.insert(&self.slab, idx);
        self.len += 1;
        self.used += u64::from(size);
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
            + self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }

    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        self.iter_nodes().map(|i| self.slab.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    fn run(cache: &mut Lfu<u64>, keys: &[u64]) -> Vec<u64> {
        let mut evicted = Vec::new();
        for &k in keys {
            access(cache, k, 1, |v| evicted.push(v));
        }
        evicted
    }

    #[test]
    fn evicts_the_least_frequent_then_the_oldest_at_that_count() {
        let mut cache = Lfu::new(3).unwrap();
        // 1 twice, 2 three times, 3 once: 3 goes first.
        assert!(run(&mut cache, &[1, 1, 2, 2, 2, 3]).is_empty());
        assert_eq!(cache.victim(&(), 1), Some(3));
        assert_eq!(run(&mut cache, &[4]), vec![3]);
        // 4 has count 1, 1 count 2: 4 goes, then 5 (both count 1, 5 older
        // than 6 at count 1).
        assert_eq!(run(&mut cache, &[5]), vec![4]);
        assert_eq!(run(&mut cache, &[6]), vec![5]);
        // 1 reaches 3 after 2 did: at count 3, 2 is older.
        run(&mut cache, &[6, 6, 6, 1]);
        assert_eq!(cache.iter_oldest_first().collect::<Vec<_>>(), vec![2, 1, 6]);
        assert_eq!(cache.len(), 3);
        assert!(cache.remove(2));
        assert!(!cache.contains(2));
        assert_eq!(cache.iter_oldest_first().collect::<Vec<_>>(), vec![1, 6]);
    }

    #[test]
    fn a_returning_block_starts_again_at_count_one() {
        let mut cache = Lfu::new(2).unwrap();
        run(&mut cache, &[1, 1, 1, 2, 3]);
        assert!(!cache.contains(2));
        assert_eq!(run(&mut cache, &[2]), vec![3]);
        assert_eq!(run(&mut cache, &[4]), vec![2]);
    }

    #[test]
    fn bytes_evict_until_the_object_fits() {
        let mut cache: Lfu<u64> = Lfu::new(Capacity::Bytes(10)).unwrap();
        let mut evicted = Vec::new();
        for (k, s) in [(1, 4), (1, 4), (2, 3), (3, 3), (4, 6)] {
            access(&mut cache, k, s, |v| evicted.push(v));
        }
        assert_eq!(evicted, vec![2, 3]);
        assert_eq!(cache.used(), 10);
    }
}
