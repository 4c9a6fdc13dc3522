//! The messages nodes, the manager and the origin exchange, and the outbox
//! state machines write them to.

use super::{Addr, Level, NodeId};
use std::collections::VecDeque;

/// One protocol message. `D` is the block payload: `()` in the simulator,
/// the block's bytes in the daemon.
///
/// `hops` counts the network messages on a read's path so far, so the reader
/// learns how far its data travelled (2 for the manager's memory, 3 for a
/// block forwarded from another node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg<K, D> {
    /// Node to manager (or to a Hash-Distributed partition owner): `reader`
    /// missed `block`.
    Read {
        /// The block.
        block: K,
        /// Who wants it.
        reader: NodeId,
        /// Hops so far, this one included.
        hops: u8,
    },
    /// Manager to a node caching `block`: send it to `reader`.
    Forward {
        /// The block.
        block: K,
        /// Who wants it.
        reader: NodeId,
        /// Hops so far, this one included.
        hops: u8,
    },
    /// The block's data, to the reader.
    Data {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
        /// Which level of the hierarchy served it.
        level: Level,
        /// Hops of the whole path, this one included.
        hops: u8,
    },
    /// A node that was asked for a block it no longer holds (a forward raced
    /// an eviction) hands the read back to the manager.
    NotHere {
        /// The block.
        block: K,
        /// Who wants it.
        reader: NodeId,
        /// Hops so far, this one included.
        hops: u8,
    },
    /// Node to manager: the node no longer caches `block`. Piggybacked on
    /// the node's next request, so it costs the manager no message.
    Dropped {
        /// The block.
        block: K,
    },
    /// Node to manager: the node now caches `block`, obtained without the
    /// manager (from a Hash-Distributed partition owner). Piggybacked like
    /// [`Msg::Dropped`].
    Cached {
        /// The block.
        block: K,
    },
    /// Node to manager: the node handed `block` to node `to` (N-Chance).
    /// Piggybacked like [`Msg::Dropped`].
    Moved {
        /// The block.
        block: K,
        /// Its new holder.
        to: NodeId,
    },
    /// Node to manager: is `block` the last cached copy? (N-Chance)
    IsSinglet {
        /// The block.
        block: K,
    },
    /// Manager to node: the answer to [`Msg::IsSinglet`].
    Singlet {
        /// The block.
        block: K,
        /// Whether the asking node holds the only copy.
        singlet: bool,
    },
    /// Node to a random peer: keep this singlet for the cluster, with
    /// `chances` recirculations left (N-Chance).
    Recirculate {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
        /// Recirculations left, at least 1.
        chances: u8,
    },
    /// Manager to node: keep `block` in your globally managed part, in
    /// place of `replaces` (Centrally Coordinated, Hash-Distributed).
    Place {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
        /// The globally managed block it replaces, if any.
        replaces: Option<K>,
    },
    /// Manager to node: drop `block` from your globally managed part, it
    /// was written (Centrally Coordinated, Hash-Distributed).
    Unplace {
        /// The block.
        block: K,
    },
    /// Node to manager: `block` was written; the manager writes it through
    /// to the origin and invalidates every other copy.
    Write {
        /// The block.
        block: K,
        /// Its new contents.
        data: D,
    },
    /// Manager to node: drop your copy of `block`, it was written elsewhere.
    Invalidate {
        /// The block.
        block: K,
    },
    /// Node to manager: the weight of the node's least valuable block
    /// (Weighted LRU). Piggybacked on the node's next request.
    Weight {
        /// Penalty over age, scaled to an integer.
        lowest: u64,
    },
    /// Node to manager: where should this singlet of `weight` go rather
    /// than be dropped? (Weighted LRU)
    WhereTo {
        /// The block.
        block: K,
        /// Its weight.
        weight: u64,
    },
    /// Manager to node: the answer to [`Msg::WhereTo`]: the node holding
    /// the cluster's least valuable block, if it is worth less.
    GoTo {
        /// The block.
        block: K,
        /// Where to send it, or nowhere (drop it).
        to: Option<NodeId>,
    },
    /// Manager to origin: read `block` for `reader`; or a node to the
    /// origin: read `block` from the node's own replica (size-class
    /// policies), the reply coming back to the node.
    Fetch {
        /// The block.
        block: K,
        /// Who wants it.
        reader: NodeId,
        /// Hops so far.
        hops: u8,
    },
    /// Origin to whoever sent the [`Msg::Fetch`]: the block it asked for.
    Fetched {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
        /// Who wants it.
        reader: NodeId,
        /// Hops so far.
        hops: u8,
    },
    /// Manager to origin: store `block` (write-through).
    Store {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
    },
    /// Node to manager: the node lets go of `block`; keep it in the
    /// manager's memory (a discard cache, size-class policies). Also says
    /// the node no longer caches it.
    Discard {
        /// The block.
        block: K,
        /// Its contents.
        data: D,
    },
}

impl<K: Copy, D> Msg<K, D> {
    /// The block the message is about; `None` for [`Msg::Weight`], which
    /// is about a node.
    pub fn block(&self) -> Option<K> {
        match *self {
            Msg::Read { block, .. }
            | Msg::Forward { block, .. }
            | Msg::Data { block, .. }
            | Msg::NotHere { block, .. }
            | Msg::Dropped { block }
            | Msg::Cached { block }
            | Msg::Moved { block, .. }
            | Msg::IsSinglet { block }
            | Msg::Singlet { block, .. }
            | Msg::Recirculate { block, .. }
            | Msg::Place { block, .. }
            | Msg::Unplace { block }
            | Msg::Write { block, .. }
            | Msg::Invalidate { block }
            | Msg::WhereTo { block, .. }
            | Msg::GoTo { block, .. }
            | Msg::Fetch { block, .. }
            | Msg::Fetched { block, .. }
            | Msg::Store { block, .. }
            | Msg::Discard { block, .. } => Some(block),
            Msg::Weight { .. } => None,
        }
    }
}

/// What a message costs the manager, in the paper's server-load units (one
/// per message, two more per block of data, two per block read from the
/// origin; a piggybacked directory update costs nothing). Only messages to
/// or from the manager count; the caller checks that.
pub fn load_units<K, D>(msg: &Msg<K, D>) -> u64 {
    match msg {
        // Directory updates ride on the node's next request.
        Msg::Dropped { .. } | Msg::Cached { .. } | Msg::Moved { .. } | Msg::Weight { .. } => 0,
        // Write-through traffic is outside the measured read load, as in
        // the paper (section 4.1).
        Msg::Write { .. } | Msg::Store { .. } | Msg::Fetch { .. } => 0,
        // A block read from the origin: the disk transfer.
        Msg::Fetched { .. } => 2,
        Msg::Data { .. } | Msg::Recirculate { .. } | Msg::Place { .. } | Msg::Discard { .. } => 3,
        _ => 1,
    }
}

/// A message in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope<K, D> {
    /// The sender.
    pub from: Addr,
    /// The receiver.
    pub to: Addr,
    /// The message.
    pub msg: Msg<K, D>,
}

/// A read that finished at its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadDone<K> {
    /// The reading node.
    pub node: NodeId,
    /// The block read.
    pub block: K,
    /// The level that served it.
    pub level: Level,
    /// Network messages on its path (0 for a local hit).
    pub hops: u8,
}

/// Where state machines put what they send and what they complete. The
/// driver delivers the messages (in order) and reports the completions.
#[derive(Debug)]
pub struct Outbox<K, D> {
    messages: VecDeque<Envelope<K, D>>,
    done: Vec<ReadDone<K>>,
}

impl<K, D> Default for Outbox<K, D> {
    fn default() -> Self {
        Outbox {
            messages: VecDeque::new(),
            done: Vec::new(),
        }
    }
}

impl<K, D> Outbox<K, D> {
    /// Queues `msg` from `from` to `to`.
    #[inline]
    pub fn send(&mut self, from: Addr, to: Addr, msg: Msg<K, D>) {
        self.messages.push_back(Envelope { from, to, msg });
    }

    /// Reports a finished read.
    #[inline]
    pub fn complete(&mut self, done: ReadDone<K>) {
        self.done.push(done);
    }

    /// The oldest message not yet delivered.
    #[inline]
    pub fn next_message(&mut self) -> Option<Envelope<K, D>> {
        self.messages.pop_front()
    }

    /// Messages waiting.
    pub fn pending(&self) -> usize {
        self.messages.len()
    }

    /// Takes the finished reads reported so far.
    pub fn drain_done(&mut self) -> std::vec::Drain<'_, ReadDone<K>> {
        self.done.drain(..)
    }
}
