//! Direct Client Cooperation: an active node spills its evictions into a
//! private cache in an idle node's memory (paper section 2.1).

use super::local::{
    LocalCache, ask_manager, complete, notify_dropped, serve_forward, write_through,
};
use super::{Addr, BlockStore, Level, Msg, NodeId, NodeMachine, Outbox};
use crate::policy::{BlockKey, Lookup, Lru, Policy};

/// A node with a private remote cache.
///
/// Blocks evicted from the local cache go to the node's remote cache (an
/// LRU in an idle peer's memory that only this node uses); a local miss that
/// the remote cache holds is served from it in two hops (request, reply) and
/// the block moves back to the local cache, so the two together act as one
/// cache twice as large. Only misses in both go to the manager, which knows
/// nothing of the arrangement: to it the node simply has a larger cache.
///
/// As in the paper's optimistic model, the remote cache is permanent and
/// never disturbed by its host; it is simulated as part of this node's
/// state.
#[derive(Clone, Debug)]
pub struct DirectNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    local: LocalCache<K, P, S>,
    remote: LocalCache<K, Lru<K>, S>,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> DirectNode<K, P, S> {
    /// Node `id` caching locally with `policy`, with a private remote LRU
    /// `remote` (blocks), keeping data in `local_store` and `remote_store`.
    pub fn new(id: NodeId, policy: P, local_store: S, remote: Lru<K>, remote_store: S) -> Self {
        DirectNode {
            id,
            local: LocalCache::new(policy, local_store),
            remote: LocalCache::new(remote, remote_store),
        }
    }

    /// Inserts `block` locally, demoting the local cache's victims into
    /// the remote cache and dropping the remote cache's.
    fn admit_local(&mut self, block: K, miss: P::Miss, out: &mut Outbox<K, S::Data>) {
        let (me, remote) = (self.id, &mut self.remote);
        self.local.admit(block, miss, |victim, data| {
            if let Lookup::Miss(miss) = remote.lookup(victim) {
                remote.admit(victim, miss, |gone, _| notify_dropped(me, gone, out));
            }
            if let Some(data) = data {
                remote.fill(victim, data);
            }
        });
    }
}

impl<K, P, S> NodeMachine<K, S::Data> for DirectNode<K, P, S>
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
        let from_remote = self.remote.remove(block);
        self.admit_local(block, miss, out);
        match from_remote {
            Some(data) => {
                self.local.fill(block, data);
                complete(self.id, block, Level::RemoteNode, 2, out);
            }
            None => ask_manager(self.id, block, out),
        }
    }

    fn write(&mut self, block: K, data: S::Data, _now: u64, out: &mut Outbox<K, S::Data>) {
        self.remote.remove(block);
        if let Lookup::Miss(miss) = self.local.lookup(block) {
            self.admit_local(block, miss, out);
        }
        self.local.fill(block, data.clone());
        write_through(self.id, block, data, out);
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
                let data = self.local.get(block).or_else(|| self.remote.get(block));
                serve_forward(self.id, block, reader, hops, data, out);
            }
            Msg::Invalidate { block } => {
                self.local.remove(block);
                self.remote.remove(block);
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.local.policy.iter_oldest_first().for_each(&mut *f);
        self.remote.policy.iter_oldest_first().for_each(f);
    }

    fn len(&self) -> usize {
        self.local.policy.len() + self.remote.policy.len()
    }

    fn capacity(&self) -> usize {
        self.local.policy.capacity() + self.remote.policy.capacity()
    }
}
