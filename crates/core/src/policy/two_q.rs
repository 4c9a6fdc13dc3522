//! 2Q: a FIFO for first references, an LRU for blocks seen again.

use super::knobs::{Knob, KnobUnit, Knobs, min_units};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::NIL;
use crate::queue::{IndexedLists, ListTag};

/// The queue a node is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Queue {
    /// A1in: FIFO of blocks referenced once.
    In,
    /// A1out: ghost FIFO of ids evicted from A1in.
    Out,
    /// Am: LRU of blocks referenced again after leaving A1in.
    Main,
}

impl ListTag for Queue {
    fn list(self) -> usize {
        self as usize
    }
}

/// 2Q (Johnson and Shasha, VLDB 1994), full version: first references go to
/// a FIFO `A1in` (25% of the cache); blocks leaving it are remembered in a
/// ghost FIFO `A1out` (ids of 50% of the cache); a miss that hits `A1out`
/// goes to the LRU `Am`, which holds the rest of the cache.
///
/// Scan resistant like ARC with fixed rather than adaptive splits; suits
/// database buffer pools and block traces with a frequently reused core.
///
/// Same as libCacheSim's `TwoQ` (`Ain-size-ratio=0.25,Aout-size-ratio=0.5`).
/// In a byte cache the queues are measured in bytes and, as in libCacheSim,
/// an object larger than `A1in` (25% of the cache) is not admitted. With
/// knobs, as libCacheSim's sub-caches: an object larger than all of
/// `A1out` leaves `A1in` unremembered, and a ghost hit larger than all of
/// `Am` is not cached (exact on the knobbed golden rows, bytes included).
#[derive(Clone, Debug)]
pub struct TwoQ<K, W = u32> {
    /// A1in, A1out and Am, indexed by [`Queue`].
    queues: IndexedLists<K, Queue, 3, W>,
    in_capacity: usize,
    out_capacity: usize,
    main_capacity: usize,
    capacity: usize,
}

/// 2Q's knobs, libCacheSim's `TwoQ` parameters (`2q(ain=0.25,aout=0.5)`
/// are the defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoQParams {
    /// `A1in`'s share of the cache (`Ain-size-ratio`).
    pub ain: f64,
    /// `A1out`'s size as a share of the cache (`Aout-size-ratio`).
    pub aout: f64,
}

impl Default for TwoQParams {
    fn default() -> Self {
        TwoQParams {
            ain: 0.25,
            aout: 0.5,
        }
    }
}

impl Knobs for TwoQParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "ain",
            libcachesim: "ain-size-ratio",
            min: 0.001,
            max: 0.999,
            unit: KnobUnit::Real,
            help: "the A1in FIFO's share of the cache",
        },
        Knob {
            name: "aout",
            libcachesim: "aout-size-ratio",
            min: 0.0,
            max: 10.0,
            unit: KnobUnit::Real,
            help: "the A1out ghost FIFO's size as a share of the cache",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        [self.ain, self.aout][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.ain = value,
            _ => self.aout = value,
        }
    }
}

impl<K: BlockKey> TwoQ<K> {
    /// An empty 2Q cache of `capacity` blocks or bytes (at least 4, so
    /// `A1in` has a block).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> TwoQ<K, W> {
    /// An empty 2Q cache of `capacity` blocks or bytes (at least 4, so
    /// `A1in` has a block).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity, TwoQParams::default())
    }

    /// An empty 2Q cache of `capacity` with `params`, storing sizes as
    /// `W`; the capacity must give `A1in` a block (4 with the default 25%).
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: TwoQParams,
    ) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("2q", capacity, min_units(params.ain))?;
        // The same float truncation as libCacheSim, so sizes match exactly.
        let in_capacity = (units as f64 * params.ain) as usize;
        let out_capacity = (units as f64 * params.aout) as usize;
        let hint = capacity.objects_hint();
        Ok(TwoQ {
            queues: IndexedLists::with_capacity(
                hint + (hint as f64 * params.aout.min(1.0)) as usize,
            ),
            in_capacity,
            out_capacity,
            main_capacity: units - in_capacity,
            capacity: units,
        })
    }

    fn len_of(&self, q: Queue) -> usize {
        self.queues.list(q as usize).len()
    }

    /// Sum of the sizes on a queue: its length in a block cache, its bytes
    /// in a byte cache.
    fn size_of(&self, q: Queue) -> u64 {
        self.queues.list(q as usize).size()
    }

    /// Whether an object of `size` does not fit beside what is cached.
    fn is_full(&self, size: u32) -> bool {
        self.used() as u64 + u64::from(size) > self.capacity as u64
    }

    /// Whether an object of `size` coming back from `A1out` must first push
    /// one out of a full `Am`, even though the cache as a whole has room.
    /// An object larger than `Am` itself pushes nothing out: libCacheSim's
    /// `Am` refuses it ([`insert`](Policy::insert) drops it), and emptying
    /// `Am` for it would never make room.
    fn main_needs_room(&self, ghost_hit: bool, size: u32) -> bool {
        ghost_hit
            && self.fits_main(size)
            && self.size_of(Queue::Main) + u64::from(size) > self.main_capacity as u64
    }

    /// Whether an object of `size` fits `Am` at all (it always does with
    /// `A1in` at most half the cache, as `admits` holds it to `A1in`).
    fn fits_main(&self, size: u32) -> bool {
        size as usize <= self.main_capacity
    }

    /// Which queue the next eviction for an object of `size` takes from:
    /// `A1in` when the cache is full and `A1in` over its share, else `Am`,
    /// else (`Am` empty) `A1in` anyway. That last case needs `A1in` over
    /// half the cache (a ghost hit too big for what `Am` holds); there
    /// libCacheSim evicts from its empty `Am` and fails, where taking
    /// `A1in`'s oldest makes room.
    fn eviction_queue(&self, size: u32) -> Queue {
        let in_over = self.size_of(Queue::In) > self.in_capacity as u64;
        if (self.is_full(size) && in_over) || self.len_of(Queue::Main) == 0 {
            Queue::In
        } else {
            Queue::Main
        }
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for TwoQ<K, W> {
    /// Whether the miss hit `A1out`, which sends the block to `Am`.
    type Miss = bool;

    fn name(&self) -> &'static str {
        "2q"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.len_of(Queue::In) + self.len_of(Queue::Main)
    }

    fn used(&self) -> usize {
        (self.size_of(Queue::In) + self.size_of(Queue::Main)) as usize
    }

    /// libCacheSim's `can_insert` checks the small queue before the
    /// admissioner.
    fn admits_before_admission(&self) -> bool {
        true
    }

    /// New objects must fit `A1in`, ghost hits included.
    fn admits(&self, size: u32, _: &bool) -> bool {
        size as usize <= self.in_capacity
    }

    fn contains(&self, key: K) -> bool {
        self.queues
            .find(key)
            .is_some_and(|idx| self.queues.meta(idx) != Queue::Out)
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<bool> {
        let Some(idx) = self.queues.find(key) else {
            return Lookup::Miss(false);
        };
        match self.queues.meta(idx) {
            Queue::In => Lookup::Hit,
            Queue::Out => {
                self.queues.forget(idx);
                Lookup::Miss(true)
            }
            Queue::Main => {
                self.queues.move_to_head(idx);
                Lookup::Hit
            }
        }
    }

    fn needs_room(&self, ghost_hit: &bool, size: u32) -> bool {
        self.is_full(size) || self.main_needs_room(*ghost_hit, size)
    }

    fn victim(&self, _: &bool, size: u32) -> Option<K> {
        let tail = self.queues.list(self.eviction_queue(size) as usize).tail();
        (tail != NIL).then(|| self.queues.key(tail))
    }

    fn evict(&mut self, _: &bool, size: u32) -> Option<K> {
        let queue = self.eviction_queue(size);
        let tail = self.queues.list(queue as usize).tail();
        if tail == NIL {
            return None;
        }
        if queue == Queue::Main {
            return Some(self.queues.forget(tail));
        }
        // Leaving A1in: remember the id in A1out, which makes room for the
        // leaving object's size. An object larger than all of A1out (A1out
        // smaller than A1in) is not remembered and drops no ghost, as
        // libCacheSim's A1out FIFO refuses it before evicting.
        let leaving = u64::from(self.queues.size(tail));
        if leaving > self.out_capacity as u64 {
            return Some(self.queues.forget(tail));
        }
        while self.size_of(Queue::Out) + leaving > self.out_capacity as u64 {
            let oldest_ghost = self.queues.list(Queue::Out as usize).tail();
            if oldest_ghost == NIL {
                break;
            }
            self.queues.forget(oldest_ghost);
        }
        self.queues.relocate(tail, Queue::Out);
        Some(self.queues.key(tail))
    }

    fn insert(&mut self, key: K, size: u32, ghost_hit: bool) {
        if ghost_hit && !self.fits_main(size) {
            // libCacheSim's `Am` refuses it: not cached.
            return;
        }
        let queue = if ghost_hit { Queue::Main } else { Queue::In };
        self.queues.push(key, size, queue);
    }

    /// Drops a cached block; `A1out` ghosts are history and stay.
    fn remove(&mut self, key: K) -> bool {
        match self.queues.find(key) {
            Some(idx) if self.queues.meta(idx) != Queue::Out => {
                self.queues.forget(idx);
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.queues.metadata_bytes()
    }

    /// `A1in` from its end, then `Am` from its LRU end.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let q = &self.queues;
        q.iter_from_tail(Queue::In as usize)
            .chain(q.iter_from_tail(Queue::Main as usize))
            .map(|i| q.key(i))
    }
}
