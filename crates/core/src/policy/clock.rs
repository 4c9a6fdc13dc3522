//! CLOCK: FIFO with one reference bit (second chance).

use super::knobs::{Knob, KnobUnit, Knobs};
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
/// Same as libCacheSim's `Clock`, whose knobs it has ([`ClockParams`]):
/// with `clock(bits=2)` a hit counts up to 3 and each pass of the hand
/// takes one off, as libCacheSim's `n-bit-counter=2`. The queue is a list rather than a ring with a hand, which is the same order
/// (moving a block to the head is the hand passing it) and lets any block
/// be removed.
#[derive(Clone, Debug)]
pub struct Clock<K, W = u32> {
    /// Each block's counter: 0 or 1 with one bit.
    queue: IndexedQueue<K, u8, W>,
    /// The counter's largest value, `2^bits - 1`.
    max_freq: u8,
    /// The counter of a block inserted.
    init_freq: u8,
    capacity: usize,
}

/// CLOCK's knobs, libCacheSim's `Clock` parameters (`clock(bits=1,init=0)`
/// are the defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockParams {
    /// Bits of each block's reference counter (`n-bit-counter`).
    pub bits: u8,
    /// The counter a new block starts with (`init-freq`).
    pub init: u8,
}

impl Default for ClockParams {
    fn default() -> Self {
        ClockParams { bits: 1, init: 0 }
    }
}

impl Knobs for ClockParams {
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "bits",
            libcachesim: "n-bit-counter",
            min: 1.0,
            max: 7.0,
            unit: KnobUnit::Integer,
            help: "bits of each block's reference counter",
        },
        Knob {
            name: "init",
            libcachesim: "init-freq",
            min: 0.0,
            max: 127.0,
            unit: KnobUnit::Integer,
            help: "the counter a new block starts with",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        f64::from([self.bits, self.init][i])
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.bits = value as u8,
            _ => self.init = value as u8,
        }
    }
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
        Self::with_params(capacity, ClockParams::default())
    }

    /// An empty CLOCK cache of `capacity` with `params`, storing sizes as
    /// `W`.
    pub fn with_params(
        capacity: impl Into<Capacity>,
        params: ClockParams,
    ) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("clock", capacity, 1)?;
        Ok(Clock {
            queue: IndexedQueue::with_capacity(capacity.objects_hint()),
            max_freq: ((1u16 << params.bits.min(7)) - 1) as u8,
            init_freq: params.init,
            capacity: units,
        })
    }

    fn freq(&self, idx: Idx) -> u8 {
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
                let freq = self.queue.slab.meta_mut(idx);
                if *freq < self.max_freq {
                    *freq += 1;
                }
                Lookup::Hit
            }
            None => Lookup::Miss(()),
        }
    }

    /// The oldest block among those with the smallest counter: each pass
    /// of the sweep takes one off every counter, so that block reaches 0
    /// first (with one bit: the oldest block without its bit, or the
    /// oldest block if every bit is set).
    fn victim(&self, _: &(), _: u32) -> Option<K> {
        let least = self.queue.iter_from_tail(0).map(|i| self.freq(i)).min()?;
        self.queue
            .iter_from_tail(0)
            .find(|&idx| self.freq(idx) == least)
            .map(|idx| self.queue.slab.key(idx))
    }

    #[inline]
    fn evict(&mut self, _: &(), _: u32) -> Option<K> {
        loop {
            let tail = self.queue.list(0).tail();
            if tail == NIL {
                return None;
            }
            if self.freq(tail) == 0 {
                return Some(self.queue.forget(tail));
            }
            *self.queue.slab.meta_mut(tail) -= 1;
            self.queue.move_to_head(tail);
        }
    }

    #[inline]
    fn insert(&mut self, key: K, size: u32, _: ()) {
        self.queue.push(key, size, self.init_freq);
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
