//! S3-FIFO: a small probationary FIFO, a main FIFO and a ghost FIFO.

use super::knobs::{Knob, KnobUnit, Knobs, min_units};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::{IndexedLists, ListTag};

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

impl ListTag for Entry {
    fn list(self) -> usize {
        self.queue as usize
    }
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
/// that variant is [`S3FifoV1`](super::S3FifoV1) (`s3fifo-v1`). In a byte cache the three queues are measured
/// in bytes and, as in libCacheSim, an object larger than the small queue
/// (10% of the cache) is not admitted at all, even on a ghost hit. One
/// departure: libCacheSim makes room for, then drops, a new object exactly
/// as large as the small queue (every block when the small queue holds a
/// single block, caches under 20 blocks); we cache it.
#[derive(Clone, Debug)]
pub struct S3Fifo<K, W = u32> {
    /// Small, main and ghost FIFOs, indexed by [`Queue`].
    queues: IndexedLists<K, Entry, 3, W>,
    small_capacity: usize,
    main_capacity: usize,
    ghost_capacity: usize,
    /// Hits in the small queue that earn a move to main.
    move_to_main: u8,
    capacity: usize,
}

/// S3-FIFO's knobs, libCacheSim's `S3FIFOv0` and `S3FIFO` parameters
/// (`s3fifo(small=0.1,ghost=0.9,move=2)` are the defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct S3FifoParams {
    /// The small queue's share of the cache (`small-size-ratio`).
    pub small: f64,
    /// The ghost queue's size, as a share of the cache (`ghost-size-ratio`).
    pub ghost: f64,
    /// Hits in the small queue that earn a move to main
    /// (`move-to-main-threshold`).
    pub move_to_main: u8,
}

impl Default for S3FifoParams {
    fn default() -> Self {
        S3FifoParams {
            small: 0.10,
            ghost: 0.90,
            move_to_main: 2,
        }
    }
}

impl Knobs for S3FifoParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "small",
            libcachesim: "small-size-ratio",
            min: 0.001,
            max: 0.999,
            unit: KnobUnit::Real,
            help: "the small FIFO's share of the cache",
        },
        Knob {
            name: "ghost",
            libcachesim: "ghost-size-ratio",
            min: 0.0,
            max: 10.0,
            unit: KnobUnit::Real,
            help: "the ghost FIFO's size as a share of the cache",
        },
        Knob {
            name: "move",
            libcachesim: "move-to-main-threshold",
            min: 1.0,
            max: 100.0,
            unit: KnobUnit::Integer,
            help: "hits in the small FIFO that move a block to main",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        [self.small, self.ghost, f64::from(self.move_to_main)][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.small = value,
            1 => self.ghost = value,
            _ => self.move_to_main = value as u8,
        }
    }
}

impl<K: BlockKey> S3Fifo<K> {
    /// An empty S3-FIFO cache of `capacity` blocks or bytes (at least 10,
    /// so the small queue has a block).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> S3Fifo<K, W> {
    /// An empty S3-FIFO cache of `capacity` blocks or bytes (at least 10,
    /// so the small queue has a block).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity, S3FifoParams::default())
    }

    /// An empty S3-FIFO cache of `capacity` with `params`, storing sizes
    /// as `W`; the capacity must give the small queue a block (10 with the
    /// default 10%).
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: S3FifoParams,
    ) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("s3fifo", capacity, min_units(params.small))?;
        // The same float truncation as libCacheSim, so sizes match exactly.
        let small_capacity = (units as f64 * params.small) as usize;
        let ghost_capacity = (units as f64 * params.ghost) as usize;
        let hint = capacity.objects_hint();
        Ok(S3Fifo {
            queues: IndexedLists::with_capacity(
                hint + (hint as f64 * params.ghost.min(1.0)) as usize,
            ),
            small_capacity,
            main_capacity: units - small_capacity,
            ghost_capacity,
            move_to_main: params.move_to_main,
            capacity: units,
        })
    }

    /// Whether the small queue holds its share or more (S3-FIFO v1's
    /// warm-up test).
    pub(super) fn small_is_full(&self) -> bool {
        self.size_of(Queue::Small) >= self.small_capacity as u64
    }

    /// Inserts a new object into main rather than small (S3-FIFO v1 while
    /// the cache warms).
    pub(super) fn insert_into_main(&mut self, key: K, size: u32) {
        self.queues.push(
            key,
            size,
            Entry {
                queue: Queue::Main,
                freq: 0,
            },
        );
    }

    fn len_of(&self, q: Queue) -> usize {
        self.queues.list(q as usize).len()
    }

    /// Sum of the sizes on a queue: its length in a block cache, its bytes
    /// in a byte cache.
    fn size_of(&self, q: Queue) -> u64 {
        self.queues.list(q as usize).size()
    }

    fn tail_of(&self, q: Queue) -> Idx {
        self.queues.list(q as usize).tail()
    }

    /// Whether the next eviction works on main rather than small. Main may
    /// outgrow its share while small promotes into it; small has no limit of
    /// its own beyond the cache's.
    fn evicts_from_main(&self) -> bool {
        self.size_of(Queue::Main) > self.main_capacity as u64 || (self.size_of(Queue::Small) == 0)
    }

    /// Main's CLOCK: blocks with a count go back to the head with one less
    /// (counts saturate at 3); the first without one leaves for good.
    fn evict_main(&mut self) -> Option<K> {
        loop {
            let tail = self.tail_of(Queue::Main);
            if tail == NIL {
                return None;
            }
            let freq = self.queues.meta(tail).freq;
            if freq == 0 {
                return Some(self.queues.forget(tail));
            }
            self.queues.relocate(
                tail,
                Entry {
                    queue: Queue::Main,
                    freq: freq.min(3) - 1,
                },
            );
        }
    }

    /// Small's end: blocks hit often enough move to main; the first that
    /// was not leaves and becomes a ghost. `None` if every block moved.
    fn evict_small(&mut self) -> Option<K> {
        loop {
            let tail = self.tail_of(Queue::Small);
            if tail == NIL {
                return None;
            }
            if self.queues.meta(tail).freq >= self.move_to_main {
                self.queues.relocate(
                    tail,
                    Entry {
                        queue: Queue::Main,
                        freq: 0,
                    },
                );
                continue;
            }
            // The ghost FIFO makes room for the newcomer's size.
            let size = u64::from(self.queues.size(tail));
            while self.size_of(Queue::Ghost) + size > self.ghost_capacity as u64 {
                let oldest_ghost = self.tail_of(Queue::Ghost);
                if oldest_ghost == NIL {
                    break;
                }
                self.queues.forget(oldest_ghost);
            }
            self.queues.relocate(
                tail,
                Entry {
                    queue: Queue::Ghost,
                    freq: 0,
                },
            );
            return Some(self.queues.key(tail));
        }
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for S3Fifo<K, W> {
    /// Whether the miss hit a ghost, which sends the block straight to main.
    type Miss = bool;

    fn name(&self) -> &'static str {
        "s3fifo"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.len_of(Queue::Small) + self.len_of(Queue::Main)
    }

    fn used(&self) -> usize {
        (self.size_of(Queue::Small) + self.size_of(Queue::Main)) as usize
    }

    /// libCacheSim's `can_insert` checks the small queue before the
    /// admissioner.
    fn admits_before_admission(&self) -> bool {
        true
    }

    /// New objects must fit the small queue, ghost hits included.
    fn admits(&self, size: u32, _: &bool) -> bool {
        size as usize <= self.small_capacity
    }

    fn contains(&self, key: K) -> bool {
        self.queues
            .find(key)
            .is_some_and(|idx| self.queues.meta(idx).queue != Queue::Ghost)
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<bool> {
        let Some(idx) = self.queues.find(key) else {
            return Lookup::Miss(false);
        };
        if self.queues.meta(idx).queue == Queue::Ghost {
            self.queues.forget(idx);
            return Lookup::Miss(true);
        }
        let entry = self.queues.slab.meta_mut(idx);
        entry.freq = entry.freq.saturating_add(1);
        Lookup::Hit
    }

    fn victim(&self, _: &bool, _: u32) -> Option<K> {
        let q = &self.queues;
        let freq = |i| q.meta(i).freq;
        if self.evicts_from_main() {
            // The CLOCK sweep drops the oldest block among those with the
            // smallest (saturated) count.
            let main = Queue::Main as usize;
            let least = q.iter_from_tail(main).map(|i| freq(i).min(3)).min()?;
            q.iter_from_tail(main)
                .find(|&i| freq(i).min(3) == least)
                .map(|i| q.key(i))
        } else {
            q.iter_from_tail(Queue::Small as usize)
                .find(|&i| freq(i) < self.move_to_main)
                .map(|i| q.key(i))
        }
    }

    fn evict(&mut self, _: &bool, _: u32) -> Option<K> {
        if self.evicts_from_main() {
            self.evict_main()
        } else {
            self.evict_small()
        }
    }

    fn insert(&mut self, key: K, size: u32, ghost_hit: bool) {
        let queue = if ghost_hit { Queue::Main } else { Queue::Small };
        self.queues.push(key, size, Entry { queue, freq: 0 });
    }

    /// Drops a cached block; ghosts are history and stay.
    fn remove(&mut self, key: K) -> bool {
        match self.queues.find(key) {
            Some(idx) if self.queues.meta(idx).queue != Queue::Ghost => {
                self.queues.forget(idx);
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.queues.metadata_bytes()
    }

    /// The small queue from its end, then main.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let q = &self.queues;
        q.iter_from_tail(Queue::Small as usize)
            .chain(q.iter_from_tail(Queue::Main as usize))
            .map(|i| q.key(i))
    }
}
