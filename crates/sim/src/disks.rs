//! The simulated live cluster's disk tiers: each node's slots, holding
//! what its protocol wrote there (`coopcache_core::protocol`'s disk tier
//! decides which block goes in which slot; this only keeps them).

use coopcache_core::coop::NodeId;
use coopcache_core::protocol::Digest;
use std::collections::{BTreeMap, HashMap};

/// One node's slots: the block and contents each holds.
pub type Slots<K> = HashMap<u32, (K, Digest)>;

/// Every node's disk slots.
#[derive(Debug)]
pub struct Disks<K> {
    nodes: BTreeMap<NodeId, Slots<K>>,
}

impl<K> Default for Disks<K> {
    fn default() -> Self {
        Disks {
            nodes: BTreeMap::new(),
        }
    }
}

impl<K: Copy + Eq> Disks<K> {
    /// Node `node` has a disk, empty.
    pub fn add(&mut self, node: NodeId) {
        self.nodes.insert(node, HashMap::new());
    }

    /// Node `node`'s slots, if it has a disk.
    pub fn of(&mut self, node: NodeId) -> Option<&mut Slots<K>> {
        self.nodes.get_mut(&node)
    }

    /// Writes `block`'s `data` into `node`'s `slot`, whatever it held.
    pub fn write(&mut self, node: NodeId, slot: u32, block: K, data: Digest) {
        if let Some(slots) = self.nodes.get_mut(&node) {
            slots.insert(slot, (block, data));
        }
    }

    /// The contents of `block` in `node`'s `slot`, if the slot holds that
    /// block (a store checks the block a slot names, as the daemon's does).
    pub fn read(&self, node: NodeId, block: K, slot: u32) -> Option<Digest> {
        let (held, data) = self.nodes.get(&node)?.get(&slot)?;
        (*held == block).then_some(*data)
    }
}
