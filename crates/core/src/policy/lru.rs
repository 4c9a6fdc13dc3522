//! LRU: evict the least recently used block.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::NIL;
use crate::queue::IndexedQueue;

/// Least recently used: a hit moves the block to the head of one list, the
/// victim is the tail.
///
/// The policy all five papers assume for client, manager and server caches.
/// It suits workloads with recency (file systems, most block traces); it
/// thrashes on loops larger than the cache, where it misses every request
/// (the LIRS `cs` trace), and a single scan flushes it.
///
/// Same as libCacheSim's `LRU`.
#[derive(Clone, Debug)]
pub struct Lru<K, W = u32> {
    queue: IndexedQueue<K, (), W>,
    capacity: usize,
}

impl<K: BlockKey> Lru<K> {
    /// An empty LRU cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Lru<K, W> {
    /// An empty LRU cache of `capacity` blocks or bytes (at least 1).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("lru", capacity, 1)?;
        Ok(Lru {
            queue: IndexedQueue::with_capacity(capacity.objects_hint()),
            capacity: units,
        })
    }

    /// Cached blocks from least to most recently used.
    pub fn iter_lru_first(&self) -> impl Iterator<Item = K> + '_ {
        let slab = &self.queue.slab;
        self.queue.iter_from_tail(0).map(|i| slab.key(i))
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Lru<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "lru"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.queue.list(0).len()
    }

    fn used(&self) -> usize {
        self.queue.list(0).size() as usize
    }

    fn contains(&self, key: K) -> bool {
        self.queue.find(key).is_some()
    }

    // Always: the request loop's one call, which must not stay a call.
    #[inline(always)]
    fn lookup(&mut self, key: K) -> Lookup<()> {
        match self.queue.find(key) {
            Some(idx) => {
                self.queue.move_to_head(idx);
                Lookup::Hit
            }
            None => Lookup::Miss(()),
        }
    }

    fn victim(&self, _: &(), _: u32) -> Option<K> {
        self.queue.tail_key(0)
    }

    #[inline]
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let tail = self.queue.list(0).tail();
        (tail != NIL).then(|| self.queue.forget(tail))
    }

    #[inline]
    fn insert(&mut self, key: K, size: u32, _: ()) {
        self.queue.push(key, size, ());
    }

    fn remove(&mut self, key: K) -> bool {
        self.queue
            .find(key)
            .map(|idx| self.queue.forget(idx))
            .is_some()
    }

    fn metadata_bytes(&self) -> usize {
        self.queue.metadata_bytes()
    }

    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        self.queue.iter_from_tail(0).map(|i| self.queue.key(i))
    }
}
