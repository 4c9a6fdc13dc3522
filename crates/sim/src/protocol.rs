//! The live protocol, simulated: a cluster of the core's
//! [`NodeProtocol`]s (the code every `coopcache node` runs) over an
//! in-order network and a virtual clock, with digests in place of bytes.
//!
//! Every message and origin read goes through one queue in the order it
//! was sent, so a replay is deterministic: the same trace and seed give
//! the same levels, the same caches and the same messages, every time.
//! Timers fire only when the queue is empty (virtual time jumps to the
//! next deadline), so with no faults no read ever times out.

use coopcache_core::coop::{AlgorithmKind, ConfigError, Level, LiveShape, NodeId, SizeClassed};
use coopcache_core::policy::splitmix64;
use coopcache_core::protocol::{
    Action, Digest, DigestSealer, DiskMiss, DiskSettings, HostId, NodeProtocol, PeerMsg,
    ProtocolConfig, ProtocolKey, ReadFailure, Served,
};
use std::collections::{BTreeMap, VecDeque};
use std::hash::{BuildHasher, Hash};

/// Something in flight.
#[derive(Clone, Debug)]
enum InFlight<K> {
    /// A message between nodes (or from a node to itself, in
    /// [`Order::Fifo`]).
    Message {
        from: NodeId,
        to: NodeId,
        msg: PeerMsg<K, Digest>,
    },
    /// An origin read `node` started.
    Origin { node: NodeId, block: K },
    /// A read of `node`'s disk slot.
    DiskRead { node: NodeId, block: K, slot: u32 },
}

impl<K> InFlight<K> {
    /// The ordered channel it travels on: a link keeps its order (one TCP
    /// connection per pair of members), links overtake each other.
    fn link(&self) -> (NodeId, Option<NodeId>) {
        match self {
            InFlight::Message { from, to, .. } => (*from, Some(*to)),
            InFlight::Origin { node, .. } | InFlight::DiskRead { node, .. } => (*node, None),
        }
    }
}

/// The order messages are delivered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// A node's messages to itself first (as a daemon handles them), then
    /// everything else in the order sent.
    LocalFirst,
    /// Everything, a node's messages to itself included, in the order
    /// sent: the paper's simulator's single queue.
    Fifo,
}

/// What a simulated live cluster did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Messages delivered between nodes.
    pub messages: u64,
    /// Origin reads.
    pub origin_reads: u64,
    /// Reads of the nodes' disk tiers ([`LiveCluster::set_disk`]).
    pub disk_reads: u64,
    /// Violations reported by any node (none in an honest cluster).
    pub violations: u64,
    /// Integrity failures reported: by whom, blaming whom.
    pub blamed: Vec<(NodeId, NodeId)>,
}

/// A test's hook on every message delivered between nodes: sender,
/// receiver, the message (to alter or observe).
pub type Tamper<K> = Box<dyn FnMut(NodeId, NodeId, &mut PeerMsg<K, Digest>)>;

/// Messages an outsider received: from whom, what.
pub type Inbox<K> = Vec<(NodeId, PeerMsg<K, Digest>)>;

/// A simulated live cluster.
pub struct LiveCluster<K> {
    nodes: Vec<NodeProtocol<K, Digest>>,
    /// Members with no protocol of their own (a hostile member a test
    /// speaks for): what the nodes sent each, in order.
    outsiders: BTreeMap<NodeId, Inbox<K>>,
    queue: VecDeque<InFlight<K>>,
    /// What a test does to each message between nodes as it is delivered
    /// (a host altering what it returns, say).
    tamper: Option<Tamper<K>>,
    now: u64,
    block_size: u32,
    /// Reads finished since the last [`LiveCluster::take_done`].
    done: Vec<(NodeId, K, Result<Served<Digest>, ReadFailure>)>,
    stats: LiveStats,
    /// With a state, links interleave at random (see
    /// [`LiveCluster::interleave_links`]).
    shuffle: Option<u64>,
    /// The nodes' disk tiers' slots ([`LiveCluster::set_disk`]).
    disks: crate::disks::Disks<K>,
}

/// Steps one quiescence may take before the replay gives up (a protocol
/// that never settles is a bug, not a long run).
const MAX_STEPS: usize = 10_000_000;

/// The simulated cluster never settled.
#[derive(Clone, Copy, Debug, thiserror::Error, PartialEq, Eq)]
#[error("the simulated live cluster did not go quiet within {MAX_STEPS} steps")]
pub struct NeverQuiet;

impl<K: ProtocolKey + SizeClassed> LiveCluster<K> {
    /// `nodes` nodes running `kind`, each shaped by `shape` (node `i`
    /// seeded with `shape.seed`, as every daemon is by default), all
    /// members of each other, moving blocks of `block_size` bytes. Each
    /// node handles its messages to itself at once, as a daemon does.
    pub fn new(
        kind: AlgorithmKind,
        nodes: u32,
        shape: &LiveShape,
        block_size: u32,
    ) -> Result<Self, ConfigError> {
        Self::with_order(kind, nodes, shape, block_size, Order::LocalFirst)
    }

    /// As [`LiveCluster::new`], delivering messages in `order`.
    pub fn with_order(
        kind: AlgorithmKind,
        nodes: u32,
        shape: &LiveShape,
        block_size: u32,
        order: Order,
    ) -> Result<Self, ConfigError> {
        // No pings: no member hears another's memory (none lends), and in
        // virtual time their round trips would only add noise.
        Self::with_order_and_pings(kind, nodes, shape, block_size, order, u64::MAX / 4)
    }

    /// As [`LiveCluster::new`], every node pinging every peer each
    /// `every_us` of virtual time (what members learn of each other's
    /// round trips and memory; see [`LiveCluster::run_for`]).
    pub fn with_pings(
        kind: AlgorithmKind,
        nodes: u32,
        shape: &LiveShape,
        block_size: u32,
        every_us: u64,
    ) -> Result<Self, ConfigError> {
        Self::with_order_and_pings(kind, nodes, shape, block_size, Order::LocalFirst, every_us)
    }

    /// As [`LiveCluster::with_pings`], delivering messages in `order`.
    pub fn with_order_and_pings(
        kind: AlgorithmKind,
        nodes: u32,
        shape: &LiveShape,
        block_size: u32,
        order: Order,
        every_us: u64,
    ) -> Result<Self, ConfigError> {
        let mut cfg = ProtocolConfig::for_node(shape.capacity, block_size);
        cfg.local_first = order == Order::LocalFirst;
        cfg.ping_every_us = every_us;
        Self::build(kind, nodes, shape, block_size, cfg)
    }

    fn build(
        kind: AlgorithmKind,
        nodes: u32,
        shape: &LiveShape,
        block_size: u32,
        cfg: ProtocolConfig,
    ) -> Result<Self, ConfigError> {
        let mut all = Vec::new();
        for id in 0..nodes {
            let machines = kind.build_live(id, shape)?;
            all.push(NodeProtocol::new(id, kind, machines, cfg, 0));
        }
        let members: Vec<NodeId> = (0..nodes).collect();
        for n in &mut all {
            n.set_members(&members, 0);
        }
        let mut cluster = LiveCluster {
            nodes: all,
            outsiders: BTreeMap::new(),
            queue: VecDeque::new(),
            tamper: None,
            now: 0,
            block_size,
            done: Vec::new(),
            stats: LiveStats::default(),
            shuffle: None,
            disks: Default::default(),
        };
        for id in 0..nodes {
            cluster.collect(id);
        }
        Ok(cluster)
    }

    /// The origin's contents of `block`: a digest of its id (every block
    /// distinct, every node agreeing).
    pub fn content(&self, block: K) -> Digest {
        content_of(&block, self.block_size)
    }

    /// The nodes.
    pub fn nodes(&self) -> &[NodeProtocol<K, Digest>] {
        &self.nodes
    }

    /// Makes node `node`'s origin private: its blocks are parked sealed
    /// (by a [`DigestSealer`] under a key of its own) and checked on
    /// return against its own digests of up to `max_parked` blocks, and
    /// no manager hears of them.
    pub fn set_private(&mut self, node: NodeId, max_parked: usize)
    where
        K: Send + HostId,
    {
        let sealer = DigestSealer::new(Self::sealing_key(node));
        self.nodes[node as usize].set_private(Box::new(sealer), max_parked);
    }

    /// As [`Self::set_private`], unifying the blocks of every file but the
    /// `critical` ones under the dedup key `dedup`: identical blocks of
    /// owners with the same dedup key are parked under one content id.
    pub fn set_private_unifying(
        &mut self,
        node: NodeId,
        max_parked: usize,
        dedup: u64,
        critical: fn(u64) -> bool,
    ) where
        K: Send + HostId,
    {
        let sealer = DigestSealer::unifying(Self::sealing_key(node), dedup, critical);
        self.nodes[node as usize].set_private(Box::new(sealer), max_parked);
    }

    /// Node `node`'s own sealing key.
    fn sealing_key(node: NodeId) -> u64 {
        0x5ea1 ^ u64::from(node).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// Runs `tamper` on every message between nodes as it is delivered.
    pub fn set_tamper(&mut self, tamper: Tamper<K>) {
        self.tamper = Some(tamper);
    }

    /// What the cluster did so far.
    pub fn stats(&self) -> &LiveStats {
        &self.stats
    }

    /// Makes `id` a member every node knows, with no protocol behind it:
    /// what the nodes send it is kept for [`LiveCluster::take_inbox`], and
    /// [`LiveCluster::inject`] speaks for it.
    pub fn add_outsider(&mut self, id: NodeId) {
        self.outsiders.entry(id).or_default();
        let members: Vec<NodeId> = (0..self.nodes.len() as NodeId)
            .chain(self.outsiders.keys().copied())
            .collect();
        for n in 0..self.nodes.len() as NodeId {
            self.nodes[n as usize].set_members(&members, self.now);
            self.collect(n);
        }
    }

    /// What the nodes sent outsider `id` since last asked.
    pub fn take_inbox(&mut self, id: NodeId) -> Inbox<K> {
        self.outsiders
            .get_mut(&id)
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Queues `msg` from `from` (an outsider, as its link would say) to
    /// node `to`, behind everything in flight.
    pub fn inject(&mut self, from: NodeId, to: NodeId, msg: PeerMsg<K, Digest>) {
        self.queue.push_back(InFlight::Message { from, to, msg });
    }

    /// Node `node` starts reading `block`; nothing is delivered yet.
    pub fn start_read(&mut self, node: NodeId, block: K) {
        self.now += 1;
        self.nodes[node as usize].handle_read(block, self.now);
        self.collect(node);
    }

    /// How `node`'s read of `block` finished, if it has.
    pub fn take_done(
        &mut self,
        node: NodeId,
        block: K,
    ) -> Option<Result<Served<Digest>, ReadFailure>> {
        let pos = self
            .done
            .iter()
            .position(|(n, b, _)| *n == node && *b == block)?;
        Some(self.done.remove(pos).2)
    }

    /// Node `node` reads `block`, and the cluster runs until quiet.
    /// Returns how the read finished (`None` if it did not: a bug).
    pub fn read(
        &mut self,
        node: NodeId,
        block: K,
    ) -> Result<Option<Result<Served<Digest>, ReadFailure>>, NeverQuiet> {
        self.now += 1;
        self.nodes[node as usize].handle_read(block, self.now);
        self.collect(node);
        self.run_until_quiet()?;
        let pos = self
            .done
            .iter()
            .position(|(n, b, _)| *n == node && *b == block);
        Ok(pos.map(|i| self.done.remove(i).2))
    }

    /// Node `reader`'s read of `block`, carried to `manager` inside another
    /// request (a C2Cfs open, `c2cfs::exclusive`): `manager` serves it as a
    /// `Read` from `reader`, then `reader` starts it without asking (as it
    /// does on the open's answer), and the cluster runs until quiet.
    /// Returns how the read finished (`None` if it did not).
    pub fn read_served(
        &mut self,
        reader: NodeId,
        manager: NodeId,
        block: K,
    ) -> Result<Option<Result<Served<Digest>, ReadFailure>>, NeverQuiet> {
        self.now += 1;
        self.nodes[manager as usize].handle_read_for(reader, block, self.now);
        self.collect(manager);
        self.nodes[reader as usize].handle_read_asked(block, manager, self.now);
        self.collect(reader);
        self.run_until_quiet()?;
        Ok(self.take_done(reader, block))
    }

    /// Delivers the oldest message in flight that `pick` chooses (by
    /// sender, receiver and message), ahead of the others: one link
    /// overtaking another. False if none is chosen.
    pub fn deliver_first(
        &mut self,
        pick: impl Fn(NodeId, NodeId, &PeerMsg<K, Digest>) -> bool,
    ) -> bool {
        let at = self.queue.iter().position(|e| match e {
            InFlight::Message { from, to, msg } => pick(*from, *to, msg),
            InFlight::Origin { .. } | InFlight::DiskRead { .. } => false,
        });
        match at.and_then(|i| self.queue.remove(i)) {
            Some(event) => {
                self.deliver(event);
                true
            }
            None => false,
        }
    }

    /// Node `node`'s protocol, to drive by hand (collected after).
    pub fn node_mut(&mut self, node: NodeId) -> &mut NodeProtocol<K, Digest> {
        &mut self.nodes[node as usize]
    }

    /// Gives node `node` a disk tier of `slots` slots, empty.
    pub fn set_disk(&mut self, node: NodeId, slots: u32) {
        self.nodes[node as usize].set_disk(DiskSettings::unbounded(slots));
        self.disks.add(node);
    }

    /// Node `node`'s disk slots: what each holds (a test alters them to
    /// play a failing disk).
    pub fn disk_mut(&mut self, node: NodeId) -> Option<&mut crate::disks::Slots<K>> {
        self.disks.of(node)
    }

    /// Takes what node `node` decided into the queue and the results.
    pub fn collect_node(&mut self, node: NodeId) {
        self.collect(node);
    }

    /// Delivers the oldest thing in flight, if any (no timer fires).
    pub fn step(&mut self) -> bool {
        match self.next_in_flight() {
            Some(event) => {
                self.deliver(event);
                true
            }
            None => false,
        }
    }

    /// Delivers everything in flight, firing timers when nothing is, until
    /// every node is quiet.
    pub fn run_until_quiet(&mut self) -> Result<(), NeverQuiet> {
        for _ in 0..MAX_STEPS {
            if let Some(event) = self.next_in_flight() {
                self.deliver(event);
                continue;
            }
            if self.nodes.iter().all(|n| n.is_quiet()) {
                return Ok(());
            }
            let Some(next) = self.nodes.iter().filter_map(|n| n.poll_timeout()).min() else {
                return Ok(());
            };
            self.fire_timers(next);
        }
        Err(NeverQuiet)
    }

    /// Runs for `us` microseconds of simulated time: everything in
    /// flight is delivered and every timer due fires (pings among them).
    pub fn run_for(&mut self, us: u64) -> Result<(), NeverQuiet> {
        let until = self.now + us;
        for _ in 0..MAX_STEPS {
            if let Some(event) = self.next_in_flight() {
                self.deliver(event);
                continue;
            }
            let next = self.nodes.iter().filter_map(|n| n.poll_timeout()).min();
            let Some(next) = next.filter(|&t| t <= until) else {
                self.now = until;
                return Ok(());
            };
            self.fire_timers(next);
        }
        Err(NeverQuiet)
    }

    /// Moves time on to `at`, firing every timer due, while what is in
    /// flight stays in flight (a slow origin read, a slow link).
    pub fn advance(&mut self, at: u64) {
        while let Some(next) = self.nodes.iter().filter_map(|n| n.poll_timeout()).min() {
            if next > at {
                break;
            }
            self.fire_timers(next);
        }
        self.now = self.now.max(at);
    }

    /// Moves time on to `at` (never back) and fires every timer due.
    fn fire_timers(&mut self, at: u64) {
        self.now = self.now.max(at);
        for id in 0..self.nodes.len() as NodeId {
            self.nodes[id as usize].handle_timeout(self.now);
            self.collect(id);
        }
    }

    /// Node `node`'s live members are now `members` (as its membership
    /// would tell it when a peer leaves or joins).
    pub fn set_members(&mut self, node: NodeId, members: &[NodeId]) {
        self.nodes[node as usize].set_members(members, self.now);
        self.collect(node);
    }

    /// From now on, what is in flight on different links is delivered in
    /// an order drawn from `seed`, each link keeping its own order: what
    /// a real network does, where a holder's contents may overtake the
    /// manager's word naming that holder.
    pub fn interleave_links(&mut self, seed: u64) {
        self.shuffle = Some(seed);
    }

    /// The next thing to deliver: the oldest, or with links interleaved,
    /// the oldest on a link drawn at random.
    fn next_in_flight(&mut self) -> Option<InFlight<K>> {
        let Some(state) = &mut self.shuffle else {
            return self.queue.pop_front();
        };
        if self.queue.is_empty() {
            return None;
        }
        let drawn = (splitmix64(state) % self.queue.len() as u64) as usize;
        let link = self.queue[drawn].link();
        let first = self.queue.iter().position(|e| e.link() == link);
        self.queue.remove(first.unwrap_or(drawn))
    }

    /// Simulated time now, microseconds.
    pub fn now(&self) -> u64 {
        self.now
    }

    fn deliver(&mut self, event: InFlight<K>) {
        let now = self.now;
        match event {
            InFlight::Message { from, to, mut msg } => {
                self.stats.messages += 1;
                if let Some(tamper) = &mut self.tamper {
                    tamper(from, to, &mut msg);
                }
                if let Some(inbox) = self.outsiders.get_mut(&to) {
                    return inbox.push((from, msg));
                }
                self.nodes[to as usize].handle_message(from, msg, now);
                self.collect(to);
            }
            InFlight::Origin { node, block } => {
                self.stats.origin_reads += 1;
                let data = self.content(block);
                self.nodes[node as usize].handle_origin_done(block, Ok(data), now);
                self.collect(node);
            }
            InFlight::DiskRead { node, block, slot } => {
                self.stats.disk_reads += 1;
                let found = self.disks.read(node, block, slot).ok_or(DiskMiss::NotThere);
                self.nodes[node as usize].handle_disk_read(block, found, now);
                self.collect(node);
            }
        }
    }

    /// Queues what `node` asked for, in order.
    fn collect(&mut self, node: NodeId) {
        while let Some(action) = self.nodes[node as usize].poll() {
            match action {
                Action::Send { to, msg } => self.queue.push_back(InFlight::Message {
                    from: node,
                    to,
                    msg,
                }),
                Action::ReadOrigin { block } => {
                    self.queue.push_back(InFlight::Origin { node, block })
                }
                Action::ReadDisk { block, slot } => {
                    self.queue
                        .push_back(InFlight::DiskRead { node, block, slot })
                }
                // Written at once: a simulated disk neither fails nor lags.
                Action::WriteDisk { block, slot, data } => {
                    self.disks.write(node, slot, block, data);
                    self.nodes[node as usize].handle_disk_written(block, slot, true, self.now);
                }
                // A simulated disk never fails, so is never given up.
                Action::ReopenDisk => {}
                Action::Complete { block, result } => self.done.push((node, block, result)),
                Action::Violation { .. } => self.stats.violations += 1,
                Action::IntegrityFailure {
                    sender,
                    recorder,
                    verdict,
                    ..
                } => self
                    .stats
                    .blamed
                    .push((node, verdict.blamed(sender, recorder))),
            }
        }
    }
}

/// The digest the origin's contents of `block` have, in blocks of
/// `block_size` bytes.
pub fn content_of<K: Hash>(block: &K, block_size: u32) -> Digest {
    let mut hash = [0u8; 32];
    for (i, chunk) in hash.chunks_mut(8).enumerate() {
        let h = foldhash::fast::FixedState::with_seed(0x6c69_7665 + i as u64).hash_one(block);
        chunk.copy_from_slice(&h.to_le_bytes());
    }
    Digest {
        hash,
        len: block_size,
    }
}

/// A level, for a finished read.
pub fn level_of(result: &Result<Served<Digest>, ReadFailure>) -> Option<Level> {
    result.as_ref().ok().map(|s| s.level)
}
