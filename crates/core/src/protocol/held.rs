//! Blocks a node took from a peer before their digest was confirmed
//! (forwarded singlets, blocks placed in its partition): the machine keeps
//! them at once, in the order the simulator delivers them, and no read of
//! this node uses them until the block's manager confirms the digest.
//! Nor does a peer: its requests for the block wait for the verdict, so
//! this node never passes on bytes it has not checked (it would be
//! blamed for a liar's bytes, found by the fault harness, seed 481).

use super::integrity::{Dispute, Expected, Verdict};
use super::node::NodeProtocol;
use super::timers::Timer;
use super::{Content, PeerMsg, ProtocolKey};
use crate::coop::{Msg, NodeId, SizeClassed};
use std::collections::HashMap;

/// Most peers' requests waiting for one held block's verdict; more are
/// dropped (their readers time out and go to the origin).
const MAX_WAITING_PER_BLOCK: usize = 16;

/// One held block: who sent it, its contents, when to give up, and the
/// peers' requests for it that wait for the verdict.
#[derive(Debug)]
struct Unverified<K, D> {
    sender: NodeId,
    data: D,
    deadline: u64,
    waiting: Vec<(NodeId, PeerMsg<K, D>)>,
}

/// What became of a peer's request for a block ([`Held::wait`]).
pub(super) enum Wait<K, D> {
    /// The block is not held: the request, to handle now.
    NotHeld(PeerMsg<K, D>),
    /// It waits for the verdict.
    Waiting,
    /// Too many wait already: dropped (its reader times out and goes to
    /// the origin), never served from the unchecked block.
    Full,
}

/// Held blocks by id.
#[derive(Debug)]
pub(super) struct Held<K, D> {
    blocks: HashMap<K, Unverified<K, D>, foldhash::fast::FixedState>,
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

    /// Forgets `block`: the requests that waited for it, if it was held.
    pub(super) fn remove(&mut self, block: K) -> Option<Vec<(NodeId, PeerMsg<K, D>)>> {
        self.blocks.remove(&block).map(|h| h.waiting)
    }

    /// Keeps `msg` from `from`, a request for `block`, until the verdict
    /// if `block` is held; gives it back if not.
    pub(super) fn wait(&mut self, block: K, from: NodeId, msg: PeerMsg<K, D>) -> Wait<K, D> {
        let Some(h) = self.blocks.get_mut(&block) else {
            return Wait::NotHeld(msg);
        };
        if h.waiting.len() >= MAX_WAITING_PER_BLOCK {
            return Wait::Full;
        }
        h.waiting.push((from, msg));
        Wait::Waiting
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
        // Cached here already, verified: a pushed copy adds nothing, and
        // must not put the verified one at risk (a mismatch drops whatever
        // copy the machine has: one member's garbage would evict an honest
        // copy).
        let refuse = self.node.data(block).is_some() && !self.held.contains(block); // rule: pushed-never-evicts
        if refuse {
            self.stats.dropped += 1;
            if matches!(msg, Msg::Recirculate { .. }) {
                // Its sender gave its copy up, believing it the last: the
                // manager hears that this node holds one, as it would
                // have had the push been taken (else this node's later
                // `Dropped` or `IsSinglet` would come from a node the
                // directory does not list).
                self.send_to_manager(block, PeerMsg::Cached { block });
            }
            return;
        }
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
            waiting: Vec::new(),
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
    /// and a read waiting on it sent to the origin. A mismatch is reported
    /// unsettled, naming the sender and the recorder: no origin read here
    /// tells which lied.
    pub(super) fn held_verdict(&mut self, block: K, expected: Option<Expected>, now: u64) {
        let Some(held) = self.held.blocks.remove(&block) else {
            return;
        };
        let Unverified {
            sender,
            data,
            waiting,
            ..
        } = held;
        let got = data.digest();
        let verified = expected.is_some_and(|e| e.recorded.digest == got); // rule: verify-held
        if verified {
            if self.kind == crate::coop::AlgorithmKind::NChance {
                // A recirculated singlet goes to this node's disk too: its
                // last chance in memory is not its last in the cluster
                // (`disk_peers.rs`).
                self.keep_on_disk(block, &data);
            }
            self.held_read_verdict(block, Some(data), now);
            return self.replay_waiting(waiting, now);
        }
        if let Some(expected) = expected {
            self.integrity_failure();
            let dispute = Dispute {
                message: "Recirculate or Place",
                sender,
                got,
                expected,
            };
            self.report_integrity(block, dispute, Verdict::Unsettled, now);
        }
        // Whatever copy the machine has may be the bad one: dropped (a
        // good one costs a re-read; bad bytes are never served).
        self.uncache(block, now);
        self.held_read_verdict(block, None, now);
        self.replay_waiting(waiting, now);
    }

    /// Handles the requests that waited for a held block's verdict, as if
    /// they came now (the block is then cached verified, or gone).
    pub(super) fn replay_waiting(&mut self, waiting: Vec<(NodeId, PeerMsg<K, D>)>, now: u64) {
        for (from, msg) in waiting {
            self.on_message(from, msg, now);
        }
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
            let waiting = self.held.remove(block).unwrap_or_default();
            self.uncache(block, now);
            self.held_read_verdict(block, None, now);
            self.replay_waiting(waiting, now);
        }
    }
}
