//! The node of Base and Greedy Forwarding: a greedily managed local cache.

use super::local::{LocalCache, ask_manager, complete, serve_forward};
use super::{Addr, BlockStore, Level, LiveNode, Msg, NodeId, NodeMachine, Outbox, StoreUsage};
use crate::policy::{BlockKey, Lookup, Policy};

/// A node that manages its cache for itself (paper section 2.2): a miss
/// asks the manager, an evicted block is simply dropped, and a read the
/// manager forwards here is served from the local cache.
///
/// With a [`DirectoryManager`](super::DirectoryManager) that forwards, this
/// is Greedy Forwarding; with one that does not, it is the Base case (no
/// cooperation: local cache, manager memory, origin).
#[derive(Clone, Debug)]
pub struct GreedyNode<K, P, S> {
    id: NodeId,
    cache: LocalCache<K, P, S>,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> GreedyNode<K, P, S> {
    /// Node `id` caching with `policy` and keeping data in `store`.
    pub fn new(id: NodeId, policy: P, store: S) -> Self {
        GreedyNode {
            id,
            cache: LocalCache::new(policy, store),
        }
    }
}

impl<K, P, S> NodeMachine<K, S::Data> for GreedyNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K>,
    S: BlockStore<K>,
{
    #[inline]
    fn read(&mut self, block: K, _now: u64, out: &mut Outbox<K, S::Data>) {
        match self.cache.lookup(block) {
            Lookup::Hit => complete(self.id, block, Level::Local, 0, out),
            Lookup::Miss(miss) => {
                let me = self.id;
                self.cache.admit_dropping(me, block, miss, out);
                ask_manager(me, block, out);
            }
        }
    }

    fn write(&mut self, block: K, data: S::Data, _now: u64, out: &mut Outbox<K, S::Data>) {
        self.cache.write_greedy(self.id, block, data, out);
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
            } => self.cache.receive(self.id, block, data, level, hops, out),
            Msg::Forward {
                block,
                reader,
                hops,
            } => serve_forward(self.id, block, reader, hops, self.cache.get(block), out),
            Msg::Invalidate { block } => {
                self.cache.remove(block);
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.cache.policy.iter_oldest_first().for_each(f);
    }

    fn len(&self) -> usize {
        self.cache.policy.len()
    }

    fn capacity(&self) -> usize {
        self.cache.policy.capacity()
    }
}

impl<K, P, S> LiveNode<K, S::Data> for GreedyNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K> + Send,
    S: BlockStore<K> + Send,
{
    /// Base and Greedy never send to a peer of their own choosing.
    fn set_peers(&mut self, _live: &[NodeId]) {}

    fn data(&self, block: K) -> Option<S::Data> {
        self.cache.get(block)
    }

    fn usage(&self) -> StoreUsage {
        self.cache.store.usage()
    }
}
