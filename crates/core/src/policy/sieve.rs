//! SIEVE: FIFO with a visited bit and a hand that stays put.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::IndexedQueue;

/// SIEVE (Zhang et al., NSDI 2024): a hit sets the block's visited bit; a
/// hand moves from the oldest block towards the newest, clearing visited
/// bits, and evicts the first unvisited block it meets. Unlike CLOCK,
/// survivors stay where they are instead of moving to the head, so new
/// blocks are evicted quickly ("quick demotion") while popular old blocks
/// keep their place.
///
/// Strong on skewed web and key-value workloads; weaker than LRU where
/// recency matters more than popularity, and it still loses loops larger
/// than the cache.
///
/// Same as libCacheSim's `Sieve`.
#[derive(Clone, Debug)]
pub struct Sieve<K, W = u32> {
    queue: IndexedQueue<K, bool, W>,
    /// Where the next eviction starts looking; [`NIL`] means the tail.
    hand: Idx,
    capacity: usize,
}

impl<K: BlockKey> Sieve<K> {
    /// An empty SIEVE cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Sieve<K, W> {
    /// An empty SIEVE cache of `capacity` blocks or bytes (at least 1).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("sieve", capacity, 1)?;
        Ok(Sieve {
            queue: IndexedQueue::with_capacity(capacity.objects_hint()),
            hand: NIL,
            capacity: units,
        })
    }

    fn visited(&self, idx: Idx) -> bool {
        self.queue.slab.meta(idx)
    }

    /// The hand's next position after `idx`: one step newer, wrapping from
    /// the head back to the tail.
    fn step(&self, idx: Idx) -> Idx {
        match self.queue.slab.newer(idx) {
            NIL => self.queue.list(0).tail(),
            newer => newer,
        }
    }

    fn start(&self) -> Idx {
        if self.hand == NIL {
            self.queue.list(0).tail()
        } else {
            self.hand
        }
    }

    fn drop_node(&mut self, idx: Idx) -> K {
        if self.hand == idx {
            self.hand = self.queue.slab.newer(idx);
        }
        self.queue.forget(idx)
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Sieve<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "sieve"
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

    /// The first unvisited block from the hand on; if all are visited, the
    /// sweep clears every bit and comes back to where it started.
    fn victim(&self, _: &(), _: u32) -> Option<K> {
        let start = self.start();
        if start == NIL {
            return None;
        }
        let mut idx = start;
        loop {
            if !self.visited(idx) {
                return Some(self.queue.slab.key(idx));
            }
            idx = self.step(idx);
            if idx == start {
                return Some(self.queue.slab.key(start));
            }
        }
    }

    #[inline]
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        let mut idx = self.start();
        if idx == NIL {
            return None;
        }
        while self.visited(idx) {
            *self.queue.slab.meta_mut(idx) = false;
            idx = self.step(idx);
        }
        self.hand = self.queue.slab.newer(idx);
        Some(self.queue.forget(idx))
    }

    #[inline]
    fn insert(&mut self, key: K, size: u32, _: ()) {
        self.queue.push(key, size, false);
    }

    fn remove(&mut self, key: K) -> bool {
        self.queue
            .find(key)
            .map(|idx| self.drop_node(idx))
            .is_some()
    }

    fn metadata_bytes(&self) -> usize {
        self.queue.metadata_bytes()
    }

    /// From the hand towards the head, then from the tail up to the hand.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let slab = &self.queue.slab;
        let start = self.start();
        let from_hand = slab.iter_newer_from(start);
        let before_hand = self
            .queue
            .iter_from_tail(0)
            .take_while(move |&i| i != start);
        from_hand.chain(before_hand).map(|i| slab.key(i))
    }
}
