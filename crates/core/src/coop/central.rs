//! Centrally Coordinated Caching: part of every node's memory is one global
//! LRU cache run by the manager (paper section 2.3). Best, the paper's
//! unrealisable bound, is the same machinery with doubled memory.

use super::local::{LocalCache, ask_manager, complete, serve_forward};
use super::{Addr, BlockStore, Directory, Level, ManagerMachine, Msg, NodeId, NodeMachine, Outbox};
use crate::policy::{BLOCK, BlockKey, Lookup, Lru, Policy};
use std::collections::HashMap;

/// A node whose memory is split: a locally managed part, greedy as in
/// Greedy Forwarding, and a globally managed part holding whatever the
/// manager places there.
#[derive(Clone, Debug)]
pub struct CentralNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    local: LocalCache<K, P, S>,
    global: HashMap<K, S::Data>,
    global_capacity: usize,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> CentralNode<K, P, S> {
    /// Node `id` with a local part run by `policy` and a global part of
    /// `global_capacity` blocks.
    pub fn new(id: NodeId, policy: P, store: S, global_capacity: usize) -> Self {
        CentralNode {
            id,
            local: LocalCache::new(policy, store),
            global: HashMap::with_capacity(global_capacity),
            global_capacity,
        }
    }
}

impl<K, P, S> NodeMachine<K, S::Data> for CentralNode<K, P, S>
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
        // The global part is this node's memory too: a hit there is local.
        if self.global.contains_key(&block) {
            return complete(self.id, block, Level::Local, 0, out);
        }
        let me = self.id;
        self.local.admit_dropping(me, block, miss, out);
        ask_manager(me, block, out);
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
            } => self.local.receive(self.id, block, data, level, hops, out),
            Msg::Forward {
                block,
                reader,
                hops,
            } => {
                let data = self
                    .global
                    .get(&block)
                    .cloned()
                    .or_else(|| self.local.get(block));
                serve_forward(self.id, block, reader, hops, data, out);
            }
            Msg::Place {
                block,
                data,
                replaces,
            } => {
                if let Some(old) = replaces {
                    self.global.remove(&old);
                }
                // The manager keeps the part within its size; a node never
                // lets it grow past that whatever it is sent.
                if self.global.len() < self.global_capacity {
                    self.global.insert(block, data);
                }
            }
            Msg::Unplace { block } => {
                self.global.remove(&block);
            }
            Msg::Invalidate { block } => {
                self.local.remove(block);
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.local.policy.iter_oldest_first().for_each(&mut *f);
        self.global.keys().copied().for_each(f);
    }

    fn len(&self) -> usize {
        self.local.policy.len() + self.global.len()
    }

    /// The globally managed part never outgrows its share.
    fn check_invariants(&self) -> Result<(), String> {
        if self.global.len() > self.global_capacity {
            return Err(format!(
                "global part holds {}, its share is {}",
                self.global.len(),
                self.global_capacity
            ));
        }
        if self.local.policy.len() > self.local.policy.capacity() {
            return Err("local part over capacity".into());
        }
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.local.policy.capacity() + self.global_capacity
    }
}

/// The manager of Centrally Coordinated Caching: its own LRU memory, a
/// directory of the nodes' locally managed parts (for invalidation), and
/// one global LRU over the globally managed parts of all nodes.
///
/// A block evicted from the manager's memory goes to the global cache: to a
/// node with free global space while there is some, afterwards in place of
/// the global LRU block (on that block's node). A read the manager's memory
/// misses is forwarded to the node holding the block globally, which renews
/// it in the global LRU; else it comes from the origin.
#[derive(Clone, Debug)]
pub struct CentralManager<K, C, S: BlockStore<K>> {
    cache: LocalCache<K, C, S>,
    directory: Directory<K>,
    /// Order of the globally managed blocks.
    global: Lru<K>,
    /// Node holding each globally managed block.
    placed: HashMap<K, NodeId>,
    /// Free global slots per node.
    free: Vec<usize>,
    /// Next node to try for a free slot.
    cursor: usize,
    /// Reused for the blocks one admission evicts.
    scratch: Vec<(K, Option<S::Data>)>,
}

impl<K: BlockKey, C: Policy<K>, S: BlockStore<K>> CentralManager<K, C, S> {
    /// A manager caching in `cache`, over `nodes` nodes each lending
    /// `global_per_node` blocks to the global cache (at least one block in
    /// all).
    pub fn new(
        cache: C,
        store: S,
        nodes: u32,
        global_per_node: usize,
    ) -> Result<Self, crate::CapacityError> {
        let total = global_per_node * nodes as usize;
        Ok(CentralManager {
            directory: Directory::with_capacity(0),
            cache: LocalCache::new(cache, store),
            global: Lru::new(total)?,
            placed: HashMap::with_capacity(total),
            free: vec![global_per_node; nodes as usize],
            cursor: 0,
            scratch: Vec::new(),
        })
    }

    /// Puts a block evicted from the manager's memory into the global cache.
    fn place(&mut self, block: K, data: S::Data, out: &mut Outbox<K, S::Data>) {
        if self.placed.contains_key(&block) {
            self.global.lookup(block);
            return;
        }
        let (node, replaces) = if self.global.len() < self.global.capacity() {
            let n = self.free.len();
            let Some(node) = (0..n)
                .map(|k| (self.cursor + k) % n)
                .find(|&k| self.free[k] > 0)
            else {
                return;
            };
            self.cursor = (node + 1) % n;
            self.free[node] -= 1;
            (node as NodeId, None)
        } else {
            let Some(old) = self.global.evict(&(), BLOCK) else {
                return;
            };
            let Some(node) = self.placed.remove(&old) else {
                return;
            };
            (node, Some(old))
        };
        if let Lookup::Miss(()) = self.global.lookup(block) {
            self.global.insert(block, BLOCK, ());
        }
        self.placed.insert(block, node);
        out.send(
            Addr::Manager,
            Addr::Node(node),
            Msg::Place {
                block,
                data,
                replaces,
            },
        );
    }

    fn keep(&mut self, block: K, data: S::Data, out: &mut Outbox<K, S::Data>) {
        if let Lookup::Miss(miss) = self.cache.lookup(block) {
            let mut evicted = std::mem::take(&mut self.scratch);
            self.cache
                .admit(block, miss, |victim, data| evicted.push((victim, data)));
            for (victim, data) in evicted.drain(..) {
                if let Some(data) = data {
                    self.place(victim, data, out);
                }
            }
            self.scratch = evicted;
        }
        self.cache.fill(block, data);
    }

    fn serve(&mut self, block: K, reader: NodeId, hops: u8, out: &mut Outbox<K, S::Data>) {
        let hops_on = hops.saturating_add(1);
        if let (Lookup::Hit, Some(data)) = (self.cache.lookup(block), self.cache.get(block)) {
            let msg = Msg::Data {
                block,
                data,
                level: Level::ManagerMemory,
                hops: hops_on,
            };
            return out.send(Addr::Manager, Addr::Node(reader), msg);
        }
        if let Some(&holder) = self.placed.get(&block) {
            self.global.lookup(block);
            return out.send(
                Addr::Manager,
                Addr::Node(holder),
                Msg::Forward {
                    block,
                    reader,
                    hops: hops_on,
                },
            );
        }
        out.send(
            Addr::Manager,
            Addr::Origin,
            Msg::Fetch {
                block,
                reader,
                hops,
            },
        );
    }

    /// Drops the global copy of a written block.
    fn unplace(&mut self, block: K, out: &mut Outbox<K, S::Data>) {
        if let Some(node) = self.placed.remove(&block) {
            self.global.remove(block);
            self.free[node as usize] += 1;
            out.send(Addr::Manager, Addr::Node(node), Msg::Unplace { block });
        }
    }
}

impl<K, C, S> ManagerMachine<K, S::Data> for CentralManager<K, C, S>
where
    K: BlockKey,
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
        match (from, msg) {
            (
                Addr::Origin,
                Msg::Fetched {
                    block,
                    data,
                    reader,
                    hops,
                },
            ) => {
                self.keep(block, data.clone(), out);
                let msg = Msg::Data {
                    block,
                    data,
                    level: Level::Origin,
                    hops: hops.saturating_add(1),
                };
                out.send(Addr::Manager, Addr::Node(reader), msg);
            }
            (
                Addr::Node(_),
                Msg::Read {
                    block,
                    reader,
                    hops,
                },
            ) => {
                self.directory.add(block, reader);
                self.serve(block, reader, hops, out);
            }
            (
                Addr::Node(node),
                Msg::NotHere {
                    block,
                    reader,
                    hops,
                },
            ) => {
                // The global copy is gone from its node: forget it, retry.
                if self.placed.get(&block) == Some(&node) {
                    self.placed.remove(&block);
                    self.global.remove(block);
                    self.free[node as usize] += 1;
                }
                self.serve(block, reader, hops, out);
            }
            (Addr::Node(node), Msg::Dropped { block }) => self.directory.remove(block, node),
            (Addr::Node(writer), Msg::Write { block, data }) => {
                for holder in self.directory.take(block).iter().filter(|&h| h != writer) {
                    out.send(Addr::Manager, Addr::Node(holder), Msg::Invalidate { block });
                }
                self.unplace(block, out);
                self.directory.add(block, writer);
                self.keep(block, data.clone(), out);
                out.send(Addr::Manager, Addr::Origin, Msg::Store { block, data });
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K, NodeId)) {
        self.directory.pairs().for_each(|(b, n)| f(b, n));
        self.placed.iter().for_each(|(&b, &n)| f(b, n));
    }

    fn directory_bytes_per_block(&self) -> f64 {
        self.directory.bytes_per_block()
    }
}
