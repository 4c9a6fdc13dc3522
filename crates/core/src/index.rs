//! The block index every policy uses: key to slab slot.

use crate::list::{Idx, Slab, Weight};
use crate::policy::BlockKey;
use hashbrown::HashTable;
use std::hash::BuildHasher;

/// Finds the slab node of a cached (or ghost) block.
///
/// The table stores only the 4-byte slab index; the key lives once, in the
/// slab node, and a probe compares against it there. A hit reads that node
/// anyway to reorder it, so this costs no extra cache line on a hit and
/// halves the table against storing `(key, index)` pairs: the difference
/// between 81 and 35 bytes per cached block for LRU at 137,500 blocks (see
/// `docs/benchmarks.md`).
///
/// foldhash's fixed-seed hasher: a folded multiply per `u64` key, far cheaper
/// than SipHash, and deterministic, so runs replay identically. Keys come
/// from traces and from the cluster's own block ids, not from an adversary
/// who could aim collisions at one process's table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Index {
    table: HashTable<Idx>,
    hasher: foldhash::fast::FixedState,
}

impl Index {
    /// An empty index with room for `capacity` keys before it grows.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Index {
            table: HashTable::with_capacity(capacity),
            hasher: foldhash::fast::FixedState::default(),
        }
    }

    #[inline]
    fn hash<K: BlockKey>(&self, key: K) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The node holding `key`, if any.
    #[inline]
    pub(crate) fn find<K: BlockKey, M: Copy, W: Weight>(
        &self,
        slab: &Slab<K, M, W>,
        key: K,
    ) -> Option<Idx> {
        self.table
            .find(self.hash(key), |&idx| slab.key(idx) == key)
            .copied()
    }

    /// Records that node `idx` of `slab` holds its key; the key must not be
    /// indexed already.
    #[inline]
    pub(crate) fn insert<K: BlockKey, M: Copy, W: Weight>(
        &mut self,
        slab: &Slab<K, M, W>,
        idx: Idx,
    ) {
        let hasher = &self.hasher;
        self.table
            .insert_unique(hasher.hash_one(slab.key(idx)), idx, |&i| {
                hasher.hash_one(slab.key(i))
            });
    }

    /// Forgets node `idx`, which must still hold its key in `slab`.
    #[inline]
    pub(crate) fn remove<K: BlockKey, M: Copy, W: Weight>(
        &mut self,
        slab: &Slab<K, M, W>,
        idx: Idx,
    ) {
        if let Ok(entry) = self
            .table
            .find_entry(self.hash(slab.key(idx)), |&i| i == idx)
        {
            entry.remove();
        }
    }

    /// Heap bytes the table occupies.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.table.allocation_size()
    }
}
