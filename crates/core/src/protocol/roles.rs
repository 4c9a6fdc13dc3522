//! The trust boundary: every message is judged by the sender its link
//! authenticated and the role that sender holds for the message's block at
//! that moment (docs/ARCHITECTURE.md, docs/PROTOCOL.md "Roles"). One line
//! per rule, each marked, so `scripts/mutate-roles.sh` can remove any one
//! and show the test behind it fail.

use super::node::NodeProtocol;
use super::{Content, PeerMsg, ProtocolKey};
use crate::coop::{AlgorithmKind, MAX_CHANCES, NodeId, SizeClassed};

const CACHED: &str = "Cached is sent only by a live member, after a Hash-Distributed partition hit or on taking an N-Chance singlet";
const EVICT: &str = "Evict is accepted only by the block's manager, from a live member";
const LIVE: &str =
    "Read is accepted only from a live member (a manager records its readers as holders)";
const NOT_HERE: &str = "NotHere is accepted only from a holder this manager forwarded the block to";
const RECORD: &str = "Record is accepted only from the node this manager told to read the block from the origin, once";
const FROM_MANAGER: &str =
    "accepted only from the block's manager (rendezvous over the live members)";
const PARTITION_READ: &str =
    "PartitionRead is accepted only by the block's Hash-Distributed partition owner";
const RECLAIM: &str = "Reclaim is accepted only by a Direct node, from another live member";
const RECIRCULATE: &str = "Recirculate is sent only between N-Chance peers, with 1 to 8 chances";
const PLACE: &str = "Place is accepted only by the block's Hash-Distributed partition owner, or by a Direct node from another live member";
/// Data and Missing are judged against the read they answer (reader.rs).
pub(super) const NOT_ASKED: &str = "accepted only from the node asked for the block";

/// `why`, unless `allowed`.
fn check(allowed: bool, why: &'static str) -> Option<&'static str> {
    (!allowed).then_some(why)
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Why `msg` from `from` is refused, if it is: each message is
    /// accepted only from the role allowed to send it.
    pub(super) fn refusal(&self, from: NodeId, msg: &PeerMsg<K, D>) -> Option<&'static str> {
        use PeerMsg::*;
        match *msg {
            // To a manager, about the sender itself: any member may, and
            // only a live one is recorded as a holder.
            Read { .. } => check(self.is_live(from), LIVE), // rule: live-reader
            IsSinglet { .. } | Dropped { .. } | HashOf { .. } => None,
            // Judged against the read they answer.
            Data { .. } | Missing { .. } => None,
            Ping { .. } | Pong { .. } => None,
            Cached { .. } => check(self.caches_unasked() && self.is_live(from), CACHED), // rule: cached
            Evict { block } => check(self.is_live(from) && self.manages(self.me, block), EVICT), // rule: evict
            NotHere { block } => check(self.slice.forwarded_to(block, from), NOT_HERE), // rule: not-here
            Record { block, .. } => check(self.slice.granted(block, from), RECORD), // rule: record
            Forward { block, .. } => check(self.manages(from, block), FROM_MANAGER), // rule: forward
            Expect { block, .. } => check(self.manages(from, block), FROM_MANAGER),  // rule: expect
            FetchOrigin { block, .. } => check(self.manages(from, block), FROM_MANAGER), // rule: fetch-origin
            HashIs { block, .. } => check(self.manages(from, block), FROM_MANAGER), // rule: hash-is
            Singlet { block, .. } => check(self.manages(from, block), FROM_MANAGER), // rule: singlet
            Invalidate { block } => check(self.manages(from, block), FROM_MANAGER), // rule: invalidate
            PartitionRead { block } => check(self.owns_partition(block), PARTITION_READ), // rule: partition-read
            Reclaim { .. } => check(self.may_park(from), RECLAIM), // rule: reclaim
            Recirculate { chances, .. } => check(self.recirculates(from, chances), RECIRCULATE), // rule: recirculate
            Place { block, .. } => check(self.may_place(from, block), PLACE), // rule: place
        }
    }

    /// Whether `node` is a live member (this node's failure detector has
    /// not declared it down).
    fn is_live(&self, node: NodeId) -> bool {
        self.live.binary_search(&node).is_ok()
    }

    /// Whether `from` manages `block` among the live members.
    fn manages(&self, from: NodeId, block: K) -> bool {
        from == self.manager_of(block)
    }

    /// Whether nodes of this algorithm come to cache blocks without
    /// asking their manager (a partition hit, a forwarded singlet), and
    /// so say so with `Cached`.
    pub(super) fn caches_unasked(&self) -> bool {
        matches!(self.kind, AlgorithmKind::Hash | AlgorithmKind::NChance)
    }

    /// Whether this node owns `block`'s Hash-Distributed partition.
    fn owns_partition(&self, block: K) -> bool {
        self.kind == AlgorithmKind::Hash && self.owners.of(&block) == self.me
    }

    /// Whether `client` may park Direct blocks here (and ask for them
    /// back): any other live member, as Netcache lends an idle machine's
    /// memory to whichever busy one asks. Whether the block is kept is the
    /// node machine's memory rule; it goes back only to the member that
    /// parked it (parked.rs).
    fn may_park(&self, client: NodeId) -> bool {
        self.kind == AlgorithmKind::Direct && client != self.me && self.is_live(client)
    }

    /// Whether `from` may forward a singlet here with `chances` left.
    fn recirculates(&self, from: NodeId, chances: u8) -> bool {
        self.kind == AlgorithmKind::NChance
            && from != self.me
            && (1..=MAX_CHANCES).contains(&chances)
    }

    /// Whether `from` may place `block` here: at its partition owner
    /// (Hash-Distributed), or park it at a Direct node.
    fn may_place(&self, from: NodeId, block: K) -> bool {
        match self.kind {
            AlgorithmKind::Hash => self.owns_partition(block),
            AlgorithmKind::Direct => self.may_park(from),
            _ => false,
        }
    }
}
