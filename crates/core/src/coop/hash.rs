//! Hash-Distributed Caching: the globally managed part of every node's
//! memory holds the blocks whose ids hash to that node (paper section 2.5).

use super::local::{LocalCache, complete};
use super::{Addr, BlockStore, Level, LiveNode, Msg, NodeId, NodeMachine, Outbox, StoreUsage};
use crate::policy::{BlockKey, Lookup, Lru, Policy};
use std::hash::BuildHasher;

/// The node whose partition holds `block`: a fixed hash of the id, so every
/// node and the manager agree without asking anyone.
pub fn hash_owner<K: BlockKey>(block: &K, nodes: u32) -> NodeId {
    // A fixed seed: the mapping must be the same in every process.
    const SEED: u64 = 0x636f_6f70_6361_6368;
    fixed_pick(SEED, block, u64::from(nodes.max(1))) as NodeId
}

/// One of `0..n` for `block`, the same in every process for one `seed`
/// (a fixed hash scaled to the range, without a modulo's bias).
pub(crate) fn fixed_pick<K: BlockKey>(seed: u64, block: &K, n: u64) -> u64 {
    let hash = foldhash::fast::FixedState::with_seed(seed).hash_one(block);
    ((u128::from(hash) * u128::from(n)) >> 64) as u64
}

/// Who holds which partition: every node of `0..nodes` (the simulator), or
/// the live members a driver tracks, so a failed node's share moves to the
/// others (with every member, the same owner as the simulator's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owners {
    /// Nodes `0..n`.
    All(u32),
    /// These members, sorted, without duplicates.
    Live(Vec<NodeId>),
}

impl Owners {
    /// The live members `peers` (any order, duplicates allowed).
    pub fn live(peers: &[NodeId]) -> Owners {
        let mut live = peers.to_vec();
        live.sort_unstable();
        live.dedup();
        Owners::Live(live)
    }

    /// The node whose partition holds `block`.
    pub fn of<K: BlockKey>(&self, block: &K) -> NodeId {
        match self {
            Owners::All(n) => hash_owner(block, *n),
            Owners::Live(live) if live.is_empty() => 0,
            Owners::Live(live) => live[hash_owner(block, live.len() as u32) as usize],
        }
    }
}

/// A node with a locally managed part and one partition of the
/// hash-distributed cache.
///
/// A local miss goes straight to the block's owner (not the manager): the
/// owner serves it from its partition in two hops, or passes the read on to
/// the manager, which serves from its memory or the origin. Blocks evicted
/// from the manager's memory go to their owner's partition, an LRU that
/// drops its oldest block to make room.
#[derive(Clone, Debug)]
pub struct HashNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    owners: Owners,
    local: LocalCache<K, P, S>,
    partition: LocalCache<K, Lru<K>, S>,
    /// Whether this node places the blocks it reads from the origin in
    /// their partitions itself (a manager without memory).
    places_fetches: bool,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> HashNode<K, P, S> {
    /// Node `id` of `nodes`, with a local part run by `policy` and a
    /// partition LRU `partition`.
    pub fn new(
        id: NodeId,
        nodes: u32,
        policy: P,
        local_store: S,
        partition: Lru<K>,
        partition_store: S,
    ) -> Self {
        HashNode {
            id,
            owners: Owners::All(nodes),
            local: LocalCache::new(policy, local_store),
            partition: LocalCache::new(partition, partition_store),
            places_fetches: false,
        }
    }

    /// With a manager that keeps no blocks in memory (a live cluster, where
    /// each node manages a slice of the files and is only a directory for
    /// them), the partitions would never fill: they take the manager's
    /// evictions. Such a manager evicts every block it fetches at once, so
    /// the reader of a block from the origin places it in its partition
    /// itself, the same `Place` the manager would have sent.
    pub fn placing_fetches(self) -> Self {
        HashNode {
            places_fetches: true,
            ..self
        }
    }

    /// Partitions over the live members `peers` (this node among them)
    /// instead of `0..nodes`.
    pub fn set_peers(&mut self, peers: &[NodeId]) {
        self.owners = Owners::live(peers);
    }

    /// As the owner of `block`: serve `reader` from the partition, or pass
    /// the read on to the manager.
    fn serve_as_owner(&mut self, block: K, reader: NodeId, hops: u8, out: &mut Outbox<K, S::Data>) {
        let hops = hops.saturating_add(1);
        let data = match self.partition.lookup(block) {
            Lookup::Hit => self.partition.get(block),
            Lookup::Miss(_) => None,
        };
        match data {
            Some(data) => out.send(
                Addr::Node(self.id),
                Addr::Node(reader),
                Msg::Data {
                    block,
                    data,
                    level: Level::RemoteNode,
                    hops,
                },
            ),
            None => out.send(
                Addr::Node(self.id),
                Addr::Manager,
                Msg::Read {
                    block,
                    reader,
                    hops,
                },
            ),
        }
    }
}

impl<K, P, S> NodeMachine<K, S::Data> for HashNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K>,
    S: BlockStore<K>,
{
    fn read(&mut self, block: K, _now: u64, out: &mut Outbox<K, S::Data>) {
        let miss = match self.local.lookup(block) {
            Lookup::Hit => return complete(self.id, block, Level::Local, 0, out),
            Lookup::Miss(miss) => miss,
        };
        let owner = self.owners.of(&block);
        // Its own partition is this node's memory: a hit there is local.
        if owner == self.id && matches!(self.partition.lookup(block), Lookup::Hit) {
            return complete(self.id, block, Level::Local, 0, out);
        }
        let me = self.id;
        self.local.admit_dropping(me, block, miss, out);
        let to = if owner == me {
            Addr::Manager
        } else {
            Addr::Node(owner)
        };
        out.send(
            Addr::Node(me),
            to,
            Msg::Read {
                block,
                reader: me,
                hops: 1,
            },
        );
    }

    fn write(&mut self, block: K, data: S::Data, _now: u64, out: &mut Outbox<K, S::Data>) {
        self.local.write_greedy(self.id, block, data, out);
    }

    fn handle(
        &mut self,
        _from: Addr,
        msg: Msg<K, S::Data>,
        _now: u64,
        out: &mut Outbox<K, S::Data>,
    ) {
        match msg {
            Msg::Data {
                block,
                data,
                level,
                hops,
            } => {
                // A partition owner served this read: the manager has not
                // seen it, so tell it this node now caches the block.
                if level == Level::RemoteNode && self.local.contains(block) {
                    out.send(Addr::Node(self.id), Addr::Manager, Msg::Cached { block });
                }
                if level == Level::Origin && self.places_fetches {
                    let owner = self.owners.of(&block);
                    let place = Msg::Place {
                        block,
                        data: data.clone(),
                        replaces: None,
                    };
                    out.send(Addr::Node(self.id), Addr::Node(owner), place);
                }
                self.local.fill(block, data);
                complete(self.id, block, level, hops, out);
            }
            Msg::Read {
                block,
                reader,
                hops,
            } => self.serve_as_owner(block, reader, hops, out),
            Msg::Place { block, data, .. } => {
                if let Lookup::Miss(miss) = self.partition.lookup(block) {
                    // The manager does not track partitions: drop silently.
                    self.partition.admit(block, miss, |_, _| {});
                }
                self.partition.fill(block, data);
            }
            Msg::Unplace { block } => {
                self.partition.remove(block);
            }
            Msg::Invalidate { block } => {
                // Both parts: a live driver also invalidates a copy whose
                // bytes failed verification, wherever it was kept (a write
                // in the simulator Unplaces the partition's copy anyway).
                self.local.remove(block);
                self.partition.remove(block);
            }
            _ => {}
        }
    }

    /// The locally managed part; partitions belong to the hash, not the
    /// directory.
    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.local.policy.iter_oldest_first().for_each(f);
    }

    fn len(&self) -> usize {
        self.local.policy.len() + self.partition.policy.len()
    }

    fn capacity(&self) -> usize {
        self.local.policy.capacity() + self.partition.policy.capacity()
    }
}

impl<K, P, S> LiveNode<K, S::Data> for HashNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K> + Send,
    S: BlockStore<K> + Send,
{
    fn set_peers(&mut self, live: &[NodeId]) {
        HashNode::set_peers(self, live);
    }

    /// The local part, else the partition (a read completes locally from
    /// the partition only when this node owns the block).
    fn data(&self, block: K) -> Option<S::Data> {
        self.local.get(block).or_else(|| self.partition.get(block))
    }

    fn usage(&self) -> StoreUsage {
        self.local.store.usage() + self.partition.store.usage()
    }
}
