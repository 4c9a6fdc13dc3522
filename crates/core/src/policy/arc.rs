//! ARC: adaptive replacement between recency and frequency.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, NIL};
use crate::queue::{IndexedLists, ListTag};

/// Which of ARC's four lists a node is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Place {
    /// T1: cached, referenced once recently.
    T1,
    /// T2: cached, referenced at least twice.
    T2,
    /// B1: ghost of a block evicted from T1.
    B1,
    /// B2: ghost of a block evicted from T2.
    B2,
}

impl ListTag for Place {
    fn list(self) -> usize {
        self as usize
    }
}

/// What an ARC miss found: nothing, or the ghost of a block recently evicted
/// from T1 (B1) or T2 (B2). A ghost hit has already moved the target `p`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArcMiss {
    /// Not in any list (the paper's case IV).
    Cold,
    /// A ghost in B1 (case II): recency deserves more room.
    GhostB1,
    /// A ghost in B2 (case III): frequency deserves more room.
    GhostB2,
}

/// Adaptive Replacement Cache (Megiddo and Modha, FAST 2003).
///
/// Two LRU lists of cached blocks, T1 (seen once) and T2 (seen again), and
/// two ghost lists of recently evicted ids, B1 and B2. A hit on a ghost
/// moves the target size `p` of T1: towards recency after a B1 ghost hit,
/// towards frequency after a B2 one. Scan resistant and self-tuning; a good
/// default for block and database traces (it was built on the `oltp` trace
/// shipped here). Costs twice LRU's index entries for the ghosts.
///
/// Same as libCacheSim's `ARC`, including its details beyond the paper:
/// `p` and its step are floating point; REPLACE takes from T1 when T2 is
/// empty; a cold miss with T1 + B1 full and B1 empty drops the tail of T1
/// without leaving a ghost. In a byte cache every list is measured in
/// bytes, as libCacheSim does: `p` is a byte target and a ghost hit moves it
/// by the ratio of the ghost lists' bytes (at least one byte), so it adapts
/// far more slowly than in blocks.
#[derive(Clone, Debug)]
pub struct Arc<K, W = u32> {
    /// T1, T2, B1 and B2, indexed by [`Place`]; the index holds ghosts too.
    lists: IndexedLists<K, Place, 4, W>,
    /// Target size of T1, in the cache's unit.
    p: f64,
    capacity: usize,
}

impl<K: BlockKey> Arc<K> {
    /// An empty ARC cache of `capacity` blocks or bytes (at least 1).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Arc<K, W> {
    /// An empty ARC cache of `capacity` blocks or bytes (at least 1).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("arc", capacity, 1)?;
        Ok(Arc {
            lists: IndexedLists::with_capacity(2 * capacity.objects_hint()),
            p: 0.0,
            capacity: units,
        })
    }

    /// The current target size of T1, in the cache's unit.
    pub fn target_t1(&self) -> f64 {
        self.p
    }

    fn len_of(&self, place: Place) -> usize {
        self.lists.list(place.list()).len()
    }

    /// Sum of the sizes on a list: its length in a block cache, its bytes
    /// in a byte cache.
    fn size_of(&self, place: Place) -> u64 {
        self.lists.list(place.list()).size()
    }

    fn tail_of(&self, place: Place) -> Idx {
        self.lists.list(place.list()).tail()
    }

    /// The paper's REPLACE: whether T1 (rather than T2) gives up its LRU
    /// block.
    fn replace_takes_t1(&self, after_b2_hit: bool) -> bool {
        let t1 = self.size_of(Place::T1) as f64;
        (self.size_of(Place::T1) > 0 && (t1 > self.p || (t1 == self.p && after_b2_hit)))
            || self.size_of(Place::T2) == 0
    }

    /// REPLACE: demotes the LRU block of T1 or T2 to its ghost list.
    fn replace(&mut self, after_b2_hit: bool) -> Option<K> {
        let (victim, ghost) = if self.replace_takes_t1(after_b2_hit) {
            (self.tail_of(Place::T1), Place::B1)
        } else {
            (self.tail_of(Place::T2), Place::B2)
        };
        if victim == NIL {
            return None;
        }
        self.lists.relocate(victim, ghost);
        Some(self.lists.key(victim))
    }

    /// Case IV, T1 + B1 leaving no room for an object of `size`.
    fn l1_is_full(&self, size: u32) -> bool {
        self.size_of(Place::T1) + self.size_of(Place::B1) + u64::from(size) > self.capacity as u64
    }

    fn all_lists_full(&self) -> bool {
        self.size_of(Place::T1)
            + self.size_of(Place::B1)
            + self.size_of(Place::T2)
            + self.size_of(Place::B2)
            >= 2 * self.capacity as u64
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Arc<K, W> {
    type Miss = ArcMiss;

    fn name(&self) -> &'static str {
        "arc"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.len_of(Place::T1) + self.len_of(Place::T2)
    }

    fn used(&self) -> usize {
        (self.size_of(Place::T1) + self.size_of(Place::T2)) as usize
    }

    fn contains(&self, key: K) -> bool {
        self.lists
            .find(key)
            .is_some_and(|idx| matches!(self.lists.meta(idx), Place::T1 | Place::T2))
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<ArcMiss> {
        let Some(idx) = self.lists.find(key) else {
            return Lookup::Miss(ArcMiss::Cold);
        };
        match self.lists.meta(idx) {
            Place::T1 | Place::T2 => {
                self.lists.relocate(idx, Place::T2);
                Lookup::Hit
            }
            Place::B1 => {
                let step =
                    (self.size_of(Place::B2) as f64 / self.size_of(Place::B1) as f64).max(1.0);
                self.p = (self.p + step).min(self.capacity as f64);
                self.lists.forget(idx);
                Lookup::Miss(ArcMiss::GhostB1)
            }
            Place::B2 => {
                let step =
                    (self.size_of(Place::B1) as f64 / self.size_of(Place::B2) as f64).max(1.0);
                self.p = (self.p - step).max(0.0);
                self.lists.forget(idx);
                Lookup::Miss(ArcMiss::GhostB2)
            }
        }
    }

    fn victim(&self, miss: &ArcMiss, size: u32) -> Option<K> {
        let idx = match miss {
            ArcMiss::Cold if self.l1_is_full(size) && (self.size_of(Place::B1) == 0) => {
                self.tail_of(Place::T1)
            }
            _ if self.replace_takes_t1(*miss == ArcMiss::GhostB2) => self.tail_of(Place::T1),
            _ => self.tail_of(Place::T2),
        };
        (idx != NIL).then(|| self.lists.key(idx))
    }

    fn evict(&mut self, miss: &ArcMiss, size: u32) -> Option<K> {
        match miss {
            ArcMiss::GhostB1 => self.replace(false),
            ArcMiss::GhostB2 => self.replace(true),
            ArcMiss::Cold if self.l1_is_full(size) => {
                if self.size_of(Place::B1) == 0 {
                    // T1 alone fills the cache: drop its LRU block outright.
                    let tail = self.tail_of(Place::T1);
                    (tail != NIL).then(|| self.lists.forget(tail))
                } else {
                    let oldest_ghost = self.tail_of(Place::B1);
                    self.lists.forget(oldest_ghost);
                    self.replace(false)
                }
            }
            ArcMiss::Cold => {
                if self.all_lists_full() && self.size_of(Place::B2) > 0 {
                    let oldest_ghost = self.tail_of(Place::B2);
                    self.lists.forget(oldest_ghost);
                }
                self.replace(false)
            }
        }
    }

    fn insert(&mut self, key: K, size: u32, miss: ArcMiss) {
        let place = match miss {
            ArcMiss::Cold => Place::T1,
            ArcMiss::GhostB1 | ArcMiss::GhostB2 => Place::T2,
        };
        self.lists.push(key, size, place);
    }

    /// Drops a cached block; a ghost entry is history, not data, and stays.
    fn remove(&mut self, key: K) -> bool {
        match self.lists.find(key) {
            Some(idx) if matches!(self.lists.meta(idx), Place::T1 | Place::T2) => {
                self.lists.forget(idx);
                true
            }
            _ => false,
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.lists.metadata_bytes()
    }

    /// T1 (seen once) from its LRU end, then T2.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let lists = &self.lists;
        lists
            .iter_from_tail(Place::T1.list())
            .chain(lists.iter_from_tail(Place::T2.list()))
            .map(|i| lists.key(i))
    }
}
