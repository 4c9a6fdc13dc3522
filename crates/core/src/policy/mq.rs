//! MQ: multiple LRU queues by frequency, with expiry demoting idle blocks.

use super::knobs::{Knob, KnobUnit, Knobs};
use super::{BlockKey, Capacity, Lookup, Policy, Weight, bad_param, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::{IndexedLists, ListTag};

/// The most queues MQ keeps (libCacheSim's `MQ_MAX_N_QUEUE`).
pub const MQ_MAX_QUEUES: usize = 64;

/// The list of the history buffer `Qout`, after the queues.
const QOUT: usize = MQ_MAX_QUEUES;

/// A node's payload: its list (a queue `Q0`..`Q(m-1)`, or [`QOUT`]), its
/// access count, and when it expires from its queue.
#[derive(Clone, Copy, Debug)]
struct Entry {
    list: u8,
    freq: u32,
    expire: u64,
}

impl ListTag for Entry {
    fn list(self) -> usize {
        self.list as usize
    }
}

/// MQ's parameters, libCacheSim's `MQ` defaults
/// (`n-queue=8,lifetime=10000,Qout-size-ratio=4.00`), and its knobs, all
/// three of libCacheSim's: `mq(queues=4,lifetime=1000,ghost=1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MqParams {
    /// libCacheSim's `n-queue`: how many LRU queues, 1 to
    /// [`MQ_MAX_QUEUES`].
    pub n_queues: usize,
    /// libCacheSim's `lifetime`: requests (hits and inserts) a block may
    /// sit at the end of its queue unreferenced before it is demoted one
    /// queue down, at least 1.
    pub lifetime: u64,
    /// libCacheSim's `Qout-size-ratio`: how much the history buffer `Qout`
    /// remembers, as a multiple of the cache, 0 to 64.
    pub qout_size_ratio: f64,
}

impl Default for MqParams {
    fn default() -> Self {
        MqParams {
            n_queues: 8,
            lifetime: 10_000,
            qout_size_ratio: 4.0,
        }
    }
}

impl Knobs for MqParams {
    // Ranges within `with_params`' checks. `ghost=0` keeps no history,
    // which libCacheSim refuses (it wants `Qout-size-ratio` above 0).
    const KNOBS: &'static [Knob] = &[
        Knob {
            name: "queues",
            libcachesim: "n-queue",
            min: 1.0,
            max: MQ_MAX_QUEUES as f64,
            unit: KnobUnit::Integer,
            help: "LRU queues, a block referenced f times in queue log2 f",
        },
        Knob {
            name: "lifetime",
            libcachesim: "lifetime",
            min: 1.0,
            max: (1u64 << 53) as f64,
            unit: KnobUnit::Integer,
            help: "requests a queue's LRU end may sit unreferenced before it is demoted",
        },
        Knob {
            name: "ghost",
            libcachesim: "qout-size-ratio",
            min: 0.0,
            max: 64.0,
            unit: KnobUnit::Real,
            help: "the history Qout's size as a multiple of the cache",
        },
    ];

    fn get(&self, i: usize) -> f64 {
        [
            self.n_queues as f64,
            self.lifetime as f64,
            self.qout_size_ratio,
        ][i]
    }

    fn set(&mut self, i: usize, value: f64) {
        match i {
            0 => self.n_queues = value as usize,
            1 => self.lifetime = value as u64,
            _ => self.qout_size_ratio = value,
        }
    }
}

/// MQ (Zhou, Philbin and Li, "The Multi-Queue Replacement Algorithm for
/// Second Level Buffer Caches", USENIX ATC 2001): `m` LRU queues (8); a
/// block referenced `f` times lives in queue `min(log2 f, m - 1)`, so
/// frequent blocks sit higher and are evicted last (the victim is the LRU
/// end of the lowest non-empty queue). Each block expires `lifetime`
/// requests after its last reference; the LRU end of each queue, once
/// expired, is demoted one queue down, so blocks no longer used descend
/// and leave. Evicted ids and counts are kept in a FIFO history `Qout`
/// (4 times the cache); a block coming back from it resumes its count.
///
/// Made for second-level buffer caches (a storage server behind client
/// caches), where the first level filters out recency and what reaches the
/// server is best ranked by frequency; it is a weaker choice where recency
/// dominates.
///
/// Same as libCacheSim's `MQ` with its defaults, in blocks and bytes: the
/// virtual time ticks on each hit and each insert, not on a miss that is
/// not cached; `Qout` is a FIFO measured in the cache's unit.
#[derive(Clone, Debug)]
pub struct Mq<K, W = u32> {
    /// The queues `Q0`.. and the history `Qout`.
    queues: IndexedLists<K, Entry, { MQ_MAX_QUEUES + 1 }, W>,
    n_queues: usize,
    lifetime: u64,
    qout_capacity: usize,
    capacity: usize,
    /// libCacheSim's `vtime`: one tick per hit and per insert.
    vtime: u64,
}

impl<K: BlockKey> Mq<K> {
    /// An empty MQ cache of `capacity` blocks or bytes (at least 1) with
    /// libCacheSim's defaults.
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Mq<K, W> {
    /// An empty MQ cache of `capacity` with libCacheSim's defaults.
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new` builds) for any
    /// cache, [`Unit`](super::Unit) for a block cache.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_params(capacity.into(), MqParams::default())
    }

    /// An empty MQ cache of `capacity` with `params`; a parameter out of
    /// range is an error.
    pub fn with_params(capacity: Capacity, params: MqParams) -> Result<Self, CapacityError> {
        if !(1..=MQ_MAX_QUEUES).contains(&params.n_queues) {
            return Err(bad_param("mq (n_queues must be 1 to 64)", capacity));
        }
        if params.lifetime == 0 || params.lifetime > u64::MAX / 4 {
            return Err(bad_param("mq (lifetime must be 1 to 2^62)", capacity));
        }
        let ratio = params.qout_size_ratio;
        if !(0.0..=64.0).contains(&ratio) {
            return Err(bad_param("mq (qout_size_ratio must be 0 to 64)", capacity));
        }
        let units = check_capacity("mq", capacity, 1)?;
        let hint = capacity.objects_hint();
        Ok(Mq {
            queues: IndexedLists::with_capacity(hint + hint * (ratio.min(4.0) as usize)),
            n_queues: params.n_queues,
            lifetime: params.lifetime,
            // The same float truncation as libCacheSim, so sizes match.
            qout_capacity: (units as f64 * ratio) as usize,
            capacity: units,
            vtime: 0,
        })
    }

    /// libCacheSim's `MQ_queue_num`: `min(floor(log2 freq), m - 1)`.
    fn queue_num(&self, freq: u32) -> u8 {
        let top = (self.n_queues - 1) as u32;
        (freq.max(1).ilog2()).min(top) as u8
    }

    /// Queue `k`'s LRU end, or [`NIL`].
    fn tail_of(&self, k: usize) -> Idx {
        self.queues.list(k).tail()
    }

    /// The LRU end of the lowest non-empty queue.
    fn lowest_tail(&self) -> Idx {
        (0..self.n_queues)
            .map(|k| self.tail_of(k))
            .find(|&t| t != NIL)
            .unwrap_or(NIL)
    }

    /// Moves `idx` to the MRU end of the queue its count names, expiring a
    /// lifetime from now, then runs Adjust.
    fn place(&mut self, idx: Idx, freq: u32) {
        let entry = Entry {
            list: self.queue_num(freq),
            freq,
            expire: self.vtime + self.lifetime,
        };
        self.queues.relocate(idx, entry);
        self.adjust();
    }

    /// The paper's Adjust: the clock ticks, and each queue's LRU end that
    /// has expired moves down one queue with a fresh lifetime.
    fn adjust(&mut self) {
        self.vtime += 1;
        for k in 1..self.n_queues {
            let tail = self.tail_of(k);
            if tail == NIL {
                continue;
            }
            let entry = self.queues.meta(tail);
            if entry.expire < self.vtime {
                let demoted = Entry {
                    list: (k - 1) as u8,
                    expire: self.vtime + self.lifetime,
                    ..entry
                };
                self.queues.relocate(tail, demoted);
            }
        }
    }

    /// Remembers the evicted `idx` in `Qout` (which drops its oldest ids to
    /// make room, and does not remember an object larger than itself).
    fn remember(&mut self, idx: Idx) -> K {
        let size = u64::from(self.queues.size(idx));
        if size > self.qout_capacity as u64 {
            return self.queues.forget(idx);
        }
        while self.queues.list(QOUT).size() + size > self.qout_capacity as u64 {
            let oldest = self.tail_of(QOUT);
            self.queues.forget(oldest);
        }
        let entry = Entry {
            list: QOUT as u8,
            ..self.queues.meta(idx)
        };
        self.queues.relocate(idx, entry);
        self.queues.key(idx)
    }

    fn resident(&self, idx: Idx) -> bool {
        self.queues.meta(idx).list() != QOUT
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Mq<K, W> {
    /// The count remembered in `Qout`, if the miss found the block there.
    type Miss = Option<u32>;

    fn name(&self) -> &'static str {
        "mq"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        (0..self.n_queues).map(|k| self.queues.list(k).len()).sum()
    }

    fn used(&self) -> usize {
        (0..self.n_queues)
            .map(|k| self.queues.list(k).size())
            .sum::<u64>() as usize
    }

    fn contains(&self, key: K) -> bool {
        self.queues.find(key).is_some_and(|idx| self.resident(idx))
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<Option<u32>> {
        let Some(idx) = self.queues.find(key) else {
            return Lookup::Miss(None);
        };
        let freq = self.queues.meta(idx).freq;
        if !self.resident(idx) {
            self.queues.forget(idx);
            return Lookup::Miss(Some(freq));
        }
        // libCacheSim caps counts at INT32_MAX.
        self.place(idx, (freq + 1).min(i32::MAX as u32));
        Lookup::Hit
    }

    fn victim(&self, _: &Option<u32>, _: u32) -> Option<K> {
        let tail = self.lowest_tail();
        (tail != NIL).then(|| self.queues.key(tail))
    }

    fn evict(&mut self, _: &Option<u32>, _: u32) -> Option<K> {
        let tail = self.lowest_tail();
        (tail != NIL).then(|| self.remember(tail))
    }

    fn insert(&mut self, key: K, size: u32, remembered: Option<u32>) {
        let freq = remembered.map_or(1, |f| (f + 1).min(i32::MAX as u32));
        let entry = Entry {
            list: self.queue_num(freq),
            freq,
            expire: self.vtime + self.lifetime,
        };
        self.queues.push(key, size, entry);
        self.adjust();
    }

    /// Drops a cached block and, as libCacheSim does, its history.
    fn remove(&mut self, key: K) -> bool {
        match self.queues.find(key) {
            Some(idx) => {
                let resident = self.resident(idx);
                self.queues.forget(idx);
                resident
            }
            None => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.queues.metadata_bytes()
    }

    /// Queue by queue from the lowest, each from its LRU end.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let q = &self.queues;
        (0..self.n_queues)
            .flat_map(move |k| q.iter_from_tail(k))
            .map(|i| q.key(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::access;

    fn get(cache: &mut Mq<u64>, key: u64) -> bool {
        access(cache, key, 1, |_| {})
    }

    #[test]
    fn queue_num_is_log2_capped() {
        let cache = Mq::<u64>::new(10).unwrap();
        let queues: Vec<u8> = [1, 2, 3, 4, 7, 8, 255, 1 << 20]
            .iter()
            .map(|&f| cache.queue_num(f))
            .collect();
        assert_eq!(queues, [0, 1, 1, 2, 2, 3, 7, 7]);
    }

    /// A frequent block sits in a higher queue and outlives a scan within
    /// its lifetime; the evicted scan blocks are remembered in `Qout`.
    #[test]
    fn a_frequent_block_survives_a_scan() {
        let mut cache = Mq::new(10).unwrap();
        for _ in 0..4 {
            get(&mut cache, 1);
        }
        for scan in 100..150 {
            get(&mut cache, scan);
        }
        assert!(cache.contains(1));
        assert!(!cache.contains(100));
        assert!(!get(&mut cache, 100));
    }

    /// Past its lifetime unreferenced, a block descends a queue per expiry
    /// and is evicted like a block seen once.
    #[test]
    fn expiry_demotes_idle_blocks() {
        let params = MqParams {
            lifetime: 5,
            ..MqParams::default()
        };
        let mut cache = Mq::with_params(Capacity::Blocks(10), params).unwrap();
        for _ in 0..4 {
            get(&mut cache, 1);
        }
        for scan in 100..200 {
            get(&mut cache, scan);
        }
        assert!(!cache.contains(1));
    }

    #[test]
    fn parameters_out_of_range_are_errors() {
        let bad = |params| Mq::<u64>::with_params(Capacity::Blocks(100), params).is_err();
        let default = MqParams::default();
        assert!(bad(MqParams {
            n_queues: 0,
            ..default
        }));
        assert!(bad(MqParams {
            n_queues: MQ_MAX_QUEUES + 1,
            ..default
        }));
        assert!(bad(MqParams {
            lifetime: 0,
            ..default
        }));
        assert!(bad(MqParams {
            qout_size_ratio: -1.0,
            ..default
        }));
        assert!(!bad(MqParams {
            n_queues: MQ_MAX_QUEUES,
            ..default
        }));
    }
}
