//! CLOCK: FIFO with one reference bit (second chance).

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::IndexedQueue;

/// CLOCK with one reference bit: a hit sets the block's bit; eviction looks
/// at the oldest block, and a block whose bit is set gets it cleared and goes
/// back to the head (its second chance) instead of leaving.
///
/// Approximates LRU at FIFO's cost per hit (one bit, no list move), which is
/// why operating systems page with it. Like LRU it suits recency and
/// thrashes on loops larger than the cache.
///
/// Same as libCacheSim's `Clock` with its default `n-bit-counter=1`. The
/// queue is a list rather than a ring with a hand, which is the same order
/// (moving a block to the head is the hand passing it) and lets any block
/// be removed.
#[derive(Clone, Debug)]
pub struct Clock<K, W = u32> {
    queue: IndexedQueue<K, bool, W>,
    capacity: usize,
}

impl<K: BlockKey> Clock<K> {
    /// An empty CLOCK cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Clock<K, W> {
    /// An empty CLOCK cache of `capacity` blocks or bytes (at least 1).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("clock", capacity, 1)?;
        Ok(Clock {
            queue: IndexedQueue::with_capacity(capacity.objects_hint()),
            capacity: units,
        })
    }

    fn referenced(&self, idx: Idx) -> bool {
        self.queue.slab.meta(idx)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Clock<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "clock"
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
                *self.queue.slab.meta_mut(idx) = true;
                Lookup::Hit
            }
            None => Lookup::Miss(()),
        }
    }

    /// The oldest block without its bit; if every bit is set, the sweep
    /// clears them all and comes back to the oldest block.
    fn victim(&self, _: &(), _: u32) -> Option<K> {
        let slab = &self.queue.slab;
        self.queue
            .iter_from_tail(0)
            .find(|&idx| !self.referenced(idx))
            .map(|idx| slab.key(idx))
            .or_else(|| self.queue.tail_key(0))
    }

    #[inline]
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        loop {
            let tail = self.queue.list(0).tail();
            if tail == NIL {
                return None;
            }
            if !self.referenced(tail) {
                return Some(self.queue.forget(tail));
            }
            *self.queue.slab.meta_mut(tail) = false;
            self.queue.move_to_head(tail);
        }
    }

    #[inline]
    fn insert(&mut self, key: K, size: u32, _: ()) {
        self.queue.push(key, size, false);
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
