//! Pinned blocks (`coopcache pin`): kept by this node outside its
//! algorithm's cache, so no replacement policy evicts them, in a share of
//! the memory budget set aside for them ([`NodeProtocol::set_max_pinned`]).
//!
//! A pinned block serves this node's reads before any machine is asked,
//! and the peers' reads the block's manager forwards here: the read that
//! brought the block made this node one of its holders (under N-Chance
//! and Hash-Distributed the node says so again with `Cached`, which their
//! nodes may send), and the node keeps quiet when its machine drops its
//! own copy (the pinned one stays). Pinning takes the
//! block out of the machine, so a block is never held twice on one node.
//! A manager's `Invalidate` (the file was written) drops a pinned block
//! like any other copy: a pin never serves stale bytes.

use super::{Content, NodeProtocol, PeerMsg, ProtocolKey};
use crate::coop::{Msg, SizeClassed, StoreUsage};
use std::collections::HashMap;

/// Why a block could not be pinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PinRefused {
    /// The pinned share is full: unpin something first.
    #[error("the pinned share is full ({max} blocks)")]
    Full {
        /// Blocks the share holds.
        max: usize,
    },
}

/// The pinned blocks, with the bytes they hold.
#[derive(Debug)]
pub(super) struct Pinned<K, D> {
    blocks: HashMap<K, D>,
    bytes: usize,
    max: usize,
}

impl<K, D> Default for Pinned<K, D> {
    fn default() -> Self {
        Pinned {
            blocks: HashMap::new(),
            bytes: 0,
            max: 0,
        }
    }
}

impl<K: ProtocolKey, D: Content> Pinned<K, D> {
    /// Every read and forward asks: with nothing pinned (the usual
    /// case), no key is hashed.
    pub(super) fn get(&self, block: K) -> Option<&D> {
        match self.blocks.is_empty() {
            true => None,
            false => self.blocks.get(&block),
        }
    }

    pub(super) fn contains(&self, block: K) -> bool {
        self.get(block).is_some()
    }

    fn remove(&mut self, block: K) -> Option<D> {
        let data = self.blocks.remove(&block)?;
        self.bytes -= data.size();
        Some(data)
    }

    pub(super) fn usage(&self) -> StoreUsage {
        StoreUsage {
            blocks: self.blocks.len(),
            bytes: self.bytes,
        }
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Lets this node pin at most `blocks` blocks (none by default). A
    /// smaller bound keeps the blocks pinned already; it refuses new ones
    /// until they fit.
    pub fn set_max_pinned(&mut self, blocks: usize) {
        self.pinned.max = blocks;
    }

    /// Blocks and bytes pinned.
    pub fn pinned_usage(&self) -> StoreUsage {
        self.pinned.usage()
    }

    /// Whether `block` is pinned here.
    pub fn is_pinned(&self, block: K) -> bool {
        self.pinned.contains(block)
    }

    /// Pins `block` with `data`, contents a read of this node returned
    /// (verified already): kept until [`NodeProtocol::unpin`] or a
    /// manager's `Invalidate`. Pinning a pinned block again is a no-op.
    pub fn pin(&mut self, block: K, data: D, now: u64) -> Result<(), PinRefused> {
        if self.pinned.contains(block) {
            return Ok(());
        }
        if self.pinned.blocks.len() >= self.pinned.max {
            return Err(PinRefused::Full {
                max: self.pinned.max,
            });
        }
        // The machine's copy goes (silently: the manager keeps this node
        // as a holder), so the block is held once.
        self.deliver_to_node(Msg::Invalidate { block }, now);
        self.pinned.bytes += data.size();
        self.pinned.blocks.insert(block, data);
        // Where nodes may say they cache a block they did not ask for, the
        // manager hears of it; elsewhere (Greedy) the read just finished
        // made this node a holder already, and the rule that refuses an
        // unasked `Cached` there stays as strict as it was.
        if self.caches_unasked() {
            self.send_to_manager(block, PeerMsg::Cached { block });
        }
        self.settle(now);
        Ok(())
    }

    /// Unpins `block`: its bytes are dropped, and its manager told (unless
    /// the machine holds a copy of its own again). Whether it was pinned.
    pub fn unpin(&mut self, block: K, now: u64) -> bool {
        if self.pinned.remove(block).is_none() {
            return false;
        }
        if self.node.data(block).is_none() {
            self.send_to_manager(block, self.dropped_msg(block));
        }
        self.settle(now);
        true
    }

    /// Drops every copy of `block` in the cluster (`coopcache evict`):
    /// this node's, pinned or cached, at once, and the other holders' as
    /// the block's manager tells them (`Evict`). Whether this node held
    /// one.
    pub fn evict(&mut self, block: K, now: u64) -> bool {
        let pinned = self.pinned.remove(block).is_some();
        let cached = self.node.data(block).is_some();
        if pinned || cached {
            self.deliver_to_node(Msg::Invalidate { block }, now);
        }
        self.send_to_manager(block, PeerMsg::Evict { block });
        self.settle(now);
        pinned || cached
    }

    /// A manager's `Invalidate` reached this node: its pinned copy goes.
    pub(super) fn unpin_invalidated(&mut self, block: K) {
        self.pinned.remove(block);
    }
}
