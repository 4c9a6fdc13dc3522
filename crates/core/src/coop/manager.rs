//! The manager of the directory-based algorithms: Base, Direct, Greedy,
//! N-Chance, Weighted LRU and Hash-Distributed.

use super::local::LocalCache;
use super::{
    Addr, BlockStore, ClassPolicies, Directory, Holders, Level, ManagerMachine, Msg, NodeId,
    Outbox, Owners, SizeClassed,
};
use crate::policy::{BlockKey, Lookup, Policy};

/// What a [`DirectoryManager`] does beyond serving from its memory and the
/// origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManagerMode {
    /// Forward a read the manager's memory misses to a node caching the
    /// block (Greedy, N-Chance, Weighted LRU); Base and Direct do not.
    pub forward: bool,
    /// Send blocks evicted from the manager's memory to the node the
    /// block's id hashes to, and treat those nodes' partitions as caches of
    /// the manager's (Hash-Distributed).
    pub hash_partitions: bool,
    /// Tell a node whenever a block it caches becomes, or stops being, the
    /// only cached copy (Weighted LRU).
    pub singlet_notices: bool,
}

/// The manager (the paper's server): its own cache, and a directory of the
/// blocks each node caches, kept exact by the nodes' piggybacked updates.
///
/// A read that misses the manager's memory is forwarded to a node caching
/// the block if [`ManagerMode::forward`] is set, and otherwise (or if no
/// node caches it) fetched from the origin and kept in the manager's
/// memory. A write invalidates every other copy (write-invalidate) and is
/// written through to the origin.
///
/// Size-class policies ([`DirectoryManager::with_classes`]) decide per
/// block's class whether a read may be forwarded to a peer
/// (`cooperative`), whether a block read from the origin is kept
/// (`exclusive` keeps none), and the manager takes the blocks nodes
/// discard ([`Msg::Discard`]) into its memory.
#[derive(Clone, Debug)]
pub struct DirectoryManager<K, C, S> {
    cache: LocalCache<K, C, S>,
    directory: Directory<K>,
    mode: ManagerMode,
    /// Who holds which Hash-Distributed partition.
    owners: Owners,
    /// Each node's lowest block weight, as it last reported (Weighted LRU).
    lowest_weight: Vec<u64>,
    classes: ClassPolicies,
    /// Whether the manager keeps blocks in its own memory; a live node
    /// managing a slice of the files is only a directory.
    memory: bool,
}

impl<K: BlockKey + SizeClassed, C: Policy<K>, S: BlockStore<K>> DirectoryManager<K, C, S> {
    /// A manager for `nodes` nodes caching in `cache` with data in `store`.
    pub fn new(nodes: u32, cache: C, store: S, mode: ManagerMode) -> Self {
        DirectoryManager {
            directory: Directory::with_capacity(0),
            cache: LocalCache::new(cache, store),
            mode,
            owners: Owners::All(nodes),
            lowest_weight: vec![u64::MAX; nodes as usize],
            classes: ClassPolicies::uniform(),
            memory: true,
        }
    }

    /// The same manager keeping no block in its own memory (a manager
    /// capacity of 0): reads it cannot forward go to the origin, and
    /// discarded blocks are dropped.
    pub fn without_memory(self) -> Self {
        DirectoryManager {
            memory: false,
            ..self
        }
    }

    /// Places Hash-Distributed partitions over the live members `peers`
    /// instead of `0..nodes` (as the nodes' `HashNode::set_peers`).
    pub fn set_peers(&mut self, peers: &[NodeId]) {
        self.owners = Owners::live(peers);
    }

    /// Forgets `node` as a holder of every block (it failed or left), and
    /// returns how many copies were forgotten. Reads are then forwarded
    /// only to live holders.
    pub fn forget_node(&mut self, node: NodeId) -> usize {
        self.directory.remove_node(node)
    }

    /// The same manager applying `classes`' policies.
    pub fn with_classes(self, classes: ClassPolicies) -> Self {
        DirectoryManager { classes, ..self }
    }

    /// Forgets every holder of `block` (`coopcache evict`), and returns
    /// them: the caller invalidates each.
    pub fn evict(&mut self, block: K) -> super::Holders {
        self.directory.take(block)
    }

    /// The directory of node caches.
    pub fn directory(&self) -> &Directory<K> {
        &self.directory
    }

    /// Records that `node` caches `block`, telling holders whose singlet
    /// status changes if [`ManagerMode::singlet_notices`] is set.
    fn add_holder(&mut self, block: K, node: NodeId, out: &mut Outbox<K, S::Data>) {
        if self.mode.singlet_notices {
            match *self.directory.holders(block) {
                Holders::None => notice(block, node, true, out),
                Holders::One(only) if only != node => notice(block, only, false, out),
                _ => {}
            }
        }
        self.directory.add(block, node);
    }

    /// Records that `node` no longer caches `block`, with notices as in
    /// [`DirectoryManager::add_holder`].
    fn remove_holder(&mut self, block: K, node: NodeId, out: &mut Outbox<K, S::Data>) {
        self.directory.remove(block, node);
        if self.mode.singlet_notices
            && let Holders::One(last) = *self.directory.holders(block)
        {
            notice(block, last, true, out);
        }
    }

    /// Serves `reader`'s miss: from memory, from another node, or from the
    /// origin.
    fn serve(&mut self, block: K, reader: NodeId, hops: u8, out: &mut Outbox<K, S::Data>) {
        if self.memory
            && matches!(self.cache.lookup(block), Lookup::Hit)
            && let Some(data) = self.cache.get(block)
        {
            let msg = Msg::Data {
                block,
                data,
                level: Level::ManagerMemory,
                hops: hops.saturating_add(1),
            };
            out.send(Addr::Manager, Addr::Node(reader), msg);
            return;
        }
        let holder = if self.mode.forward && self.classes.policy(&block).cooperative {
            self.directory.holders(block).stripe_except(&block, reader)
        } else {
            None
        };
        match holder {
            Some(holder) => {
                let hops = hops.saturating_add(1);
                out.send(
                    Addr::Manager,
                    Addr::Node(holder),
                    Msg::Forward {
                        block,
                        reader,
                        hops,
                    },
                );
            }
            None => out.send(
                Addr::Manager,
                Addr::Origin,
                Msg::Fetch {
                    block,
                    reader,
                    hops,
                },
            ),
        }
    }

    /// Keeps `data` as `block` in the manager's memory, evicting as needed.
    fn keep(&mut self, block: K, data: S::Data, out: &mut Outbox<K, S::Data>) {
        if !self.memory {
            return;
        }
        if let Lookup::Miss(miss) = self.cache.lookup(block) {
            let (hash_partitions, owners) = (self.mode.hash_partitions, &self.owners);
            self.cache.admit(block, miss, |victim, data| {
                if let (true, Some(data)) = (hash_partitions, data) {
                    let owner = owners.of(&victim);
                    let msg = Msg::Place {
                        block: victim,
                        data,
                        replaces: None,
                    };
                    out.send(Addr::Manager, Addr::Node(owner), msg);
                }
            });
        }
        self.cache.fill(block, data);
    }

    fn write(&mut self, writer: NodeId, block: K, data: S::Data, out: &mut Outbox<K, S::Data>) {
        for holder in self.directory.take(block).iter().filter(|&h| h != writer) {
            out.send(Addr::Manager, Addr::Node(holder), Msg::Invalidate { block });
        }
        if self.mode.hash_partitions {
            let owner = self.owners.of(&block);
            out.send(Addr::Manager, Addr::Node(owner), Msg::Unplace { block });
        }
        self.add_holder(block, writer, out);
        self.keep(block, data.clone(), out);
        out.send(Addr::Manager, Addr::Origin, Msg::Store { block, data });
    }

    /// Weighted LRU: the node holding the cluster's least valuable block, if
    /// it is worth less than `weight`.
    fn cheapest_holder(&self, except: NodeId, weight: u64) -> Option<NodeId> {
        let (node, &lowest) = self
            .lowest_weight
            .iter()
            .enumerate()
            .filter(|&(n, _)| n as NodeId != except)
            .min_by_key(|&(_, w)| *w)?;
        (lowest < weight).then_some(node as NodeId)
    }
}

/// Tells `node` whether it holds the only cached copy of `block`.
fn notice<K, D>(block: K, node: NodeId, singlet: bool, out: &mut Outbox<K, D>) {
    out.send(
        Addr::Manager,
        Addr::Node(node),
        Msg::Singlet { block, singlet },
    );
}

impl<K, C, S> ManagerMachine<K, S::Data> for DirectoryManager<K, C, S>
where
    K: BlockKey + SizeClassed,
    C: Policy<K>,
    S: BlockStore<K>,
{
    fn handle(
        &mut self,
        from: Addr,
        msg: Msg<K, S::Data>,
        _now: u64,
        out: &mut Outbox<K, S::Data>,
    ) {
        let Addr::Node(node) = from else {
            if let Msg::Fetched {
                block,
                data,
                reader,
                hops,
            } = msg
            {
                if !self.classes.policy(&block).exclusive {
                    self.keep(block, data.clone(), out);
                }
                let msg = Msg::Data {
                    block,
                    data,
                    level: Level::Origin,
                    hops: hops.saturating_add(1),
                };
                out.send(Addr::Manager, Addr::Node(reader), msg);
            }
            return;
        };
        match msg {
            Msg::Read {
                block,
                reader,
                hops,
            } => {
                self.add_holder(block, reader, out);
                self.serve(block, reader, hops, out);
            }
            Msg::NotHere {
                block,
                reader,
                hops,
            } => {
                self.remove_holder(block, node, out);
                self.serve(block, reader, hops, out);
            }
            Msg::Dropped { block } => self.remove_holder(block, node, out),
            Msg::Discard { block, data } => {
                self.remove_holder(block, node, out);
                if !self.cache.contains(block) {
                    self.keep(block, data, out);
                }
            }
            Msg::Cached { block } => self.add_holder(block, node, out),
            Msg::Moved { block, to } if !self.mode.singlet_notices => {
                self.directory.transfer(block, node, to)
            }
            Msg::Moved { block, to } => {
                self.directory.remove(block, node);
                self.add_holder(block, to, out);
            }
            Msg::IsSinglet { block } => {
                let singlet = *self.directory.holders(block) == Holders::One(node);
                out.send(Addr::Manager, from, Msg::Singlet { block, singlet });
            }
            Msg::Write { block, data } => self.write(node, block, data, out),
            Msg::Weight { lowest } => {
                if let Some(w) = self.lowest_weight.get_mut(node as usize) {
                    *w = lowest;
                }
            }
            Msg::WhereTo { block, weight } => {
                let to = self.cheapest_holder(node, weight);
                out.send(Addr::Manager, from, Msg::GoTo { block, to });
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K, NodeId)) {
        self.directory.pairs().for_each(|(b, n)| f(b, n));
    }

    fn directory_bytes_per_block(&self) -> f64 {
        self.directory.bytes_per_block()
    }
}
