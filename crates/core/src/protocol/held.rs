//! Blocks a node took from a peer before their digest was confirmed
//! (forwarded singlets, blocks placed in its partition): the machine keeps
//! them at once, in the order the simulator delivers them, and no read of
//! this node uses them until the block's manager confirms the digest.

use super::node::NodeProtocol;
use super::timers::Timer;
use super::{Content, Digest, PeerMsg, ProtocolKey};
use crate::coop::{Msg, NodeId, SizeClassed};
use std::collections::HashMap;

/// One held block: who sent it, its contents, when to give up.
#[derive(Debug)]
struct Unverified<D> {
    sender: NodeId,
    data: D,
    deadline: u64,
}

/// Held blocks by id.
#[derive(Debug)]
pub(super) struct Held<K, D> {
    blocks: HashMap<K, Unverified<D>, foldhash::fast::FixedState>,
}

impl<K, D> Default for Held<K, D> {
    fn default() -> Self {
        Held {
            blocks: HashMap::default(),
        }
    }
}

impl<K: ProtocolKey, D> Held<K, D> {
    pub(super) fn contains(&self, block: K) -> bool {
        self.blocks.contains_key(&block)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Forgets `block`; whether it was held.
    pub(super) fn remove(&mut self, block: K) -> bool {
        self.blocks.remove(&block).is_some()
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// A block `from` pushed here (`Recirculate`, `Place`): the machine
    /// takes it now; its digest is asked of its manager, and until the
    /// answer no read here uses it.
    pub(super) fn hold_then_deliver(&mut self, from: NodeId, msg: Msg<K, D>, now: u64) {
        let (Msg::Recirculate { block, data, .. } | Msg::Place { block, data, .. }) = &msg else {
            return;
        };
        let block = *block;
        if self.held.contains(block) {
            // A second copy while the first awaits its digest: the machine
            // keeps the first, so the first is what gets checked (found by
            // the fault harness: a liar's bad copy kept, an honest second
            // copy checked in its place, the bad bytes then served).
            self.stats.dropped += 1;
            return;
        }
        if self.held.len() >= self.cfg.max_held {
            // No room to check it: not taken.
            self.stats.dropped += 1;
            return;
        }
        let deadline = now + self.peer_timeout();
        let held = Unverified {
            sender: from,
            data: data.clone(),
            deadline,
        };
        self.held.blocks.insert(block, held);
        self.timers.arm(deadline, Timer::Held(block));
        if matches!(msg, Msg::Recirculate { .. }) {
            // This node holds the singlet now (its sender said it does not).
            self.send_to_manager(block, PeerMsg::Cached { block });
        }
        self.send_to_manager(block, PeerMsg::HashOf { block });
        self.deliver_to_node(msg, now);
    }

    /// The manager's digest for a held block: kept if its contents match;
    /// otherwise (or with no digest recorded) dropped, the manager told,
    /// and a read waiting on it sent to the origin.
    pub(super) fn held_verdict(&mut self, block: K, digest: Option<Digest>, now: u64) {
        let Some(Unverified { sender, data, .. }) = self.held.blocks.remove(&block) else {
            return;
        };
        let verified = digest == Some(data.digest()); // rule: verify-held
        if verified {
            return self.held_read_verdict(block, Some(data), now);
        }
        if digest.is_some() {
            let name = "Recirculate or Place";
            self.integrity_failure(sender, name, now);
        }
        // Whatever copy the machine has may be the bad one: dropped (a
        // good one costs a re-read; bad bytes are never served).
        self.uncache(block, now);
        self.held_read_verdict(block, None, now);
    }

    /// A held block whose digest never came is dropped unverified.
    pub(super) fn held_deadline(&mut self, block: K, now: u64) {
        let due = self
            .held
            .blocks
            .get(&block)
            .is_some_and(|h| h.deadline <= now);
        if due {
            self.stats.timeouts += 1;
            self.held.blocks.remove(&block);
            self.uncache(block, now);
            self.held_read_verdict(block, None, now);
        }
    }
}
