//! GDSF: greedy dual size with frequency.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, Slab};

/// Where a cached block stands: its priority, the request that set it
/// (the tie-break: the earlier goes first), its reference count and its
/// place in the heap.
#[derive(Clone, Copy, Debug)]
struct Rank {
    priority: f64,
    vtime: u64,
    freq: u64,
    pos: u32,
}

impl Rank {
    /// Whether `self` goes before `other`: libCacheSim's `pq_node_type`
    /// order, priority then request number.
    #[inline]
    fn before(priority: f64, vtime: u64, other: &Rank) -> bool {
        if priority == other.priority {
            vtime < other.vtime
        } else {
            priority < other.priority
        }
    }
}

/// What a miss carries to the eviction and insertion that follow: the
/// cache's age and the request number when the object missed, from which
/// its priority is computed once its size is known.
#[derive(Clone, Copy, Debug)]
pub struct GdsfMiss {
    age: f64,
    vtime: u64,
}

/// Greedy-Dual-Size-Frequency (Cherkasova, "Improving WWW proxies
/// performance with Greedy-Dual-Size-Frequency caching policy", HP Labs
/// report HPL-98-69R1, 1998; the Greedy-Dual-Size of Cao and Irani, USITS
/// 1997, with frequency), as libCacheSim's `GDSF`. A block's priority is
/// `L + freq * 10^6 / size`, set when it is cached (`freq` 1) and at each
/// hit; the victim has the lowest, the earliest set among equals. The age
/// `L` is the priority of the last victim, so blocks not referenced for
/// long fall behind new ones.
///
/// Built for variable sizes (web proxies, CDNs, photo stores): it keeps
/// many small popular objects rather than a few large ones, which raises
/// the object hit ratio at some cost in byte hit ratio. In a block cache
/// it is LFU with aging (LFUDA with ties broken by recency).
///
/// Same as libCacheSim's `GDSF`, in blocks and in bytes, including its
/// order of work: the missing object is inserted first and the cache then
/// evicts its lowest priorities until it fits, so a new object whose
/// priority is below every cached one is dropped at once (it is the
/// victim, the age becomes its priority, and it is not cached; nothing
/// else is evicted after it). Here [`evict`](Policy::evict) returns `None`
/// for that step and [`insert`](Policy::insert) then caches nothing, so
/// GDSF is a simulation policy: a cooperative node refuses it
/// ([`PolicyKind::drops_on_hit`](super::PolicyKind::drops_on_hit)). The
/// priorities are `f64` computed as libCacheSim computes them, so ties
/// fall the same way. The heap is an indexed binary heap over the slab, so
/// a request allocates nothing once warm.
#[derive(Clone, Debug)]
pub struct Gdsf<K, W = u32> {
    index: Index,
    slab: Slab<K, Rank, W>,
    /// Every cached block (for iteration and sizes), newest at the head.
    cached: List,
    /// Cached blocks as a binary min-heap by [`Rank::before`].
    heap: Vec<Idx>,
    /// The age `L`: the priority of the last victim.
    age: f64,
    /// Requests seen: the tie-break of equal priorities.
    requests: u64,
    /// The missing object turned out to be its own victim: the following
    /// insert caches nothing.
    refused: bool,
    capacity: usize,
}

impl<K: BlockKey> Gdsf<K> {
    /// An empty GDSF cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Gdsf<K, W> {
    /// An empty GDSF cache of `capacity` blocks or bytes (at least 1),
    /// storing sizes as `W`.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("gdsf", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Gdsf {
            index: Index::with_capacity(hint),
            slab: Slab::with_capacity(hint),
            cached: List::default(),
            heap: Vec::with_capacity(hint),
            age: 0.0,
            requests: 0,
            refused: false,
            capacity: units,
        })
    }

    /// The priority of an object of `size` referenced `freq` times, at
    /// age `age`, computed as libCacheSim does (in `f64`, in this order).
    #[inline]
    fn priority(age: f64, freq: u64, size: u32) -> f64 {
        age + freq as f64 * 1.0e6 / f64::from(size)
    }

    #[inline]
    fn rank(&self, i: usize) -> Rank {
        self.slab.meta(self.heap[i])
    }

    #[inline]
    fn less(&self, i: usize, j: usize) -> bool {
        let a = self.rank(i);
        Rank::before(a.priority, a.vtime, &self.rank(j))
    }

    #[inline]
    fn set(&mut self, i: usize, idx: Idx) {
        self.heap[i] = idx;
        self.slab.meta_mut(idx).pos = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(i, parent) {
                break;
            }
            let (a, b) = (self.heap[i], self.heap[parent]);
            self.set(i, b);
            self.set(parent, a);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && self.less(l, least) {
                least = l;
            }
            if r < self.heap.len() && self.less(r, least) {
                least = r;
            }
            if least == i {
                break;
            }
            let (a, b) = (self.heap[i], self.heap[least]);
            self.set(i, b);
            self.set(least, a);
            i = least;
        }
    }

    /// Takes the node at heap place `pos` out of the heap.
    fn heap_remove(&mut self, pos: usize) {
        let last = self.heap.pop().expect("a cached block is in the heap");
        if pos < self.heap.len() {
            self.set(pos, last);
            self.sift_up(pos);
            self.sift_down(self.slab.meta(last).pos as usize);
        }
    }

    /// Unindexes, unlinks and frees node `idx`; returns its key.
    fn forget(&mut self, idx: Idx) -> K {
        self.heap_remove(self.slab.meta(idx).pos as usize);
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.cached, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }

    /// Whether the missing object, of `size`, would itself be the next
    /// victim.
    fn refuses(&self, miss: &GdsfMiss, size: u32) -> bool {
        let priority = Self::priority(miss.age, 1, size);
        self.heap
            .first()
            .is_none_or(|&top| Rank::before(priority, miss.vtime, &self.slab.meta(top)))
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Gdsf<K, W> {
    type Miss = GdsfMiss;

    fn name(&self) -> &'static str {
        "gdsf"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.cached.len()
    }

    fn used(&self) -> usize {
        self.cached.size() as usize
    }

    fn contains(&self, key: K) -> bool {
        self.index.find(&self.slab, key).is_some()
    }

    /// A hit counts the reference and resets the block's priority from
    /// the current age.
    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<GdsfMiss> {
        self.requests += 1;
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(GdsfMiss {
                age: self.age,
                vtime: self.requests,
            });
        };
        let size = self.slab.size(idx);
        let rank = self.slab.meta_mut(idx);
        rank.freq += 1;
        rank.priority = Self::priority(self.age, rank.freq, size);
        rank.vtime = self.requests;
        // The priority only grows (the age never falls), so the block can
        // only move down.
        let pos = rank.pos as usize;
        self.sift_down(pos);
        Lookup::Hit
    }

    fn needs_room(&self, _: &GdsfMiss, size: u32) -> bool {
        !self.refused && self.used() as u64 + u64::from(size) > self.capacity as u64
    }

    fn victim(&self, miss: &GdsfMiss, size: u32) -> Option<K> {
        if self.refuses(miss, size) {
            return None;
        }
        Some(self.slab.key(self.heap[0]))
    }

    fn evict(&mut self, miss: &GdsfMiss, size: u32) -> Option<K> {
        if self.refuses(miss, size) {
            self.age = Self::priority(miss.age, 1, size);
            self.refused = true;
            return None;
        }
        let top = self.heap[0];
        self.age = self.slab.meta(top).priority;
        Some(self.forget(top))
    }

    fn insert(&mut self, key: K, size: u32, miss: GdsfMiss) {
        if std::mem::take(&mut self.refused) {
            return;
        }
        let rank = Rank {
            priority: Self::priority(miss.age, 1, size),
            vtime: miss.vtime,
            freq: 1,
            pos: self.heap.len() as u32,
        };
        let idx = self.slab.alloc(key, size, rank);
        self.slab.push_head(&mut self.cached, idx);
        self.index.insert(&self.slab, idx);
        self.heap.push(idx);
        self.sift_up(self.heap.len() - 1);
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
            + self.heap.capacity() * std::mem::size_of::<Idx>()
    }

    /// Cached blocks by priority, the next victim first.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let mut order: Vec<Idx> = self.heap.clone();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (self.slab.meta(a), self.slab.meta(b));
            if Rank::before(a.priority, a.vtime, &b) {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }
        });
        order.into_iter().map(|i| self.slab.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    fn run(cache: &mut Gdsf<u64>, keys: &[(u64, u32)]) -> Vec<u64> {
        let mut evicted = Vec::new();
        for &(k, s) in keys {
            access(cache, k, s, |v| evicted.push(v));
        }
        evicted
    }

    #[test]
    fn small_popular_objects_outrank_large_ones() {
        let mut cache: Gdsf<u64> = Gdsf::new(Capacity::Bytes(100)).unwrap();
        // 1 (size 50) has priority 2e4, 2 (size 10) 1e5 and 2e5 after a
        // hit, 3 (size 40) 2.5e4: 1 goes first for 4.
        assert!(run(&mut cache, &[(1, 50), (2, 10), (2, 10), (3, 40)]).is_empty());
        assert_eq!(cache.iter_oldest_first().collect::<Vec<_>>(), [1, 3, 2]);
        assert_eq!(run(&mut cache, &[(4, 20)]), [1]);
        assert_eq!(cache.used(), 70);
    }

    #[test]
    fn equal_priorities_go_in_the_order_they_were_set() {
        let mut cache = Gdsf::new(3).unwrap();
        run(&mut cache, &[(1, 1), (2, 1), (3, 1)]);
        assert_eq!(run(&mut cache, &[(4, 1)]), [1]);
        // The age is now 1e6: 4 has 2e6, 2 and 3 still 1e6, 2 set first.
        assert_eq!(run(&mut cache, &[(5, 1)]), [2]);
        assert_eq!(cache.iter_oldest_first().collect::<Vec<_>>(), [3, 4, 5]);
    }

    /// A new object below every cached priority is its own victim, as in
    /// libCacheSim: it is not cached, and the age takes its priority.
    #[test]
    fn a_new_object_below_every_priority_is_not_cached() {
        let mut cache: Gdsf<u64> = Gdsf::new(Capacity::Bytes(10)).unwrap();
        run(&mut cache, &[(1, 2), (1, 2), (1, 2)]);
        // 1 has priority 1.5e6; 2 (size 10) would have 1e5.
        assert!(run(&mut cache, &[(2, 10)]).is_empty());
        assert!(!cache.contains(2));
        assert!(cache.contains(1));
        assert_eq!(cache.age, 1e5);
    }
}
