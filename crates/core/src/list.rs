//! Doubly linked lists over a slab: the queue structure every policy shares.
//!
//! Policies keep their blocks in one or more recency or insertion orders
//! (LRU's stack, FIFO's queue, ARC's four lists). Pointer-linked nodes cost a
//! heap allocation per block and scatter the nodes; here all nodes of a policy
//! live in one `Vec` and link to each other by `u32` index, freed slots are
//! reused through a free list, so a replay allocates nothing once the cache
//! is warm. Several [`List`]s can share one [`Slab`], so moving a block from
//! one list to another (ARC's T1 to T2) keeps its index.
//!
//! Orientation: the *head* is the most recently inserted (or promoted) end,
//! the *tail* the oldest end, where eviction looks first.
//!
//! Every node carries its object's size (1 for a block in a block cache,
//! its bytes in a byte cache) and every list the sum of its nodes' sizes,
//! so byte-sized policies (ARC's T1 in bytes, S3-FIFO's small queue) read
//! their occupancy off the list. How a node stores its size is the slab's
//! [`Weight`]: a `u32` of bytes, or [`Unit`], which stores nothing and
//! counts 1, so a block cache's nodes stay as small as before sizes existed
//! (16 bytes for LRU's, a third less memory traffic on large caches).

/// Index of a node in a [`Slab`]; [`NIL`] is the null link.
pub type Idx = u32;

/// The null index: no node.
pub const NIL: Idx = Idx::MAX;

/// How a slab node stores its object's size.
pub trait Weight: Copy + std::fmt::Debug + Send + Sync + 'static {
    /// The stored form of `size`.
    fn of(size: u32) -> Self;
    /// The size stored.
    fn get(self) -> u32;
}

/// Sizes in bytes (or any unit), stored per node.
impl Weight for u32 {
    #[inline]
    fn of(size: u32) -> Self {
        size
    }

    #[inline]
    fn get(self) -> u32 {
        self
    }
}

/// Every object has size 1 and nothing is stored: the nodes of a block
/// cache, which is only ever told size 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unit;

impl Weight for Unit {
    #[inline]
    fn of(size: u32) -> Self {
        debug_assert_eq!(size, 1, "a block cache holds objects of size 1");
        Unit
    }

    #[inline]
    fn get(self) -> u32 {
        1
    }
}

#[derive(Clone, Debug)]
struct Node<K, M, W> {
    key: K,
    size: W,
    meta: M,
    prev: Idx,
    next: Idx,
}

/// Storage for the nodes of one or more lists.
///
/// Each node holds a key, a small per-policy payload `M` (a reference bit, a
/// frequency counter, the list it is on) and its two links.
#[derive(Clone, Debug)]
pub struct Slab<K, M, W = u32> {
    nodes: Vec<Node<K, M, W>>,
    /// Head of the chain of free slots, linked through `next`.
    free: Idx,
}

/// One list threaded through a [`Slab`]: its two ends, its length and the
/// sum of its nodes' sizes.
#[derive(Clone, Copy, Debug)]
pub struct List {
    head: Idx,
    tail: Idx,
    len: usize,
    size: u64,
}

impl Default for List {
    fn default() -> Self {
        List {
            head: NIL,
            tail: NIL,
            len: 0,
            size: 0,
        }
    }
}

impl List {
    /// The most recently inserted node, or [`NIL`].
    pub fn head(&self) -> Idx {
        self.head
    }

    /// The oldest node, or [`NIL`].
    pub fn tail(&self) -> Idx {
        self.tail
    }

    /// Number of nodes on the list.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list has no nodes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sum of the sizes of the nodes on the list (its length where every
    /// node has size 1).
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl<K: Copy, M: Copy, W: Weight> Slab<K, M, W> {
    /// A slab with room for `capacity` nodes before it reallocates.
    pub fn with_capacity(capacity: usize) -> Self {
        Slab {
            nodes: Vec::with_capacity(capacity),
            free: NIL,
        }
    }

    /// Stores a new unlinked node for an object of `size` and returns its
    /// index.
    pub fn alloc(&mut self, key: K, size: u32, meta: M) -> Idx {
        let node = Node {
            key,
            size: W::of(size),
            meta,
            prev: NIL,
            next: NIL,
        };
        if self.free != NIL {
            let idx = self.free;
            self.free = self.nodes[idx as usize].next;
            self.nodes[idx as usize] = node;
            idx
        } else {
            let idx = Idx::try_from(self.nodes.len())
                .ok()
                .filter(|&i| i != NIL)
                .expect("a slab holds at most 2^32 - 1 nodes");
            self.nodes.push(node);
            idx
        }
    }

    /// Returns an unlinked node's slot to the free list.
    pub fn release(&mut self, idx: Idx) {
        self.nodes[idx as usize].next = self.free;
        self.free = idx;
    }

    /// The key stored at `idx`.
    #[inline]
    pub fn key(&self, idx: Idx) -> K {
        self.nodes[idx as usize].key
    }

    /// The size of the object stored at `idx`.
    #[inline]
    pub fn size(&self, idx: Idx) -> u32 {
        self.nodes[idx as usize].size.get()
    }

    /// The payload stored at `idx`.
    #[inline]
    pub fn meta(&self, idx: Idx) -> M {
        self.nodes[idx as usize].meta
    }

    /// The payload stored at `idx`, for update.
    #[inline]
    pub fn meta_mut(&mut self, idx: Idx) -> &mut M {
        &mut self.nodes[idx as usize].meta
    }

    /// The neighbour of `idx` towards the head (newer), or [`NIL`].
    #[inline]
    pub fn newer(&self, idx: Idx) -> Idx {
        self.nodes[idx as usize].prev
    }

    /// The neighbour of `idx` towards the tail (older), or [`NIL`].
    #[inline]
    pub fn older(&self, idx: Idx) -> Idx {
        self.nodes[idx as usize].next
    }

    /// Links an unlinked node in at the head of `list`.
    #[inline]
    pub fn push_head(&mut self, list: &mut List, idx: Idx) {
        let old_head = list.head;
        {
            let node = &mut self.nodes[idx as usize];
            node.prev = NIL;
            node.next = old_head;
        }
        if old_head == NIL {
            list.tail = idx;
        } else {
            self.nodes[old_head as usize].prev = idx;
        }
        list.head = idx;
        list.len += 1;
        list.size += u64::from(self.nodes[idx as usize].size.get());
    }

    /// Unlinks `idx` from `list`; the node stays allocated.
    #[inline]
    pub fn unlink(&mut self, list: &mut List, idx: Idx) {
        let Node {
            prev, next, size, ..
        } = self.nodes[idx as usize];
        if prev == NIL {
            list.head = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            list.tail = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        list.len -= 1;
        list.size -= u64::from(size.get());
    }

    /// Moves `idx`, already on `list`, to its head.
    #[inline]
    pub fn move_to_head(&mut self, list: &mut List, idx: Idx) {
        if list.head != idx {
            self.unlink(list, idx);
            self.push_head(list, idx);
        }
    }

    /// Moves `idx` from list `from` to the head of list `to`.
    #[inline]
    pub fn transfer(&mut self, from: &mut List, to: &mut List, idx: Idx) {
        self.unlink(from, idx);
        self.push_head(to, idx);
    }

    /// Iterates over `list` from the tail (oldest) to the head (newest).
    pub fn iter_from_tail<'a>(&'a self, list: &List) -> impl Iterator<Item = Idx> + 'a {
        self.iter_newer_from(list.tail)
    }

    /// Iterates from node `start` (or nothing for [`NIL`]) towards the head.
    pub fn iter_newer_from(&self, start: Idx) -> impl Iterator<Item = Idx> + '_ {
        let mut cur = start;
        std::iter::from_fn(move || {
            (cur != NIL).then(|| {
                let idx = cur;
                cur = self.newer(idx);
                idx
            })
        })
    }

    /// Bytes reserved by the slab: what its metadata costs in memory.
    pub fn allocated_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node<K, M, W>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(slab: &Slab<u64, ()>, list: &List) -> Vec<u64> {
        slab.iter_from_tail(list).map(|i| slab.key(i)).collect()
    }

    #[test]
    fn push_unlink_move_keep_order_and_length() {
        let mut slab = Slab::with_capacity(4);
        let mut list = List::default();
        let a = slab.alloc(1, 1, ());
        let b = slab.alloc(2, 1, ());
        let c = slab.alloc(3, 1, ());
        for i in [a, b, c] {
            slab.push_head(&mut list, i);
        }
        assert_eq!(keys(&slab, &list), [1, 2, 3]);
        slab.move_to_head(&mut list, a);
        assert_eq!(keys(&slab, &list), [2, 3, 1]);
        slab.unlink(&mut list, c);
        assert_eq!(keys(&slab, &list), [2, 1]);
        assert_eq!(list.len(), 2);
        assert_eq!(list.size(), 2);
        slab.unlink(&mut list, b);
        slab.unlink(&mut list, a);
        assert!(list.is_empty());
        assert_eq!((list.head(), list.tail()), (NIL, NIL));
    }

    #[test]
    fn released_slots_are_reused() {
        let mut slab: Slab<u64, ()> = Slab::with_capacity(2);
        let a = slab.alloc(1, 1, ());
        let b = slab.alloc(2, 1, ());
        slab.release(a);
        let c = slab.alloc(3, 1, ());
        assert_eq!(c, a);
        assert_eq!(slab.key(c), 3);
        assert_eq!(slab.key(b), 2);
    }

    #[test]
    fn transfer_moves_between_lists() {
        let mut slab = Slab::with_capacity(2);
        let (mut l1, mut l2) = (List::default(), List::default());
        let a = slab.alloc(7u64, 1, ());
        slab.push_head(&mut l1, a);
        slab.transfer(&mut l1, &mut l2, a);
        assert!(l1.is_empty());
        assert_eq!(keys(&slab, &l2), [7]);
    }

    #[test]
    fn unit_weights_count_one_and_store_nothing() {
        let mut slab: Slab<u64, (), Unit> = Slab::with_capacity(1);
        let mut list = List::default();
        let a = slab.alloc(9, 1, ());
        slab.push_head(&mut list, a);
        assert_eq!((list.size(), slab.size(a)), (1, 1));
        assert_eq!(std::mem::size_of::<Node<u64, (), Unit>>(), 16);
    }

    #[test]
    fn lists_sum_their_nodes_sizes() {
        let mut slab: Slab<u64, ()> = Slab::with_capacity(2);
        let (mut l1, mut l2) = (List::default(), List::default());
        let a = slab.alloc(1u64, 300, ());
        let b = slab.alloc(2u64, 20, ());
        slab.push_head(&mut l1, a);
        slab.push_head(&mut l1, b);
        assert_eq!((l1.len(), l1.size()), (2, 320));
        slab.transfer(&mut l1, &mut l2, a);
        assert_eq!((l1.size(), l2.size(), slab.size(a)), (20, 300, 300));
    }
}
