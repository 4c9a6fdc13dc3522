//! The simulated network and origin's clock: everything in flight, ordered
//! by delivery time and then by the order it was scheduled, so a seed
//! always delivers the same events in the same order.

use super::byzantine::Msg;
use coopcache_core::coop::NodeId;
use coopcache_core::protocol::BlockId;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

/// Something that happens at a virtual time.
#[derive(Clone, Debug)]
pub(super) enum Event {
    /// A message arrives at `to`, if `to` is still the incarnation it was
    /// sent to (a restarted node's links are new).
    Deliver {
        from: NodeId,
        to: NodeId,
        incarnation: u32,
        msg: Msg,
    },
    /// An origin read `node` started finishes.
    Origin {
        node: NodeId,
        incarnation: u32,
        block: BlockId,
    },
    /// An origin stat `node`'s commit machine asked for finishes.
    Stat {
        node: NodeId,
        incarnation: u32,
        path: u32,
    },
    /// An origin listing `node`'s listing machine asked for finishes.
    Listed {
        node: NodeId,
        incarnation: u32,
        dir: std::sync::Arc<str>,
    },
    /// A crashed node starts again, empty.
    Restart { node: NodeId },
    /// Partition `id` heals.
    Heal { id: u64 },
    /// `observer` stops suspecting `suspect`.
    Trust { observer: NodeId, suspect: NodeId },
    /// A slow node is fast again.
    Fast { node: NodeId },
    /// The origin is fast again.
    OriginFast,
    /// The link task of `from` (incarnation `incarnation`) to `to`
    /// connects, or is refused and tries again after `backoff`, as the
    /// daemon's does, until `from`'s membership drops the address.
    Dialled {
        from: NodeId,
        incarnation: u32,
        to: NodeId,
        backoff: u64,
    },
    /// `from`'s link to `to` is reset (`to` crashed).
    Reset { from: NodeId, to: NodeId },
    /// A membership frame arrives at `to`, if `to` is still the
    /// incarnation it was sent to.
    Member {
        from: NodeId,
        to: NodeId,
        incarnation: u32,
        frame: MemberFrame,
    },
}

/// What members tell each other on their links (the daemon's `Gossip`
/// and `Members` frames).
#[derive(Clone, Debug)]
pub(super) enum MemberFrame {
    /// A SWIM datagram.
    Gossip(Vec<u8>),
    /// The members a node knows, sent to a member just linked.
    Members(Vec<(NodeId, String)>),
}

struct Scheduled {
    at: u64,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Scheduled {}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scheduled {
    /// Reversed: the heap pops the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Events by time; links deliver in order unless a message is reordered.
#[derive(Default)]
pub(super) struct Queue {
    heap: BinaryHeap<Scheduled>,
    seq: u64,
    /// The last delivery time scheduled on each link, so a link stays in
    /// order (as TCP is) unless a message is reordered on purpose.
    last: BTreeMap<(NodeId, NodeId), u64>,
}

/// Most events in flight in a cluster of `nodes`; beyond, the run is a
/// runaway (a bug). At least 2^20; with more than 512 nodes, four per pair
/// of nodes (a cluster's start alone puts a message about each member
/// on each link: 999,000 at 1,000 nodes).
pub(super) fn max_in_flight(nodes: u32) -> usize {
    let pairs = nodes as usize * nodes as usize;
    (1 << 20).max(4 * pairs)
}

impl Queue {
    /// Schedules `event` at `at`.
    pub(super) fn at(&mut self, at: u64, event: Event) {
        self.seq += 1;
        self.heap.push(Scheduled {
            at,
            seq: self.seq,
            event,
        });
    }

    /// Schedules a message on `link` (from, to) due at `at`: behind the
    /// link's earlier messages, unless `reorder`.
    pub(super) fn send(&mut self, link: (NodeId, NodeId), at: u64, reorder: bool, event: Event) {
        let mut at = at;
        if !reorder {
            let last = self.last.entry(link).or_default();
            at = at.max(*last);
            *last = at;
        }
        self.at(at, event);
    }

    /// When the next event is due.
    pub(super) fn next_at(&self) -> Option<u64> {
        self.heap.peek().map(|s| s.at)
    }

    /// The next event, with its time.
    pub(super) fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|s| (s.at, s.event))
    }

    /// Events in flight.
    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }
}
