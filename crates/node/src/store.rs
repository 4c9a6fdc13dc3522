//! The node's block bytes: the core's `BlockStore` over real buffers,
//! shared between the state machine (which decides what stays) and the
//! driver (which reads what a local hit returns), with the bytes counted
//! against the memory budget.

use crate::block::BlockId;
use bytes::Bytes;
use coopcache_core::coop::BlockStore;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default)]
struct Inner {
    blocks: HashMap<BlockId, Bytes>,
    bytes: usize,
}

/// A handle to one node's block bytes. Clones share the same blocks.
///
/// The machine only stores blocks its policy admitted, so the number of
/// blocks is bounded by the policy's capacity and the bytes by capacity
/// times the block size: the budget is enforced by sizing the policy
/// ([`crate::budget::Budget`]), and the count here is what `status` and
/// `/metrics` report.
#[derive(Clone, Debug, Default)]
pub struct SharedStore(Arc<Mutex<Inner>>);

impl SharedStore {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the map half-updated
        // (every operation is one map call), so a poisoned lock is usable.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes of block data held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Blocks held.
    pub fn blocks(&self) -> usize {
        self.lock().blocks.len()
    }
}

/// The stores of all of a node's cache parts: its local cache, and its
/// Hash-Distributed partition or the blocks it hosts for a Direct peer.
/// Each part keeps its own copy, so one part dropping a block leaves the
/// other's.
#[derive(Clone, Debug)]
pub struct Stores {
    parts: Vec<SharedStore>,
    /// The first `serving` parts hold bytes this node's own reads may use;
    /// the rest (a Direct host's region) only go back to the peer that
    /// parked them, which verifies them.
    serving: usize,
}

impl Stores {
    /// `serving` parts, whose bytes this node's reads use, and `kept`
    /// parts, held for peers only.
    pub fn new(serving: Vec<SharedStore>, kept: Vec<SharedStore>) -> Self {
        let n = serving.len();
        Stores {
            parts: serving.into_iter().chain(kept).collect(),
            serving: n,
        }
    }

    /// The bytes of `block` for this node's own read, from the first
    /// serving part that holds it.
    pub fn get(&self, block: BlockId) -> Option<Bytes> {
        self.parts[..self.serving].iter().find_map(|s| s.get(block))
    }

    /// Whether some part still holds exactly these bytes (the same buffer)
    /// as `block`.
    pub fn holds(&self, block: BlockId, data: &Bytes) -> bool {
        self.parts
            .iter()
            .any(|s| s.get(block).is_some_and(|d| d.as_ptr() == data.as_ptr()))
    }

    /// Bytes of block data held in all parts.
    pub fn bytes(&self) -> usize {
        self.parts.iter().map(SharedStore::bytes).sum()
    }

    /// Blocks held in all parts (a block in two parts counts twice).
    pub fn blocks(&self) -> usize {
        self.parts.iter().map(SharedStore::blocks).sum()
    }
}

impl BlockStore<BlockId> for SharedStore {
    type Data = Bytes;

    fn put(&mut self, block: BlockId, data: Bytes) {
        let mut inner = self.lock();
        let len = data.len();
        if let Some(old) = inner.blocks.insert(block, data) {
            inner.bytes -= old.len();
        }
        inner.bytes += len;
    }

    fn get(&self, block: BlockId) -> Option<Bytes> {
        self.lock().blocks.get(&block).cloned()
    }

    fn take(&mut self, block: BlockId) -> Option<Bytes> {
        let mut inner = self.lock();
        let old = inner.blocks.remove(&block)?;
        inner.bytes -= old.len();
        Some(old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_counted_through_every_operation() {
        let mut s = SharedStore::default();
        let b = |i| BlockId { file: 1, index: i };
        s.put(b(0), Bytes::from_static(b"abc"));
        s.put(b(1), Bytes::from_static(b"de"));
        s.put(b(0), Bytes::from_static(b"z"));
        assert_eq!((s.bytes(), s.blocks()), (3, 2));
        assert_eq!(s.clone().take(b(1)).as_deref(), Some(&b"de"[..]));
        assert_eq!((s.bytes(), s.blocks()), (1, 1));
        assert_eq!(s.get(b(0)).as_deref(), Some(&b"z"[..]));
        assert_eq!(s.take(b(5)), None);
    }

    #[test]
    fn only_serving_parts_serve_reads_and_every_part_counts() {
        let b = |i| BlockId { file: 1, index: i };
        let (mut local, mut hosted) = (SharedStore::default(), SharedStore::default());
        let parked = Bytes::from_static(b"parked");
        hosted.put(b(1), parked.clone());
        local.put(b(2), Bytes::from_static(b"mine"));
        let all = Stores::new(vec![local.clone()], vec![hosted.clone()]);
        assert_eq!(all.get(b(1)), None, "a peer's parked bytes never serve");
        assert_eq!(all.get(b(2)).as_deref(), Some(&b"mine"[..]));
        assert!(all.holds(b(1), &parked));
        assert!(
            !all.holds(b(1), &Bytes::copy_from_slice(b"parked")),
            "same buffer only"
        );
        assert_eq!((all.bytes(), all.blocks()), (10, 2));
    }
}
