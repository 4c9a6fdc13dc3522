//! The node driver: one task that feeds the core's node
//! ([`coopcache_core::node::Node`]) and membership
//! ([`coopcache_core::members::Membership`]) with client reads, peer
//! messages, origin completions, links and the clock, and carries out what
//! they ask for: frames to peers, dials, origin reads, replies to the
//! readers waiting. Every protocol decision (whom to ask,
//! whom to trust, when to give up, what a read returns) is the core's; the
//! driver owns the sockets, the bytes in flight and the time.

use crate::block::{Block, BlockId};
use crate::clock::Clock;
use crate::frame::Wire;
use crate::link::{LinkCtx, LinkTx};
use crate::metrics::Metrics;
use crate::origin::{FileVersion, Origin, OriginError};
use bytes::Bytes;
use coopcache_core::coop::{Level, NodeId};
use coopcache_core::members::swim::Swim;
use coopcache_core::members::{Membership, View};
use coopcache_core::node::{Msg, Output};
use coopcache_core::protocol::{Action, PeerMsg, ReadFailure, Served};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Members remembered as declared down (the oldest is forgotten first).
const MAX_DOWN: usize = crate::frame::MAX_MEMBERS;

/// Links (dialled addresses) at once.
const MAX_LINKS: usize = crate::frame::MAX_MEMBERS;

/// How often SWIM's timers and the counters are looked at when nothing
/// else wakes the driver.
const TICK: Duration = Duration::from_millis(5);

/// Why a read failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ReadError {
    /// The origin failed.
    #[error("{0}")]
    Origin(Arc<OriginError>),
    /// The protocol gave up on the read (too many in flight).
    #[error("{0}")]
    Failed(ReadFailure),
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Shutdown,
}

/// A reader's reply: the block's bytes and the level that served them.
pub type Reply = oneshot::Sender<Result<(Bytes, Level), ReadError>>;

use commits::CommitWaiter;
pub use commits::{CommitEvent, OpenAnswer, first_block_of};
pub(crate) use disk::{DiskPlace, recover};
pub use lists::ListEvent;
pub use locks::LockEvent;
pub use pins::PinEvent;
pub use warms::{Placement, ServeWarm, WarmEvent};

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
        reply: Reply,
    },
    /// [`Event::Read`] of a block whose bytes the reader holds (a writer
    /// read back what it committed): if the protocol sends the read to
    /// the origin, these bytes answer it instead (`origin_reads.rs`).
    Written {
        /// The file.
        path: Arc<str>,
        /// Its version.
        version: Arc<FileVersion>,
        /// The block.
        block: BlockId,
        /// Its bytes at `version`.
        bytes: Bytes,
        /// Where the bytes go.
        reply: Reply,
    },
    /// A protocol message from a peer, its contents already hashed by the
    /// link's reader task.
    Peer {
        /// The peer, as its link authenticated it.
        from: NodeId,
        /// The message.
        msg: PeerMsg<BlockId, Block>,
        /// Its frame's share of [`PEER_IN_BYTES`](crate::budget::PEER_IN_BYTES),
        /// returned once the protocol has handled it.
        held: Option<tokio::sync::OwnedSemaphorePermit>,
    },
    /// Any other frame from a peer (members, gossip).
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
        /// The peer's name (its certificate's).
        name: String,
        /// Its checked `Hello`: id, listen address, version, release.
        greeting: crate::link::Greeting,
    },
    /// A link is down (or could not connect).
    LinkDown {
        /// The address dialled.
        addr: String,
        /// The peer's id, if it had connected.
        id: Option<NodeId>,
    },
    /// An origin read finished: the block's bytes, hashed by the read's
    /// own task, or the error.
    OriginDone {
        /// The block.
        block: BlockId,
        /// The contents or the error.
        result: Result<Block, Arc<OriginError>>,
    },
    /// Asks for the node's status.
    Status(oneshot::Sender<Status>),
    /// Dial this address (a seed).
    Join(String),
    /// The node is stopping: tell every member, close every link (each
    /// writes what it holds, then ends its TLS session), then answer.
    Leave(oneshot::Sender<()>),
    /// C2Cfs `exclusive` mode: an open, a commit, a stat's answer.
    Commits(CommitEvent),
    /// A lock call of this node's mount.
    Locks(LockEvent),
    /// A pin, unpin or eviction (`crate::pins`).
    Pins(PinEvent),
    /// A warm-up's file to place, or a peer's file the warm server read.
    Warms(WarmEvent),
    /// A listing or a change of this node, or the origin's listing the
    /// listing machine asked for.
    Lists(ListEvent),
    /// The revocation list in this node's CA directory changed.
    Revoked(Bytes),
    /// A disk tier slot's read or write finished.
    Disk(disk::DiskEvent),
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
    /// The protocol version this node's link to it speaks (for the node
    /// itself, the newest it speaks); absent from a node before 0.2.
    #[serde(default)]
    pub protocol: Option<u16>,
    /// Its release (`coopcache --version`), if its `Hello` named it (a
    /// node of protocol version 14 does not).
    #[serde(default)]
    pub release: Option<String>,
    /// Its memory as it last advertised it (on its pings, once a second),
    /// if it has yet.
    #[serde(default)]
    pub memory: Option<MemberMemory>,
    /// Its block reads since it started, as it last reported them (on
    /// the same pings), if it has yet.
    #[serde(default)]
    pub reads: Option<MemberReads>,
}

/// A member's block reads since it started, as it reports them
/// ([`ReadCounts`](coopcache_core::protocol::ReadCounts)).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemberReads {
    /// Reads served, by level name (`local`, `manager`, `peer`, `origin`,
    /// `disk`, as `reads` of a node's own status).
    pub served: BTreeMap<String, u64>,
    /// Reads that failed.
    pub failed: u64,
    /// Peers' contents that failed their check, and reads that timed out
    /// waiting on a peer.
    pub errors: u64,
    /// Messages it refused from peers not in the role to send them.
    pub violations: u64,
}

impl MemberReads {
    /// `counts` by level name.
    pub fn of(counts: coopcache_core::protocol::ReadCounts) -> Self {
        MemberReads {
            served: Level::ALL
                .iter()
                .map(|&l| (crate::metrics::level_name(l).to_string(), counts.at(l)))
                .collect(),
            failed: counts.failed,
            errors: counts.errors,
            violations: counts.violations,
        }
    }

    /// Reads served, from anywhere.
    pub fn total(&self) -> u64 {
        self.served.values().sum()
    }

    /// Reads served at level `name`.
    pub fn at(&self, name: &str) -> u64 {
        self.served.get(name).copied().unwrap_or(0)
    }
}

/// A member's cache memory, as it advertises it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemberMemory {
    /// Bytes of blocks its cache can hold.
    pub capacity_bytes: u64,
    /// Bytes of the blocks it holds.
    pub cached_bytes: u64,
    /// Bytes of the blocks it has room for without evicting (whole blocks).
    pub free_bytes: u64,
    /// Whether its own reads have stopped (its memory serves only peers).
    pub idle: bool,
}

impl MemberMemory {
    /// `status` in bytes of blocks of `block_size`.
    pub fn of(status: coopcache_core::protocol::Status, block_size: u32) -> Self {
        let bytes = |blocks: u32| u64::from(blocks) * u64::from(block_size);
        MemberMemory {
            capacity_bytes: bytes(status.capacity),
            cached_bytes: status.cached_bytes,
            free_bytes: bytes(status.free()),
            idle: status.idle,
        }
    }
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
    /// The replacement policy of its own cache.
    pub policy: String,
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
    /// Block reads sent to the origin.
    pub origin_reads: u64,
    /// Requests to the origin that carried them.
    #[serde(default)]
    pub origin_requests: u64,
    /// Questions to the origin for a file's version (an open in `shared`
    /// mode, a manager's stat in `exclusive` mode).
    #[serde(default)]
    pub origin_stats: u64,
    /// Names, attributes and listings asked of the origin (a mount's
    /// lookups, `getattr`s and directory reads).
    #[serde(default)]
    pub origin_metadata: u64,
    /// Changes, writes and commits asked of the origin (the mount's).
    #[serde(default)]
    pub origin_changes: u64,
    /// Writes of file bytes to the origin (the mount's drafts).
    #[serde(default)]
    pub origin_writes: u64,
    /// Bytes those writes carried.
    #[serde(default)]
    pub origin_written_bytes: u64,
    /// Commits of drafts into place at the origin (closes).
    #[serde(default)]
    pub origin_commits: u64,
    /// `exclusive` mode: opens this node answered as a manager from its
    /// commit table, with no origin round trip.
    #[serde(default)]
    pub manager_opens: u64,
    /// `exclusive` mode: opens whose first block this node, as their
    /// manager, served with its answer (one round trip for both).
    #[serde(default)]
    pub first_served: u64,
    /// `exclusive` mode: this node's commits no manager recorded.
    #[serde(default)]
    pub unrecorded_commits: u64,
    /// `exclusive` mode: whether the members have agreed long enough
    /// (`--commit-stable`) for this node's manager side to answer opens.
    #[serde(default)]
    pub commits_stable: bool,
    /// Bytes from the origin.
    pub origin_bytes: u64,
    /// Blocks from peers that failed verification.
    pub integrity_failures: u64,
    /// Messages refused because their sender's role does not allow them.
    pub protocol_violations: u64,
    /// Reads that timed out on a peer.
    pub timeouts: u64,
    /// Peer connection errors.
    pub peer_errors: u64,
    /// Whether the origin is private (`--private`).
    #[serde(default)]
    pub private: bool,
    /// Blocks of a private origin parked on peers, sealed.
    #[serde(default)]
    pub sealed_blocks: u64,
    /// Sealed blocks taken back from peers, opened and verified.
    #[serde(default)]
    pub opened_blocks: u64,
    /// Of the sealed blocks, those parked unified (under a content id,
    /// `--unify-key`).
    #[serde(default)]
    pub unified_blocks: u64,
    /// Blocks a peer parked here that another peer had parked already
    /// (the same bytes under one content id): kept once.
    #[serde(default)]
    pub unified_hosted: u64,
    /// Blocks this node keeps for its peers (foreign blocks).
    #[serde(default)]
    pub foreign_blocks: u64,
    /// Bytes of pinned blocks (`coopcache pin`), outside `cached_bytes`.
    #[serde(default)]
    pub pinned_bytes: u64,
    /// Pinned blocks.
    #[serde(default)]
    pub pinned_blocks: u64,
    /// Of the budget, the share set aside for pinned files
    /// (`--max-pinned`).
    #[serde(default)]
    pub max_pinned_bytes: u64,
    /// Slots of the disk tier (`--disk`): 0 without one, or once it was
    /// given up.
    #[serde(default)]
    pub disk_slots: u64,
    /// Blocks on the disk tier.
    #[serde(default)]
    pub disk_blocks: u64,
    /// Blocks written to the disk tier.
    #[serde(default)]
    pub disk_writes: u64,
    /// Disk tier slots that failed a read (each read the origin).
    #[serde(default)]
    pub disk_failures: u64,
    /// Writes to the disk tier that failed (a full or failing disk).
    #[serde(default)]
    pub disk_write_failures: u64,
    /// Writes to the disk tier skipped (the disk behind by its bound).
    #[serde(default)]
    pub disk_writes_skipped: u64,
    /// Times the disk tier was given up (it failed every call in a row).
    #[serde(default)]
    pub disk_given_up: u64,
    /// Times a given-up disk tier was opened again and used.
    #[serde(default)]
    pub disk_reopened: u64,
    /// Blocks this node's disk served to peers' reads.
    #[serde(default)]
    pub disk_served: u64,
    /// Reads this node, as a block's manager, forwarded to a member's disk.
    #[serde(default)]
    pub disk_forwards: u64,
    /// Whether the node waits on nothing (no read in flight, no block
    /// held unverified, nothing it expects from a peer).
    pub quiet: bool,
    /// Protocol messages sent to each peer (pings aside).
    pub sent: BTreeMap<NodeId, u64>,
    /// Protocol messages received from each peer (pings aside). A cluster
    /// is at quiescence when every node is quiet and every node has
    /// received from each peer what that peer sent it.
    pub received: BTreeMap<NodeId, u64>,
}

/// The readers of one block waiting at this node.
struct Waiting {
    path: Arc<str>,
    version: Arc<FileVersion>,
    replies: Vec<Reply>,
    /// The origin's error, if its read failed.
    error: Option<Arc<OriginError>>,
    /// The block's bytes if a reader already holds them ([`Event::Written`]).
    known: Option<Bytes>,
}

/// What the driver keeps for a linked member (the core's view keeps its
/// addresses).
struct Member {
    name: String,
    /// The protocol version our link to it speaks.
    version: u16,
    /// Its release, as its `Hello` named it (empty before version 15).
    release: String,
    queue: mpsc::Sender<crate::link::Outgoing>,
    /// SWIM datagrams, sent ahead of `queue`.
    gossip: mpsc::Sender<Wire>,
}

/// The driver's settings.
pub struct DriverConfig {
    /// This node's id.
    pub id: NodeId,
    /// Its name.
    pub name: String,
    /// The replacement policy of its own cache.
    pub policy: coopcache_core::policy::PolicyKind,
    /// Block size.
    pub block_size: u32,
    /// Memory budget.
    pub budget: u64,
    /// Of the budget, the share set aside for pinned files.
    pub max_pinned: u64,
}

/// The core's node: block reads, C2Cfs opens and commits, file locks, and
/// what joins them.
pub type Node = coopcache_core::node::Node<
    BlockId,
    Block,
    crate::origin::PathVersion,
    crate::listing::DirListing,
>;

/// The driver's state.
pub struct Driver {
    cfg: DriverConfig,
    /// Every protocol decision: the driver only carries it.
    node: Node,
    clock: Clock,
    origin: Arc<Origin>,
    metrics: Arc<Metrics>,
    ctx: Arc<LinkCtx>,
    events: mpsc::Sender<Event>,
    /// Readers waiting, by block.
    waiting: HashMap<BlockId, Waiting>,
    /// The core's membership: the view (links by dialled address, linked
    /// members, those down or gone) and SWIM, joined; it decides every
    /// dial and what every verdict means, the driver keeps its channels
    /// in it.
    members: Membership<LinkTx, Member>,
    /// Protocol messages sent and received per peer, pings aside.
    sent: BTreeMap<NodeId, u64>,
    received: BTreeMap<NodeId, u64>,
    /// The protocol's counters as last copied into `metrics`.
    synced: Synced,
    /// Origin reads the protocol asked for, not sent yet (see
    /// `origin_reads`): at most what the events of one drain ask for.
    origin_queue: Vec<BlockId>,
    /// Callers waiting on the node's opens and commits, by request id.
    commit_waiters: HashMap<u64, CommitWaiter>,
    next_commit_req: u64,
    /// Callers waiting on the node's lock calls, by request id.
    lock_waiters: HashMap<u64, oneshot::Sender<coopcache_core::c2cfs::locks::LockResult>>,
    next_lock_req: u64,
    /// Warm-ups' files waiting on their placement, by request id.
    warm_waiters: HashMap<u64, oneshot::Sender<Placement>>,
    next_warm_req: u64,
    /// Where peers' files go to be read (`crate::warm::serve`).
    warm_server: Option<mpsc::Sender<ServeWarm>>,
    /// Callers waiting on the node's listings and changes, by request id.
    list_waiters: HashMap<u64, lists::ListWaiter>,
    next_list_req: u64,
    /// The disk tier's store, while the protocol keeps a tier.
    disk: Option<Arc<crate::disk::DiskStore>>,
    /// Where the disk tier's store is, for opening it again.
    disk_place: Option<disk::DiskPlace>,
}

/// Adds to `counter` what a protocol count grew by since `seen`, which
/// becomes `now`.
fn advance(counter: &prometheus_client::metrics::counter::Counter, now: u64, seen: &mut u64) {
    counter.inc_by(now.saturating_sub(*seen));
    *seen = now;
}

/// Protocol counters already added to the metrics.
#[derive(Default)]
struct Synced {
    integrity_failures: u64,
    timeouts: u64,
    disk_writes: u64,
    disk_failures: u64,
    disk_write_failures: u64,
    disk_writes_skipped: u64,
    disk_given_up: u64,
    disk_reopened: u64,
    disk_served: u64,
    disk_forwards: u64,
    violations: BTreeMap<NodeId, u64>,
    manager_opens: u64,
    manager_listings: u64,
    first_served: u64,
    warms: coopcache_core::warm::WarmCounters,
    origin: crate::origin::OriginCounts,
}

impl Driver {
    /// A driver for `node`.
    pub fn new(
        cfg: DriverConfig,
        node: Node,
        clock: Clock,
        origin: Arc<Origin>,
        metrics: Arc<Metrics>,
        ctx: Arc<LinkCtx>,
        events: mpsc::Sender<Event>,
    ) -> Driver {
        metrics.budget_bytes.set(cfg.budget as i64);
        metrics.members.set(1);
        // The start time as the first incarnation: a restarted node is a
        // new SWIM identity that wins over the one its peers remember.
        let incarnation = crate::clock::unix_micros();
        let swim = Swim::new(
            coopcache_core::members::swim::SwimId {
                node: cfg.id,
                listen: ctx.listen.clone(),
                incarnation,
            },
            incarnation,
        );
        let view = View::new(cfg.id, ctx.listen.clone(), MAX_LINKS, MAX_DOWN);
        let mut members = Membership::new(view, swim);
        // A list kept from before a restart is in force already (its links
        // check it); the membership passes it to every member it links.
        members.handle_revocation(ctx.revoked.borrow().number, None);
        Driver {
            cfg,
            node,
            clock,
            origin,
            metrics,
            ctx,
            events,
            waiting: HashMap::new(),
            members,
            sent: BTreeMap::new(),
            received: BTreeMap::new(),
            synced: Synced::default(),
            origin_queue: Vec::new(),
            commit_waiters: HashMap::new(),
            next_commit_req: 0,
            lock_waiters: HashMap::new(),
            next_lock_req: 0,
            warm_waiters: HashMap::new(),
            next_warm_req: 0,
            warm_server: None,
            list_waiters: HashMap::new(),
            next_list_req: 0,
            disk: None,
            disk_place: None,
        }
    }

    /// Runs until every event sender is gone.
    pub async fn run(mut self, mut events: mpsc::Receiver<Event>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let timer = tokio::time::sleep(Duration::from_secs(3600));
        tokio::pin!(timer);
        let mut armed = None;
        loop {
            self.send_origin_reads();
            // The protocol's next deadline rarely moves (most reads finish
            // long before theirs): re-arm only when it does.
            let due = self.node.poll_timeout();
            if due != armed
                && let Some(us) = due
            {
                timer.as_mut().reset(self.clock.at(us).into());
            }
            armed = due;
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(ev) => {
                        self.on_event(ev);
                        // The events already waiting too, so that the
                        // origin reads they ask for go out together.
                        for _ in 1..origin_reads::DRAIN {
                            match events.try_recv() {
                                Ok(ev) => self.on_event(ev),
                                Err(_) => break,
                            }
                        }
                    }
                    None => break,
                },
                _ = &mut timer, if due.is_some() => {
                    let now = self.clock.micros();
                    self.node.handle_timeout(now);
                    self.apply();
                }
                _ = tick.tick() => {
                    self.swim_tick();
                    self.cancel_abandoned_locks();
                    self.sync_metrics();
                }
            }
        }
        for (_, w) in self.waiting.drain() {
            for r in w.replies {
                let _ = r.send(Err(ReadError::Shutdown));
            }
        }
    }

    pub(super) fn on_event(&mut self, ev: Event) {
        let now = self.clock.micros();
        match ev {
            Event::Read {
                path,
                version,
                block,
                reply,
            } => {
                let w = self.waiting.entry(block).or_insert_with(|| Waiting {
                    path,
                    version,
                    replies: Vec::new(),
                    error: None,
                    known: None,
                });
                w.replies.push(reply);
                self.node.handle_read(block, now);
            }
            Event::Written {
                path,
                version,
                block,
                bytes,
                reply,
            } => {
                let w = self.waiting.entry(block).or_insert_with(|| Waiting {
                    path,
                    version,
                    replies: Vec::new(),
                    error: None,
                    known: None,
                });
                w.known.get_or_insert(bytes);
                w.replies.push(reply);
                self.node.handle_read(block, now);
            }
            Event::Peer { from, msg, held } => {
                if !matches!(msg, PeerMsg::Ping { .. } | PeerMsg::Pong { .. }) {
                    *self.received.entry(from).or_default() += 1;
                }
                self.node.handle_message(from, Msg::Read(msg), now);
                drop(held);
            }
            Event::Frame { from, wire } => self.on_frame(from, wire),
            Event::LinkUp {
                addr,
                name,
                greeting,
            } => self.link_up(addr, name, greeting),
            Event::LinkDown { addr, id } => self.link_down(&addr, id),
            Event::OriginDone { block, result } => {
                let result = match result {
                    Ok(block) => {
                        self.metrics.origin_bytes.inc_by(block.bytes.len() as u64);
                        Ok(block)
                    }
                    Err(e) => {
                        if let Some(w) = self.waiting.get_mut(&block) {
                            w.error = Some(e);
                        }
                        Err(())
                    }
                };
                self.node.handle_origin_done(block, result, now);
            }
            Event::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Event::Join(addr) => self.dial(addr),
            Event::Revoked(der) => self.on_revoked(None, der),
            Event::Leave(done) => {
                self.leave();
                let _ = done.send(());
            }
            Event::Commits(ev) => self.on_commit_event(ev),
            Event::Locks(ev) => self.on_lock_event(ev),
            Event::Pins(ev) => self.on_pin_event(ev),
            Event::Warms(ev) => self.on_warm_event(ev),
            Event::Lists(ev) => self.on_list_event(ev),
            Event::Disk(ev) => self.on_disk_event(ev),
        }
        self.apply();
    }

    /// Carries out what the node decided, in its order.
    pub(super) fn apply(&mut self) {
        while let Some(out) = self.node.poll() {
            match out {
                Output::Read(action) => self.apply_read(action),
                Output::Commit(action) => self.apply_commit(action),
                Output::Lock(action) => self.apply_lock(action),
                Output::Warm(action) => self.apply_warm(action),
                Output::List(action) => self.apply_list(action),
                Output::FirstRead {
                    block,
                    path,
                    version,
                } => {
                    // Its origin read, if it comes to that, reads this.
                    self.waiting.entry(block).or_insert_with(|| Waiting {
                        path,
                        version: Arc::new(version.version),
                        replies: Vec::new(),
                        error: None,
                        known: None,
                    });
                }
            }
        }
    }

    /// Carries out what the block reads decided.
    fn apply_read(&mut self, action: Action<BlockId, Block>) {
        match action {
            Action::Send { to, msg } => self.send_peer(to, msg),
            Action::ReadOrigin { block } => self.read_origin(block),
            Action::ReadDisk { block, slot } => self.read_disk(block, slot),
            Action::WriteDisk { block, slot, data } => self.write_disk(block, slot, data),
            Action::ReopenDisk => self.reopen_disk(),
            Action::Complete { block, result } => self.complete(block, result),
            Action::Violation {
                peer,
                message,
                rule,
                count,
            } => {
                let name = self.member_name(peer);
                tracing::warn!(
                    peer = %name,
                    id = peer,
                    message,
                    count,
                    "refused a peer's message: {rule}"
                );
            }
            Action::IntegrityFailure {
                block,
                message,
                sender,
                manager,
                recorder,
                verdict,
                count,
            } => {
                let who = [sender, manager, recorder];
                self.report_integrity(block, message, who, verdict, count)
            }
        }
    }

    /// Sends a protocol message to `to`; a best-effort one
    /// (`PeerMsg::best_effort`) only while `to`'s queue holds at most
    /// [`BEST_EFFORT_QUEUED`](crate::link::BEST_EFFORT_QUEUED) frames.
    fn send_peer(&mut self, to: NodeId, msg: PeerMsg<BlockId, Block>) {
        if msg.best_effort() && self.busy(to) {
            self.metrics.forwards_shed.inc();
            return;
        }
        let counted = !matches!(msg, PeerMsg::Ping { .. } | PeerMsg::Pong { .. });
        let wire = Wire::Peer(msg.map_data(|b| b.bytes));
        if self.send(to, wire) && counted {
            *self.sent.entry(to).or_default() += 1;
        }
    }

    /// Whether `to`'s link has more than
    /// [`BEST_EFFORT_QUEUED`](crate::link::BEST_EFFORT_QUEUED) frames queued.
    fn busy(&self, to: NodeId) -> bool {
        use crate::link::{BEST_EFFORT_QUEUED, PEER_QUEUE};
        self.peer(to)
            .is_some_and(|m| m.queue.capacity() < PEER_QUEUE - BEST_EFFORT_QUEUED)
    }

    /// Queues `wire` on `to`'s link; false (and counted) if it could not:
    /// the link's queue is full, or a block would pass
    /// [`PEER_OUT_BYTES`](crate::budget::PEER_OUT_BYTES).
    pub(super) fn send(&mut self, to: NodeId, wire: Wire) -> bool {
        let len = wire.data_len();
        let held = match u32::try_from(len) {
            Ok(0) => None,
            Ok(n) => match self.ctx.outbound.clone().try_acquire_many_owned(n) {
                Ok(permit) => Some(permit),
                Err(_) => {
                    self.metrics.dropped_messages.inc();
                    return false;
                }
            },
            // A block is at most a few MiB: cannot happen.
            Err(_) => None,
        };
        let ok = self.peer(to).is_some_and(|m| {
            m.queue
                .try_send(crate::link::Outgoing { wire, held })
                .is_ok()
        });
        if !ok {
            self.metrics.dropped_messages.inc();
        }
        ok
    }

    /// Hands a finished read to everyone waiting for it.
    fn complete(&mut self, block: BlockId, result: Result<Served<Block>, ReadFailure>) {
        let Some(w) = self.waiting.remove(&block) else {
            return;
        };
        let result = match result {
            Ok(Served { data, level }) => {
                self.metrics.read(level);
                Ok((data.bytes, level))
            }
            Err(e) => {
                self.metrics.read_errors.inc();
                match (e, w.error.clone()) {
                    (ReadFailure::Origin, Some(origin)) => Err(ReadError::Origin(origin)),
                    (e, _) => Err(ReadError::Failed(e)),
                }
            }
        };
        for r in w.replies {
            let _ = r.send(result.clone());
        }
    }

    /// Copies the protocol's counters into the metrics.
    pub(super) fn sync_metrics(&mut self) {
        let s = self.node.reads().stats();
        let m = &self.metrics;
        let c = *self.node.commits().counters();
        let listed = self.node.listings().counters().from_table;
        let synced = &mut self.synced;
        advance(
            &m.integrity_failures,
            s.integrity_failures,
            &mut synced.integrity_failures,
        );
        advance(&m.timeouts, s.timeouts, &mut synced.timeouts);
        advance(&m.disk_writes, s.disk_writes, &mut synced.disk_writes);
        advance(&m.disk_failures, s.disk_failures, &mut synced.disk_failures);
        advance(
            &m.disk_write_failures,
            s.disk_write_failures,
            &mut synced.disk_write_failures,
        );
        advance(
            &m.disk_writes_skipped,
            s.disk_writes_skipped,
            &mut synced.disk_writes_skipped,
        );
        advance(&m.disk_given_up, s.disk_given_up, &mut synced.disk_given_up);
        advance(&m.disk_reopened, s.disk_reopened, &mut synced.disk_reopened);
        advance(&m.disk_served, s.disk_served, &mut synced.disk_served);
        advance(&m.disk_forwards, s.disk_forwards, &mut synced.disk_forwards);
        advance(
            &m.manager_opens,
            c.opens_from_table,
            &mut synced.manager_opens,
        );
        advance(&m.first_served, c.first_served, &mut synced.first_served);
        advance(&m.manager_listings, listed, &mut synced.manager_listings);
        let disk = self.node.reads().disk().map_or(0, |t| t.len());
        m.disk_blocks.set(disk as i64);
        for (&peer, &n) in &s.violations {
            let seen = self.synced.violations.entry(peer).or_default();
            if n > *seen {
                let name = self
                    .members
                    .member(peer)
                    .map_or("?", |m| m.link.name.as_str());
                m.violation(name, n - *seen);
                *seen = n;
            }
        }
        m.cached_bytes.set(self.node.reads().usage().bytes as i64);
        m.pinned_bytes
            .set(self.node.reads().pinned_usage().bytes as i64);
        let w = self.node.warms().counters();
        let was = std::mem::replace(&mut self.synced.warms, w);
        m.warm_placed.inc_by(w.placed - was.placed);
        m.warm_fell_back.inc_by(w.fell_back - was.fell_back);
        m.warm_served.inc_by(w.served - was.served);
        let origin = self.origin.counts();
        let d = origin.since(&self.synced.origin);
        m.origin_metadata.inc_by(d.metadata);
        m.origin_changes.inc_by(d.changes);
        m.origin_writes.inc_by(d.writes);
        m.origin_written_bytes.inc_by(d.written_bytes);
        m.origin_commits.inc_by(d.commits);
        self.synced.origin = origin;
    }
}

mod commits;
mod disk;
mod integrity;
mod lists;
mod locks;
mod members;
mod origin_reads;
mod pins;
mod revocations;
mod status;
mod warms;

#[cfg(test)]
mod membership_tests;
#[cfg(test)]
mod pool_tests;
