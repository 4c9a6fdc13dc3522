//! QD-LP: quick demotion through a small FIFO, lazy promotion in a CLOCK.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, bad_param, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::{IndexedLists, ListTag};

/// The queue a node is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Queue {
    /// The probationary FIFO new blocks enter.
    Fifo,
    /// Ids of blocks that left the FIFO unreferenced.
    Ghost,
    /// The main CLOCK.
    Main,
}

/// A node's payload: its queue and its count (hits while in the FIFO, or
/// the main CLOCK's saturating counter).
#[derive(Clone, Copy, Debug)]
struct Entry {
    queue: Queue,
    freq: u32,
}

impl ListTag for Entry {
    fn list(self) -> usize {
        self.queue as usize
    }
}

/// QD-LP's parameters, libCacheSim's `QDLP` defaults
/// (`fifo-size-ratio=0.10,ghost-size-ratio=0.9,main-cache=Clock2,move-to-main-threshold=1`),
/// and its knobs: `qdlp(fifo=0.2,ghost=0.5,bits=3,move=2)`.
///
/// libCacheSim's `main-cache` also takes ARC, LRU, LHD, Sieve, LeCaR and
/// other policies; only its CLOCKs (`clock`, `Clock2`, `Clock3`: `bits` 1
/// to 3 here, and up to 8) are modelled, so only they are offered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QdlpParams {
    /// libCacheSim's `fifo-size-ratio`: the probationary FIFO's share of the
    /// cache, in (0, 0.5] (so main is never smaller than the FIFO, and every
    /// block leaving the FIFO fits main). Objects larger than it are not
    /// cached.
    pub fifo_size_ratio: f64,
    /// libCacheSim's `ghost-size-ratio`: how much the ghost remembers, as a
    /// multiple of the cache (0 keeps no ghost).
    pub ghost_size_ratio: f64,
    /// libCacheSim's `main-cache=Clock<n>`: bits of the main CLOCK's
    /// counter, 1 to 8 (`Clock2` is 2: counts saturate at 3). Only CLOCK
    /// main caches are implemented.
    pub main_clock_bits: u32,
    /// libCacheSim's `move-to-main-threshold`: hits in the FIFO that move a
    /// block to main when it reaches the FIFO's end, at least 1.
    pub move_to_main_threshold: u32,
}

impl Default for QdlpParams {
    fn default() -> Self {
        QdlpParams {
            fifo_size_ratio: 0.10,
            ghost_size_ratio: 0.9,
            main_clock_bits: 2,
            move_to_main_threshold: 1,
        }
    }
}

impl Knobs for QdlpParams {
    // Ranges within `with_params`' checks, so a knobbed build refuses only
    // a capacity too small for the FIFO.
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "fifo",
            libcachesim: "fifo-size-ratio",
            min: 0.001,
            max: 0.5,
            unit: KnobUnit::Real,
            help: "the probationary FIFO's share of the cache",
        },
        Knob {
            name: "ghost",
            libcachesim: "ghost-size-ratio",
            min: 0.0,
            max: 16.0,
            unit: KnobUnit::Real,
            help: "the ghost FIFO's size as a share of the cache",
        },
        Knob {
            name: "bits",
            libcachesim: "main-cache=Clock<bits>",
            min: 1.0,
            max: 8.0,
            unit: KnobUnit::Integer,
            help: "bits of the main CLOCK's counter (libCacheSim has 1 to 3)",
        },
        Knob {
            name: "move",
            libcachesim: "move-to-main-threshold",
            min: 1.0,
            max: 100.0,
            unit: KnobUnit::Integer,
            help: "hits in the FIFO that move a block to main",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        [
            self.fifo_size_ratio,
            self.ghost_size_ratio,
            f64::from(self.main_clock_bits),
            f64::from(self.move_to_main_threshold),
        ][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.fifo_size_ratio = value,
            1 => self.ghost_size_ratio = value,
            2 => self.main_clock_bits = value as u32,
            _ => self.move_to_main_threshold = value as u32,
        }
    }
}

/// QD-LP (Yang et al., "FIFO can be Better than LRU: the Power of Lazy
/// Promotion and Quick Demotion", HotOS 2023): new blocks enter a small
/// probationary FIFO (10% of the cache); a block hit there moves to the
/// main cache when it reaches the FIFO's end, the others leave at once
/// (quick demotion) and their ids are kept in a ghost FIFO (90% of the
/// cache). A miss on a ghost goes straight to main. Main is a CLOCK with a
/// 2-bit counter, which promotes lazily: a hit bumps a counter, and only
/// eviction moves blocks.
///
/// Like S3-FIFO, which grew out of it, it suits web, key-value and CDN
/// workloads where most blocks are requested once; on loops and
/// recency-heavy block traces it can trail LRU and ARC.
///
/// Same as libCacheSim's `QDLP` with its defaults, in blocks and bytes. As
/// there the FIFO has no limit of its own (it fills whatever main leaves
/// free, and every eviction takes from it while it holds anything); main
/// holds at most the rest of the cache, and makes room in itself for a
/// block moving in; a new object larger than the FIFO's share is not
/// admitted. One departure, as in [`S3Fifo`](super::S3Fifo): libCacheSim
/// makes room for, then drops, a new object exactly as large as the FIFO's
/// share (every block when the FIFO holds a single block, caches under 20
/// blocks); we cache it.
#[derive(Clone, Debug)]
pub struct Qdlp<K, W = u32> {
    /// FIFO, ghost and main, indexed by [`Queue`].
    queues: IndexedLists<K, Entry, 3, W>,
    fifo_capacity: usize,
    ghost_capacity: usize,
    main_capacity: usize,
    capacity: usize,
    max_freq: u32,
    threshold: u32,
    /// Set while an eviction moving the FIFO's end to main has only made
    /// room in main: the move must finish before the new block goes in,
    /// as libCacheSim moves the block in the same eviction.
    promoting: bool,
}

impl<K: BlockKey> Qdlp<K> {
    /// An empty QD-LP cache of `capacity` blocks or bytes with libCacheSim's
    /// defaults (at least 10, so the FIFO holds one block).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Qdlp<K, W> {
    /// An empty QD-LP cache of `capacity` with libCacheSim's defaults.
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new` builds) for any
    /// cache, [`Unit`](super::Unit) for a block cache.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity.into(), QdlpParams::default())
    }

    /// An empty QD-LP cache of `capacity` with `params`; a capacity whose
    /// FIFO would hold nothing or a parameter out of range is an error.
    pub fn with_params(capacity: Capacity, params: QdlpParams) -> Result<Self, CapacityError> {
        let ratio = params.fifo_size_ratio;
        if !(ratio > 0.0 && ratio <= 0.5) {
            return Err(bad_param(
                "qdlp (fifo_size_ratio must be in (0, 0.5])",
                capacity,
            ));
        }
        if !(params.ghost_size_ratio >= 0.0 && params.ghost_size_ratio <= 16.0) {
            return Err(bad_param(
                "qdlp (ghost_size_ratio must be in [0, 16])",
                capacity,
            ));
        }
        if !(1..=8).contains(&params.main_clock_bits) {
            return Err(bad_param("qdlp (main_clock_bits must be 1 to 8)", capacity));
        }
        if params.move_to_main_threshold == 0 {
            return Err(bad_param(
                "qdlp (move_to_main_threshold must be at least 1)",
                capacity,
            ));
        }
        // The FIFO must hold some object.
        // The same float truncation as libCacheSim, so sizes match exactly.
        let fifo_of = |units: usize| (units as f64 * ratio) as usize;
        let mut min = (1.0 / ratio).ceil() as usize;
        while fifo_of(min) < 1 {
            min += 1;
        }
        let units = check_capacity("qdlp", capacity, min)?;
        let fifo_capacity = fifo_of(units);
        let ghost_capacity = (units as f64 * params.ghost_size_ratio) as usize;
        let hint = capacity.objects_hint();
        Ok(Qdlp {
            queues: IndexedLists::with_capacity(hint + (hint as f64 * 0.9) as usize),
            fifo_capacity,
            ghost_capacity,
            main_capacity: units - fifo_capacity,
            capacity: units,
            max_freq: (1 << params.main_clock_bits) - 1,
            threshold: params.move_to_main_threshold,
            promoting: false,
        })
    }

    fn len_of(&self, q: Queue) -> usize {
        self.queues.list(q as usize).len()
    }

    /// Sum of the sizes on a queue.
    fn size_of(&self, q: Queue) -> u64 {
        self.queues.list(q as usize).size()
    }

    fn tail_of(&self, q: Queue) -> Idx {
        self.queues.list(q as usize).tail()
    }

    /// Whether main must drop a block before one of `size` moves in.
    fn main_is_full(&self, size: u32) -> bool {
        self.size_of(Queue::Main) + u64::from(size) > self.main_capacity as u64
    }

    /// Whether the cache as a whole cannot take one more object of `size`.
    fn is_full(&self, size: u32) -> bool {
        self.used() as u64 + u64::from(size) > self.capacity as u64
    }

    /// The FIFO's end, if it has earned a move to main.
    fn promotable_tail(&self) -> Option<Idx> {
        let tail = self.tail_of(Queue::Fifo);
        (tail != NIL && self.queues.meta(tail).freq >= self.threshold).then_some(tail)
    }

    /// What the next eviction does for a miss with `ghost_hit`, of `size`.
    fn next_step(&self, ghost_hit: bool, size: u32) -> Step {
        if !self.promoting && !self.is_full(size) {
            debug_assert!(ghost_hit && self.main_is_full(size));
            return Step::Main;
        }
        if self.tail_of(Queue::Fifo) == NIL {
            return Step::Main;
        }
        match self.promotable_tail() {
            Some(tail) if self.main_is_full(self.queues.size(tail)) => Step::Main,
            Some(_) => Step::Promote,
            None => Step::Demote,
        }
    }

    /// Main's CLOCK victim: the oldest block with the smallest count.
    fn main_victim(&self) -> Option<K> {
        let q = &self.queues;
        let main = Queue::Main as usize;
        let least = q.iter_from_tail(main).map(|i| q.meta(i).freq).min()?;
        q.iter_from_tail(main)
            .find(|&i| q.meta(i).freq == least)
            .map(|i| q.key(i))
    }

    /// Main's CLOCK: blocks with a count go back to the head with one less;
    /// the first without one leaves.
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
            let entry = Entry {
                queue: Queue::Main,
                freq: freq - 1,
            };
            self.queues.relocate(tail, entry);
        }
    }

    /// The FIFO's end leaves unreferenced: its id goes to the ghost, which
    /// drops its oldest ids to make room for the leaving object's size (and
    /// does not remember an object larger than itself).
    fn demote(&mut self) -> Option<K> {
        let tail = self.tail_of(Queue::Fifo);
        let size = u64::from(self.queues.size(tail));
        if size > self.ghost_capacity as u64 {
            return Some(self.queues.forget(tail));
        }
        while self.size_of(Queue::Ghost) + size > self.ghost_capacity as u64 {
            let oldest = self.tail_of(Queue::Ghost);
            self.queues.forget(oldest);
        }
        let ghost = Entry {
            queue: Queue::Ghost,
            freq: 0,
        };
        self.queues.relocate(tail, ghost);
        Some(self.queues.key(tail))
    }
}

/// One eviction's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Drop main's CLOCK victim.
    Main,
    /// Move the FIFO's end to main (which has room).
    Promote,
    /// Drop the FIFO's end, remembering its id.
    Demote,
}

impl<K: BlockKey, W: Weight> Policy<K> for Qdlp<K, W> {
    /// Whether the miss hit a ghost, which sends the block straight to main.
    type Miss = bool;

    fn name(&self) -> &'static str {
        "qdlp"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.len_of(Queue::Fifo) + self.len_of(Queue::Main)
    }

    fn used(&self) -> usize {
        (self.size_of(Queue::Fifo) + self.size_of(Queue::Main)) as usize
    }

    /// New objects must fit the FIFO's share, ghost hits included.
    fn admits(&self, size: u32, _: &bool) -> bool {
        size as usize <= self.fifo_capacity
    }

    /// Room in the cache, a move to main under way, or (for a ghost hit,
    /// which enters main) room in main.
    fn needs_room(&self, ghost_hit: &bool, size: u32) -> bool {
        self.promoting || self.is_full(size) || (*ghost_hit && self.main_is_full(size))
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
        let max = self.max_freq;
        let entry = self.queues.slab.meta_mut(idx);
        match entry.queue {
            Queue::Fifo => entry.freq = entry.freq.saturating_add(1),
            Queue::Main => entry.freq = (entry.freq + 1).min(max),
            Queue::Ghost => {
                self.queues.forget(idx);
                return Lookup::Miss(true);
            }
        }
        Lookup::Hit
    }

    fn victim(&self, ghost_hit: &bool, size: u32) -> Option<K> {
        match self.next_step(*ghost_hit, size) {
            Step::Main => self.main_victim(),
            Step::Promote => None,
            Step::Demote => self.queues.tail_key(Queue::Fifo as usize),
        }
    }

    fn evict(&mut self, ghost_hit: &bool, size: u32) -> Option<K> {
        let step = self.next_step(*ghost_hit, size);
        // Making room in main for the FIFO's end leaves the move pending.
        self.promoting = step == Step::Main && self.promotable_tail().is_some() && {
            self.promoting || self.is_full(size)
        };
        match step {
            Step::Main => self.evict_main(),
            Step::Promote => {
                let tail = self.tail_of(Queue::Fifo);
                let main = Entry {
                    queue: Queue::Main,
                    freq: 0,
                };
                self.queues.relocate(tail, main);
                None
            }
            Step::Demote => self.demote(),
        }
    }

    fn insert(&mut self, key: K, size: u32, ghost_hit: bool) {
        let queue = if ghost_hit { Queue::Main } else { Queue::Fifo };
        self.queues.push(key, size, Entry { queue, freq: 0 });
    }

    /// Drops a cached block; ghosts are history and stay.
    fn remove(&mut self, key: K) -> bool {
        match self.queues.find(key) {
            Some(idx) if self.queues.meta(idx).queue != Queue::Ghost => {
                self.promoting &= self.tail_of(Queue::Fifo) != idx;
                self.queues.forget(idx);
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.queues.metadata_bytes()
    }

    /// The FIFO from its end, then main.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let q = &self.queues;
        q.iter_from_tail(Queue::Fifo as usize)
            .chain(q.iter_from_tail(Queue::Main as usize))
            .map(|i| q.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    fn get(cache: &mut Qdlp<u64>, key: u64) -> bool {
        access(cache, key, 1, |_| {})
    }

    /// A block hit once in the FIFO moves to main and outlives a scan that
    /// pushes one-hit blocks through the FIFO and out.
    #[test]
    fn a_block_hit_in_the_fifo_survives_a_scan() {
        let mut cache = Qdlp::new(100).unwrap();
        assert!(!get(&mut cache, 1));
        assert!(get(&mut cache, 1));
        for scan in 1_000..1_500 {
            get(&mut cache, scan);
        }
        assert!(cache.contains(1));
        assert!(cache.used() <= 100);
    }

    /// A block demoted unreferenced is remembered: its next miss goes to
    /// main, where it outlives FIFO traffic.
    #[test]
    fn a_ghost_hit_enters_main() {
        let mut cache = Qdlp::new(100).unwrap();
        for key in 0..200 {
            get(&mut cache, key);
        }
        // 100.. fill the cache; 10..100 are ghosts (90% of the cache).
        assert!(!cache.contains(50));
        assert!(!get(&mut cache, 50));
        for scan in 1_000..1_300 {
            get(&mut cache, scan);
        }
        assert!(cache.contains(50));
    }

    #[test]
    fn parameters_out_of_range_are_errors() {
        let bad = |params| Qdlp::<u64>::with_params(Capacity::Blocks(100), params).is_err();
        let default = QdlpParams::default();
        assert!(bad(QdlpParams {
            fifo_size_ratio: 0.0,
            ..default
        }));
        assert!(bad(QdlpParams {
            fifo_size_ratio: f64::NAN,
            ..default
        }));
        assert!(bad(QdlpParams {
            main_clock_bits: 0,
            ..default
        }));
        assert!(bad(QdlpParams {
            move_to_main_threshold: 0,
            ..default
        }));
        assert!(Qdlp::<u64>::new(9).is_err());
        assert!(Qdlp::<u64>::new(10).is_ok());
    }
}
