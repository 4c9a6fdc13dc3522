//! Weighted LRU: evict the block whose loss costs least per unit of memory
//! time, across the whole cluster (paper section 2.5).

use super::local::{
    LocalCache, ask_manager, complete, notify_dropped, serve_forward, write_through,
};
use super::{Addr, BlockStore, Level, Msg, NodeId, NodeMachine, Outbox};
use crate::policy::{BLOCK, BlockKey, Lookup, Policy};
use std::collections::{HashMap, HashSet};

/// How many of a node's oldest blocks are weighed for each eviction.
const CANDIDATES: usize = 16;

/// What losing a block costs, in microseconds of read time: a duplicate
/// can be fetched from another node, a singlet only from the origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Penalties {
    /// Extra time to read a block from another node instead of locally.
    pub duplicate_us: u64,
    /// Extra time to read a block from the origin instead of locally.
    pub singlet_us: u64,
}

/// A Weighted LRU node.
///
/// A block's weight is its value over its cost: the read time its loss would
/// add (a duplicate's is a remote fetch, a singlet's an origin read) over the
/// memory time it holds (the time since it was last referenced, Smith's
/// opportunity cost). To make room the node drops the lowest-weight block
/// among its oldest few (16). A duplicate is simply dropped; a
/// singlet is offered to the cluster: the manager, which knows every node's
/// lowest weight from their piggybacked reports, names the node holding the
/// cluster's cheapest block if that is cheaper, and the singlet goes there,
/// displacing that block (which is dropped, never passed on: no ripple).
/// The manager tells nodes which of their blocks are singlets as that
/// changes.
///
/// The paper describes Weighted LRU in one paragraph and omits its results;
/// this is one faithful reading of it, realisable with messages.
#[derive(Clone, Debug)]
pub struct WlruNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    cache: LocalCache<K, P, S>,
    penalties: Penalties,
    last_ref: HashMap<K, u64>,
    singlets: HashSet<K>,
    /// Singlets offered to the cluster, awaiting the manager's answer.
    limbo: HashMap<K, Option<S::Data>>,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> WlruNode<K, P, S> {
    /// Node `id` caching with `policy`, weighing losses by `penalties`.
    pub fn new(id: NodeId, policy: P, store: S, penalties: Penalties) -> Self {
        WlruNode {
            id,
            cache: LocalCache::new(policy, store),
            penalties,
            last_ref: HashMap::new(),
            singlets: HashSet::new(),
            limbo: HashMap::new(),
        }
    }

    /// Penalty over age, in integer units (larger is more valuable).
    fn weight(&self, block: K, now: u64) -> u64 {
        let penalty = if self.singlets.contains(&block) {
            self.penalties.singlet_us
        } else {
            self.penalties.duplicate_us
        };
        let age = now.saturating_sub(self.last_ref.get(&block).copied().unwrap_or(0));
        penalty.saturating_mul(1_000_000) / (age + 1)
    }

    /// The lightest of the oldest blocks, with its weight.
    fn lightest(&self, now: u64) -> Option<(K, u64)> {
        self.cache
            .policy
            .iter_oldest_first()
            .take(CANDIDATES)
            .map(|b| (b, self.weight(b, now)))
            .min_by_key(|&(_, w)| w)
    }

    /// Makes room for `block` by weight, then inserts it. A node making
    /// room for a forwarded singlet (`offer` false) drops; otherwise a
    /// singlet victim is offered to the cluster.
    fn admit(
        &mut self,
        block: K,
        miss: P::Miss,
        now: u64,
        offer: bool,
        out: &mut Outbox<K, S::Data>,
    ) {
        while self.cache.policy.needs_room(&miss, BLOCK) {
            let Some((victim, weight)) = self.lightest(now) else {
                break;
            };
            let data = self.cache.remove(victim);
            self.last_ref.remove(&victim);
            if offer && self.singlets.remove(&victim) && data.is_some() {
                self.limbo.insert(victim, data);
                out.send(
                    Addr::Node(self.id),
                    Addr::Manager,
                    Msg::WhereTo {
                        block: victim,
                        weight,
                    },
                );
            } else {
                self.singlets.remove(&victim);
                notify_dropped(self.id, victim, out);
            }
        }
        // Whatever the policy still wants, it gets by its own choice.
        let me = self.id;
        self.cache.admit_dropping(me, block, miss, out);
        self.last_ref.insert(block, now);
    }

    fn forget(&mut self, block: K) {
        self.cache.remove(block);
        self.last_ref.remove(&block);
        self.singlets.remove(&block);
        self.limbo.remove(&block);
    }
}

impl<K, P, S> NodeMachine<K, S::Data> for WlruNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K>,
    S: BlockStore<K>,
{
    fn read(&mut self, block: K, now: u64, out: &mut Outbox<K, S::Data>) {
        match self.cache.lookup(block) {
            Lookup::Hit => {
                self.last_ref.insert(block, now);
                complete(self.id, block, Level::Local, 0, out);
            }
            Lookup::Miss(miss) => {
                self.admit(block, miss, now, true, out);
                if let Some((_, lowest)) = self.lightest(now) {
                    out.send(Addr::Node(self.id), Addr::Manager, Msg::Weight { lowest });
                }
                ask_manager(self.id, block, out);
            }
        }
    }

    fn write(&mut self, block: K, data: S::Data, now: u64, out: &mut Outbox<K, S::Data>) {
        match self.cache.lookup(block) {
            Lookup::Hit => {
                self.last_ref.insert(block, now);
            }
            Lookup::Miss(miss) => self.admit(block, miss, now, true, out),
        }
        self.cache.fill(block, data.clone());
        write_through(self.id, block, data, out);
    }

    fn handle(
        &mut self,
        _from: Addr,
        msg: Msg<K, S::Data>,
        now: u64,
        out: &mut Outbox<K, S::Data>,
    ) {
        match msg {
            Msg::Data {
                block,
                data,
                level,
                hops,
            } => self.cache.receive(self.id, block, data, level, hops, out),
            Msg::Forward {
                block,
                reader,
                hops,
            } => {
                let data = match self.limbo.get(&block) {
                    Some(data) => data.clone(),
                    None => self.cache.get(block),
                };
                serve_forward(self.id, block, reader, hops, data, out);
            }
            Msg::Singlet { block, singlet } => {
                if singlet && self.cache.contains(block) {
                    self.singlets.insert(block);
                } else {
                    self.singlets.remove(&block);
                }
            }
            Msg::GoTo { block, to } => match (self.limbo.remove(&block), to) {
                (Some(Some(data)), Some(to)) => {
                    out.send(Addr::Node(self.id), Addr::Manager, Msg::Moved { block, to });
                    let msg = Msg::Recirculate {
                        block,
                        data,
                        chances: 1,
                    };
                    out.send(Addr::Node(self.id), Addr::Node(to), msg);
                }
                (Some(_), _) => notify_dropped(self.id, block, out),
                (None, _) => {}
            },
            Msg::Recirculate { block, data, .. } => {
                if let Lookup::Miss(miss) = self.cache.lookup(block) {
                    self.admit(block, miss, now, false, out);
                }
                self.cache.fill(block, data);
                self.last_ref.insert(block, now);
            }
            Msg::Invalidate { block } => self.forget(block),
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.cache.policy.iter_oldest_first().for_each(&mut *f);
        self.limbo.keys().copied().for_each(f);
    }

    fn len(&self) -> usize {
        self.cache.policy.len()
    }

    fn capacity(&self) -> usize {
        self.cache.policy.capacity()
    }
}
