//! N-Chance Forwarding: Greedy Forwarding that keeps singlets alive by
//! passing them to random peers (paper section 2.4).

use super::local::{
    LocalCache, ask_manager, complete, notify_dropped, serve_forward, write_through,
};
use super::{
    Addr, BlockStore, ClassPolicies, Level, LiveNode, Msg, NodeId, NodeMachine, Outbox,
    SizeClassed, StoreUsage,
};
use crate::policy::{BlockKey, Lookup, Policy};
use crate::queue::{IndexedLists, ListTag};
use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::{HashMap, VecDeque};

/// What a node knows about a block it caches beyond its policy's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    /// A singlet another node forwarded here, with this many recirculations
    /// left (at least 1).
    Recirculating(u8),
    /// Found to be the last cached copy while making room for a forwarded
    /// block; not asked about again until another node reads it.
    Singlet,
}

/// The most chances a recirculating block can have.
pub const MAX_CHANCES: u8 = 8;

/// A cached block's status, as the list it is on: 0 unknown (by recency),
/// 1 a marked singlet, `1 + c` recirculating with `c` chances (by arrival).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Status(u8);

const STATUS_LISTS: usize = 2 + MAX_CHANCES as usize;

impl Status {
    const UNKNOWN: Status = Status(0);

    fn of(mark: Option<Mark>) -> Status {
        match mark {
            None => Status::UNKNOWN,
            Some(Mark::Singlet) => Status(1),
            Some(Mark::Recirculating(c)) => Status(1 + c.clamp(1, MAX_CHANCES)),
        }
    }

    fn mark(self) -> Option<Mark> {
        match self.0 {
            0 => None,
            1 => Some(Mark::Singlet),
            c => Some(Mark::Recirculating(c - 1)),
        }
    }
}

impl ListTag for Status {
    fn list(self) -> usize {
        usize::from(self.0)
    }
}

/// A forwarded singlet waiting for room.
#[derive(Clone, Debug)]
struct Incoming<K, D> {
    block: K,
    data: D,
    chances: u8,
}

/// Forwarded singlets a node queues while it makes room; beyond this the
/// newest is dropped, so a flood of forwards cannot grow memory.
const MAX_INCOMING: usize = 64;

/// An N-Chance Forwarding node.
///
/// It manages its cache greedily like [`GreedyNode`](super::GreedyNode),
/// except for singlets (the only cached copy in the cluster):
///
/// - An evicted block whose status is unknown is kept aside while the node
///   asks the manager once whether it is a singlet. A singlet is forwarded
///   to a uniformly random peer with a recirculation count of `n`, and the
///   manager is told where it went; anything else is dropped.
/// - A recirculating block that reaches the end of a peer's queue loses a
///   chance and is forwarded again, or dropped when none is left; it is
///   known to be a singlet, so no question is asked.
/// - A node receiving a forwarded singlet never forwards to make room (no
///   ripple): it drops its oldest duplicate, asking the manager about
///   blocks in age order and marking those that turn out to be singlets so
///   it never asks again; if there is none, its oldest recirculating block
///   with the fewest chances left; if there is none, its oldest block.
/// - A read of a recirculating block by its holder makes it an ordinary
///   block again; a read by another node moves it there (the holder drops
///   its copy). A read by another node also clears a singlet mark.
///
/// With `n = 0` no block is ever forwarded and no question asked: the node
/// behaves exactly as Greedy Forwarding's.
///
/// Size-class policies ([`NChanceNode::with_classes`]) change, per block's
/// class, only the paths they name: `forward_evictions` off drops a singlet
/// instead of forwarding it; `discard_cache` sends every block the node
/// lets go of to the manager's memory ([`Msg::Discard`]) instead of just
/// saying it is gone; `replica` reads a local miss from the node's own disk
/// (a [`Msg::Fetch`] to the origin, telling the manager it caches the
/// block) instead of asking the manager.
#[derive(Clone, Debug)]
pub struct NChanceNode<K, P, S: BlockStore<K>> {
    id: NodeId,
    nodes: u32,
    n: u8,
    cache: LocalCache<K, P, S>,
    /// Every cached block's status, one list per status: the blocks of
    /// unknown status by recency (where the ripple rule finds the oldest
    /// duplicate without walking past known singlets), recirculating ones
    /// by arrival for each count of chances left.
    status: IndexedLists<K, Status, STATUS_LISTS>,
    /// Evicted blocks of unknown status, with their data, awaiting the
    /// manager's answer.
    limbo: HashMap<K, Option<S::Data>>,
    incoming: VecDeque<Incoming<K, S::Data>>,
    /// The block asked about while making room for `incoming[0]`.
    asking: Option<K>,
    rng: Pcg64Mcg,
    /// The live peers to forward to, when a driver tracks membership;
    /// `None` means every other node of `0..nodes` (the simulator).
    peers: Option<Vec<NodeId>>,
    /// The live peers advertising memory to lend (idle, room left): the
    /// only ones forwarded to while there are any.
    lenders: Vec<NodeId>,
    /// Reused for the blocks one admission evicts, so a miss allocates
    /// nothing.
    scratch: Vec<(K, Option<S::Data>)>,
    classes: ClassPolicies,
    /// Netcache's rule: a block this node needs evicts a forwarded block
    /// before any of the node's own working set.
    foreign_first: bool,
}

impl<K: BlockKey + SizeClassed, P: Policy<K>, S: BlockStore<K>> NChanceNode<K, P, S> {
    /// Node `id` of `nodes`, forwarding singlets with `n` chances, caching
    /// with `policy`, keeping data in `store`, its random peer choices drawn
    /// from a generator seeded with `seed`.
    pub fn new(
        id: NodeId,
        nodes: u32,
        n: u8,
        policy: P,
        store: S,
        seed: u64,
    ) -> Result<Self, crate::CapacityError> {
        let capacity = policy.capacity();
        Ok(NChanceNode {
            id,
            nodes,
            n: n.min(MAX_CHANCES),
            status: IndexedLists::with_capacity(capacity),
            cache: LocalCache::new(policy, store),
            limbo: HashMap::new(),
            incoming: VecDeque::new(),
            asking: None,
            scratch: Vec::new(),
            peers: None,
            lenders: Vec::new(),
            rng: Pcg64Mcg::seed_from_u64(seed ^ u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            classes: ClassPolicies::uniform(),
            foreign_first: false,
        })
    }

    /// The same node applying `classes`' policies.
    pub fn with_classes(self, classes: ClassPolicies) -> Self {
        NChanceNode { classes, ..self }
    }

    /// The same node evicting forwarded blocks before its own (Netcache's
    /// foreign blocks): a node's own misses then never push out its working
    /// set while it holds blocks parked by its peers. Off by default: the
    /// N-Chance paper inserts a forwarded block as if just referenced and
    /// evicts by recency alone.
    pub fn with_foreign_first(self, foreign_first: bool) -> Self {
        NChanceNode {
            foreign_first,
            ..self
        }
    }

    /// The forwarded block to evict first under the foreign-first rule:
    /// the oldest with the fewest chances left.
    fn oldest_foreign(&self) -> Option<K> {
        (1..=MAX_CHANCES).find_map(|c| {
            self.status
                .tail_key(Status::of(Some(Mark::Recirculating(c))).list())
        })
    }

    /// Lets go of `block`, which this node no longer caches and will not
    /// forward: to the manager's discard cache if its class has one and the
    /// data is here, else just a notice.
    fn let_go(&mut self, block: K, data: Option<S::Data>, out: &mut Outbox<K, S::Data>) {
        match data {
            Some(data) if self.classes.policy(&block).discard_cache => {
                out.send(
                    Addr::Node(self.id),
                    Addr::Manager,
                    Msg::Discard { block, data },
                );
            }
            _ => notify_dropped(self.id, block, out),
        }
    }

    /// What is known about cached `block`.
    fn mark(&self, block: K) -> Option<Mark> {
        self.status
            .find(block)
            .and_then(|i| self.status.meta(i).mark())
    }

    /// Sets cached `block`'s mark (or clears it), making it the newest of
    /// its new status.
    fn set_mark(&mut self, block: K, mark: Option<Mark>) {
        match self.status.find(block) {
            Some(idx) => self.status.relocate(idx, Status::of(mark)),
            None => {
                self.status.push(block, 1, Status::of(mark));
            }
        }
    }

    /// Forgets the status of a block that left the cache.
    fn unmark_gone(&mut self, block: K) {
        if let Some(idx) = self.status.find(block) {
            self.status.forget(idx);
        }
    }

    /// The recirculation count of `block`, if it is a recirculating singlet.
    pub fn chances(&self, block: K) -> Option<u8> {
        match self.mark(block) {
            Some(Mark::Recirculating(c)) => Some(c),
            _ => None,
        }
    }

    /// Forwards singlets only to `peers` from now on: the live members
    /// other than this node, as a driver with real membership sees them.
    /// Sorted, the draw is the same as the simulator's over `0..nodes`.
    pub fn set_peers(&mut self, peers: &[NodeId]) {
        let mut live: Vec<NodeId> = peers.iter().copied().filter(|&p| p != self.id).collect();
        live.sort_unstable();
        live.dedup();
        self.peers = Some(live);
    }

    /// A uniformly random peer advertising memory to lend, if any does
    /// (Netcache parks blocks on idle machines); else, as the N-Chance
    /// paper does in a cluster where every node is busy, a uniformly random
    /// node other than this one.
    fn random_peer(&mut self) -> Option<NodeId> {
        if let Some(lender) = super::live::draw(&mut self.rng, &self.lenders) {
            return Some(lender);
        }
        let others = match &self.peers {
            Some(live) => live.len() as u32,
            None => self.nodes.saturating_sub(1),
        };
        if others == 0 {
            return None;
        }
        let pick = ((u128::from(self.rng.next_u64()) * u128::from(others)) >> 64) as NodeId;
        Some(match &self.peers {
            Some(live) => live[pick as usize],
            None if pick >= self.id => pick + 1,
            None => pick,
        })
    }

    /// Forwards singlet `block` to a random peer with `chances` left, or
    /// drops it if there is no peer or no data.
    fn forward(
        &mut self,
        block: K,
        data: Option<S::Data>,
        chances: u8,
        out: &mut Outbox<K, S::Data>,
    ) {
        match (self.random_peer(), data) {
            (Some(peer), Some(data)) => {
                out.send(
                    Addr::Node(self.id),
                    Addr::Manager,
                    Msg::Moved { block, to: peer },
                );
                out.send(
                    Addr::Node(self.id),
                    Addr::Node(peer),
                    Msg::Recirculate {
                        block,
                        data,
                        chances,
                    },
                );
            }
            (_, data) => self.let_go(block, data, out),
        }
    }

    /// Decides the fate of a block this node evicted for its own use.
    fn dispose(&mut self, block: K, data: Option<S::Data>, out: &mut Outbox<K, S::Data>) {
        let mark = self.mark(block);
        self.unmark_gone(block);
        let forwards = self.n > 0 && self.classes.policy(&block).forward_evictions;
        match mark {
            Some(Mark::Recirculating(chances)) if chances > 1 && forwards => {
                self.forward(block, data, chances - 1, out)
            }
            Some(Mark::Singlet) if forwards => self.forward(block, data, self.n, out),
            None if forwards && data.is_some() => {
                self.limbo.insert(block, data);
                out.send(Addr::Node(self.id), Addr::Manager, Msg::IsSinglet { block });
            }
            _ => self.let_go(block, data, out),
        }
    }

    /// Makes room for `block` (read or written here) and inserts it.
    fn admit_own(&mut self, block: K, miss: P::Miss, out: &mut Outbox<K, S::Data>) {
        if self.foreign_first
            && self.cache.policy.len() >= self.cache.policy.capacity()
            && let Some(victim) = self.oldest_foreign()
        {
            let data = self.cache.remove(victim);
            self.dispose(victim, data, out);
        }
        let mut evicted = std::mem::take(&mut self.scratch);
        self.cache
            .admit(block, miss, |victim, data| evicted.push((victim, data)));
        for (victim, data) in evicted.drain(..) {
            self.dispose(victim, data, out);
        }
        self.scratch = evicted;
    }

    /// Works on the first queued forwarded singlet: inserts it if there is
    /// room, else looks for the victim the ripple rule allows, asking the
    /// manager about blocks of unknown status one at a time.
    fn admit_incoming(&mut self, out: &mut Outbox<K, S::Data>) {
        while self.asking.is_none() {
            let Some(front) = self.incoming.front() else {
                return;
            };
            let block = front.block;
            if self.cache.contains(block) {
                self.incoming.pop_front();
                continue;
            }
            if self.cache.policy.len() >= self.cache.policy.capacity() {
                match self.ripple_victim() {
                    Victim::Ask(candidate) => {
                        self.asking = Some(candidate);
                        out.send(
                            Addr::Node(self.id),
                            Addr::Manager,
                            Msg::IsSinglet { block: candidate },
                        );
                        return;
                    }
                    Victim::Drop(victim) => self.discard(victim, out),
                    Victim::None => {}
                }
            }
            if let Some(Incoming {
                block,
                data,
                chances,
            }) = self.incoming.pop_front()
            {
                self.insert_forwarded(block, data, chances, out);
            }
        }
    }

    /// The ripple rule's choice: the oldest block of unknown status (to ask
    /// about), else the oldest recirculating block with the fewest chances
    /// left, else the oldest block.
    fn ripple_victim(&self) -> Victim<K> {
        if let Some(block) = self.status.tail_key(Status::UNKNOWN.list()) {
            return Victim::Ask(block);
        }
        match self
            .oldest_foreign()
            .or_else(|| self.cache.policy.iter_oldest_first().next())
        {
            Some(block) => Victim::Drop(block),
            None => Victim::None,
        }
    }

    /// Drops one of this node's blocks without forwarding it.
    fn discard(&mut self, block: K, out: &mut Outbox<K, S::Data>) {
        self.unmark_gone(block);
        if let Some(data) = self.cache.remove(block) {
            self.let_go(block, Some(data), out);
        }
    }

    /// Inserts a forwarded singlet as if just referenced; if the policy
    /// still wants room, it gets it by dropping, never by forwarding.
    fn insert_forwarded(
        &mut self,
        block: K,
        data: S::Data,
        chances: u8,
        out: &mut Outbox<K, S::Data>,
    ) {
        if let Lookup::Miss(miss) = self.cache.lookup(block) {
            let mut evicted = std::mem::take(&mut self.scratch);
            self.cache
                .admit(block, miss, |victim, data| evicted.push((victim, data)));
            for (victim, data) in evicted.drain(..) {
                self.unmark_gone(victim);
                self.let_go(victim, data, out);
            }
            self.scratch = evicted;
        }
        self.cache.fill(block, data);
        self.set_mark(block, Some(Mark::Recirculating(chances.min(self.n.max(1)))));
    }

    fn on_singlet_answer(&mut self, block: K, singlet: bool, out: &mut Outbox<K, S::Data>) {
        if let Some(data) = self.limbo.remove(&block) {
            if singlet {
                self.forward(block, data, self.n, out);
            } else {
                self.let_go(block, data, out);
            }
            return;
        }
        if self.asking == Some(block) {
            self.asking = None;
            if !self.cache.contains(block) {
                // It left while the question was out (invalidated, or
                // forwarded to a reader): its status goes with it, or the
                // ripple rule would ask about it again for ever.
                self.unmark_gone(block);
            } else if singlet {
                self.set_mark(block, Some(Mark::Singlet));
            } else {
                self.discard(block, out);
                if let Some(Incoming {
                    block,
                    data,
                    chances,
                }) = self.incoming.pop_front()
                {
                    self.insert_forwarded(block, data, chances, out);
                }
            }
            self.admit_incoming(out);
        }
    }

    fn on_forward(&mut self, block: K, reader: NodeId, hops: u8, out: &mut Outbox<K, S::Data>) {
        let data = match self.limbo.get(&block) {
            Some(data) => data.clone(),
            None => self.cache.get(block),
        };
        serve_forward(self.id, block, reader, hops, data, out);
        match self.mark(block) {
            // The reader now caches the singlet normally; this copy goes.
            Some(Mark::Recirculating(_)) => self.discard(block, out),
            // Two copies now: its status is unknown again.
            Some(Mark::Singlet) if self.cache.contains(block) => self.set_mark(block, None),
            Some(Mark::Singlet) => self.unmark_gone(block),
            None => {}
        }
    }
}

/// What the ripple rule picked.
enum Victim<K> {
    /// Ask the manager whether this block is a singlet first.
    Ask(K),
    /// Drop this block.
    Drop(K),
    /// The cache is empty.
    None,
}

impl<K, P, S> NodeMachine<K, S::Data> for NChanceNode<K, P, S>
where
    K: BlockKey + SizeClassed,
    P: Policy<K>,
    S: BlockStore<K>,
{
    #[inline]
    fn read(&mut self, block: K, _now: u64, out: &mut Outbox<K, S::Data>) {
        match self.cache.lookup(block) {
            Lookup::Hit => {
                if let Some(idx) = self.status.find(block) {
                    match self.status.meta(idx).mark() {
                        // A referenced singlet is an ordinary block again.
                        Some(Mark::Recirculating(_)) => self.status.relocate(idx, Status::UNKNOWN),
                        Some(Mark::Singlet) => {}
                        None => self.status.move_to_head(idx),
                    }
                }
                complete(self.id, block, Level::Local, 0, out);
            }
            Lookup::Miss(miss) => {
                self.admit_own(block, miss, out);
                self.set_mark(block, None);
                if self.classes.policy(&block).replica {
                    let me = Addr::Node(self.id);
                    out.send(me, Addr::Manager, Msg::Cached { block });
                    let fetch = Msg::Fetch {
                        block,
                        reader: self.id,
                        hops: 0,
                    };
                    out.send(me, Addr::Origin, fetch);
                } else {
                    ask_manager(self.id, block, out);
                }
            }
        }
    }

    fn write(&mut self, block: K, data: S::Data, _now: u64, out: &mut Outbox<K, S::Data>) {
        match self.cache.lookup(block) {
            Lookup::Hit => self.set_mark(block, None),
            Lookup::Miss(miss) => {
                self.admit_own(block, miss, out);
                self.set_mark(block, None);
            }
        }
        self.cache.fill(block, data.clone());
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
            } => self.cache.receive(self.id, block, data, level, hops, out),
            // A read of this node's own replica.
            Msg::Fetched {
                block, data, hops, ..
            } => self
                .cache
                .receive(self.id, block, data, Level::Origin, hops, out),
            Msg::Forward {
                block,
                reader,
                hops,
            } => self.on_forward(block, reader, hops, out),
            Msg::Singlet { block, singlet } => self.on_singlet_answer(block, singlet, out),
            Msg::Recirculate {
                block,
                data,
                chances,
            } => {
                if self.incoming.len() >= MAX_INCOMING {
                    self.let_go(block, Some(data), out);
                } else {
                    self.incoming.push_back(Incoming {
                        block,
                        data,
                        chances,
                    });
                    self.admit_incoming(out);
                }
            }
            Msg::Invalidate { block } => {
                self.unmark_gone(block);
                self.limbo.remove(&block);
                // A forwarded copy still waiting for room goes too: it may
                // be the copy being invalidated (its digest failed), and
                // admitted later it would be served unchecked.
                self.incoming.retain(|i| i.block != block);
                self.cache.remove(block);
            }
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

    /// Capacity, and every cached block has a status, with a recirculation
    /// count between 1 and `n` if it recirculates.
    fn check_invariants(&self) -> Result<(), String> {
        if self.len() > self.capacity() {
            return Err(format!(
                "{} blocks in a cache of {}",
                self.len(),
                self.capacity()
            ));
        }
        for block in self.cache.policy.iter_oldest_first() {
            match self.status.find(block).map(|i| self.status.meta(i).mark()) {
                None => return Err(format!("cached block {block:?} has no status")),
                Some(Some(Mark::Recirculating(c))) if c == 0 || c > self.n => {
                    return Err(format!(
                        "block {block:?} recirculates with {c} chances, n = {}",
                        self.n
                    ));
                }
                Some(_) => {}
            }
        }
        for list in 0..STATUS_LISTS {
            for idx in self.status.iter_from_tail(list) {
                let block = self.status.key(idx);
                if !self.cache.contains(block) {
                    return Err(format!("block {block:?} has a status but is not cached"));
                }
            }
        }
        if !self.is_quiet() {
            return Err("questions to the manager still pending at quiescence".into());
        }
        Ok(())
    }

    fn is_quiet(&self) -> bool {
        self.limbo.is_empty() && self.asking.is_none() && self.incoming.is_empty()
    }

    fn capacity(&self) -> usize {
        self.cache.policy.capacity()
    }
}

impl<K, P, S> LiveNode<K, S::Data> for NChanceNode<K, P, S>
where
    K: BlockKey + SizeClassed,
    P: Policy<K> + Send,
    S: BlockStore<K> + Send,
    S::Data: Send,
{
    fn set_peers(&mut self, live: &[NodeId]) {
        NChanceNode::set_peers(self, live);
    }

    fn data(&self, block: K) -> Option<S::Data> {
        self.cache.get(block)
    }

    fn usage(&self) -> StoreUsage {
        self.cache.store.usage()
    }

    /// The recirculating blocks: singlets peers forwarded here.
    fn foreign(&self) -> usize {
        (1..=MAX_CHANCES)
            .map(|c| {
                let list = Status::of(Some(Mark::Recirculating(c))).list();
                self.status.list(list).len()
            })
            .sum()
    }

    fn set_lenders(&mut self, lenders: &[NodeId]) {
        self.lenders.clear();
        self.lenders
            .extend(lenders.iter().copied().filter(|&p| p != self.id));
    }
}
