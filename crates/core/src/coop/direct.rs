//! Direct Client Cooperation: an active node spills its evictions into a
//! private cache in an idle node's memory (paper section 2.1).

use super::local::{
    LocalCache, ask_manager, complete, notify_dropped, serve_forward, write_through,
};
use super::{Addr, BlockStore, Level, LiveNode, Msg, NodeId, NodeMachine, Outbox, StoreUsage};
use crate::error::CapacityError;
use crate::policy::{BlockKey, Lookup, Lru, Policy};
use rand_core::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::collections::HashMap;

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
/// node's state. A live node keeps only its order here and the bytes at
/// peers ([`DirectNode::hosted_by_peers`]).
#[derive(Clone, Debug)]
pub struct DirectNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    local: LocalCache<K, P, S>,
    remote: LocalCache<K, Lru<K>, S>,
    /// Set when the remote cache's bytes live at peers.
    peer: Option<PeerHosted<K, S>>,
}

/// Netcache's arrangement of a live node: its evictions parked on idle
/// peers, and the blocks its peers park here sharing its memory with its
/// own, its own first.
#[derive(Clone, Debug)]
struct PeerHosted<K, S: BlockStore<K>> {
    /// The live members (this node among them).
    live: Vec<NodeId>,
    /// The peers advertising memory to lend: where evictions are parked.
    lenders: Vec<NodeId>,
    /// The peer each block of the remote cache is parked at (as many
    /// entries as the remote cache has blocks).
    parked_at: HashMap<K, NodeId>,
    /// The blocks this node keeps for its peers (foreign blocks).
    hosted: LocalCache<K, Lru<K>, S>,
    /// Blocks of memory the node's own and its peers' blocks share.
    memory: usize,
    /// Whether the node is idle (its protocol says: its own reads stopped
    /// a while ago), when its own blocks give way to its peers'.
    idle: bool,
    /// The simulator's model only ([`DirectNode::keeping_parkers`]): the
    /// clients that parked each hosted block. Live, the node's protocol
    /// keeps them, with its checks, and hands the machine only the last
    /// parker's reclaim.
    parkers: Option<HashMap<K, Vec<NodeId>>>,
    rng: Pcg64Mcg,
}

impl<K: BlockKey, S: BlockStore<K>> PeerHosted<K, S> {
    /// A uniformly random lender, if any peer lends.
    fn pick_lender(&mut self) -> Option<NodeId> {
        super::live::draw(&mut self.rng, &self.lenders)
    }

    /// Drops the oldest foreign block, if any (silently: its client finds
    /// it gone when it asks, and reads through the manager).
    fn drop_oldest_hosted(&mut self) -> bool {
        let oldest = self.hosted.policy.iter_oldest_first().next();
        match oldest {
            Some(old) => {
                self.unhost(old);
                true
            }
            None => false,
        }
    }

    /// Drops foreign block `block`, and who parked it.
    fn unhost(&mut self, block: K) -> Option<S::Data> {
        if let Some(parkers) = &mut self.parkers {
            parkers.remove(&block);
        }
        self.hosted.remove(block)
    }

    /// `client` parked `block` here (the model's note of it): beside the
    /// clients that parked the block still hosted, else alone.
    fn note_parker(&mut self, block: K, client: NodeId, was_hosted: bool) {
        let Some(parkers) = &mut self.parkers else {
            return;
        };
        let list = parkers.entry(block).or_default();
        if !was_hosted {
            list.clear();
        }
        if !list.contains(&client) {
            list.push(client);
        }
    }

    /// `reader` asks for hosted `block` back: with other parkers left, the
    /// model's host answers with a copy and keeps it for them (`Some`);
    /// `None` if the block goes (or the parkers are not kept).
    fn copy_for(&mut self, block: K, reader: NodeId) -> Option<Option<S::Data>> {
        let list = self.parkers.as_mut()?.get_mut(&block)?;
        if !list.contains(&reader) {
            // Not its to take back: the live host answers `Missing`.
            return Some(None);
        }
        if list.len() == 1 {
            return None;
        }
        list.retain(|&c| c != reader);
        Some(self.hosted.get(block))
    }
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

    /// The live arrangement, Netcache's: an evicted block is parked on a
    /// peer drawn at random (generator seeded with `seed`) among those
    /// advertising memory to lend ([`LiveNode::set_lenders`]; with none,
    /// it is dropped as Base drops it), and the remote cache keeps only
    /// the order of the parked blocks and where each is. The blocks peers
    /// park here share the local cache's memory (its capacity) with the
    /// node's own, in `hosted`, an LRU of that capacity: the node's own
    /// blocks take room from the foreign ones first, and a foreign block
    /// takes room from the node's own only while the node is idle, so an
    /// idle node lends all of its memory and a busy one gets it back.
    pub fn hosted_by_peers(self, hosted_store: S, seed: u64) -> Result<Self, CapacityError> {
        let memory = self.local.policy.capacity();
        let rng =
            Pcg64Mcg::seed_from_u64(seed ^ u64::from(self.id).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        Ok(DirectNode {
            peer: Some(PeerHosted {
                live: Vec::new(),
                lenders: Vec::new(),
                parked_at: HashMap::new(),
                hosted: LocalCache::new(Lru::new(memory)?, hosted_store),
                memory,
                idle: false,
                parkers: None,
                rng,
            }),
            ..self
        })
    }

    /// The simulator's model of what a live host's protocol keeps above
    /// this machine (PROTOCOL.md, step 9): who parked each hosted block. A
    /// block two clients parked is kept once for both; a reclaim by one
    /// while another remains is answered with a copy, and the block stays;
    /// a reclaim by a client that did not park it finds it missing. Live,
    /// the protocol applies these rules, with its checks (a machine told
    /// the parkers would count each one twice).
    pub fn keeping_parkers(mut self) -> Self {
        if let Some(p) = &mut self.peer {
            p.parkers = Some(HashMap::new());
        }
        self
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Inserts `block` locally, demoting the local cache's victims into
    /// the remote cache and dropping the remote cache's.
    fn admit_local(&mut self, block: K, miss: P::Miss, out: &mut Outbox<K, S::Data>) {
        if let Some(p) = &mut self.peer {
            // Netcache: a node's own blocks take its memory back from its
            // peers' blocks before any of its own is evicted.
            if self.local.policy.len() + p.hosted.policy.len() >= p.memory {
                p.drop_oldest_hosted();
            }
        }
        let (me, remote, peer) = (self.id, &mut self.remote, &mut self.peer);
        self.local.admit(block, miss, |victim, data| match peer {
            None => {
                if let Lookup::Miss(miss) = remote.lookup(victim) {
                    remote.admit(victim, miss, |gone, _| notify_dropped(me, gone, out));
                }
                if let Some(data) = data {
                    remote.fill(victim, data);
                }
            }
            Some(p) => {
                // No peer lends, or (with reads in flight) its bytes have
                // not come yet, so there is nothing to park: dropped, as
                // Base drops it.
                let (Some(data), Some(host)) = (data, p.pick_lender()) else {
                    return notify_dropped(me, victim, out);
                };
                if let Lookup::Miss(miss) = remote.lookup(victim) {
                    let parked_at = &mut p.parked_at;
                    remote.admit(victim, miss, |gone, _| {
                        parked_at.remove(&gone);
                        notify_dropped(me, gone, out)
                    });
                }
                p.parked_at.insert(victim, host);
                let place = Msg::Place {
                    block: victim,
                    data,
                    replaces: None,
                };
                out.send(Addr::Node(me), Addr::Node(host), place);
            }
        });
    }

    /// The peer-hosted remote cache holds `block`: ask its host for it.
    /// Its `Data` (or, if the host lost it, the manager) finishes the read.
    fn fetch_from_host(&mut self, block: K, out: &mut Outbox<K, S::Data>) -> bool {
        // Out of the remote cache either way: the local cache takes it.
        if !self.remote.policy.remove(block) {
            return false;
        }
        let Some(p) = &mut self.peer else {
            return false;
        };
        // A host that left took the block with it.
        let Some(host) = p.parked_at.remove(&block).filter(|h| p.live.contains(h)) else {
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

    /// A peer parks `block` here: it takes free memory, else the oldest
    /// foreign block's, else (only while this node is idle) its oldest own
    /// block's; a busy node whose memory is all its own refuses it.
    fn host(
        &mut self,
        block: K,
        data: S::Data,
        client: Option<NodeId>,
        out: &mut Outbox<K, S::Data>,
    ) {
        let Some(p) = &mut self.peer else {
            return;
        };
        let was_hosted = p.hosted.contains(block);
        if !was_hosted && self.local.policy.len() + p.hosted.policy.len() >= p.memory {
            let own = self.local.policy.iter_oldest_first().next();
            match own {
                Some(own) if p.idle => {
                    self.local.remove(own);
                    notify_dropped(self.id, own, out);
                }
                _ if p.drop_oldest_hosted() => {}
                _ => return,
            }
        }
        if let Lookup::Miss(miss) = p.hosted.lookup(block) {
            p.hosted.admit(block, miss, |_, _| {});
        }
        p.hosted.fill(block, data);
        if let Some(client) = client {
            p.note_parker(block, client, was_hosted);
        }
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
        if let Some(p) = &mut self.peer {
            p.parked_at.remove(&block);
        }
        self.remote.remove(block);
        if let Lookup::Miss(miss) = self.local.lookup(block) {
            self.admit_local(block, miss, out);
        }
        self.local.fill(block, data.clone());
        write_through(self.id, block, data, out);
    }

    fn handle(
        &mut self,
        from: Addr,
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
                if let Some(copy) = self.peer.as_mut().and_then(|p| p.copy_for(block, reader)) {
                    return serve_forward(self.id, block, reader, hops, copy, out);
                }
                let hosted = self.peer.as_mut().and_then(|p| p.unhost(block));
                let data = self.local.get(block).or_else(|| self.remote.get(block));
                let data = data.or(hosted);
                serve_forward(self.id, block, reader, hops, data, out);
            }
            Msg::Place { block, data, .. } => {
                let client = match from {
                    Addr::Node(c) => Some(c),
                    _ => None,
                };
                self.host(block, data, client, out)
            }
            Msg::Invalidate { block } => {
                self.local.remove(block);
                self.remote.remove(block);
                if let Some(p) = &mut self.peer {
                    p.unhost(block);
                    p.parked_at.remove(&block);
                }
            }
            _ => {}
        }
    }

    fn for_each_tracked(&self, f: &mut dyn FnMut(K)) {
        self.local.policy.iter_oldest_first().for_each(&mut *f);
        self.remote.policy.iter_oldest_first().for_each(f);
    }

    /// Blocks this node's memory holds: simulated, its own and its remote
    /// cache's (the simulator keeps both here); live, its own and those it
    /// hosts for peers (its remote cache's bytes are at its hosts).
    fn len(&self) -> usize {
        match &self.peer {
            None => self.local.policy.len() + self.remote.policy.len(),
            Some(p) => self.local.policy.len() + p.hosted.policy.len(),
        }
    }

    fn capacity(&self) -> usize {
        match &self.peer {
            None => self.local.policy.capacity() + self.remote.policy.capacity(),
            Some(p) => p.memory,
        }
    }

    fn check_invariants(&self) -> Result<(), String> {
        let Some(p) = &self.peer else {
            return Ok(());
        };
        let held = self.local.policy.len() + p.hosted.policy.len();
        if held > p.memory {
            return Err(format!(
                "node {} holds {held} blocks in a memory of {}",
                self.id, p.memory
            ));
        }
        if p.parked_at.len() != self.remote.policy.len() {
            return Err(format!(
                "node {} knows the hosts of {} parked blocks, its remote cache has {}",
                self.id,
                p.parked_at.len(),
                self.remote.policy.len()
            ));
        }
        Ok(())
    }
}

impl<K, P, S> LiveNode<K, S::Data> for DirectNode<K, P, S>
where
    K: BlockKey,
    P: Policy<K> + Send,
    S: BlockStore<K> + Send,
{
    fn set_peers(&mut self, live: &[NodeId]) {
        if let Some(p) = &mut self.peer {
            p.live.clear();
            p.live.extend_from_slice(live);
            p.lenders.retain(|l| live.contains(l));
        }
    }

    /// The local cache (live, the remote cache's bytes are at the hosts; a
    /// host never serves the blocks it keeps for its clients to itself).
    fn data(&self, block: K) -> Option<S::Data> {
        self.local.get(block).or_else(|| self.remote.get(block))
    }

    fn hosted(&self, block: K) -> Option<S::Data> {
        self.peer.as_ref()?.hosted.get(block)
    }

    fn usage(&self) -> StoreUsage {
        let hosted = self.peer.as_ref().map(|p| p.hosted.store.usage());
        self.local.store.usage() + self.remote.store.usage() + hosted.unwrap_or_default()
    }

    fn foreign(&self) -> usize {
        self.peer.as_ref().map_or(0, |p| p.hosted.policy.len())
    }

    fn set_idle(&mut self, idle: bool) {
        if let Some(p) = &mut self.peer {
            p.idle = idle;
        }
    }

    fn set_lenders(&mut self, lenders: &[NodeId]) {
        if let Some(p) = &mut self.peer {
            p.lenders.clear();
            let me = self.id;
            p.lenders
                .extend(lenders.iter().copied().filter(|&l| l != me));
        }
    }
}
