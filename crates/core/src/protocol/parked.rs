//! A Direct host's note of which client parked each block with it, in a
//! bounded table of notes (also a private owner's digests of its parked
//! blocks, private.rs).
//!
//! The machine keeps one hosted copy per block, whoever parked it. After
//! the ring changes, a host can be asked for a block by a client other
//! than the one that parked it, and would pass on bytes it never checked
//! and did not take from that client: an honest host then stands blamed
//! for a liar's bytes (found by the fault harness, seed 476). So a host
//! answers only the client that parked the block; to any other it does
//! not have it (the reader asks the block's manager, as after any miss).

use super::ProtocolKey;
use crate::coop::NodeId;
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
pub(super) type Parked<K> = Notes<K, NodeId>;

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
    /// Notes that `client` parked `block`, keeping at most `max` notes.
    pub(super) fn park(&mut self, block: K, client: NodeId, max: usize) {
        self.note(block, client, max);
    }

    /// Whether `block` is noted as parked by `client`.
    pub(super) fn parked_by(&self, block: K, client: NodeId) -> bool {
        self.get(block) == Some(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_bounded_oldest_first_and_name_the_parker() {
        let mut p: Parked<u64> = Parked::default();
        for b in 0..10u64 {
            p.park(b, 1, 4);
        }
        assert_eq!(p.len(), 4);
        assert!(p.parked_by(9, 1));
        assert!(!p.parked_by(9, 2));
        assert!(!p.parked_by(0, 1), "forgotten beyond the bound");
        p.park(9, 2, 4);
        assert!(!p.parked_by(9, 1), "the last parker counts");
        assert_eq!(p.forget(9), Some(2));
        assert!(!p.parked_by(9, 2));
        assert!(p.order_len() <= 8);
    }
}
