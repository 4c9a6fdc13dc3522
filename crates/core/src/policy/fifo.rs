//! FIFO: evict the block inserted longest ago.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::NIL;
use crate::queue::IndexedQueue;

/// First in, first out: hits change nothing, the victim is the oldest
/// insertion.
///
/// The cheapest policy (a hit touches only the index) and the base of
/// CLOCK, SIEVE and S3-FIFO. It ignores reuse, so on skewed workloads it
/// misses more than LRU; it is a fair baseline and suits scan-heavy or
/// uniformly random workloads.
///
/// Same as libCacheSim's `FIFO`.
#[derive(Clone, Debug)]
pub struct Fifo<K, W = u32> {
    queue: IndexedQueue<K, (), W>,
    capacity: usize,
}

impl<K: BlockKey> Fifo<K> {
    /// An empty FIFO cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Fifo<K, W> {
    /// An empty FIFO cache of `capacity` blocks or bytes (at least 1).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("fifo", capacity, 1)?;
        Ok(Fifo {
            queue: IndexedQueue::with_capacity(capacity.objects_hint()),
            capacity: units,
        })
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Fifo<K, W> {
    type Miss = ();

    fn name(&self) -> &'static str {
        "fifo"
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
            Some(_) => Lookup::Hit,
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
