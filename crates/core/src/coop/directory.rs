//! The manager's directory: which nodes cache each block.

use super::NodeId;
use crate::policy::BlockKey;
use std::collections::HashMap;

/// The nodes caching one block. Most blocks have one holder and few have
/// more than two, so up to two live inline and more spill to the heap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Holders {
    /// No node caches the block.
    #[default]
    None,
    /// One node does: the block is a singlet.
    One(NodeId),
    /// Two nodes do.
    Two(NodeId, NodeId),
    /// Three or more.
    Many(Box<Vec<NodeId>>),
}

impl Holders {
    /// Whether `node` is one of them.
    pub fn contains(&self, node: NodeId) -> bool {
        match self {
            Holders::None => false,
            Holders::One(a) => *a == node,
            Holders::Two(a, b) => *a == node || *b == node,
            Holders::Many(v) => v.contains(&node),
        }
    }

    /// How many nodes cache the block.
    pub fn len(&self) -> usize {
        match self {
            Holders::None => 0,
            Holders::One(_) => 1,
            Holders::Two(..) => 2,
            Holders::Many(v) => v.len(),
        }
    }

    /// Whether none does.
    pub fn is_empty(&self) -> bool {
        matches!(self, Holders::None)
    }

    /// The holder other than `not` that serves `block`, or `None` if no
    /// other node caches it.
    ///
    /// C2Cfs's parallel segment fetch (section 4.3): the holders split a
    /// file between them, so a reader with many blocks in flight takes them
    /// from every holder at once. The paper cuts the file into one
    /// contiguous segment per holder; here the split is a fixed hash of the
    /// block over the holders, because a sequential reader has only its
    /// read-ahead window in flight and a contiguous split would put the
    /// whole window on one holder at a time. The same block goes to the same
    /// holder while the holders are unchanged (its recency stays in one
    /// cache), and the manager needs neither the file's size nor the
    /// block's position.
    pub fn stripe_except<K: BlockKey>(&self, block: &K, not: NodeId) -> Option<NodeId> {
        // A fixed seed, unlike the hash partition's: the two choices are
        // independent.
        const SEED: u64 = 0x7374_7269_7065_7321;
        let others = self.len() - usize::from(self.contains(not));
        if others == 0 {
            return None;
        }
        let pick = super::hash::fixed_pick(SEED, block, others as u64) as usize;
        self.iter().filter(|&n| n != not).nth(pick)
    }

    /// The holders, in the order they were recorded.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        let (inline, spilled): (&[NodeId], &[NodeId]) = match self {
            Holders::None => (&[], &[]),
            Holders::One(a) => (std::slice::from_ref(a), &[]),
            Holders::Two(a, b) => (std::slice::from_ref(a), std::slice::from_ref(b)),
            Holders::Many(v) => (v, &[]),
        };
        inline.iter().chain(spilled).copied()
    }

    fn add(&mut self, node: NodeId) {
        match self {
            Holders::None => *self = Holders::One(node),
            Holders::One(a) if *a != node => *self = Holders::Two(*a, node),
            Holders::Two(a, b) if *a != node && *b != node => {
                *self = Holders::Many(Box::new(vec![*a, *b, node]))
            }
            Holders::Many(v) if !v.contains(&node) => v.push(node),
            _ => {}
        }
    }

    fn remove(&mut self, node: NodeId) {
        *self = match std::mem::take(self) {
            Holders::One(a) if a == node => Holders::None,
            Holders::Two(a, b) if a == node => Holders::One(b),
            Holders::Two(a, b) if b == node => Holders::One(a),
            Holders::Many(mut v) => {
                v.retain(|&n| n != node);
                match v.as_slice() {
                    [a, b] => Holders::Two(*a, *b),
                    _ => Holders::Many(v),
                }
            }
            other => other,
        };
    }
}

/// Block to the nodes caching it, kept exact by the nodes' piggybacked
/// updates. An entry costs the map's share of a `(key, Holders)` pair:
/// 8 + 16 bytes for `u64` keys plus hashbrown's control byte and slack,
/// about the 24 bytes per block the paper budgets (section 2.2).
#[derive(Clone, Debug, Default)]
pub struct Directory<K> {
    map: HashMap<K, Holders, foldhash::fast::FixedState>,
}

impl<K: BlockKey> Directory<K> {
    /// An empty directory with room for `capacity` blocks.
    pub fn with_capacity(capacity: usize) -> Self {
        Directory {
            map: HashMap::with_capacity_and_hasher(capacity, Default::default()),
        }
    }

    /// The nodes caching `block`.
    pub fn holders(&self, block: K) -> &Holders {
        const NONE: &Holders = &Holders::None;
        self.map.get(&block).unwrap_or(NONE)
    }

    /// Records that `node` caches `block`.
    pub fn add(&mut self, block: K, node: NodeId) {
        self.map.entry(block).or_default().add(node);
    }

    /// Records that `block` moved from node `from` to node `to`.
    pub fn transfer(&mut self, block: K, from: NodeId, to: NodeId) {
        let holders = self.map.entry(block).or_default();
        holders.remove(from);
        holders.add(to);
    }

    /// Records that `node` no longer caches `block`.
    pub fn remove(&mut self, block: K, node: NodeId) {
        if let Some(h) = self.map.get_mut(&block) {
            h.remove(node);
            if h.is_empty() {
                self.map.remove(&block);
            }
        }
    }

    /// Forgets every holder of `block` and returns them.
    pub fn take(&mut self, block: K) -> Holders {
        self.map.remove(&block).unwrap_or_default()
    }

    /// Forgets `node` as a holder of every block, returning how many
    /// copies it held. Walks the whole directory: for failures, not reads.
    pub fn remove_node(&mut self, node: NodeId) -> usize {
        let mut removed = 0;
        self.map.retain(|_, h| {
            if h.contains(node) {
                h.remove(node);
                removed += 1;
            }
            !h.is_empty()
        });
        removed
    }

    /// Blocks tracked.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no block is tracked.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every (block, holder) pair, in no particular order.
    pub fn pairs(&self) -> impl Iterator<Item = (K, NodeId)> + '_ {
        self.map
            .iter()
            .flat_map(|(&b, h)| h.iter().map(move |n| (b, n)))
    }

    /// Heap bytes per tracked block: the table's buckets, control bytes and
    /// spilled holder lists, divided by the blocks tracked.
    pub fn bytes_per_block(&self) -> f64 {
        let bucket = std::mem::size_of::<(K, Holders)>() + 1;
        let spilled: usize = self
            .map
            .values()
            .map(|h| match h {
                Holders::Many(v) => v.capacity() * std::mem::size_of::<NodeId>() + 24,
                _ => 0,
            })
            .sum();
        let buckets = (self.map.capacity() * 8 / 7).next_power_of_two();
        (buckets * bucket + spilled) as f64 / self.map.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_grow_and_shrink_through_every_form() {
        let mut d = Directory::with_capacity(4);
        for n in [3, 5, 7, 9] {
            d.add(1u64, n);
        }
        d.add(1, 5);
        assert_eq!(d.holders(1).len(), 4);
        assert_eq!(d.holders(1).iter().collect::<Vec<_>>(), [3, 5, 7, 9]);
        d.remove(1, 3);
        d.remove(1, 9);
        assert_eq!(*d.holders(1), Holders::Two(5, 7));
        assert_eq!(d.holders(1).stripe_except(&1u64, 5), Some(7));
        assert_eq!(Holders::One(5).stripe_except(&1u64, 5), None);
        d.remove(1, 5);
        assert_eq!(*d.holders(1), Holders::One(7));
        d.remove(1, 7);
        assert!(d.is_empty());
        assert_eq!(d.take(1), Holders::None);
    }

    #[test]
    fn holders_share_a_files_blocks_and_never_name_the_reader() {
        let holders = Holders::Many(Box::new(vec![3, 5, 7, 9]));
        let mut served = HashMap::new();
        for block in 0..4000u64 {
            let h = holders.stripe_except(&block, 7).unwrap();
            assert_ne!(h, 7, "the reader is never its own holder");
            assert_eq!(holders.stripe_except(&block, 7), Some(h), "stable");
            *served.entry(h).or_insert(0u32) += 1;
        }
        // Three holders, 4,000 blocks: each takes about a third.
        for h in [3, 5, 9] {
            let n = served[&h];
            assert!((1100..1570).contains(&n), "holder {h} served {n}");
        }
    }
}
