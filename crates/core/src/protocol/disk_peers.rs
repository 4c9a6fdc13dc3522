//! Peers' disk tiers (docs/ARCHITECTURE.md, "The disk tier"): a block no
//! member holds in memory is read from a member's disk before the origin.
//!
//! - **Who has it.** A member letting go of its memory copy of a block
//!   tells the manager whether its own disk still holds it
//!   ([`PeerMsg::Dropped`]'s `on_disk`): it speaks only about itself, as
//!   every directory change is made. The manager keeps these *disk hints*
//!   ([`DiskHints`]) beside its directory, as many as it keeps records.
//! - **When it is asked.** Where the manager's machine would send a reader
//!   to the origin, the manager forwards the read to a member whose disk
//!   has the block, if it has the block's recorded digest to give the
//!   reader (no record, no forward: nothing the disk holder sent could be
//!   checked). The reader verifies the contents as any holder's. So the
//!   lookup order is local memory, the cluster's memory, the local disk
//!   (a reader that said its own disk has the block is sent the origin's
//!   way, which reads its disk first), a peer's disk, the origin.
//! - **What the holder does.** It reads its slot as for its own reads
//!   ([`Action::ReadDisk`]) and sends the contents only if they hash to
//!   the digest it wrote them with; a slot gone, unreadable or wrong
//!   answers `NotHere`, and the manager serves the reader again without
//!   that hint.
//! - **N-Chance's last chance.** A singlet a peer recirculated here is
//!   written to this node's disk once verified, like a block this node
//!   read: when its chances run out and memory lets it go, the cluster
//!   still has it, on this disk, and the manager hears so.
//! - **Which algorithms.** Greedy Forwarding and N-Chance, whose managers
//!   forward reads to holders. Base shares nothing; a Direct host keeps
//!   only its clients' blocks; Hash-Distributed's partitions are outside
//!   the directory.
//!
//! [`Action::ReadDisk`]: super::Action::ReadDisk

use super::node::NodeProtocol;
use super::reader::DISK_TIMEOUT_US;
use super::{Action, Content, DiskMiss, PeerMsg, ProtocolKey};
use crate::coop::{AlgorithmKind, Msg, NodeId, SizeClassed};
use std::collections::{HashMap, VecDeque};

/// Members whose disks a manager remembers per block, newest first.
const HINT_HOLDERS: usize = 2;

/// An empty place in a block's hint.
const NO_NODE: NodeId = NodeId::MAX;

/// Blocks a holder reads from its disk for peers at once; a forward beyond
/// is answered `NotHere` (the reader is served from elsewhere).
pub(super) const MAX_DISK_SERVES: usize = 64;

/// Readers waiting on one such read.
const MAX_READERS_PER_SERVE: usize = 16;

/// Whether `kind`'s managers forward reads to members' disks.
pub(super) fn reads_peer_disks(kind: AlgorithmKind) -> bool {
    matches!(kind, AlgorithmKind::Greedy | AlgorithmKind::NChance)
}

/// A manager's disk hints: which members said their disks hold a block
/// their memory let go of. Bounded like the records: the oldest hint goes
/// first (a hint is no use without a record anyway).
#[derive(Debug)]
pub(super) struct DiskHints<K> {
    holders: HashMap<K, [NodeId; HINT_HOLDERS], foldhash::fast::FixedState>,
    /// Hinted blocks, oldest first (with stale ids, skipped when reached).
    order: VecDeque<K>,
}

impl<K> Default for DiskHints<K> {
    fn default() -> Self {
        DiskHints {
            holders: HashMap::default(),
            order: VecDeque::new(),
        }
    }
}

impl<K: ProtocolKey> DiskHints<K> {
    /// Blocks hinted.
    pub(super) fn len(&self) -> usize {
        self.holders.len()
    }

    /// `node`'s disk holds `block`; the oldest hint goes beyond `max`
    /// blocks, and the oldest holder beyond [`HINT_HOLDERS`].
    pub(super) fn add(&mut self, block: K, node: NodeId, max: usize) {
        if let Some(h) = self.holders.get_mut(&block) {
            if !h.contains(&node) {
                h.rotate_right(1);
                h[0] = node;
            }
            return;
        }
        let mut h = [NO_NODE; HINT_HOLDERS];
        h[0] = node;
        self.holders.insert(block, h);
        self.order.push_back(block);
        while self.holders.len() > max {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            self.holders.remove(&old);
        }
        if self.order.len() > 2 * max.max(self.holders.len()) {
            let holders = &self.holders;
            self.order.retain(|b| holders.contains_key(b));
        }
    }

    /// `node`'s disk no longer holds `block` (or never answered for it).
    pub(super) fn remove(&mut self, block: K, node: NodeId) {
        let Some(h) = self.holders.get_mut(&block) else {
            return;
        };
        for n in h.iter_mut().filter(|n| **n == node) {
            *n = NO_NODE;
        }
        h.sort_unstable_by_key(|&n| n == NO_NODE);
        if h[0] == NO_NODE {
            self.holders.remove(&block);
        }
    }

    /// The member to read `block` from for `reader`: the newest hint, but
    /// none if the reader's own disk has it (it reads that first).
    pub(super) fn holder(&self, block: K, reader: NodeId) -> Option<NodeId> {
        let h = self.holders.get(&block)?;
        if h.contains(&reader) {
            return None;
        }
        h.iter().copied().find(|&n| n != NO_NODE)
    }

    /// Forgets every hint of `node` (it left).
    pub(super) fn forget_node(&mut self, node: NodeId) {
        self.holders.retain(|_, h| {
            for n in h.iter_mut().filter(|n| **n == node) {
                *n = NO_NODE;
            }
            h.sort_unstable_by_key(|&n| n == NO_NODE);
            h[0] != NO_NODE
        });
    }
}

/// Reads of this node's disk on behalf of peers: the readers each waits
/// for, and when it is given up.
#[derive(Debug)]
pub(super) struct DiskServes<K> {
    waiting: HashMap<K, (u64, Vec<NodeId>), foldhash::fast::FixedState>,
}

impl<K> Default for DiskServes<K> {
    fn default() -> Self {
        DiskServes {
            waiting: HashMap::default(),
        }
    }
}

impl<K> DiskServes<K> {
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.waiting.len()
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// This node's word to `block`'s manager that its memory let go of the
    /// block, saying whether its disk still has it.
    pub(super) fn dropped_msg(&self, block: K) -> PeerMsg<K, D> {
        let on_disk = self.disk.as_ref().is_some_and(|t| t.holds(block));
        PeerMsg::Dropped { block, on_disk }
    }

    /// `from` let go of its memory copy of `block`; its disk keeps one if
    /// `on_disk` (what it says of itself: a false hint costs a reader a
    /// `NotHere` or a failed check, as a false `Cached` does).
    pub(super) fn manager_dropped(&mut self, from: NodeId, block: K, on_disk: bool, now: u64) {
        let hints = &mut self.slice.disk_hints;
        match on_disk && reads_peer_disks(self.kind) {
            true => hints.add(block, from, self.cfg.max_records),
            false => hints.remove(block, from),
        }
        self.deliver_to_manager(from, Msg::Dropped { block }, now);
    }

    /// Forwards `reader`'s read of `block`, which no member holds in
    /// memory, to a member whose disk has it, if one said so and the
    /// block's digest is recorded. Whether it did.
    pub(super) fn disk_forward(&mut self, block: K, reader: NodeId, now: u64) -> bool {
        if !reads_peer_disks(self.kind) || self.slice.record(block).is_none() {
            return false;
        }
        let Some(holder) = self.slice.disk_hints.holder(block, reader) else {
            return false;
        };
        let live = self.live.binary_search(&holder).is_ok();
        if !live || !self.slice.forward_room(block, self.cfg.max_directory) {
            return false;
        }
        self.stats.disk_forwards += 1;
        // With a record and room, a forward is sent, never a fetch.
        self.manager_forward(block, holder, reader, now);
        true
    }

    /// A read of `block` the manager forwarded here for `reader` that this
    /// node's memory cannot serve: served from its disk if the block is
    /// there. Whether it will be (else the caller answers `NotHere`).
    pub(super) fn serve_from_disk(&mut self, block: K, reader: NodeId, now: u64) -> bool {
        if !reads_peer_disks(self.kind) || self.is_private() {
            return false;
        }
        if let Some((_, readers)) = self.disk_serves.waiting.get_mut(&block) {
            if readers.len() >= MAX_READERS_PER_SERVE || readers.contains(&reader) {
                return false;
            }
            readers.push(reader);
            return true;
        }
        if self.disk_serves.waiting.len() >= MAX_DISK_SERVES {
            self.expire_disk_serves(now);
            if self.disk_serves.waiting.len() >= MAX_DISK_SERVES {
                self.stats.dropped += 1;
                return false;
            }
        }
        let Some((slot, _)) = self.disk.as_mut().and_then(|t| t.lookup(block)) else {
            return false;
        };
        let serve = (now + DISK_TIMEOUT_US, vec![reader]);
        self.disk_serves.waiting.insert(block, serve);
        self.actions.push_back(Action::ReadDisk { block, slot });
        true
    }

    /// Gives up the reads for peers past their deadline (a disk that does
    /// not answer): each reader's forward is answered `NotHere`.
    fn expire_disk_serves(&mut self, now: u64) {
        let late: Vec<K> = self
            .disk_serves
            .waiting
            .iter()
            .filter(|(_, (deadline, _))| *deadline <= now)
            .map(|(&b, _)| b)
            .collect();
        for block in late {
            self.disk_served(block, &Err(DiskMiss::NotThere));
        }
    }

    /// The disk's answer for `block`, to the peers waiting on it: the
    /// contents if they hash to the digest they were written with, else a
    /// `NotHere` per reader (and the slot forgotten if it holds other
    /// bytes).
    pub(super) fn disk_served(&mut self, block: K, result: &Result<D, DiskMiss>) {
        let Some((_, readers)) = self.disk_serves.waiting.remove(&block) else {
            return;
        };
        let tier = self.disk.as_ref();
        let good = result
            .as_ref()
            .ok()
            .filter(|d| tier.is_some_and(|t| t.matches(block, d.digest()))); // rule: disk-digest
        match good {
            Some(data) => {
                for reader in readers {
                    self.stats.disk_served += 1;
                    let data = data.clone();
                    self.send(reader, PeerMsg::Data { block, data });
                }
            }
            None => {
                if result.is_ok()
                    && let Some(t) = self.disk.as_mut()
                {
                    t.forget(block);
                }
                for _ in readers {
                    self.send_to_manager(block, PeerMsg::NotHere { block });
                }
            }
        }
    }

    /// Whether reads for peers wait on this node's disk.
    pub(super) fn serves_from_disk(&self) -> bool {
        !self.disk_serves.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_keep_the_newest_holders_and_skip_a_reader_with_its_own() {
        let mut h: DiskHints<u64> = DiskHints::default();
        h.add(1, 5, 8);
        assert_eq!(h.holder(1, 9), Some(5));
        h.add(1, 6, 8);
        h.add(1, 7, 8);
        assert_eq!(h.holder(1, 9), Some(7), "newest first");
        assert_eq!(h.holder(1, 5), Some(7), "5 was pushed out");
        assert_eq!(h.holder(1, 7), None, "the reader's own disk first");
        assert_eq!(h.holder(1, 6), None);
        h.remove(1, 7);
        assert_eq!(h.holder(1, 9), Some(6));
        h.remove(1, 6);
        assert_eq!((h.holder(1, 9), h.len()), (None, 0));
    }

    #[test]
    fn hints_are_bounded_oldest_first_and_a_member_leaving_takes_its_own() {
        let mut h: DiskHints<u64> = DiskHints::default();
        for b in 0..10 {
            h.add(b, (b % 3) as NodeId, 4);
        }
        assert_eq!(h.len(), 4);
        assert_eq!(h.holder(5, 9), None);
        assert_eq!(h.holder(9, 8), Some(0));
        h.add(9, 1, 4);
        h.forget_node(0);
        assert_eq!(h.holder(9, 8), Some(1));
        assert_eq!(h.holder(6, 8), None, "6 was only on 0's disk");
        assert!(h.order.len() <= 8);
    }
}
