//! S3-FIFO: a small probationary FIFO, a main FIFO and a ghost FIFO.

use super::{BlockKey, Lookup, Policy, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, NIL, Slab};

/// The queue a node is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Queue {
    Small,
    Main,
    Ghost,
}

/// A node's payload: its queue and how often it was hit there.
#[derive(Clone, Copy, Debug)]
struct Entry {
    queue: Queue,
    freq: u8,
}

/// S3-FIFO (Yang et al., SOSP 2023): new blocks enter a small FIFO (10% of
/// the cache); a block hit at least twice there moves on to the main FIFO
/// when it reaches the small queue's end, the others leave and are
/// remembered in a ghost FIFO (ids only, 90% of the cache). A miss on a
/// ghost goes straight to main. Main is a CLOCK with a 2-bit counter.
///
/// Quick demotion of one-hit wonders makes it strong on web, key-value and
/// CDN workloads, where most blocks are never reused; on loops and
/// recency-heavy block traces it can trail LRU and ARC.
///
/// Same as libCacheSim's original S3-FIFO (`S3FIFOv0`, the one its golden
/// results at commit aa0fc40 use: small 10%, ghost 90%, move-to-main
/// threshold 2, every non-ghost miss enters the small queue). Later
/// libCacheSim releases changed `S3FIFO` to fill main while the cache warms;
/// this is not that variant. One departure: libCacheSim admits nothing into
/// a small queue of a single block (caches under 20 blocks), we do.
#[derive(Clone, Debug)]
pub struct S3Fifo<K> {
    index: Index,
    slab: Slab<K, Entry>,
    /// Small, main and ghost FIFOs, indexed by [`Queue`].
    queues: [List; 3],
    main_capacity: usize,
    ghost_capacity: usize,
    capacity: usize,
}

/// Hits in the small queue that earn a move to main.
const MOVE_TO_MAIN_THRESHOLD: u8 = 2;

impl<K: BlockKey> S3Fifo<K> {
    /// An empty S3-FIFO cache of `capacity` blocks (at least 10, so the
    /// small queue has a block).
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        check_capacity("s3fifo", capacity, 10)?;
        // The same float truncation as libCacheSim, so sizes match exactly.
        let small_capacity = (capacity as f64 * 0.10) as usize;
        let ghost_capacity = (capacity as f64 * 0.90) as usize;
        Ok(S3Fifo {
            index: Index::with_capacity(capacity + ghost_capacity),
            slab: Slab::with_capacity(capacity + ghost_capacity),
            queues: [List::default(); 3],
            main_capacity: capacity - small_capacity,
            ghost_capacity,
            capacity,
        })
    }

    fn queue(&self, q: Queue) -> &List {
        &self.queues[q as usize]
    }

    fn push(&mut self, key: K, queue: Queue, freq: u8) {
        let idx = self.slab.alloc(key, Entry { queue, freq });
        self.slab.push_head(&mut self.queues[queue as usize], idx);
        self.index.insert(&self.slab, idx);
    }

    /// Moves node `idx` to the head of `to` with a new counter.
    fn requeue(&mut self, idx: Idx, to: Queue, freq: u8) {
        let from = self.slab.meta(idx).queue;
        self.slab.unlink(&mut self.queues[from as usize], idx);
        self.slab.push_head(&mut self.queues[to as usize], idx);
        *self.slab.meta_mut(idx) = Entry { queue: to, freq };
    }

    fn forget(&mut self, idx: Idx) -> K {
        let queue = self.slab.meta(idx).queue;
        self.slab.unlink(&mut self.queues[queue as usize], idx);
        self.index.remove(&self.slab, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }

    /// Whether the next eviction works on main rather than small. Main may
    /// outgrow its share while small promotes into it; small has no limit of
    /// its own beyond the cache's.
    fn evicts_from_main(&self) -> bool {
        self.queue(Queue::Main).len() > self.main_capacity || self.queue(Queue::Small).is_empty()
    }

    /// Main's CLOCK: blocks with a count go back to the head with one less
    /// (counts saturate at 3); the first without one leaves for good.
    fn evict_main(&mut self) -> Option<K> {
        loop {
            let tail = self.queue(Queue::Main).tail();
            if tail == NIL {
                return None;
            }
            let freq = self.slab.meta(tail).freq;
            if freq == 0 {
                return Some(self.forget(tail));
            }
            self.requeue(tail, Queue::Main, freq.min(3) - 1);
        }
    }

    /// Small's end: blocks hit often enough move to main; the first that
    /// was not leaves and becomes a ghost. `None` if every block moved.
    fn evict_small(&mut self) -> Option<K> {
        loop {
            let tail = self.queue(Queue::Small).tail();
            if tail == NIL {
                return None;
            }
            if self.slab.meta(tail).freq >= MOVE_TO_MAIN_THRESHOLD {
                self.requeue(tail, Queue::Main, 0);
                continue;
            }
            if self.queue(Queue::Ghost).len() >= self.ghost_capacity {
                let oldest_ghost = self.queue(Queue::Ghost).tail();
                self.forget(oldest_ghost);
            }
            self.requeue(tail, Queue::Ghost, 0);
            return Some(self.slab.key(tail));
        }
    }
}

impl<K: BlockKey> Policy<K> for S3Fifo<K> {
    /// Whether the miss hit a ghost, which sends the block straight to main.
    type Miss = bool;

    fn name(&self) -> &'static str {
        "s3fifo"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.queue(Queue::Small).len() + self.queue(Queue::Main).len()
    }

    fn contains(&self, key: K) -> bool {
        self.index
            .find(&self.slab, key)
            .is_some_and(|idx| self.slab.meta(idx).queue != Queue::Ghost)
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<bool> {
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(false);
        };
        if self.slab.meta(idx).queue == Queue::Ghost {
            self.forget(idx);
            return Lookup::Miss(true);
        }
        let entry = self.slab.meta_mut(idx);
        entry.freq = entry.freq.saturating_add(1);
        Lookup::Hit
    }

    fn victim(&self, _: &bool) -> Option<K> {
        let slab = &self.slab;
        if self.evicts_from_main() {
            // The CLOCK sweep drops the oldest block among those with the
            // smallest (saturated) count.
            let main = self.queue(Queue::Main);
            let least = slab
                .iter_from_tail(main)
                .map(|i| slab.meta(i).freq.min(3))
                .min()?;
            slab.iter_from_tail(main)
                .find(|&i| slab.meta(i).freq.min(3) == least)
                .map(|i| slab.key(i))
        } else {
            slab.iter_from_tail(self.queue(Queue::Small))
                .find(|&i| slab.meta(i).freq < MOVE_TO_MAIN_THRESHOLD)
                .map(|i| slab.key(i))
        }
    }

    fn evict(&mut self, _: &bool) -> Option<K> {
        if self.evicts_from_main() {
            self.evict_main()
        } else {
            self.evict_small()
        }
    }

    fn insert(&mut self, key: K, ghost_hit: bool) {
        let queue = if ghost_hit { Queue::Main } else { Queue::Small };
        self.push(key, queue, 0);
    }

    /// Drops a cached block; ghosts are history and stay.
    fn remove(&mut self, key: K) -> bool {
        match self.index.find(&self.slab, key) {
            Some(idx) if self.slab.meta(idx).queue != Queue::Ghost => {
                self.forget(idx);
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.index.allocated_bytes() + self.slab.allocated_bytes()
    }
}
