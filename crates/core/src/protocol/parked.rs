//! A Direct host's note of which clients parked each block with it, in a
//! bounded table of notes (also a private owner's notes of its parked
//! blocks, private.rs).
//!
//! The machine keeps one hosted copy per block, whoever parked it. After
//! the ring changes, a host can be asked for a block by a client other
//! than the one that parked it, and would pass on bytes it never checked
//! and did not take from that client: an honest host then stands blamed
//! for a liar's bytes (found by the fault harness, seed 476). So a host
//! answers only a client that parked the block; to any other it does
//! not have it (the reader asks the block's manager, as after any miss).
//!
//! Several clients may park the same block (unified blocks, Netcache
//! section 2.5: identical contents under one content id): the host keeps
//! one copy and notes each of them, but only while each parked the very
//! bytes it keeps; a client that parks other bytes under the id replaces
//! them and becomes the only parker, so no client is ever handed bytes it
//! did not park.

use super::node::NodeProtocol;
use super::{Content, PeerMsg, ProtocolKey};
use crate::coop::{Msg, NodeId, SizeClassed};
use std::collections::{HashMap, VecDeque};

/// A note per block, the oldest dropped beyond the bound.
#[derive(Debug)]
pub(super) struct Notes<K, V> {
    /// Each block's note, with its number.
    by: HashMap<K, (V, u64), foldhash::fast::FixedState>,
    /// Notes, oldest first; one whose number no longer matches its
    /// block's is stale (forgotten or parked again), skipped when reached.
    order: VecDeque<(K, u64)>,
    next: u64,
}

/// Who parked each hosted block.
pub(super) type Parked<K> = Notes<K, Parkers>;

/// Most clients noted as parking one block; a further one takes the
/// place of the oldest (which then finds the block gone, and reads it
/// elsewhere).
pub(super) const MAX_PARKERS: usize = 8;

/// The clients that parked one block (the same bytes), oldest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Parkers {
    ids: [NodeId; MAX_PARKERS],
    len: u8,
}

impl Parkers {
    fn one(client: NodeId) -> Self {
        let mut p = Parkers::default();
        p.ids[0] = client;
        p.len = 1;
        p
    }

    fn ids(&self) -> &[NodeId] {
        &self.ids[..usize::from(self.len)]
    }

    fn contains(&self, client: NodeId) -> bool {
        self.ids().contains(&client)
    }

    fn add(&mut self, client: NodeId) {
        if self.contains(client) {
            return;
        }
        if usize::from(self.len) == MAX_PARKERS {
            self.ids.copy_within(1.., 0);
            self.len -= 1;
        }
        self.ids[usize::from(self.len)] = client;
        self.len += 1;
    }

    fn remove(&mut self, client: NodeId) {
        let n = usize::from(self.len);
        if let Some(i) = self.ids[..n].iter().position(|&c| c == client) {
            self.ids.copy_within(i + 1..n, i);
            self.len -= 1;
        }
    }
}

impl<K, V> Default for Notes<K, V> {
    fn default() -> Self {
        Notes {
            by: HashMap::default(),
            order: VecDeque::new(),
            next: 0,
        }
    }
}

impl<K: ProtocolKey, V: Copy> Notes<K, V> {
    /// Notes `note` for `block`, keeping at most `max` notes.
    pub(super) fn note(&mut self, block: K, note: V, max: usize) {
        self.next += 1;
        self.by.insert(block, (note, self.next));
        self.order.push_back((block, self.next));
        while self.by.len() > max {
            let Some((old, n)) = self.order.pop_front() else {
                break;
            };
            if self.by.get(&old).is_some_and(|&(_, m)| m == n) {
                self.by.remove(&old);
            }
        }
        if self.order.len() > 2 * max.max(self.by.len()) {
            let by = &self.by;
            self.order
                .retain(|(b, n)| by.get(b).is_some_and(|&(_, m)| m == *n));
        }
    }

    /// The note of `block`, if kept.
    pub(super) fn get(&self, block: K) -> Option<V> {
        self.by.get(&block).map(|&(v, _)| v)
    }

    /// Forgets `block` (handed back, or invalidated), with its note.
    pub(super) fn forget(&mut self, block: K) -> Option<V> {
        self.by.remove(&block).map(|(v, _)| v)
    }

    /// Notes kept.
    pub(super) fn len(&self) -> usize {
        self.by.len()
    }

    /// Entries in the order queue (stale ones included).
    pub(super) fn order_len(&self) -> usize {
        self.order.len()
    }
}

impl<K: ProtocolKey> Parked<K> {
    /// Notes that `client` parked `block`, keeping at most `max` notes:
    /// beside its earlier parkers if `same` (it parked the bytes already
    /// kept), else as its only parker.
    pub(super) fn park(&mut self, block: K, client: NodeId, same: bool, max: usize) {
        let parkers = match self.get(block) {
            Some(mut p) if same => {
                p.add(client);
                p
            }
            _ => Parkers::one(client),
        };
        self.note(block, parkers, max);
    }

    /// Whether `block` is noted as parked by `client`.
    pub(super) fn parked_by(&self, block: K, client: NodeId) -> bool {
        self.get(block).is_some_and(|p| p.contains(client))
    }

    /// Whether `block` is noted as parked by a client other than `client`.
    pub(super) fn shared_beyond(&self, block: K, client: NodeId) -> bool {
        self.get(block)
            .is_some_and(|p| p.ids().iter().any(|&c| c != client))
    }

    /// `client` took `block` back: it is forgotten, unless other clients
    /// parked it too (then only `client` leaves the note, which keeps its
    /// place in the order). Whether the block stays.
    pub(super) fn unpark(&mut self, block: K, client: NodeId) -> bool {
        let Some((p, _)) = self.by.get_mut(&block) else {
            return false;
        };
        p.remove(client);
        if p.len == 0 {
            self.by.remove(&block);
            return false;
        }
        true
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// A Direct host keeps `data`, which `from` parks here as `block`.
    pub(super) fn place_here(&mut self, from: NodeId, block: K, data: D, now: u64) {
        // The same bytes another client parked (a unified block) are kept
        // once, for both; other bytes replace them, for `from` alone.
        let kept = match self.parked.shared_beyond(block, from) {
            true => self.node.hosted(block),
            false => None,
        };
        let same = kept.is_some_and(|d| d.digest() == data.digest()); // rule: unify-same
        if same {
            self.stats.unified_hosted += 1;
        }
        let max = self.cfg.max_directory;
        self.parked.park(block, from, same, max);
        let msg = Msg::Place {
            block,
            data,
            replaces: None,
        };
        self.deliver_to_node(msg, now);
    }

    /// `from` asks for `block` back, which it parked here.
    pub(super) fn reclaim_here(&mut self, from: NodeId, block: K, now: u64) {
        // Only a block `from` parked goes back to it: any other (another
        // client's, this node's own) it is told it lacks.
        let refuse = !self.parked.parked_by(block, from); // rule: reclaim-own
        if refuse {
            return self.send(from, PeerMsg::Missing { block });
        }
        if self.parked.unpark(block, from) {
            // Others parked the same bytes (a unified block): it stays
            // for them, and `from` gets a copy.
            self.stats.unified_served += 1;
            return match self.node.hosted(block) {
                Some(data) => self.send(from, PeerMsg::Data { block, data }),
                None => self.send(from, PeerMsg::Missing { block }),
            };
        }
        let msg = Msg::Forward {
            block,
            reader: from,
            hops: 1,
        };
        self.deliver_to_node(msg, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_bounded_oldest_first_and_name_the_parker() {
        let mut p: Parked<u64> = Parked::default();
        for b in 0..10u64 {
            p.park(b, 1, false, 4);
        }
        assert_eq!(p.len(), 4);
        assert!(p.parked_by(9, 1));
        assert!(!p.parked_by(9, 2));
        assert!(!p.parked_by(0, 1), "forgotten beyond the bound");
        p.park(9, 2, false, 4);
        assert!(!p.parked_by(9, 1), "other bytes: the last parker counts");
        assert!(p.forget(9).is_some());
        assert!(!p.parked_by(9, 2));
        assert!(p.order_len() <= 8);
    }

    #[test]
    fn clients_parking_the_same_bytes_share_the_note_until_the_last_leaves() {
        let mut p: Parked<u64> = Parked::default();
        p.park(5, 1, false, 4);
        p.park(5, 2, true, 4);
        p.park(5, 2, true, 4);
        assert!(p.parked_by(5, 1) && p.parked_by(5, 2));
        assert!(p.shared_beyond(5, 1));
        assert!(p.unpark(5, 1), "2 still counts on it");
        assert!(!p.parked_by(5, 1) && !p.shared_beyond(5, 2));
        assert!(!p.unpark(5, 2), "the last parker took it");
        assert!(!p.parked_by(5, 2));
        // A bounded set: the oldest parker makes way.
        for c in 0..=MAX_PARKERS as NodeId {
            p.park(6, c, true, 4);
        }
        assert!(!p.parked_by(6, 0));
        assert!((1..=MAX_PARKERS as NodeId).all(|c| p.parked_by(6, c)));
    }
}
