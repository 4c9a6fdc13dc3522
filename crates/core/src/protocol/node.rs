//! One node's protocol: its state, its inputs and outputs, and the trust
//! boundary every incoming message crosses.

use super::held::{Held, Wait};
use super::integrity::Expected;
use super::manager::Slice;
use super::parked::Parked;
use super::peers::Peers;
use super::reader::Reads;
use super::stats::{MAX_VIOLATORS, REPORT_EVERY_US};
use super::timers::{Timer, Timers};
use super::{Content, PeerMsg, ProtocolKey, ProtocolStats, Verdict, manager_of};
use crate::coop::{
    AlgorithmKind, Level, LiveMachines, LiveManager, LiveNode, Msg, NodeId, Outbox, SizeClassed,
    StoreUsage,
};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// A node's reads in flight at once ([`ProtocolConfig::max_reads`]).
pub const MAX_READS: usize = 4096;

/// The protocol's bounds and timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtocolConfig {
    /// Least time a read waits on peers before reading the origin, in
    /// microseconds; the timeout grows with measured round trips and
    /// origin reads ([`NodeProtocol::peer_timeout`]).
    pub min_timeout_us: u64,
    /// Most time a read waits on peers before reading the origin, in
    /// microseconds, whatever the round trips measured: a member that
    /// answers pings late (or not at all) slows reads down to this, never
    /// more. Round-trip samples older than this are discarded.
    pub max_timeout_us: u64,
    /// Reads in flight at once; more wait in line ([`MAX_READS`] on a
    /// node).
    pub max_reads: usize,
    /// Reads waiting in line; more fail at once as overloaded.
    pub max_queued: usize,
    /// Blocks held unverified (forwarded singlets, placed blocks); more
    /// are dropped and counted.
    pub max_held: usize,
    /// Digests the manager slice records; the oldest go first.
    pub max_records: usize,
    /// Blocks the manager slice's directory tracks; a read of another
    /// block beyond this is served from the origin without tracking its
    /// reader (a member reading blocks it never drops cannot grow it).
    pub max_directory: usize,
    /// How often every peer is pinged for its round-trip time (each ping
    /// and answer carries the sender's [`Status`](super::Status)).
    pub ping_every_us: u64,
    /// Blocks this node caches, as it advertises them ([`Status`](super::Status)).
    pub capacity: usize,
    /// How long this node's own reads must have stopped (or, since it
    /// started, not begun) before it calls itself idle and lends its
    /// memory ([`IDLE_AFTER_US`](super::IDLE_AFTER_US) by default).
    pub idle_after_us: u64,
    /// Whether a message to this node itself (its own manager slice, say)
    /// is handled before the next input, as a daemon does; if not, it
    /// leaves as an [`Action::Send`] to this node and the driver queues it
    /// behind everything in flight, as the paper's simulator does with its
    /// single queue (N-Chance's choices depend on that order).
    pub local_first: bool,
}

impl ProtocolConfig {
    /// The daemon's defaults for a node caching `capacity` blocks of
    /// `block_size` bytes: a 50 ms timeout floor, 4,096 reads in flight,
    /// 4 MiB of held blocks (at least 64), and four records and four
    /// tracked blocks per block the node can cache, at least 65,536 each.
    ///
    /// A manager slice keeps records for its share of the whole cluster's
    /// blocks, which its own capacity says nothing about when its peers
    /// cache more (a small node managing files a large one holds): the
    /// floor covers a 4 GiB share in 64 KiB blocks, at about 8 MiB of the
    /// memory budget's reserve (a record is about 90 bytes, a directory
    /// entry about 40).
    pub fn for_node(capacity: usize, block_size: u32) -> Self {
        ProtocolConfig {
            min_timeout_us: 50_000,
            max_timeout_us: 5_000_000,
            max_reads: MAX_READS,
            max_queued: 65536,
            max_held: ((4 << 20) / block_size.max(1) as usize).max(64),
            max_records: capacity.max(MIN_TRACKED / 4) * 4,
            max_directory: capacity.max(MIN_TRACKED / 4) * 4,
            ping_every_us: 1_000_000,
            capacity,
            idle_after_us: super::IDLE_AFTER_US,
            local_first: true,
        }
    }
}

/// Most messages a node hands to itself while handling one input: far more
/// than any honest cascade needs (N-Chance asks about at most each cached
/// block once), few enough to stop a loop before it costs memory.
const MAX_SETTLE_STEPS: usize = 1 << 20;

/// The least number of records, and of directory entries, a manager slice
/// keeps ([`ProtocolConfig::for_node`]).
pub const MIN_TRACKED: usize = 65536;

/// What a node must do, in the order the protocol decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<K, D> {
    /// Send `msg` to peer `to` (this node itself only without
    /// [`ProtocolConfig::local_first`]).
    Send {
        /// The peer.
        to: NodeId,
        /// The message.
        msg: PeerMsg<K, D>,
    },
    /// Read `block` from the origin and report it with
    /// [`NodeProtocol::handle_origin_done`].
    ReadOrigin {
        /// The block.
        block: K,
    },
    /// Read `block` from slot `slot` of this node's disk tier and report
    /// it with [`NodeProtocol::handle_disk_read`] (`disk.rs`).
    ReadDisk {
        /// The block.
        block: K,
        /// Its slot.
        slot: u32,
    },
    /// Write `data` of `block` into slot `slot` of this node's disk tier
    /// (whatever the slot held) and report it with
    /// [`NodeProtocol::handle_disk_written`].
    WriteDisk {
        /// The block.
        block: K,
        /// The slot.
        slot: u32,
        /// Its contents.
        data: D,
    },
    /// Open this node's disk tier, given up after it failed, again: the
    /// same store (not a new one where it was: a disk unmounted leaves an
    /// empty directory behind), with what it holds; report it with
    /// [`NodeProtocol::handle_disk_reopened`] (`disk.rs`).
    ReopenDisk,
    /// Every read of `block` waiting at this node is finished.
    Complete {
        /// The block.
        block: K,
        /// Its contents and the level that served them, or why not.
        result: Result<Served<D>, ReadFailure>,
    },
    /// `peer` sent a message its role does not allow; reported at most
    /// once a minute per peer (every one is counted in the stats).
    Violation {
        /// The sender, as its link authenticated it.
        peer: NodeId,
        /// The message.
        message: &'static str,
        /// The rule it broke.
        rule: &'static str,
        /// Violations by this peer since the last report, this one included.
        count: u64,
    },
    /// Contents from `sender` did not match the digest `manager` gave
    /// (recorded by `recorder`, as the manager says); the read went to the
    /// origin, whose copy decided the `verdict`. Reported at most once a
    /// minute per blamed node ([`Verdict::blamed`]); every one is counted
    /// in the stats at once.
    IntegrityFailure {
        /// The block.
        block: K,
        /// The message that brought the contents.
        message: &'static str,
        /// Their sender, as its link authenticated it.
        sender: NodeId,
        /// The block's manager, which gave the digest.
        manager: NodeId,
        /// The node whose record the digest is, as the manager says.
        recorder: NodeId,
        /// Whom the origin's copy blames.
        verdict: Verdict,
        /// Failures blamed on that node since the last report, this one
        /// included.
        count: u64,
    },
}

/// A finished read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served<D> {
    /// The block's contents.
    pub data: D,
    /// Where they came from.
    pub level: Level,
}

/// Why a read failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadFailure {
    /// The origin read failed (the driver holds its error).
    #[error("the origin read failed")]
    Origin,
    /// Too many reads were waiting already.
    #[error("too many reads in flight; try again")]
    Overloaded,
}

/// One node of a live cluster, as a state machine.
pub struct NodeProtocol<K, D> {
    pub(super) me: NodeId,
    pub(super) kind: AlgorithmKind,
    pub(super) cfg: ProtocolConfig,
    /// Live members, this node included, sorted.
    pub(super) live: Vec<NodeId>,
    /// Who owns which Hash-Distributed partition (over `live`).
    pub(super) owners: crate::coop::Owners,
    pub(super) node: Box<dyn LiveNode<K, D>>,
    pub(super) manager: LiveManager<K, D>,
    /// The size classes the machines apply, by which a file's blocks are
    /// named ([`NodeProtocol::classed`]).
    classes: crate::coop::ClassPolicies,
    /// What the machines send, before the protocol maps it.
    pub(super) machine_out: Outbox<K, D>,
    /// Reused for the reads the machines complete (no allocation per
    /// input).
    pub(super) done_scratch: Vec<crate::coop::ReadDone<K>>,
    /// Messages from this node to itself (its own manager slice, say),
    /// delivered in order like any other.
    pub(super) local: VecDeque<PeerMsg<K, D>>,
    pub(super) actions: VecDeque<Action<K, D>>,
    pub(super) reads: Reads<K, D>,
    pub(super) held: Held<K, D>,
    /// Who parked each block this Direct host keeps.
    pub(super) parked: Parked<K>,
    /// N-Chance questions to managers awaiting an answer.
    pub(super) questions: super::questions::Questions<K>,
    pub(super) slice: Slice<K>,
    /// Forwards for blocks this node is still reading: served when its
    /// own read finishes (cluster-wide single-flight), readers per block.
    pub(super) deferred: HashMap<K, Vec<NodeId>>,
    pub(super) timers: Timers<K>,
    pub(super) peers: Peers,
    pub(super) stats: ProtocolStats,
    /// When each peer's violations were last reported, and how many since.
    pub(super) reported: BTreeMap<NodeId, (u64, u64)>,
    /// When this node's user last read, or when the node started (for
    /// [`Status::idle`](super::Status::idle): a node is idle only once it
    /// has been seen not reading for a while, so a cluster just started
    /// does not advertise all its members idle to each other before their
    /// users begin).
    pub(super) last_read: u64,
    /// Whether the node machine was last told it is idle.
    pub(super) told_idle: bool,
    /// The sealer and hash table of a private origin ([`Self::set_private`]).
    pub(super) private: Option<super::private::Private<K, D>>,
    /// A read whose `Read` its manager has already
    /// ([`NodeProtocol::handle_read_asked`]): not sent again.
    pub(super) read_asked: Option<K>,
    /// Carried reads awaited, and contents that came before them.
    pub(super) carried: super::carried::Carried<K, D>,
    /// Blocks pinned outside the machine's cache (`pinned.rs`).
    pub(super) pinned: super::pinned::Pinned<K, D>,
    /// The index of this node's disk tier, if it has one (`disk.rs`).
    pub(super) disk: Option<super::disk::DiskTier<K>>,
    /// The disk tier given up, while it is (`disk.rs`).
    pub(super) disk_lost: Option<super::disk::Lost>,
    /// Reads of this node's disk for peers (`disk_peers.rs`).
    pub(super) disk_serves: super::disk_peers::DiskServes<K>,
}

impl<K, D> std::fmt::Debug for NodeProtocol<K, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeProtocol")
            .field("me", &self.me)
            .field("kind", &self.kind)
            .field("live", &self.live)
            .finish_non_exhaustive()
    }
}

/// Forwards deferred per block at most (readers beyond time out).
const MAX_DEFERRED_PER_BLOCK: usize = 16;

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Node `me` running `kind` with `machines` (from
    /// [`AlgorithmKind::build_live`]), alone until told its members, at
    /// time `now`.
    pub fn new(
        me: NodeId,
        kind: AlgorithmKind,
        machines: LiveMachines<K, D>,
        cfg: ProtocolConfig,
        now: u64,
    ) -> Self {
        let LiveMachines {
            mut node,
            mut manager,
            classes,
        } = machines;
        node.set_peers(&[me]);
        manager.set_peers(&[me]);
        let mut timers = Timers::default();
        timers.arm(now + cfg.ping_every_us, Timer::Ping);
        NodeProtocol {
            me,
            kind,
            cfg,
            live: vec![me],
            owners: crate::coop::Owners::Live(vec![me]),
            node,
            manager,
            classes,
            machine_out: Outbox::default(),
            done_scratch: Vec::new(),
            local: VecDeque::new(),
            actions: VecDeque::new(),
            reads: Reads::default(),
            held: Held::default(),
            parked: Parked::default(),
            questions: Default::default(),
            slice: Slice::default(),
            deferred: HashMap::new(),
            timers,
            peers: Peers::default(),
            stats: ProtocolStats::default(),
            reported: BTreeMap::new(),
            last_read: now,
            told_idle: false,
            private: None,
            read_asked: None,
            carried: Default::default(),
            pinned: Default::default(),
            disk: None,
            disk_lost: None,
            disk_serves: Default::default(),
        }
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.me
    }

    /// `block` of a file version of `size` bytes, named in that size's
    /// class under this node's class policies ([`super::classed`]).
    pub fn classed(&self, block: K, size: u64) -> K {
        super::classed(&self.classes, block, size)
    }

    /// The algorithm it runs.
    pub fn algorithm(&self) -> AlgorithmKind {
        self.kind
    }

    /// The live members, this node included, sorted.
    pub fn members(&self) -> &[NodeId] {
        &self.live
    }

    /// The counters.
    pub fn stats(&self) -> &ProtocolStats {
        &self.stats
    }

    /// The manager slice's directory: which nodes cache each block this
    /// node manages.
    pub fn directory(&self) -> &crate::coop::Directory<K> {
        self.manager.directory()
    }

    /// Blocks and bytes the node's caches hold.
    pub fn usage(&self) -> StoreUsage {
        self.node.usage()
    }

    /// The smoothed round-trip time to `peer`, if measured, microseconds.
    pub fn rtt_us(&self, peer: NodeId) -> Option<u64> {
        self.peers.rtt(peer)
    }

    /// Whether the node waits on nothing: no read in flight or in line,
    /// no block held unverified, no forward deferred, no message to
    /// itself, no record awaited, and its machine quiet. With every node
    /// quiet and every link empty, the cluster is at quiescence.
    pub fn is_quiet(&self) -> bool {
        self.waits_on().is_none()
    }

    /// What the node still waits on, if anything (for reports on a node
    /// that does not go quiet).
    pub fn waits_on(&self) -> Option<&'static str> {
        [
            (!self.reads.is_empty(), "reads"),
            (!self.held.is_empty(), "held blocks"),
            (!self.deferred.is_empty(), "deferred forwards"),
            (self.serves_from_disk(), "disk reads for peers"),
            (!self.local.is_empty(), "messages to itself"),
            (!self.slice.is_quiet(), "questions awaiting a record"),
            (!self.node.is_quiet(), "its algorithm's machine"),
            (
                self.disk.as_ref().is_some_and(|t| t.writing() > 0),
                "writes to its disk",
            ),
        ]
        .into_iter()
        .find_map(|(waits, what)| waits.then_some(what))
    }

    /// The next thing the node must do, if any.
    pub fn poll(&mut self) -> Option<Action<K, D>> {
        self.actions.pop_front()
    }

    /// When [`NodeProtocol::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.timers.next()
    }

    /// How long a read waits on peers before reading the origin: ten
    /// smoothed round trips of the slowest live peer plus two origin reads
    /// (a forwarded read may wait on the holder's own origin read),
    /// between the configured floor and ceiling.
    pub fn peer_timeout(&self) -> u64 {
        let rtt = self.peers.max_rtt().unwrap_or(1_000);
        (rtt * 10 + self.reads.origin_time_us() * 2)
            .min(self.cfg.max_timeout_us)
            .max(self.cfg.min_timeout_us)
    }

    /// This node's user reads `block`. Reads of a block already in flight
    /// here join it: one [`Action::Complete`] finishes them all.
    pub fn handle_read(&mut self, block: K, now: u64) {
        self.last_read = self.last_read.max(now);
        self.tell_idle(false);
        self.start_read(block, now);
        self.settle(now);
    }

    /// Whether this node can serve, and ask for, a read carried inside
    /// another request ([`NodeProtocol::handle_read_for`],
    /// [`NodeProtocol::handle_read_asked`]): not a Direct node (its reads
    /// go to a host before any manager), nor a private one (no manager
    /// knows its blocks).
    pub fn serves_carried_reads(&self) -> bool {
        self.kind != AlgorithmKind::Direct && self.private.is_none()
    }

    /// `reader` asked for `block` inside another request its link
    /// authenticated: a C2Cfs open whose manager (this node) serves the
    /// file's first block with its answer
    /// ([`c2cfs::exclusive`](crate::c2cfs::exclusive)). Judged and served exactly
    /// as a [`PeerMsg::Read`] from `reader`.
    pub fn handle_read_for(&mut self, reader: NodeId, block: K, now: u64) {
        self.handle_message(reader, PeerMsg::Read { block }, now);
    }

    /// This node's user reads `block`, whose read `manager` is serving
    /// already ([`NodeProtocol::handle_read_for`] there): as
    /// [`NodeProtocol::handle_read`], but the node's `Read` is not sent
    /// again. Only if `manager` manages the block in this node's view;
    /// otherwise the read asks its own manager as usual (and `manager`'s
    /// answers are refused by the roles).
    pub fn handle_read_asked(&mut self, block: K, manager: NodeId, now: u64) {
        if manager != self.me && self.manager_of(block) == manager && self.private.is_none() {
            self.read_asked = Some(block);
        }
        self.last_read = self.last_read.max(now);
        self.tell_idle(false);
        self.start_read(block, now);
        // Contents that came before the read (module `carried`).
        for (from, data) in self.take_carried(block) {
            self.read_data(from, block, data, now);
        }
        // The machine's Read leaves (or not) as its output is routed.
        self.settle(now);
        self.read_asked = None;
    }

    /// The origin read of `block` finished with its contents, or failed.
    pub fn handle_origin_done(&mut self, block: K, result: Result<D, ()>, now: u64) {
        self.origin_done(block, result, now);
        self.settle(now);
    }

    /// A message from `from`, the peer its link authenticated.
    pub fn handle_message(&mut self, from: NodeId, msg: PeerMsg<K, D>, now: u64) {
        self.on_message(from, msg, now);
        self.settle(now);
    }

    /// The live members are now `members` (this node is added if absent).
    pub fn set_members(&mut self, members: &[NodeId], now: u64) {
        self.change_members(members, now);
        self.settle(now);
    }

    /// Fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        while let Some(timer) = self.timers.pop_due(now) {
            match timer {
                Timer::Read(block) => self.read_deadline(block, now),
                Timer::Held(block) => self.held_deadline(block, now),
                Timer::Grant(block) => self.grant_deadline(block, now),
                Timer::Forward(block) => self.slice.expire_forwards(block, now),
                Timer::Question(block) => self.question_deadline(block, now),
                Timer::DiskRetry => self.disk_retry_due(),
                Timer::Ping => {
                    self.tell_idle(self.own_status(now).idle);
                    self.ping_round(now);
                    self.timers.arm(now + self.cfg.ping_every_us, Timer::Ping);
                }
            }
        }
        self.settle(now);
    }

    /// The block's manager among the live members.
    pub(super) fn manager_of(&self, block: K) -> NodeId {
        manager_of(block.route(), &self.live).unwrap_or(self.me)
    }

    /// Queues `msg` for `to`: a peer, or this node itself.
    pub(super) fn send(&mut self, to: NodeId, msg: PeerMsg<K, D>) {
        if to == self.me && self.cfg.local_first {
            self.local.push_back(msg);
        } else {
            self.actions.push_back(Action::Send { to, msg });
        }
    }

    /// Queues `msg` for `block`'s manager. A private node's blocks never
    /// enter the shared directory: it tells managers nothing.
    pub(super) fn send_to_manager(&mut self, block: K, msg: PeerMsg<K, D>) {
        let refuse = self.private.is_some(); // rule: private-silent
        if refuse {
            return;
        }
        let m = self.manager_of(block);
        self.send(m, msg);
    }

    /// Works off what the machines sent and this node's messages to
    /// itself, until nothing is left.
    pub(super) fn settle(&mut self, now: u64) {
        for _ in 0..MAX_SETTLE_STEPS {
            self.route_machine_output(now);
            let Some(msg) = self.local.pop_front() else {
                return self.bound_timers();
            };
            self.on_message(self.me, msg, now);
        }
        // A node talking to itself without end is a bug (one was: N-Chance
        // asking its own manager slice about a block it no longer held, for
        // ever). Stop it here rather than grow without bound; the reads it
        // strands time out, and the count shows the bug.
        self.local.clear();
        self.stats.runaways += 1;
    }

    /// Counts a message refused for its sender's role, and reports it.
    pub(super) fn violation(
        &mut self,
        peer: NodeId,
        msg: &PeerMsg<K, D>,
        rule: &'static str,
        now: u64,
    ) {
        let slot = if self.stats.violations.len() < MAX_VIOLATORS
            || self.stats.violations.contains_key(&peer)
        {
            peer
        } else {
            *self.stats.violations.keys().next_back().unwrap_or(&peer)
        };
        *self.stats.violations.entry(slot).or_default() += 1;
        let Some(count) = self.report_due(peer, now) else {
            return;
        };
        self.actions.push_back(Action::Violation {
            peer,
            message: msg.name(),
            rule,
            count,
        });
    }

    /// Counts one more misdeed of `peer`; if its report is due (at most
    /// once a minute per peer), how many there were since the last one,
    /// this one included.
    pub(super) fn report_due(&mut self, peer: NodeId, now: u64) -> Option<u64> {
        if self.reported.len() >= MAX_VIOLATORS && !self.reported.contains_key(&peer) {
            return None;
        }
        let (last, count) = self.reported.entry(peer).or_insert((0, 0));
        *count += 1;
        if *last != 0 && now.saturating_sub(*last) < REPORT_EVERY_US {
            return None;
        }
        let due = *count;
        (*last, *count) = (now.max(1), 0);
        Some(due)
    }

    /// The trust boundary: `msg` from `from` is handled only if `from`
    /// holds the role allowed to send it (docs/PROTOCOL.md, "Roles").
    pub(super) fn on_message(&mut self, from: NodeId, msg: PeerMsg<K, D>, now: u64) {
        use PeerMsg::*;
        if let Some(rule) = self.refusal(from, &msg) {
            return self.violation(from, &msg, rule, now);
        }
        let Some(msg) = self.wait_for_verdict(from, msg) else {
            return;
        };
        match msg {
            // To the manager slice: about the sender itself.
            Read { block } => self.manager_read(from, block, now),
            IsSinglet { block } => self.deliver_to_manager(from, Msg::IsSinglet { block }, now),
            Dropped { block, on_disk } => self.manager_dropped(from, block, on_disk, now),
            Evict { block } => self.manager_evict(from, block),
            Cached { block } => self.manager_cached(from, block, now),
            NotHere { block } => self.manager_not_here(from, block, now),
            Record { block, digest } => self.manager_record(from, block, digest, now),
            HashOf { block } => self.manager_hash_of(from, block, now),
            // From the block's manager. A private node holds no block a
            // manager could know of, and serves none of its own.
            Forward { block, reader } => {
                let refuse = self.private.is_some(); // rule: private-serves-none
                if refuse {
                    return self.send(from, NotHere { block });
                }
                self.serve_forward(block, reader, now)
            }
            Expect {
                block,
                recorded,
                holder,
            } => {
                let expected = Expected {
                    recorded,
                    manager: from,
                };
                self.read_expect(block, expected, holder, now)
            }
            FetchOrigin { block, record } => self.read_fetch_origin(block, record, now),
            HashIs { block, recorded } => {
                let expected = recorded.map(|recorded| Expected {
                    recorded,
                    manager: from,
                });
                self.held_verdict(block, expected, now);
                self.read_hash_is(block, expected, now);
            }
            Singlet { block, singlet } => {
                if self.questions.contains(block) {
                    self.questions.answered(block);
                    self.deliver_to_node(Msg::Singlet { block, singlet }, now)
                } else {
                    self.stats.late_replies += 1;
                }
            }
            Invalidate { block } => {
                self.unpin_invalidated(block);
                self.parked.forget(block);
                if let Some(p) = &mut self.private {
                    p.forget(block);
                }
                let held = self.held.remove(block);
                self.deliver_to_node(Msg::Invalidate { block }, now);
                if let Some(waiting) = held {
                    // A read waiting on the held copy goes to the origin
                    // (found by the fault harness: it waited for ever).
                    self.held_read_verdict(block, None, now);
                    self.replay_waiting(waiting, now);
                }
            }
            // Between nodes.
            // A private node's host answers under the id it keeps the
            // block by (private.rs).
            Data { block, data } => {
                let block = self.reclaimed(block);
                self.read_data(from, block, data, now)
            }
            Missing { block } => {
                let block = self.reclaimed(block);
                self.read_missing(from, block, now)
            }
            PartitionRead { block } => self.deliver_to_node(
                Msg::Read {
                    block,
                    reader: from,
                    hops: 1,
                },
                now,
            ),
            Reclaim { block } => self.reclaim_here(from, block, now),
            Recirculate {
                block,
                chances,
                data,
            } => self.hold_then_deliver(
                from,
                Msg::Recirculate {
                    block,
                    data,
                    chances,
                },
                now,
            ),
            Place { block, data } => {
                // A Direct host never serves what its client parks to its
                // own reads (it goes back to the client, which verifies
                // it); a partition serves its owner's reads: checked first.
                if self.kind == AlgorithmKind::Hash && from != self.me {
                    let msg = Msg::Place {
                        block,
                        data,
                        replaces: None,
                    };
                    self.hold_then_deliver(from, msg, now);
                } else {
                    self.place_here(from, block, data, now);
                }
            }
            Ping { nonce, status } => {
                self.advertised(from, status);
                let status = self.own_status(now);
                self.send(from, Pong { nonce, status });
            }
            Pong { nonce, status } => {
                self.advertised(from, status);
                self.peers.pong(from, nonce, now, self.cfg.max_timeout_us);
            }
        }
    }

    /// A message for the node machine.
    pub(super) fn deliver_to_node(&mut self, msg: Msg<K, D>, now: u64) {
        let from = crate::coop::Addr::Manager;
        self.node.handle(from, msg, now, &mut self.machine_out);
    }

    /// A message for the manager slice from node `from`.
    pub(super) fn deliver_to_manager(&mut self, from: NodeId, msg: Msg<K, D>, now: u64) {
        use crate::coop::ManagerMachine;
        let from = crate::coop::Addr::Node(from);
        self.manager.handle(from, msg, now, &mut self.machine_out);
    }

    /// A forward to this node as a holder: served now, or, while this node
    /// is still reading the block itself, when its read finishes.
    fn serve_forward(&mut self, block: K, reader: NodeId, now: u64) {
        if self.reads.contains(block) {
            let waiting = self.deferred.entry(block).or_default();
            if waiting.len() < MAX_DEFERRED_PER_BLOCK {
                waiting.push(reader);
            } else {
                self.stats.dropped += 1;
            }
            return;
        }
        if let Some(data) = self.pinned.get(block) {
            let data = data.clone();
            return self.send(reader, PeerMsg::Data { block, data });
        }
        let msg = Msg::Forward {
            block,
            reader,
            hops: 2,
        };
        self.deliver_to_node(msg, now);
    }

    /// A peer's request for a block held unverified waits for the verdict
    /// (`None`); anything else is handled now.
    fn wait_for_verdict(&mut self, from: NodeId, msg: PeerMsg<K, D>) -> Option<PeerMsg<K, D>> {
        let (PeerMsg::Forward { block, .. }
        | PeerMsg::PartitionRead { block }
        | PeerMsg::Reclaim { block }) = msg
        else {
            return Some(msg);
        };
        match self.held.wait(block, from, msg) {
            Wait::NotHeld(msg) => Some(msg),
            Wait::Waiting => None,
            Wait::Full => {
                self.stats.dropped += 1;
                None
            }
        }
    }

    /// Serves the forwards that waited for this node's read of `block`.
    pub(super) fn release_deferred(&mut self, block: K, now: u64) {
        for reader in self.deferred.remove(&block).unwrap_or_default() {
            let msg = Msg::Forward {
                block,
                reader,
                hops: 2,
            };
            self.deliver_to_node(msg, now);
        }
    }

    /// Entries of this node's state that a timer may belong to.
    pub(super) fn timed_entries(&self) -> usize {
        self.reads.len() + self.held.len() + self.slice.len() + self.questions.len() + 1
    }

    /// Drops the timers of state that has gone, once they outnumber the
    /// live entries (each read, hold, grant, forward and question arms one,
    /// and leaves it behind when it ends early), after every input: the
    /// timers then never exceed `2 * timed_entries() + 1024`.
    fn bound_timers(&mut self) {
        if self.timers.len() <= 2 * self.timed_entries() + 1024 {
            return;
        }
        let (reads, held, slice, questions) =
            (&self.reads, &self.held, &self.slice, &self.questions);
        self.timers.retain(|t| match *t {
            Timer::Read(b) => reads.contains(b),
            Timer::Held(b) => held.contains(b),
            Timer::Grant(b) | Timer::Forward(b) => slice.tracks(b),
            Timer::Question(b) => questions.contains(b),
            Timer::Ping | Timer::DiskRetry => true,
        });
    }
}
