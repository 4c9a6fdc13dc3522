//! LIRS: low inter-reference recency set.

use super::{BlockKey, Capacity, Lookup, Policy, Weight, check_capacity};
use crate::error::CapacityError;
use crate::list::{Idx, List, NIL, Slab};
use std::collections::HashMap;

/// A block's status in the LIRS stack `S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Status {
    /// LIR (low inter-reference recency) rather than HIR.
    lir: bool,
    /// Resident (cached) rather than only remembered.
    resident: bool,
}

/// Where a block has entries: the stack `S`, the resident-HIR queue `Q`,
/// and the list of non-resident HIR blocks still in `S`.
#[derive(Clone, Copy, Debug)]
struct Slots {
    s: Idx,
    q: Idx,
    nh: Idx,
}

/// What a LIRS miss found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LirsMiss {
    /// A non-resident HIR block still in `S`: its reuse distance is short,
    /// so it comes back as LIR, at the size `S` recorded for it.
    NonResident(u32),
    /// A block LIRS has no record of.
    Cold,
}

/// LIRS (Jiang and Zhang, SIGMETRICS 2002): blocks are ranked by
/// inter-reference recency (the distinct blocks seen between two references)
/// instead of recency. Blocks with a short one (LIR, 99% of the cache) are
/// kept; the rest (HIR, 1%) pass through a small queue `Q`. The stack `S`
/// remembers recently seen non-resident blocks so that one reused soon
/// comes back as LIR.
///
/// Excellent on loops and mixed scans (the `cs`, `ps` and `multi` traces
/// were made to show it), where LRU thrashes; costs metadata for up to
/// twice the cache in non-resident entries.
///
/// In a byte cache the LIR and HIR sets and the stack are measured in
/// bytes, as in libCacheSim, and so is its consequence: a new object larger
/// than the HIR set (1% of the cache) is not admitted, and a LIR block
/// demoted while larger than the HIR set leaves the cache.
///
/// Same as libCacheSim's `LIRS` (HIR share 1%, at least one block; stack
/// limited to twice the cache), including a departure of that
/// implementation from the paper: a hit on a resident HIR block that is no
/// longer in `S` also demotes the bottom LIR block when the LIR set is full,
/// which can evict the front of `Q` during a hit, and when `Q` holds a
/// single block (caches under 200 blocks) evicts the very block being hit
/// while `S` goes on calling it resident.
///
/// **Simulation only.** Because of that, a hit can drop a block without an
/// eviction the caller sees, and `contains` can report a block that was
/// dropped. Replaying traces is unaffected (the miss counts are
/// libCacheSim's, exactly); a live or cooperative cache, which must know
/// every block it drops, should not use this policy.
#[derive(Clone, Debug)]
pub struct Lirs<K, W = u32> {
    /// Each block's entries; `S`, `Q` and the non-resident list each hold
    /// their own node, so a plain map rather than the slab-keyed index.
    index: HashMap<K, Slots, foldhash::fast::FixedState>,
    s_slab: Slab<K, Status, W>,
    s: List,
    q_slab: Slab<K, (), W>,
    q: List,
    nh_slab: Slab<K, (), W>,
    nh: List,
    /// Sizes of the LIR and resident HIR blocks, in the cache's unit.
    lir_count: u64,
    hir_count: u64,
    /// LIR blocks (resident HIR blocks are `Q`'s length).
    lir_blocks: usize,
    lir_limit: u64,
    hir_limit: u64,
    capacity: usize,
}

impl<K: BlockKey> Lirs<K> {
    /// An empty LIRS cache of `capacity` blocks or bytes (at least 2: one
    /// LIR, one HIR).
    pub fn new(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        Self::with_weights(capacity)
    }
}

impl<K: BlockKey, W: Weight> Lirs<K, W> {
    /// An empty LIRS cache of `capacity` blocks or bytes (at least 2: one
    /// LIR, one HIR).
    ///
    /// Nodes store their sizes as `W`: `u32` (what `new`
    /// builds) for any cache, [`Unit`](super::Unit) for a block cache, whose nodes then
    /// hold no size at all.
    pub fn with_weights(capacity: impl Into<Capacity>) -> Result<Self, CapacityError> {
        let capacity = capacity.into();
        let units = check_capacity("lirs", capacity, 2)?;
        let hir_limit = ((units as f64 * 0.01) as u64).max(1);
        let hint = capacity.objects_hint();
        let hir_hint = ((hint as f64 * 0.01) as usize).max(1);
        Ok(Lirs {
            index: HashMap::with_capacity_and_hasher(2 * hint, Default::default()),
            s_slab: Slab::with_capacity(2 * hint),
            s: List::default(),
            q_slab: Slab::with_capacity(hir_hint),
            q: List::default(),
            nh_slab: Slab::with_capacity(hint),
            nh: List::default(),
            lir_count: 0,
            hir_count: 0,
            lir_blocks: 0,
            lir_limit: units as u64 - hir_limit,
            hir_limit,
            capacity: units,
        })
    }

    fn slots(&self, key: K) -> Slots {
        self.index.get(&key).copied().unwrap_or(Slots {
            s: NIL,
            q: NIL,
            nh: NIL,
        })
    }

    fn set_slots(&mut self, key: K, slots: Slots) {
        if slots.s == NIL && slots.q == NIL && slots.nh == NIL {
            self.index.remove(&key);
        } else {
            self.index.insert(key, slots);
        }
    }

    fn push_s(&mut self, key: K, size: u32, status: Status) {
        let idx = self.s_slab.alloc(key, size, status);
        self.s_slab.push_head(&mut self.s, idx);
        let slots = self.slots(key);
        self.set_slots(key, Slots { s: idx, ..slots });
    }

    fn push_q(&mut self, key: K, size: u32) {
        let idx = self.q_slab.alloc(key, size, ());
        self.q_slab.push_head(&mut self.q, idx);
        let slots = self.slots(key);
        self.set_slots(key, Slots { q: idx, ..slots });
    }

    fn push_nh(&mut self, key: K, size: u32) {
        let idx = self.nh_slab.alloc(key, size, ());
        self.nh_slab.push_head(&mut self.nh, idx);
        let slots = self.slots(key);
        self.set_slots(key, Slots { nh: idx, ..slots });
    }

    fn drop_s(&mut self, key: K) {
        let slots = self.slots(key);
        self.s_slab.unlink(&mut self.s, slots.s);
        self.s_slab.release(slots.s);
        self.set_slots(key, Slots { s: NIL, ..slots });
    }

    fn drop_q(&mut self, key: K) {
        let slots = self.slots(key);
        self.q_slab.unlink(&mut self.q, slots.q);
        self.q_slab.release(slots.q);
        self.set_slots(key, Slots { q: NIL, ..slots });
    }

    fn drop_nh(&mut self, key: K) {
        let slots = self.slots(key);
        if slots.nh != NIL {
            self.nh_slab.unlink(&mut self.nh, slots.nh);
            self.nh_slab.release(slots.nh);
            self.set_slots(key, Slots { nh: NIL, ..slots });
        }
    }

    /// Stack pruning: drops HIR entries from the bottom of `S` until a LIR
    /// block is at the bottom (or one entry is left).
    fn prune(&mut self) {
        while self.s.tail() != self.s.head() {
            let bottom = self.s.tail();
            let status = self.s_slab.meta(bottom);
            if status.lir {
                break;
            }
            let key = self.s_slab.key(bottom);
            if !status.resident {
                self.drop_nh(key);
            }
            self.drop_s(key);
        }
    }

    /// Evicts the resident HIR block at the front of `Q`; if it is still in
    /// `S`, it stays there as non-resident.
    fn evict_hir(&mut self) -> Option<K> {
        let front = self.q.tail();
        if front == NIL {
            return None;
        }
        let key = self.q_slab.key(front);
        let size = self.q_slab.size(front);
        self.hir_count -= u64::from(size);
        self.drop_q(key);
        let s = self.slots(key).s;
        if s != NIL {
            self.s_slab.meta_mut(s).resident = false;
            self.push_nh(key, size);
        }
        Some(key)
    }

    /// Demotes the LIR block at the bottom of `S` to a resident HIR block in
    /// `Q` (evicting from `Q`'s front until it fits), then prunes. Returns
    /// the last block evicted, if any: one from `Q`, or the demoted block
    /// itself if it is larger than the whole HIR set.
    fn evict_lir(&mut self) -> Option<K> {
        let bottom = self.s.tail();
        if bottom == NIL {
            return None;
        }
        let key = self.s_slab.key(bottom);
        let size = self.s_slab.size(bottom);
        self.lir_count -= u64::from(size);
        self.lir_blocks -= 1;
        self.drop_s(key);
        let mut evicted = None;
        if u64::from(size) <= self.hir_limit {
            while self.hir_count + u64::from(size) > self.hir_limit {
                evicted = self.evict_hir();
            }
            self.push_q(key, size);
            self.hir_count += u64::from(size);
        } else {
            evicted = Some(key);
        }
        self.prune();
        evicted
    }

    /// Demotes LIR blocks until one of `size` fits in the LIR set.
    fn make_lir_room(&mut self, size: u32) -> Option<K> {
        let mut evicted = None;
        while self.lir_count + u64::from(size) > self.lir_limit {
            evicted = self.evict_lir().or(evicted);
        }
        evicted
    }

    /// Bounds `S` to twice the cache by forgetting the oldest non-resident
    /// entries.
    fn limit_stack(&mut self) {
        while self.s.size() > 2 * self.capacity as u64 {
            let oldest = self.nh.tail();
            if oldest == NIL {
                break;
            }
            let key = self.nh_slab.key(oldest);
            self.drop_s(key);
            self.drop_nh(key);
        }
    }

    /// A hit on a resident HIR block in `S`: it becomes LIR.
    fn hit_hir_in_s(&mut self, key: K, slots: Slots) {
        if slots.q != NIL {
            self.hir_count -= u64::from(self.q_slab.size(slots.q));
            self.drop_q(key);
        }
        let size = self.s_slab.size(slots.s);
        self.make_lir_room(size);
        let s = self.slots(key).s;
        self.s_slab.meta_mut(s).lir = true;
        self.lir_count += u64::from(size);
        self.lir_blocks += 1;
    }

    /// A hit on a resident HIR block only in `Q`: it stays HIR and gets a
    /// new entry on top of `S`.
    fn hit_hir_in_q(&mut self, key: K, size: u32) {
        self.make_lir_room(size);
        self.push_s(
            key,
            size,
            Status {
                lir: false,
                resident: true,
            },
        );
    }

    fn insert_cold(&mut self, key: K, size: u32) {
        if self.lir_count + u64::from(size) <= self.lir_limit {
            self.push_s(
                key,
                size,
                Status {
                    lir: true,
                    resident: true,
                },
            );
            self.lir_count += u64::from(size);
            self.lir_blocks += 1;
        } else {
            self.push_s(
                key,
                size,
                Status {
                    lir: false,
                    resident: true,
                },
            );
            self.push_q(key, size);
            self.hir_count += u64::from(size);
        }
    }
}

impl<K: BlockKey, W: Weight> Policy<K> for Lirs<K, W> {
    type Miss = LirsMiss;

    fn name(&self) -> &'static str {
        "lirs"
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn len(&self) -> usize {
        self.q.len() + self.lir_blocks
    }

    fn used(&self) -> usize {
        (self.lir_count + self.hir_count) as usize
    }

    fn contains(&self, key: K) -> bool {
        let slots = self.slots(key);
        slots.q != NIL || (slots.s != NIL && self.s_slab.meta(slots.s).resident)
    }

    fn lookup(&mut self, key: K) -> Lookup<LirsMiss> {
        let slots = self.slots(key);
        if slots.s != NIL {
            self.s_slab.move_to_head(&mut self.s, slots.s);
        }
        if slots.q != NIL {
            self.q_slab.move_to_head(&mut self.q, slots.q);
        }
        let outcome = if slots.s != NIL {
            let status = self.s_slab.meta(slots.s);
            if status.lir {
                self.prune();
                Lookup::Hit
            } else if status.resident {
                self.hit_hir_in_s(key, slots);
                Lookup::Hit
            } else {
                return Lookup::Miss(LirsMiss::NonResident(self.s_slab.size(slots.s)));
            }
        } else if slots.q != NIL {
            self.hit_hir_in_q(key, self.q_slab.size(slots.q));
            Lookup::Hit
        } else {
            return Lookup::Miss(LirsMiss::Cold);
        };
        self.limit_stack();
        outcome
    }

    /// A cold object must fit the HIR set (libCacheSim's `can_insert`).
    fn admits(&self, size: u32, miss: &LirsMiss) -> bool {
        let size = u64::from(size);
        match miss {
            LirsMiss::NonResident(_) => size <= self.capacity as u64,
            LirsMiss::Cold => size <= self.lir_limit && size <= self.hir_limit,
        }
    }

    /// A block coming back as LIR first needs LIR room for its recorded
    /// size, then the cache room for the request's; a cold one needs room
    /// only when both sets are full.
    fn needs_room(&self, miss: &LirsMiss, size: u32) -> bool {
        let size = u64::from(size);
        match *miss {
            LirsMiss::NonResident(recorded) => {
                self.lir_count + u64::from(recorded) > self.lir_limit
                    || self.lir_count + self.hir_count + size > self.capacity as u64
            }
            LirsMiss::Cold => {
                self.lir_count + size > self.lir_limit && self.hir_count + size > self.hir_limit
            }
        }
    }

    fn victim(&self, _: &LirsMiss, size: u32) -> Option<K> {
        // Both paths end by evicting Q's front, if Q is full.
        let front = self.q.tail();
        (self.hir_count + u64::from(size) > self.hir_limit && front != NIL)
            .then(|| self.q_slab.key(front))
    }

    fn evict(&mut self, miss: &LirsMiss, _: u32) -> Option<K> {
        match *miss {
            LirsMiss::NonResident(recorded)
                if self.lir_count + u64::from(recorded) > self.lir_limit =>
            {
                self.evict_lir()
            }
            LirsMiss::NonResident(_) => {
                let mut evicted = None;
                while self.hir_count >= self.hir_limit && self.q.tail() != NIL {
                    evicted = self.evict_hir();
                }
                self.evict_lir().or(evicted)
            }
            LirsMiss::Cold => self.evict_hir(),
        }
    }

    fn insert(&mut self, key: K, size: u32, _: LirsMiss) {
        let slots = self.slots(key);
        // Re-derive the case from the state rather than trust the miss, so
        // a stale miss cannot corrupt the counts.
        if slots.s != NIL && !self.s_slab.meta(slots.s).resident {
            self.drop_nh(key);
            *self.s_slab.meta_mut(slots.s) = Status {
                lir: true,
                resident: true,
            };
            self.lir_count += u64::from(self.s_slab.size(slots.s));
            self.lir_blocks += 1;
        } else if slots.s == NIL && slots.q == NIL {
            self.insert_cold(key, size);
        }
        self.limit_stack();
    }

    fn remove(&mut self, key: K) -> bool {
        let slots = self.slots(key);
        let status = (slots.s != NIL).then(|| self.s_slab.meta(slots.s));
        let resident = slots.q != NIL || status.is_some_and(|s| s.resident);
        if status.is_some_and(|s| s.lir) {
            self.lir_count -= u64::from(self.s_slab.size(slots.s));
            self.lir_blocks -= 1;
            self.drop_s(key);
            self.prune();
            return true;
        }
        // Only the resident HIR blocks in `Q` are counted: a hit on a block
        // only in `Q` can evict that very block while making LIR room,
        // leaving it marked resident in `S` but uncounted (see
        // `hit_hir_in_q`), and removing it must not count it twice.
        if slots.q != NIL {
            self.hir_count -= u64::from(self.q_slab.size(slots.q));
        }
        if slots.s != NIL {
            self.drop_s(key);
        }
        if slots.q != NIL {
            self.drop_q(key);
        }
        self.drop_nh(key);
        resident
    }

    fn metadata_bytes(&self) -> usize {
        self.index.capacity() * (std::mem::size_of::<(K, Slots)>() + 1)
            + self.s_slab.allocated_bytes()
            + self.q_slab.allocated_bytes()
            + self.nh_slab.allocated_bytes()
    }

    /// Resident HIR blocks from the front of `Q`, then LIR blocks from the
    /// bottom of `S`.
    fn iter_oldest_first(&self) -> impl Iterator<Item = K> + '_ {
        let hir = self
            .q_slab
            .iter_from_tail(&self.q)
            .map(|i| self.q_slab.key(i));
        let lir = self
            .s_slab
            .iter_from_tail(&self.s)
            .filter(|&i| self.s_slab.meta(i).lir)
            .map(|i| self.s_slab.key(i));
        hir.chain(lir)
    }
}
