//! One indexed queue: the shared body of the single-list policies.

use crate::index::Index;
use crate::list::{Idx, List, NIL, Slab};
use crate::policy::BlockKey;

/// A block index, a slab and one list threaded through it.
///
/// LRU, FIFO, CLOCK and SIEVE differ only in what a hit does and how the
/// victim is chosen; finding, inserting and dropping blocks is this.
#[derive(Clone, Debug)]
pub(crate) struct IndexedQueue<K, M> {
    index: Index,
    pub(crate) slab: Slab<K, M>,
    pub(crate) list: List,
}

impl<K: BlockKey, M: Copy> IndexedQueue<K, M> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        IndexedQueue {
            index: Index::with_capacity(capacity),
            slab: Slab::with_capacity(capacity),
            list: List::default(),
        }
    }

    #[inline]
    pub(crate) fn find(&self, key: K) -> Option<Idx> {
        self.index.find(&self.slab, key)
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// Inserts `key` at the head with payload `meta`.
    #[inline]
    pub(crate) fn push(&mut self, key: K, meta: M) -> Idx {
        let idx = self.slab.alloc(key, meta);
        self.slab.push_head(&mut self.list, idx);
        self.index.insert(&self.slab, idx);
        idx
    }

    /// Unlinks, frees and unindexes the node at `idx`; returns its key.
    #[inline]
    pub(crate) fn drop_node(&mut self, idx: Idx) -> K {
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.list, idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }

    /// The oldest block's key.
    pub(crate) fn tail_key(&self) -> Option<K> {
        (self.list.tail() != NIL).then(|| self.slab.key(self.list.tail()))
    }

    #[inline]
    pub(crate) fn move_to_head(&mut self, idx: Idx) {
        self.slab.move_to_head(&mut self.list, idx);
    }

    pub(crate) fn metadata_bytes(&self) -> usize {
        self.index.allocated_bytes() + self.slab.allocated_bytes()
    }
}
