//! Belady's OPT: evict the block whose next reference is furthest away.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, Slab};
use std::sync::Arc;

/// The next-use time of a block never referenced again.
pub const NEVER: u64 = u64::MAX;

/// A cached block's next reference and its place in the heap.
#[derive(Clone, Copy, Debug)]
struct Entry {
    next: u64,
    heap_pos: u32,
}

/// Belady's MIN/OPT (Belady, "A study of replacement algorithms for a
/// virtual-storage computer", IBM Systems Journal 1966): the victim is the
/// cached block referenced again furthest in the future, or never. In a
/// block cache no policy misses less, so it is the bound a table of
/// policies is read against; in a byte cache it is a heuristic (the
/// size-aware optimum is NP-hard) and only an approximate bound.
///
/// It needs the future: the time of each request's next reference to the
/// same block, computed in a pass over the whole trace before the replay
/// ([`next_uses`]) and given to [`with_future`](Belady::with_future); the
/// n-th call to [`lookup`](Policy::lookup) is the n-th request. So it runs
/// only in the simulator, over a trace read up front, and cannot be a
/// cooperative node's own cache. Built without a future
/// ([`with_weights`](Belady::with_weights), as [`PolicyKind`](super::PolicyKind)
/// does), every block looks never reused and the victim is arbitrary:
/// [`PolicyKind::needs_future`](super::PolicyKind::needs_future) tells
/// callers to give it the future.
///
/// Same as libCacheSim's `Belady` (every missed object is inserted, even
/// one never referenced again; a hit updates the block's next reference):
/// the miss counts agree exactly, as ties occur only between blocks never
/// referenced again, and which of those goes first changes nothing later.
#[derive(Clone, Debug)]
pub struct Belady<K, W = u32> {
    index: Index,
    slab: Slab<K, Entry, W>,
    /// Every cached block, newest at the head (for iteration and sizes).
    cached: List,
    /// Cached blocks as a binary max-heap on their next reference.
    heap: Vec<Idx>,
    /// Each request's next reference, by request number.
    future: Arc<[u64]>,
    /// Requests looked up so far.
    clock: usize,
    capacity: usize,
}

/// For each request of `ids`, the number of the next request for the same
/// id, or [`NEVER`]: the future [`Belady`] needs, from one backward pass.
pub fn next_uses<K: BlockKey>(
    ids: impl DoubleEndedIterator<Item = K> + ExactSizeIterator,
) -> Vec<u64> {
    let n = ids.len();
    let mut next = vec![NEVER; n];
    let mut seen: std::collections::HashMap<K, u64, foldhash::fast::FixedState> =
        std::collections::HashMap::default();
    for (i, id) in ids.enumerate().rev() {
        if let Some(later) = seen.insert(id, i as u64) {
            next[i] = later;
        }
    }
    next
}

impl<K: BlockKey> Belady<K> {
    /// An empty OPT cache of `capacity` blocks or bytes (at least 1) that
    /// will see requests whose next references are `future` (see
    /// [`next_uses`]).
    pub fn new(capacity: impl Into<Capacity>, future: Arc<[u64]>) -> Result<Self, CapacityError> {
        Self::with_future(capacity, future)
    }
}

impl<K: BlockKey, W: Weight> Belady<K, W> {
    /// An empty OPT cache of `capacity` that will see requests whose next
    /// references are `future`, storing sizes as `W`.
    pub fn with_future(
        capacity: impl Into<Capacity>,
        future: Arc<[u64]>,
    ) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("belady", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Belady {
            index: Index::with_capacity(hint),
            slab: Slab::with_capacity(hint),
            cached: List::default(),
            heap: Vec::with_capacity(hint),
            future,
            clock: 0,
            capacity: units,
        })
    }

    /// An OPT cache without a future: every block looks never reused (see
    /// the type's doc). What [`PolicyKind`](super::PolicyKind) builds.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_future(capacity, Arc::from(Vec::new()))
    }

    fn next_of(&self, heap_pos: usize) -> u64 {
        self.slab.meta(self.heap[heap_pos]).next
    }

    fn place(&mut self, heap_pos: usize, idx: Idx) {
        self.heap[heap_pos] = idx;
        self.slab.meta_mut(idx).heap_pos = heap_pos as u32;
    }

    fn swap(&mut self, a: usize, b: usize) {
        let (ia, ib) = (self.heap[a], self.heap[b]);
        self.place(a, ib);
        self.place(b, ia);
    }

    /// Restores the heap around `pos` after its key changed.
    fn sift(&mut self, mut pos: usize) {
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if self.next_of(parent) >= self.next_of(pos) {
                break;
            }
            self.swap(parent, pos);
            pos = parent;
        }
        loop {
            let mut largest = pos;
            for child in [2 * pos + 1, 2 * pos + 2] {
                if child < self.heap.len() && self.next_of(child) > self.next_of(largest) {
                    largest = child;
                }
            }
            if largest == pos {
                return;
            }
            self.swap(pos, largest);
            pos = largest;
        }
    }

    /// Unindexes, unlinks and frees node `idx`; returns its key.
    fn forget(&mut self, idx: Idx) -> K {
        let pos = self.slab.meta(idx).heap_pos as usize;
        let last = self.heap.len() - 1;
        self.swap(pos, last);
        self.heap.pop();
        if pos < self.heap.len() {
            self.sift(pos);
        }
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.cached, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Belady<K, W> {
    /// The request's next reference, for the insert.
    type Miss = u64;

    fn name(&self) -> &'static str {
        "belady"
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

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<u64> {
        let next = self.future.get(self.clock).copied().unwrap_or(NEVER);
        self.clock += 1;
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(next);
        };
        self.slab.meta_mut(idx).next = next;
        self.sift(self.slab.meta(idx).heap_pos as usize);
        Lookup::Hit
    }

    fn victim(&self, _: &u64, _: u32) -> Option<K> {
        self.heap.first().map(|&i| self.slab.key(i))
    }

    fn evict(&mut self, _: &u64, _: u32) -> Option<K> {
        let top = *self.heap.first()?;
        Some(self.forget(top))
    }

    fn insert(&mut self, key: K, size: u32, next: u64) {
        let heap_pos = self.heap.len() as u32;
        let idx = self.slab.alloc(key, size, Entry { next, heap_pos });
        self.slab.push_head(&mut self.cached, idx);
        self.index.insert(&self.slab, idx);
        self.heap.push(idx);
        self.sift(heap_pos as usize);
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

    /// Cached blocks from the furthest next reference (heap order, roughly).
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        self.heap.iter().map(|&i| self.slab.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    /// Misses of OPT by brute force: on each miss with a full cache, drop
    /// the cached block whose next reference is furthest.
    fn brute_force(capacity: usize, ids: &[u64]) -> u64 {
        let mut cache: Vec<u64> = Vec::new();
        let mut misses = 0;
        for (t, &id) in ids.iter().enumerate() {
            if cache.contains(&id) {
                continue;
            }
            misses += 1;
            if cache.len() == capacity {
                let next = |b: u64| {
                    ids[t + 1..]
                        .iter()
                        .position(|&x| x == b)
                        .map_or(usize::MAX, |p| p)
                };
                let far = (0..cache.len()).max_by_key(|&i| next(cache[i])).unwrap();
                cache.remove(far);
            }
            cache.push(id);
        }
        misses
    }

    #[test]
    fn next_uses_point_at_the_next_request_of_the_same_id() {
        assert_eq!(
            next_uses([1u64, 2, 1, 3, 2].into_iter()),
            vec![2, 4, NEVER, NEVER, NEVER]
        );
    }

    #[test]
    fn misses_as_few_as_brute_force_opt() {
        // A fixed pseudo-random stream (xorshift), printed seed for replay.
        for seed in 1..40u64 {
            let mut x = seed;
            let ids: Vec<u64> = (0..300)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x % 23
                })
                .collect();
            let future: Arc<[u64]> = next_uses(ids.iter().copied()).into();
            for capacity in [1, 3, 8, 15] {
                let mut cache: Belady<u64> = Belady::new(capacity, future.clone()).unwrap();
                let misses = ids
                    .iter()
                    .filter(|&&id| !access(&mut cache, id, 1, |_| {}))
                    .count() as u64;
                assert_eq!(
                    misses,
                    brute_force(capacity, &ids),
                    "seed {seed} capacity {capacity}"
                );
            }
        }
    }
}
