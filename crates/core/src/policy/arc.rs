//! ARC: adaptive replacement between recency and frequency.

use super::{BlockKey, Lookup, Policy, check_capacity};
use crate::error::CapacityError;
use crate::index::Index;
use crate::list::{Idx, List, NIL, Slab};

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
/// without leaving a ghost.
#[derive(Clone, Debug)]
pub struct Arc<K> {
    index: Index,
    slab: Slab<K, Place>,
    /// T1, T2, B1 and B2, indexed by [`Place`].
    lists: [List; 4],
    /// Target size of T1, in blocks.
    p: f64,
    capacity: usize,
}

impl<K: BlockKey> Arc<K> {
    /// An empty ARC cache of `capacity` blocks (at least 1).
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        check_capacity("arc", capacity, 1)?;
        Ok(Arc {
            index: Index::with_capacity(2 * capacity),
            slab: Slab::with_capacity(2 * capacity),
            lists: [List::default(); 4],
            p: 0.0,
            capacity,
        })
    }

    /// The current target size of T1, in blocks.
    pub fn target_t1(&self) -> f64 {
        self.p
    }

    fn list(&self, place: Place) -> &List {
        &self.lists[place as usize]
    }

    /// Moves node `idx` from its list to the head of `to`.
    fn relocate(&mut self, idx: Idx, to: Place) {
        let from = self.slab.meta(idx);
        self.slab.unlink(&mut self.lists[from as usize], idx);
        self.slab.push_head(&mut self.lists[to as usize], idx);
        *self.slab.meta_mut(idx) = to;
    }

    /// Unlinks, frees and unindexes node `idx`.
    fn forget(&mut self, idx: Idx) -> K {
        let place = self.slab.meta(idx);
        self.slab.unlink(&mut self.lists[place as usize], idx);
        self.index.remove(&self.slab, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }

    /// The paper's REPLACE: whether T1 (rather than T2) gives up its LRU
    /// block.
    fn replace_takes_t1(&self, after_b2_hit: bool) -> bool {
        let t1 = self.list(Place::T1).len() as f64;
        (!self.list(Place::T1).is_empty() && (t1 > self.p || (t1 == self.p && after_b2_hit)))
            || self.list(Place::T2).is_empty()
    }

    /// REPLACE: demotes the LRU block of T1 or T2 to its ghost list.
    fn replace(&mut self, after_b2_hit: bool) -> Option<K> {
        let (victim, ghost) = if self.replace_takes_t1(after_b2_hit) {
            (self.list(Place::T1).tail(), Place::B1)
        } else {
            (self.list(Place::T2).tail(), Place::B2)
        };
        if victim == NIL {
            return None;
        }
        self.relocate(victim, ghost);
        Some(self.slab.key(victim))
    }

    /// Case IV, T1 + B1 already holding `c` entries.
    fn l1_is_full(&self) -> bool {
        self.list(Place::T1).len() + self.list(Place::B1).len() + 1 > self.capacity
    }

    fn all_lists_full(&self) -> bool {
        self.list(Place::T1).len()
            + self.list(Place::B1).len()
            + self.list(Place::T2).len()
            + self.list(Place::B2).len()
            >= 2 * self.capacity
    }
}

impl<K: BlockKey> Policy<K> for Arc<K> {
    type Miss = ArcMiss;

    fn name(&self) -> &'static str {
        "arc"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.list(Place::T1).len() + self.list(Place::T2).len()
    }

    fn contains(&self, key: K) -> bool {
        self.index
            .find(&self.slab, key)
            .is_some_and(|idx| matches!(self.slab.meta(idx), Place::T1 | Place::T2))
    }

    #[inline]
    fn lookup(&mut self, key: K) -> Lookup<ArcMiss> {
        let Some(idx) = self.index.find(&self.slab, key) else {
            return Lookup::Miss(ArcMiss::Cold);
        };
        match self.slab.meta(idx) {
            Place::T1 | Place::T2 => {
                self.relocate(idx, Place::T2);
                Lookup::Hit
            }
            Place::B1 => {
                let step = (self.list(Place::B2).len() as f64 / self.list(Place::B1).len() as f64)
                    .max(1.0);
                self.p = (self.p + step).min(self.capacity as f64);
                self.forget(idx);
                Lookup::Miss(ArcMiss::GhostB1)
            }
            Place::B2 => {
                let step = (self.list(Place::B1).len() as f64 / self.list(Place::B2).len() as f64)
                    .max(1.0);
                self.p = (self.p - step).max(0.0);
                self.forget(idx);
                Lookup::Miss(ArcMiss::GhostB2)
            }
        }
    }

    fn victim(&self, miss: &ArcMiss) -> Option<K> {
        let idx = match miss {
            ArcMiss::Cold if self.l1_is_full() && self.list(Place::B1).is_empty() => {
                self.list(Place::T1).tail()
            }
            _ if self.replace_takes_t1(*miss == ArcMiss::GhostB2) => self.list(Place::T1).tail(),
            _ => self.list(Place::T2).tail(),
        };
        (idx != NIL).then(|| self.slab.key(idx))
    }

    fn evict(&mut self, miss: &ArcMiss) -> Option<K> {
        match miss {
            ArcMiss::GhostB1 => self.replace(false),
            ArcMiss::GhostB2 => self.replace(true),
            ArcMiss::Cold if self.l1_is_full() => {
                if self.list(Place::B1).is_empty() {
                    // T1 alone fills the cache: drop its LRU block outright.
                    let tail = self.list(Place::T1).tail();
                    (tail != NIL).then(|| self.forget(tail))
                } else {
                    let oldest_ghost = self.list(Place::B1).tail();
                    self.forget(oldest_ghost);
                    self.replace(false)
                }
            }
            ArcMiss::Cold => {
                if self.all_lists_full() && !self.list(Place::B2).is_empty() {
                    let oldest_ghost = self.list(Place::B2).tail();
                    self.forget(oldest_ghost);
                }
                self.replace(false)
            }
        }
    }

    fn insert(&mut self, key: K, miss: ArcMiss) {
        let place = match miss {
            ArcMiss::Cold => Place::T1,
            ArcMiss::GhostB1 | ArcMiss::GhostB2 => Place::T2,
        };
        let idx = self.slab.alloc(key, place);
        self.slab.push_head(&mut self.lists[place as usize], idx);
        self.index.insert(&self.slab, idx);
    }

    /// Drops a cached block; a ghost entry is history, not data, and stays.
    fn remove(&mut self, key: K) -> bool {
        match self.index.find(&self.slab, key) {
            Some(idx) if matches!(self.slab.meta(idx), Place::T1 | Place::T2) => {
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
