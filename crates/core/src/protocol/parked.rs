//! A Direct host's note of which client parked each block with it.
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

/// Who parked each hosted block, oldest note dropped beyond the bound.
#[derive(Debug)]
pub(super) struct Parked<K> {
    /// Each block's parker, with the number of its note.
    by: HashMap<K, (NodeId, u64), foldhash::fast::FixedState>,
    /// Notes, oldest first; one whose number no longer matches its
    /// block's is stale (forgotten or parked again), skipped when reached.
    order: VecDeque<(K, u64)>,
    next: u64,
}

impl<K> Default for Parked<K> {
    fn default() -> Self {
        Parked {
            by: HashMap::default(),
            order: VecDeque::new(),
            next: 0,
        }
    }
}

impl<K: ProtocolKey> Parked<K> {
    /// Notes that `client` parked `block`, keeping at most `max` notes.
    pub(super) fn park(&mut self, block: K, client: NodeId, max: usize) {
        self.next += 1;
        self.by.insert(block, (client, self.next));
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

    /// Whether `block` is noted as parked by someone other than `client`.
    pub(super) fn parked_by_another(&self, block: K, client: NodeId) -> bool {
        self.by.get(&block).is_some_and(|&(c, _)| c != client)
    }

    /// Forgets `block` (handed back, or invalidated).
    pub(super) fn forget(&mut self, block: K) {
        self.by.remove(&block);
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
        assert!(p.parked_by_another(9, 2));
        assert!(!p.parked_by_another(9, 1));
        assert!(!p.parked_by_another(0, 2), "forgotten beyond the bound");
        p.park(9, 2, 4);
        assert!(p.parked_by_another(9, 1), "the last parker counts");
        p.forget(9);
        assert!(!p.parked_by_another(9, 1));
        assert!(p.order_len() <= 8);
    }
}
