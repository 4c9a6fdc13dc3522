//! The node driver: one task owning the node's core state machines (its
//! node machine and its slice of the manager), fed by client reads, peer
//! frames, origin completions and a clock tick. It routes what the
//! machines send, verifies every block a peer sends against the hash its
//! manager recorded, reads the origin on the manager's word, and falls back
//! to the origin when a peer is late.

use crate::block::{BlockId, manager_of};
use crate::frame::{Hash, Wire};
use crate::link::{LinkCtx, LinkTx, link_channels, run_link};
use crate::machine::{LiveManager, LiveNode};
use crate::membership::{Change, Effects, GossipError, Swim, SwimId};
use crate::metrics::Metrics;
use crate::origin::{FileVersion, Origin, OriginError};
use crate::store::SharedStore;
use bytes::Bytes;
use coopcache_core::coop::{Addr, BlockStore, Level, ManagerMachine, Msg, NodeId, Outbox};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Reads in flight at once at one node; more wait for a slot.
pub const MAX_PENDING: usize = 4096;

/// Hashes a manager keeps per block its node may cache (its own share of
/// the cluster's blocks, with room for imbalance); beyond, the oldest go.
const HASHES_PER_BLOCK: usize = 4;

/// Forwarded singlets waiting for their hash.
const MAX_UNVERIFIED: usize = 64;

/// Members remembered as declared down (the oldest is forgotten first).
const MAX_DOWN: usize = crate::frame::MAX_MEMBERS;

/// Links (dialled addresses) at once.
const MAX_LINKS: usize = crate::frame::MAX_MEMBERS;

/// Why a read failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ReadError {
    /// The origin failed.
    #[error("{0}")]
    Origin(Arc<OriginError>),
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Shutdown,
}

/// What the driver reacts to.
pub enum Event {
    /// A user reads `block` of `path` at `version`.
    Read {
        /// The file.
        path: Arc<str>,
        /// Its version.
        version: Arc<FileVersion>,
        /// The block.
        block: BlockId,
        /// Where the bytes go.
        reply: oneshot::Sender<Result<(Bytes, Level), ReadError>>,
    },
    /// A frame from a peer.
    Frame {
        /// The peer.
        from: NodeId,
        /// The frame.
        wire: Wire,
    },
    /// A link dialled to `addr` is up.
    LinkUp {
        /// The address dialled.
        addr: String,
        /// The peer's id.
        id: NodeId,
        /// Its name.
        name: String,
        /// Its listen address.
        listen: String,
    },
    /// A link is down (or could not connect).
    LinkDown {
        /// The address dialled.
        addr: String,
        /// The peer's id, if it had connected.
        id: Option<NodeId>,
    },
    /// An origin read finished.
    OriginDone {
        /// The block.
        block: BlockId,
        /// Hops of the read's path so far.
        hops: u8,
        /// How long the origin took.
        took: Duration,
        /// The bytes or the error.
        result: Result<Bytes, Arc<OriginError>>,
    },
    /// Asks for the node's status.
    Status(oneshot::Sender<Status>),
    /// Dial this address (a seed).
    Join(String),
}

/// A member as `status` shows it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct MemberStatus {
    /// Node id.
    pub id: NodeId,
    /// Name.
    pub name: String,
    /// Listen address.
    pub listen: String,
    /// Smoothed round-trip time in microseconds, if measured.
    pub rtt_us: Option<u64>,
}

/// A node's status.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Status {
    /// This node.
    pub id: NodeId,
    /// Its name.
    pub name: String,
    /// Algorithm.
    pub algorithm: String,
    /// Live members, this one first.
    pub members: Vec<MemberStatus>,
    /// Bytes of cached blocks.
    pub cached_bytes: u64,
    /// Blocks cached.
    pub cached_blocks: u64,
    /// Memory budget.
    pub budget_bytes: u64,
    /// Block reads by level: local, manager, peer, origin.
    pub reads: BTreeMap<String, u64>,
    /// Origin reads and bytes.
    pub origin_reads: u64,
    /// Bytes from the origin.
    pub origin_bytes: u64,
    /// Blocks from peers that failed verification.
    pub integrity_failures: u64,
    /// Reads that timed out on a peer.
    pub timeouts: u64,
    /// Peer connection errors.
    pub peer_errors: u64,
}

/// Where a pending read stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Asked the cluster; waiting for a peer's data or the manager's word.
    Cluster,
    /// Reading the origin.
    Origin,
    /// The machine served it from a forwarded singlet whose hash is still
    /// being checked with its manager: the bytes wait for the verdict.
    Held,
}

struct Pending {
    path: Arc<str>,
    version: Arc<FileVersion>,
    waiters: Vec<oneshot::Sender<Result<(Bytes, Level), ReadError>>>,
    stage: Stage,
    deadline: Instant,
    /// The hash the manager said a peer's data must have.
    expect: Option<(Hash, u32)>,
    /// A peer's data that arrived before the manager's `Expect`.
    early: Option<(NodeId, Msg<BlockId, Bytes>)>,
    /// Verified bytes, for the completion.
    data: Option<Bytes>,
    /// The machine already completed this read (it was held on an
    /// unverified singlet that then failed): the origin's bytes go
    /// straight to the waiters.
    machine_done: bool,
}

/// A forwarded singlet the machine took before its hash was confirmed.
struct Unverified {
    sender: NodeId,
    data: Bytes,
    /// When to give up on the manager's answer and drop it.
    deadline: Instant,
}

struct Member {
    name: String,
    listen: String,
    queue: mpsc::Sender<Wire>,
    /// SWIM datagrams, sent ahead of `queue`.
    gossip: mpsc::Sender<Wire>,
    rtt: Option<Duration>,
}

/// A message with its sender's role, held back for later delivery.
type Addressed = (Addr, Msg<BlockId, Bytes>);

/// The driver's settings.
pub struct DriverConfig {
    /// This node's id.
    pub id: NodeId,
    /// Its name.
    pub name: String,
    /// Algorithm.
    pub algorithm: String,
    /// Block size.
    pub block_size: u32,
    /// Memory budget.
    pub budget: u64,
    /// Cached blocks allowed.
    pub capacity: usize,
    /// Timeout floor for waiting on peers.
    pub min_timeout: Duration,
}

/// The driver's state.
pub struct Driver {
    cfg: DriverConfig,
    node: LiveNode,
    manager: LiveManager,
    store: SharedStore,
    out: Outbox<BlockId, Bytes>,
    /// What the manager slice sends, checked before it joins `out`.
    mgr_out: Outbox<BlockId, Bytes>,
    origin: Arc<Origin>,
    metrics: Arc<Metrics>,
    ctx: Arc<LinkCtx>,
    events: mpsc::Sender<Event>,
    /// Links by dialled address.
    links: HashMap<String, LinkTx>,
    /// Linked members other than this node (live unless in `down`).
    members: BTreeMap<NodeId, Member>,
    /// Members SWIM declared down: not live even while a link to them is
    /// up, until SWIM sees them (or their next incarnation) alive again.
    down: BTreeSet<NodeId>,
    /// The SWIM failure detector.
    swim: Swim,
    /// Live member ids, this node included, sorted.
    live: Vec<NodeId>,
    pending: HashMap<BlockId, Pending>,
    /// Reads waiting for a slot when `MAX_PENDING` are in flight.
    queued: VecDeque<Event>,
    /// Forwards for blocks this node is still reading: served when its
    /// data arrives (cluster-wide singleflight).
    deferred: HashMap<BlockId, Vec<Addressed>>,
    /// The manager's record of each block's hash, oldest first for
    /// trimming.
    hashes: HashMap<BlockId, (Hash, u32)>,
    hash_order: VecDeque<BlockId>,
    /// Forwarded singlets the machine holds whose hash the manager has
    /// not yet confirmed: their bytes, and who sent them.
    unverified: HashMap<BlockId, Unverified>,
    /// Ping nonces in flight.
    pings: HashMap<u64, (NodeId, Instant)>,
    nonce: u64,
    /// Smoothed origin read time (an eighth of each new sample).
    origin_time: Duration,
    started: Instant,
}

fn blake3_of(data: &[u8]) -> Hash {
    *blake3::hash(data).as_bytes()
}

impl Driver {
    /// A driver for `node` and `manager`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: DriverConfig,
        node: LiveNode,
        manager: LiveManager,
        store: SharedStore,
        origin: Arc<Origin>,
        metrics: Arc<Metrics>,
        ctx: Arc<LinkCtx>,
        events: mpsc::Sender<Event>,
    ) -> Driver {
        metrics.budget_bytes.set(cfg.budget as i64);
        metrics.members.set(1);
        let live = vec![cfg.id];
        // The start time as the first incarnation: a restarted node is a
        // new SWIM identity that wins over the one its peers remember.
        let incarnation = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_micros() as u64);
        let swim = Swim::new(
            SwimId {
                node: cfg.id,
                listen: ctx.listen.clone(),
                incarnation,
            },
            incarnation,
        );
        Driver {
            cfg,
            node,
            manager,
            store,
            out: Outbox::default(),
            mgr_out: Outbox::default(),
            origin,
            metrics,
            ctx,
            events,
            links: HashMap::new(),
            members: BTreeMap::new(),
            down: BTreeSet::new(),
            swim,
            live,
            pending: HashMap::new(),
            queued: VecDeque::new(),
            deferred: HashMap::new(),
            hashes: HashMap::new(),
            hash_order: VecDeque::new(),
            unverified: HashMap::new(),
            pings: HashMap::new(),
            nonce: 0,
            origin_time: Duration::ZERO,
            started: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// Runs until every event sender is gone.
    pub async fn run(mut self, mut events: mpsc::Receiver<Event>) {
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last_ping = Instant::now();
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(ev) => self.on_event(ev),
                    None => break,
                },
                _ = tick.tick() => {
                    self.swim_tick();
                    self.expire();
                    if last_ping.elapsed() >= Duration::from_secs(1) {
                        last_ping = Instant::now();
                        self.ping_all();
                    }
                }
            }
        }
        for p in self.pending.drain() {
            for w in p.1.waiters {
                let _ = w.send(Err(ReadError::Shutdown));
            }
        }
    }

    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Read {
                path,
                version,
                block,
                reply,
            } => self.read(path, version, block, reply),
            Event::Frame { from, wire } => self.on_frame(from, wire),
            Event::LinkUp {
                addr,
                id,
                name,
                listen,
            } => self.link_up(addr, id, name, listen),
            Event::LinkDown { addr, id } => self.link_down(&addr, id),
            Event::OriginDone {
                block,
                hops,
                took,
                result,
            } => {
                self.origin_time = (self.origin_time * 7 + took) / 8;
                self.origin_done(block, hops, result)
            }
            Event::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Event::Join(addr) => self.dial(addr),
        }
        self.pump();
    }

    // ---- reads -------------------------------------------------------

    fn read(
        &mut self,
        path: Arc<str>,
        version: Arc<FileVersion>,
        block: BlockId,
        reply: oneshot::Sender<Result<(Bytes, Level), ReadError>>,
    ) {
        if let Some(p) = self.pending.get_mut(&block) {
            p.waiters.push(reply);
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.queued.push_back(Event::Read {
                path,
                version,
                block,
                reply,
            });
            return;
        }
        self.pending.insert(
            block,
            Pending {
                path,
                version,
                waiters: vec![reply],
                stage: Stage::Cluster,
                deadline: Instant::now() + self.peer_timeout(),
                expect: None,
                early: None,
                data: None,
                machine_done: false,
            },
        );
        let now = self.now();
        self.node.read(block, now, &mut self.out);
    }

    /// How long to wait on peers before reading the origin: ten smoothed
    /// round trips of the slowest live peer plus two origin reads (a
    /// forwarded read may wait on the holder's own origin read), at least
    /// the configured floor.
    fn peer_timeout(&self) -> Duration {
        let rtt = self
            .members
            .values()
            .filter_map(|m| m.rtt)
            .max()
            .unwrap_or(Duration::from_millis(1));
        (rtt * 10 + self.origin_time * 2).max(self.cfg.min_timeout)
    }

    /// Reads past their deadline go to the origin; a forwarded singlet
    /// whose hash never came is dropped unverified.
    fn expire(&mut self) {
        let now = Instant::now();
        let late: Vec<BlockId> = self
            .pending
            .iter()
            .filter(|(_, p)| p.stage == Stage::Cluster && p.deadline <= now)
            .map(|(&b, _)| b)
            .collect();
        for block in late {
            self.metrics.timeouts.inc();
            tracing::debug!(?block, "peer timeout; reading the origin");
            self.start_origin_read(block, 2);
        }
        let unanswered: Vec<BlockId> = self
            .unverified
            .iter()
            .filter(|(_, u)| u.deadline <= now)
            .map(|(&b, _)| b)
            .collect();
        for block in unanswered {
            self.metrics.timeouts.inc();
            self.verify_recirculated(block, None);
        }
        self.pump();
    }

    fn start_origin_read(&mut self, block: BlockId, hops: u8) {
        let Some(p) = self.pending.get_mut(&block) else {
            return;
        };
        if p.stage == Stage::Origin {
            return;
        }
        p.stage = Stage::Origin;
        let (path, version) = (p.path.clone(), p.version.clone());
        let origin = self.origin.clone();
        let events = self.events.clone();
        let bs = u64::from(self.cfg.block_size);
        let start = u64::from(block.index) * bs;
        let end = (start + bs).min(version.size);
        self.metrics.origin_reads.inc();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = origin
                .read(&path, &version, start..end)
                .await
                .map_err(Arc::new);
            let _ = events
                .send(Event::OriginDone {
                    block,
                    hops,
                    took: started.elapsed(),
                    result,
                })
                .await;
        });
    }

    fn origin_done(&mut self, block: BlockId, hops: u8, result: Result<Bytes, Arc<OriginError>>) {
        let Some(p) = self.pending.get_mut(&block) else {
            return;
        };
        match result {
            Ok(data) => {
                self.metrics.origin_bytes.inc_by(data.len() as u64);
                let hash = blake3_of(&data);
                let len = data.len() as u32;
                if p.machine_done {
                    let p = self.pending.remove(&block).expect("checked above");
                    self.finish(block, p, data, Level::Origin);
                    return;
                }
                p.data = Some(data.clone());
                self.send_to_manager(block, Wire::Record { block, hash, len });
                let msg = Msg::Data {
                    block,
                    data,
                    level: Level::Origin,
                    hops: hops.saturating_add(1),
                };
                let now = self.now();
                self.node.handle(Addr::Manager, msg, now, &mut self.out);
            }
            Err(e) => {
                self.metrics.read_errors.inc();
                let p = self.pending.remove(&block).expect("checked above");
                for w in p.waiters {
                    let _ = w.send(Err(ReadError::Origin(e.clone())));
                }
                // The machine admitted the block on its miss: take it out
                // again and tell the manager.
                let now = self.now();
                self.node
                    .handle(Addr::Manager, Msg::Invalidate { block }, now, &mut self.out);
                self.out.send(
                    Addr::Node(self.cfg.id),
                    Addr::Manager,
                    Msg::Dropped { block },
                );
                self.release_deferred(block);
            }
        }
    }

    /// Finishes reads the machine completed.
    fn complete(&mut self) {
        let done: Vec<_> = self.out.drain_done().collect();
        for d in done {
            let Some(p) = self.pending.remove(&d.block) else {
                continue;
            };
            if d.level == Level::Local && self.unverified.contains_key(&d.block) {
                // A hit on a forwarded singlet not yet verified: its bytes
                // wait for the manager's hash.
                let held = Pending {
                    stage: Stage::Held,
                    machine_done: true,
                    ..p
                };
                self.pending.insert(d.block, held);
                continue;
            }
            match p.data.clone().or_else(|| self.store.get(d.block)) {
                Some(data) => self.finish(d.block, p, data, d.level),
                None => {
                    // Cached in the policy but its bytes never arrived (an
                    // earlier read of it failed): read the origin again.
                    self.pending.insert(d.block, Pending { data: None, ..p });
                    self.start_origin_read(d.block, 1);
                }
            }
        }
        self.metrics.cached_bytes.set(self.store.bytes() as i64);
        while self.pending.len() < MAX_PENDING {
            let Some(ev) = self.queued.pop_front() else {
                break;
            };
            self.on_event_no_pump(ev);
        }
    }

    /// Hands `data` to a finished read's waiters and serves the forwards
    /// that waited for it.
    fn finish(&mut self, block: BlockId, p: Pending, data: Bytes, level: Level) {
        self.metrics.read(level);
        for w in p.waiters {
            let _ = w.send(Ok((data.clone(), level)));
        }
        self.release_deferred(block);
    }

    fn on_event_no_pump(&mut self, ev: Event) {
        if let Event::Read {
            path,
            version,
            block,
            reply,
        } = ev
        {
            self.read(path, version, block, reply);
        }
    }

    fn release_deferred(&mut self, block: BlockId) {
        if let Some(msgs) = self.deferred.remove(&block) {
            let now = self.now();
            for (from, msg) in msgs {
                self.node.handle(from, msg, now, &mut self.out);
            }
        }
    }

    // ---- routing -----------------------------------------------------

    /// Delivers everything the machines sent, until quiet.
    fn pump(&mut self) {
        loop {
            while let Some(env) = self.out.next_message() {
                self.route(env.from, env.to, env.msg);
            }
            self.complete();
            if self.out.pending() == 0 {
                break;
            }
        }
    }

    fn manager_for(&self, block: BlockId) -> NodeId {
        manager_of(block.file, &self.live).unwrap_or(self.cfg.id)
    }

    fn route(&mut self, from: Addr, to: Addr, msg: Msg<BlockId, Bytes>) {
        let me = self.cfg.id;
        match to {
            Addr::Node(n) if n == me => self.deliver_to_node(me, from, msg),
            Addr::Node(n) => self.send(n, Wire::Core { from, to, msg }),
            Addr::Manager => {
                // Weight (Weighted LRU) never runs live; any manager will do.
                let block = msg.block().unwrap_or(BlockId { file: 0, index: 0 });
                let m = self.manager_for(block);
                if m == me {
                    self.deliver_to_manager(me, msg);
                } else {
                    self.send(m, Wire::Core { from, to, msg });
                }
            }
            Addr::Origin => {
                // The manager's fetch: the reader reads the origin itself,
                // so the block crosses the network once.
                if let Msg::Fetch {
                    block,
                    reader,
                    hops,
                } = msg
                {
                    if reader == me {
                        self.start_origin_read(block, hops);
                    } else {
                        self.send(reader, Wire::FetchOrigin { block, hops });
                    }
                }
            }
        }
    }

    /// A message for this node's manager slice, from node `from`.
    fn deliver_to_manager(&mut self, from: NodeId, msg: Msg<BlockId, Bytes>) {
        let now = self.now();
        let mut out = std::mem::take(&mut self.mgr_out);
        self.manager.handle(Addr::Node(from), msg, now, &mut out);
        // A forward to a holder: tell the reader what the holder's data
        // must hash to, or, with no record to check it against, send the
        // reader to the origin instead.
        while let Some(env) = out.next_message() {
            match env.msg {
                Msg::Forward {
                    block,
                    reader,
                    hops,
                } => match self.hashes.get(&block).copied() {
                    Some((hash, len)) => {
                        self.deliver_to_reader(reader, Wire::Expect { block, hash, len });
                        self.out.send(env.from, env.to, env.msg);
                    }
                    None => self.out.send(
                        Addr::Manager,
                        Addr::Origin,
                        Msg::Fetch {
                            block,
                            reader,
                            hops,
                        },
                    ),
                },
                msg => self.out.send(env.from, env.to, msg),
            }
        }
        self.mgr_out = out;
    }

    fn deliver_to_reader(&mut self, reader: NodeId, wire: Wire) {
        if reader == self.cfg.id {
            self.on_wire(reader, wire);
        } else {
            self.send(reader, wire);
        }
    }

    /// A message for this node's machine.
    fn deliver_to_node(&mut self, sender: NodeId, from: Addr, msg: Msg<BlockId, Bytes>) {
        let now = self.now();
        match msg {
            Msg::Data { block, .. } => {
                let Some(p) = self.pending.get_mut(&block) else {
                    return; // late: the read went elsewhere; never keep unverified bytes
                };
                if p.stage != Stage::Cluster {
                    return;
                }
                match p.expect {
                    Some(expect) => self.verify_data(block, sender, msg, expect),
                    None => p.early = Some((sender, msg)),
                }
            }
            Msg::Recirculate {
                block, ref data, ..
            } => {
                // The machine takes the singlet at once, in the order the
                // simulator delivers it; its bytes are checked with the
                // manager before any local read uses them (a peer that
                // gets them checks them itself).
                if self.unverified.len() >= MAX_UNVERIFIED && !self.unverified.contains_key(&block)
                {
                    self.metrics.dropped_messages.inc();
                    self.out.send(
                        Addr::Node(self.cfg.id),
                        Addr::Manager,
                        Msg::Dropped { block },
                    );
                    return;
                }
                let u = Unverified {
                    sender,
                    data: data.clone(),
                    deadline: Instant::now() + self.peer_timeout(),
                };
                self.unverified.insert(block, u);
                self.send_to_manager(block, Wire::HashOf { block });
                self.node.handle(from, msg, now, &mut self.out);
            }
            Msg::Forward { block, .. } if self.pending.contains_key(&block) => {
                let d = self.deferred.entry(block).or_default();
                d.push((from, msg));
            }
            msg => self.node.handle(from, msg, now, &mut self.out),
        }
    }

    fn verify_data(
        &mut self,
        block: BlockId,
        sender: NodeId,
        msg: Msg<BlockId, Bytes>,
        (hash, len): (Hash, u32),
    ) {
        let Msg::Data { ref data, .. } = msg else {
            return;
        };
        if data.len() == len as usize && blake3_of(data) == hash {
            if let Some(p) = self.pending.get_mut(&block) {
                p.data = Some(data.clone());
            }
            let now = self.now();
            self.node
                .handle(Addr::Node(sender), msg, now, &mut self.out);
        } else {
            self.metrics.integrity_failures.inc();
            tracing::warn!(
                peer = sender,
                ?block,
                "block failed verification; reading the origin"
            );
            self.start_origin_read(block, 3);
        }
    }

    fn send_to_manager(&mut self, block: BlockId, wire: Wire) {
        let m = self.manager_for(block);
        if m == self.cfg.id {
            self.on_wire(m, wire);
        } else {
            self.send(m, wire);
        }
    }

    fn send(&mut self, to: NodeId, wire: Wire) {
        let ok = self
            .members
            .get(&to)
            .is_some_and(|m| m.queue.try_send(wire).is_ok());
        if !ok {
            self.metrics.dropped_messages.inc();
        }
    }

    // ---- frames --------------------------------------------------------

    fn on_frame(&mut self, from: NodeId, wire: Wire) {
        if !self.members.contains_key(&from) {
            // A peer that dialled us before we dialled it: frames still
            // count (they were authenticated), but we cannot answer until
            // our own link is up.
            tracing::debug!(peer = from, "frame from a peer not yet linked");
        }
        self.on_wire(from, wire);
    }

    fn on_wire(&mut self, from: NodeId, wire: Wire) {
        match wire {
            Wire::Core {
                from: role,
                to,
                msg,
            } => match to {
                Addr::Manager => self.deliver_to_manager(from, msg),
                Addr::Node(n) if n == self.cfg.id => {
                    // Trust the connection's identity, not the claimed role,
                    // except that a node may speak for its manager slice.
                    let role = match role {
                        Addr::Manager => Addr::Manager,
                        _ => Addr::Node(from),
                    };
                    self.deliver_to_node(from, role, msg)
                }
                _ => {
                    self.metrics.peer_errors.inc();
                }
            },
            Wire::Expect { block, hash, len } => {
                if let Some(p) = self.pending.get_mut(&block) {
                    p.expect = Some((hash, len));
                    if let Some((sender, msg)) = p.early.take() {
                        self.verify_data(block, sender, msg, (hash, len));
                    }
                }
            }
            Wire::FetchOrigin { block, hops } => self.start_origin_read(block, hops),
            Wire::Record { block, hash, len } => self.record(block, hash, len),
            Wire::HashOf { block } => {
                let hash = self.hashes.get(&block).copied();
                self.deliver_to_reader(from, Wire::HashIs { block, hash });
            }
            Wire::HashIs { block, hash } => self.verify_recirculated(block, hash),
            Wire::Ping(n) => self.send(from, Wire::Pong(n)),
            Wire::Pong(n) => {
                if let Some((peer, sent)) = self.pings.remove(&n)
                    && let Some(m) = self.members.get_mut(&peer)
                {
                    let sample = sent.elapsed();
                    m.rtt = Some(match m.rtt {
                        Some(old) => (old * 7 + sample) / 8,
                        None => sample,
                    });
                }
            }
            Wire::Gossip(data) => self.on_gossip(from, &data),
            Wire::Members(list) => {
                for (id, listen) in list {
                    if id != self.cfg.id && !self.members.contains_key(&id) {
                        self.dial(listen);
                    }
                }
            }
            Wire::Hello { .. } => {
                self.metrics.peer_errors.inc();
            }
        }
    }

    fn record(&mut self, block: BlockId, hash: Hash, len: u32) {
        if self.hashes.insert(block, (hash, len)).is_none() {
            self.hash_order.push_back(block);
        }
        let max = self.cfg.capacity.max(1024) * HASHES_PER_BLOCK;
        while self.hashes.len() > max {
            let Some(old) = self.hash_order.pop_front() else {
                break;
            };
            self.hashes.remove(&old);
        }
    }

    /// The manager's verdict on a forwarded singlet the machine took.
    fn verify_recirculated(&mut self, block: BlockId, hash: Option<(Hash, u32)>) {
        let Some(Unverified { sender, data, .. }) = self.unverified.remove(&block) else {
            return;
        };
        let good = hash.is_some_and(|(h, len)| data.len() == len as usize && blake3_of(&data) == h);
        if !good {
            if hash.is_some() {
                self.metrics.integrity_failures.inc();
                tracing::warn!(peer = sender, ?block, "forwarded block failed verification");
            }
            // Still holding these bytes (not evicted or replaced since):
            // drop them and tell the manager this node is no holder.
            if self
                .store
                .get(block)
                .is_some_and(|held| held.as_ptr() == data.as_ptr())
            {
                let now = self.now();
                self.node
                    .handle(Addr::Manager, Msg::Invalidate { block }, now, &mut self.out);
                self.out.send(
                    Addr::Node(self.cfg.id),
                    Addr::Manager,
                    Msg::Dropped { block },
                );
            }
        }
        let Some(p) = self.pending.remove(&block) else {
            return;
        };
        if p.stage != Stage::Held {
            self.pending.insert(block, p);
        } else if good {
            self.finish(block, p, data, Level::Local);
        } else {
            self.pending.insert(block, p);
            self.start_origin_read(block, 1);
        }
    }

    // ---- membership ----------------------------------------------------

    fn dial(&mut self, addr: String) {
        if addr == self.ctx.listen || self.links.contains_key(&addr) {
            return;
        }
        // Addresses come from seeds, peers and gossip; each link retries
        // until dropped, so their number is bounded.
        if self.links.len() >= MAX_LINKS {
            self.metrics.dropped_messages.inc();
            tracing::warn!(%addr, "not dialled: {MAX_LINKS} links already");
            return;
        }
        if self.members.values().any(|m| m.listen == addr) {
            return;
        }
        let (tx, rx) = link_channels();
        self.links.insert(addr.clone(), tx);
        tokio::spawn(run_link(addr, self.ctx.clone(), rx));
    }

    fn link_up(&mut self, addr: String, id: NodeId, name: String, listen: String) {
        let Some(link) = self.links.get(&addr).cloned() else {
            return;
        };
        if self.members.contains_key(&id) {
            // Dialled twice under two addresses: keep the first link.
            self.links.remove(&addr);
            return;
        }
        tracing::info!(peer = %name, id, %listen, down = self.down.contains(&id), "member linked");
        self.members.insert(
            id,
            Member {
                name,
                listen: listen.clone(),
                queue: link.frames,
                gossip: link.gossip,
                rtt: None,
            },
        );
        self.membership_changed();
        let list: Vec<(NodeId, String)> = std::iter::once((self.cfg.id, self.ctx.listen.clone()))
            .chain(
                self.members
                    .iter()
                    .filter(|(i, _)| !self.down.contains(i))
                    .map(|(&i, m)| (i, m.listen.clone())),
            )
            .collect();
        self.send(id, Wire::Members(list));
        // Bring SWIM in: the peer adds us and sends its member list.
        let effects = self.swim.announce(id, listen, Instant::now());
        self.swim_effects(effects);
    }

    fn link_down(&mut self, addr: &str, id: Option<NodeId>) {
        let Some(id) = id else { return };
        if self.members.get(&id).is_some_and(|m| {
            self.links
                .get(addr)
                .is_some_and(|l| l.frames.same_channel(&m.queue))
        }) {
            if let Some(m) = self.members.remove(&id) {
                tracing::warn!(peer = %m.name, id, "member down: link lost");
            }
            self.forget(id);
        }
    }

    /// Drops `id` from every directory and from the live set.
    fn forget(&mut self, id: NodeId) {
        let forgotten = self.manager.forget_node(id);
        tracing::info!(
            id,
            forgotten,
            "directory entries dropped for the lost member"
        );
        self.membership_changed();
    }

    fn membership_changed(&mut self) {
        self.live = std::iter::once(self.cfg.id)
            .chain(
                self.members
                    .keys()
                    .copied()
                    .filter(|i| !self.down.contains(i)),
            )
            .collect();
        self.live.sort_unstable();
        self.node.set_peers(&self.live);
        self.metrics.members.set(self.live.len() as i64);
    }

    /// Fires SWIM's due timers (probes, suspicion, gossip).
    fn swim_tick(&mut self) {
        let effects = self.swim.tick(Instant::now());
        self.swim_effects(effects);
    }

    fn on_gossip(&mut self, from: NodeId, data: &[u8]) {
        match self.swim.receive(from, data, Instant::now()) {
            Ok(effects) => self.swim_effects(effects),
            Err(e @ (GossipError::Spoofed { .. } | GossipError::Undecodable(_))) => {
                self.metrics.peer_errors.inc();
                tracing::warn!(peer = from, error = %e, "gossip frame refused");
            }
            // Routine after a rejoin: datagrams to our old incarnation.
            Err(e) => tracing::debug!(peer = from, error = %e, "gossip frame refused"),
        }
    }

    /// Carries out what SWIM asked for.
    fn swim_effects(&mut self, effects: Effects) {
        if effects.dropped_timers > 0 {
            tracing::warn!(dropped = effects.dropped_timers, "swim timers dropped");
        }
        for (to, listen, data) in effects.send {
            if let Some(m) = self.members.get(&to) {
                if m.gossip.try_send(Wire::Gossip(data)).is_err() {
                    self.metrics.dropped_messages.inc();
                }
            } else {
                // No link yet: this datagram is lost (SWIM expects loss)
                // and the link will carry the next ones.
                self.dial(listen);
            }
        }
        for change in effects.changes {
            match change {
                Change::Up { node, listen } => {
                    if self.down.remove(&node) {
                        tracing::info!(id = node, "member up again (swim)");
                        self.membership_changed();
                    }
                    if node != self.cfg.id && !self.members.contains_key(&node) {
                        self.dial(listen);
                    }
                }
                Change::Down { node } => self.declare_down(node),
            }
        }
        self.pump();
    }

    /// SWIM declared `id` down: treated as a lost link even if its TCP
    /// connection still looks open (a partition or blackhole hangs TCP
    /// silently), and that connection is dropped.
    fn declare_down(&mut self, id: NodeId) {
        if id == self.cfg.id {
            return;
        }
        if self.down.len() >= MAX_DOWN {
            self.down.pop_first();
        }
        self.down.insert(id);
        if let Some(m) = self.members.remove(&id) {
            tracing::warn!(peer = %m.name, id, "member down: swim");
            self.links.retain(|_, l| !l.frames.same_channel(&m.queue));
        } else {
            tracing::info!(id, "member down: swim");
        }
        self.forget(id);
    }

    fn ping_all(&mut self) {
        let now = Instant::now();
        self.pings
            .retain(|_, (_, sent)| now.duration_since(*sent) < Duration::from_secs(10));
        let ids: Vec<NodeId> = self.members.keys().copied().collect();
        for id in ids {
            self.nonce += 1;
            self.pings.insert(self.nonce, (id, now));
            self.send(id, Wire::Ping(self.nonce));
        }
    }

    fn status(&mut self) -> Status {
        let m = &self.metrics;
        let mut members = vec![MemberStatus {
            id: self.cfg.id,
            name: self.cfg.name.clone(),
            listen: self.ctx.listen.clone(),
            rtt_us: None,
        }];
        let down = &self.down;
        members.extend(
            self.members
                .iter()
                .filter(|(id, _)| !down.contains(id))
                .map(|(&id, mm)| MemberStatus {
                    id,
                    name: mm.name.clone(),
                    listen: mm.listen.clone(),
                    rtt_us: mm.rtt.map(|r| r.as_micros() as u64),
                }),
        );
        Status {
            id: self.cfg.id,
            name: self.cfg.name.clone(),
            algorithm: self.cfg.algorithm.clone(),
            members,
            cached_bytes: self.store.bytes() as u64,
            cached_blocks: self.store.blocks() as u64,
            budget_bytes: self.cfg.budget,
            reads: Level::ALL
                .iter()
                .map(|&l| (crate::metrics::level_name(l).to_string(), m.reads_at(l)))
                .collect(),
            origin_reads: m.origin_reads.get(),
            origin_bytes: m.origin_bytes.get(),
            integrity_failures: m.integrity_failures.get(),
            timeouts: m.timeouts.get(),
            peer_errors: m.peer_errors.get(),
        }
    }
}

#[cfg(test)]
mod membership_tests;
