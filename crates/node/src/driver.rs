//! The node driver: one task owning the node's core state machines (its
//! node machine and its slice of the manager), fed by client reads, peer
//! frames, origin completions and a clock tick. It routes what the
//! machines send, verifies every block a peer sends against the hash its
//! manager recorded, reads the origin on the manager's word, and falls back
//! to the origin when a peer is late.

use crate::block::{BlockId, manager_of};
use crate::frame::{Hash, Wire};
use crate::link::{LinkCtx, LinkTx, link_channels, run_link};
use crate::machine::{LiveManager, LiveNode, Machines};
use crate::membership::{Change, Effects, GossipError, Swim, SwimId};
use crate::metrics::Metrics;
use crate::origin::{FileVersion, Origin, OriginError};
use crate::store::Stores;
use bytes::Bytes;
use coopcache_core::coop::{Addr, Level, ManagerMachine, Msg, NodeId, Outbox};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Reads in flight at once at one node; more wait for a slot.
pub const MAX_PENDING: usize = 4096;

/// Hashes a manager keeps per block its node may cache (its own share of
/// the cluster's blocks, with room for imbalance); beyond, the oldest go.
const HASHES_PER_BLOCK: usize = 4;

/// Bytes of forwarded singlets waiting for their hash, part of the budget's
/// reserve (their bytes outlive the cache's copy if it is evicted first).
const UNVERIFIED_BYTES: usize = 4 << 20;

/// Forwarded singlets waiting for their hash: `UNVERIFIED_BYTES` worth, and
/// at least 64 (a burst of evictions at a busy peer sends many at once).
fn max_unverified(block_size: u32) -> usize {
    (UNVERIFIED_BYTES / block_size.max(1) as usize).max(64)
}

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
        /// The bytes and their BLAKE3 hash (computed by the read's own
        /// task, off the driver's serial path), or the error.
        result: Result<(Bytes, Hash), Arc<OriginError>>,
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
    store: Stores,
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
    /// Blocks this node read from the origin, to place in their
    /// Hash-Distributed partition once their manager has the hash (so the
    /// owner's check of them cannot overtake this node's `Record`): the
    /// owner, the `Place`, and when to give up.
    placing: HashMap<BlockId, (NodeId, Msg<BlockId, Bytes>, Instant)>,
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
    /// A driver for a node's `machines`.
    pub fn new(
        cfg: DriverConfig,
        machines: Machines,
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
        let Machines {
            node,
            manager,
            stores: store,
        } = machines;
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
            placing: HashMap::new(),
            pings: HashMap::new(),
            nonce: 0,
            origin_time: Duration::ZERO,
            started: Instant::now(),
        }
    }

    pub(super) fn now(&self) -> u64 {
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

    pub(super) fn on_event(&mut self, ev: Event) {
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
}

mod frames;
mod members;
mod reads;
mod routing;

#[cfg(test)]
mod membership_tests;
