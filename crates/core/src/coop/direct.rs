//! Direct Client Cooperation: an active node spills its evictions into a
//! private cache in an idle node's memory (paper section 2.1).

use super::local::{
    LocalCache, ask_manager, complete, notify_dropped, serve_forward, write_through,
};
use super::{Addr, BlockStore, Level, LiveNode, Msg, NodeId, NodeMachine, Outbox, StoreUsage};
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
/// never disturbed by its host; the simulator keeps it as part of this
/// node's state. A live node keeps only its order here and the bytes at a
/// peer, its host ([`DirectNode::hosted_by_peers`]).
#[derive(Clone, Debug)]
pub struct DirectNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    local: LocalCache<K, P, S>,
    remote: LocalCache<K, Lru<K>, S>,
    /// Set when the remote cache's bytes live at a peer.
    peer: Option<PeerHosted<K, S>>,
}

/// A remote cache whose bytes are in a peer's memory, and the region of
/// this node's memory where it hosts a peer's remote cache.
#[derive(Clone, Debug)]
struct PeerHosted<K, S: BlockStore<K>> {
    /// Who keeps this node's remote blocks, if any peer is live.
    host: Option<NodeId>,
    /// The blocks this node keeps for the peers it hosts.
    hosted: LocalCache<K, Lru<K>, S>,
}

impl<K: BlockKey, P: Policy<K>, S: BlockStore<K>> DirectNode<K, P, S> {
    /// Node `id` caching locally with `policy`, with a private remote LRU
    /// `remote` (blocks), keeping data in `local_store` and `remote_store`.
    pub fn new(id: NodeId, policy: P, local_store: S, remote: Lru<K>, remote_store: S) -> Self {
        DirectNode {
            id,
            local: LocalCache::new(policy, local_store),
            remote: LocalCache::new(remote, remote_store),
            peer: None,
        }
    }

    /// The live arrangement: the remote cache's bytes go to a peer (set by
    /// [`DirectNode::set_host`]; with none, evictions are dropped as Base
    /// drops them), and this node keeps the blocks peers park with it in
    /// `hosted`, an LRU that drops its oldest block silently (its client
    /// then finds it gone and reads through the manager). The remote
    /// store keeps nothing: only the remote cache's order is kept here.
    pub fn hosted_by_peers(self, hosted: Lru<K>, hosted_store: S) -> Self {
        DirectNode {
            peer: Some(PeerHosted {
                host: None,
                hosted: LocalCache::new(hosted, hosted_store),
            }),
            ..self
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The peer that keeps this node's remote cache. Blocks parked at an
    /// earlier host are asked of the new one, which answers that it does
    /// not have them.
    pub fn set_host(&mut self, host: Option<NodeId>) {
        if let Some(p) = &mut self.peer {
            p.host = host.filter(|&h| h != self.id);
        }
    }

    /// Inserts `block` locally, demoting the local cache's victims into
    /// the remote cache and dropping the remote cache's.
    fn admit_local(&mut self, block: K, miss: P::Miss, out: &mut Outbox<K, S::Data>) {
        let (me, remote) = (self.id, &mut self.remote);
        // None: the simulator's remote cache; Some(None): live, no host.
        let host = self.peer.as_ref().map(|p| p.host);
        self.local.admit(block, miss, |victim, data| {
            if host == Some(None) || (host.is_some() && data.is_none()) {
                // No peer to keep it, or (live, with reads in flight) its
                // bytes have not come yet, so there is nothing to park:
                // dropped, as Base drops it.
                return notify_dropped(me, victim, out);
            }
            if let Lookup::Miss(miss) = remote.lookup(victim) {
                remote.admit(victim, miss, |gone, _| notify_dropped(me, gone, out));
            }
            match (host, data) {
                (None, Some(data)) => remote.fill(victim, data),
                (Some(Some(h)), Some(data)) => {
                    let place = Msg::Place {
                        block: victim,
                        data,
                        replaces: None,
                    };
                    out.send(Addr::Node(me), Addr::Node(h), place);
                }
                _ => {}
            }
        });
    }

    /// The peer-hosted remote cache holds `block`: ask the host for it.
    /// Its `Data` (or, if the host lost it, the manager) finishes the read.
    fn fetch_from_host(&mut self, block: K, out: &mut Outbox<K, S::Data>) -> bool {
        // Out of the remote cache either way: the local cache takes it.
        if !self.remote.policy.remove(block) {
            return false;
        }
        let Some(host) = self.peer.as_ref().and_then(|p| p.host) else {
            return false;
        };
        let ask = Msg::Forward {
            block,
            reader: self.id,
            hops: 1,
        };
        out.send(Addr::Node(self.id), Addr::Node(host), ask);
        true
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
        if self.peer.is_some() {
            let asked = self.fetch_from_host(block, out);
            self.admit_local(block, miss, out);
            if !asked {
                ask_manager(self.id, block, out);
            }
            return;
        }
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
                // A block parked here goes back to its client, whose local
                // cache takes it: it leaves the hosted region (also when
                // this node's own cache has a copy to answer with, or the
                // region would keep a block its client no longer counts).
                let hosted = self.peer.as_mut().and_then(|p| p.hosted.remove(block));
                let data = self.local.get(block).or_else(|| self.remote.get(block));
                let data = data.or(hosted);
                serve_forward(self.id, block, reader, hops, data, out);
            }
            Msg::Place { block, data, .. } => {
                if let Some(p) = &mut self.peer {
                    if let Lookup::Miss(miss) = p.hosted.lookup(block) {
                        p.hosted.admit(block, miss, |_, _| {});
                    }
                    p.hosted.fill(block, data);
                }
            }
            Msg::Invalidate { block } => {
                self.local.remove(block);
                self.remote.remove(block);
                if let Some(p) = &mut self.peer {
                    p.hosted.remove(block);
                }
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.local.policy.iter_oldest_first().for_each(&mut *f);
        self.remote.policy.iter_oldest_first().for_each(f);
    }

    /// Blocks this node's cache holds, wherever their bytes are (and, live,
    /// the blocks it hosts for a peer).
    fn len(&self) -> usize {
        let hosted = self.peer.as_ref().map_or(0, |p| p.hosted.policy.len());
        self.local.policy.len() + self.remote.policy.len() + hosted
    }

    fn capacity(&self) -> usize {
        let hosted = self.peer.as_ref().map_or(0, |p| p.hosted.policy.capacity());
        self.local.policy.capacity() + self.remote.policy.capacity() + hosted
    }
}

impl<K, P, S> LiveNode<K, S::Data> for DirectNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K> + Send,
    S: BlockStore<K> + Send,
{
    /// The host of this node's remote cache is its successor among the
    /// live members (a ring, so each node hosts one peer).
    fn set_peers(&mut self, live: &[NodeId]) {
        let host = crate::protocol::successor(live, self.id);
        self.set_host(host);
    }

    /// The local cache (live, the remote cache's bytes are at the host; a
    /// host never serves the blocks it keeps for its client to itself).
    fn data(&self, block: K) -> Option<S::Data> {
        self.local.get(block).or_else(|| self.remote.get(block))
    }

    fn usage(&self) -> StoreUsage {
        let hosted = self.peer.as_ref().map(|p| p.hosted.store.usage());
        self.local.store.usage() + self.remote.store.usage() + hosted.unwrap_or_default()
    }
}
