//! Indexed lists: a block index, a slab, and one or more lists threaded
//! through it. The shared body of every list-based policy: LRU, FIFO, CLOCK
//! and SIEVE use one list, ARC four, S3-FIFO and 2Q three. A policy keeps
//! only what differs: what a hit does and how the victim is chosen.

use crate::index::Index;
use crate::list::{Idx, List, NIL, Slab, Weight};
use crate::policy::BlockKey;

/// Which list a node's payload says it is on.
pub(crate) trait ListTag: Copy {
    /// Index of the list, below the `N` of [`IndexedLists`].
    fn list(self) -> usize;
}

/// Single-list policies carry a plain payload (nothing, or a reference bit)
/// and always use list 0.
impl ListTag for () {
    fn list(self) -> usize {
        0
    }
}

impl ListTag for bool {
    fn list(self) -> usize {
        0
    }
}

/// A counter on a single list (CLOCK's n-bit reference counter).
impl ListTag for u8 {
    fn list(self) -> usize {
        0
    }
}

/// `N` lists over one slab, with an index from key to node; `W` is how
/// nodes store their sizes.
#[derive(Clone, Debug)]
pub(crate) struct IndexedLists<K, M, const N: usize, W = u32> {
    index: Index,
    pub(crate) slab: Slab<K, M, W>,
    lists: [List; N],
}

/// The single-list case.
pub(crate) type IndexedQueue<K, M, W = u32> = IndexedLists<K, M, 1, W>;

impl<K: BlockKey, M: ListTag, const N: usize, W: Weight> IndexedLists<K, M, N, W> {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        IndexedLists {
            index: Index::with_capacity(capacity),
            slab: Slab::with_capacity(capacity),
            lists: [List::default(); N],
        }
    }

    #[inline]
    pub(crate) fn find(&self, key: K) -> Option<Idx> {
        self.index.find(&self.slab, key)
    }

    pub(crate) fn list(&self, list: usize) -> &List {
        &self.lists[list]
    }

    #[inline]
    pub(crate) fn meta(&self, idx: Idx) -> M {
        self.slab.meta(idx)
    }

    #[inline]
    pub(crate) fn key(&self, idx: Idx) -> K {
        self.slab.key(idx)
    }

    #[inline]
    pub(crate) fn size(&self, idx: Idx) -> u32 {
        self.slab.size(idx)
    }

    /// Inserts `key`, an object of `size`, at the head of the list `meta`
    /// names.
    #[inline]
    pub(crate) fn push(&mut self, key: K, size: u32, meta: M) -> Idx {
        let idx = self.slab.alloc(key, size, meta);
        self.slab.push_head(&mut self.lists[meta.list()], idx);
        self.index.insert(&self.slab, idx);
        idx
    }

    /// Gives node `idx` a new payload and moves it to the head of the list
    /// that payload names (the same list or another).
    #[inline]
    pub(crate) fn relocate(&mut self, idx: Idx, meta: M) {
        let from = self.slab.meta(idx).list();
        self.slab.unlink(&mut self.lists[from], idx);
        self.slab.push_head(&mut self.lists[meta.list()], idx);
        *self.slab.meta_mut(idx) = meta;
    }

    /// Moves node `idx` to the head of its list, payload unchanged.
    #[inline]
    pub(crate) fn move_to_head(&mut self, idx: Idx) {
        let list = self.slab.meta(idx).list();
        self.slab.move_to_head(&mut self.lists[list], idx);
    }

    /// Unlinks, unindexes and frees node `idx`; returns its key.
    #[inline]
    pub(crate) fn forget(&mut self, idx: Idx) -> K {
        let list = self.slab.meta(idx).list();
        self.index.remove(&self.slab, idx);
        self.slab.unlink(&mut self.lists[list], idx);
        self.slab.release(idx);
        self.slab.key(idx)
    }

    /// The key at the tail (oldest end) of `list`.
    pub(crate) fn tail_key(&self, list: usize) -> Option<K> {
        let tail = self.lists[list].tail();
        (tail != NIL).then(|| self.slab.key(tail))
    }

    /// Nodes of `list` from oldest to newest.
    pub(crate) fn iter_from_tail(&self, list: usize) -> impl Iterator<Item = Idx> + '_ {
        self.slab.iter_from_tail(&self.lists[list])
    }

    pub(crate) fn metadata_bytes(&self) -> usize {
        self.index.allocated_bytes() + self.slab.allocated_bytes()
    }
}
