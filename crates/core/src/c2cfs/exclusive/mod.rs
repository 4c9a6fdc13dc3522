//! The live C2Cfs consistency machine in `exclusive` mode (every write goes
//! through the cluster): one per node, playing the manager for the files
//! rendezvous hashing gives it ([`manager_of`] over the live members) and
//! the client for the opens and commits its own users ask of any manager.
//! Pure state, as [`NodeProtocol`](crate::protocol::NodeProtocol): inputs
//! arrive through `handle_*(.., now)`, outputs leave through [`poll`]
//! ([`Action`]), timers through [`poll_timeout`] and [`handle_timeout`].
//!
//! An open asks the file's manager for its [`Tcommit`] (the opener's
//! `Topen`) and the origin's version; a known version is answered from the
//! manager's [`CommitTable`] with no origin round trip, which is the point
//! of `exclusive` mode. A close writes through to the origin first, then
//! commits with its `Topen` (C2Cfs section 3). Any `None` answer sends the
//! opener to the origin, which is always safe: every write reaches the
//! origin before its commit.
//!
//! **The manager never trusts a version from a peer.** A commit names no
//! version: the manager asks the origin itself ([`Action::Stat`]). At most
//! one stat per file is in flight, and a stat answers only the requests
//! that arrived before it was issued. Without that rule:
//!
//! 1. an open finds no version and issues stat S1;
//! 2. the origin answers S1 with version 1 (the reply is on its way);
//! 3. a writer writes version 2 through and sends its commit;
//! 4. S1's reply arrives: if it answered the commit too, the table would
//!    record version 1 as the latest commit, and every later open (begun
//!    after the close completed) would read version 1.
//!
//! So the commit waits for stat S2, issued after it arrived.
//!
//! **Membership.** Members' views differ while gossip converges, so two
//! nodes may both believe they manage a file. On every change of its view a
//! node clears its table and, for [`CommitConfig::stable_us`] after the
//! last change, answers every open and commit `None` without recording:
//! opens go to the origin meanwhile. This assumes every member's view
//! converges within `stable_us`. The residual risk: a node whose view lags
//! longer can commit at a node that no longer manages the file. If that
//! node answers `None` (it knows it is not the manager), the writer
//! broadcasts [`CommitMsg::Forget`] to every live member before its close
//! completes, so whoever holds an entry for the file (the real manager
//! included) drops it and the next open stats the origin. If the stale
//! node's own view lags too, it records the commit, and the real manager
//! may answer opens with the older version until its entry is dropped: a
//! close-to-open violation bounded by how long two views stay wrong.
//!
//! **Timeouts.** A commit that times out also broadcasts `Forget`, but a
//! timeout proves nothing: if the manager's `Forget` times out too (it is
//! down, or the link is slow), the close completes `None` while the manager
//! may still answer opens from an entry older than the write, until it
//! drops that entry (a membership change, the table's LRU, a later commit).
//! A [`Action::Committed`] with `None` therefore means close-to-open is
//! not assured for that close; the driver should count it and may report
//! it to the writer.
//!
//! **The first block in the same round trip.** The manager of a file is
//! also the manager of its blocks ([`manager_key`]: rendezvous over the
//! same key as every [`BlockId::route`](crate::protocol::BlockId) of the
//! file), so it knows both `Tcommit` and who holds which block, as the
//! paper's server knows `Tcommit` and the `CVMap`. An open carries the
//! opener's `Tlocal` ([`FirstBlock`]); unless that is the latest, the
//! manager answers and, in the same breath, serves the opener's read of
//! the version's first block as if the opener had asked for it
//! ([`Action::ServeFirst`]): forwarded to a holder, or the opener told to
//! fetch it from the origin. The `Opened` goes first on the link, saying
//! so (`served`); the opener starts that read without asking again
//! ([`Action::ReadFirst`]). A small file's open then takes one round trip
//! to the manager and one hop on to the holder, not two round trips. The
//! holder's contents are checked against the manager's digest like any
//! other: nothing new is trusted. A holder's contents can overtake the
//! `Opened` (they come on another link); the read then waits for its
//! timeout and reads the origin, correct but slow (counted as the
//! protocol's late replies). An opener with an open of the same file in
//! flight asks nothing more, so one read of the block is served at a time.
//!
//! **Keys.** A file is named by [`path_key`], a fixed 64-bit hash of its
//! path. Two paths with the same key share a table entry; among honest
//! paths that takes about 2^32 files. A member could craft a colliding
//! path (the hash is not keyed), which gives it no more than committing the
//! other path itself would, except that the manager then records the
//! colliding file's version: members are authenticated, and a stat in
//! flight refuses a request for a different path with the same key.
//!
//! The driver must answer every [`Action::Stat`] with
//! [`CommitProtocol::handle_stat`]: a stat never answered holds its
//! waiters until the clients time out, and its file takes no new stat.
//!
//! [`manager_of`]: crate::protocol::manager_of
//! [`poll`]: CommitProtocol::poll
//! [`poll_timeout`]: CommitProtocol::poll_timeout
//! [`handle_timeout`]: CommitProtocol::handle_timeout

mod client;
#[cfg(test)]
mod harness;
mod manager;
mod msg;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_paths;
#[cfg(test)]
mod tests_random;

pub use msg::{Action, CommitCounters, CommitMsg, FirstBlock};

use super::{CommitTable, Tcommit};
use crate::coop::NodeId;
use crate::error::CapacityError;
use crate::protocol::route_of;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;

/// Longest path accepted, in bytes; a peer's longer path is a violation.
pub const MAX_PATH: usize = 4096;
/// Requests (opens and commits) waiting on one file's stats at a manager;
/// more are answered `None` at once.
pub const MAX_WAITERS: usize = 64;
/// Files with a stat in flight at a manager; a request needing another is
/// answered `None` at once.
pub const MAX_STATS: usize = 4096;
/// This node's own opens and commits in flight; more complete with `None`
/// at once.
pub const MAX_PENDING: usize = 4096;

/// A file's key: a fixed 64-bit hash of its path's bytes, the same in every
/// process (a fixed seed), so every member picks the same manager.
pub fn path_key(path: &str) -> u64 {
    const SEED: u64 = 0x6332_6366_735f_6b65;
    foldhash::fast::FixedState::with_seed(SEED).hash_one(path.as_bytes())
}

/// The key a file's manager is chosen by ([`manager_of`](crate::protocol::manager_of)): [`route_of`]
/// its [`path_key`], as every [`BlockId::route`](crate::protocol::BlockId)
/// of the file, so one member keeps its commit state and its blocks'
/// directory.
pub fn manager_key(path: &str) -> u64 {
    u64::from(route_of(path_key(path)))
}

/// `members` with `me` among them, sorted and without repeats: the live
/// set a file's manager is chosen from, as every C2Cfs machine keeps it.
pub(crate) fn live_with(me: NodeId, members: &[NodeId]) -> Vec<NodeId> {
    let mut live = members.to_vec();
    live.push(me);
    live.sort_unstable();
    live.dedup();
    live
}

/// What the machine needs to know of a version beyond its identity.
pub trait Version: Clone + Eq {
    /// Whether the version has a first block to serve (is not empty).
    fn has_first_block(&self) -> bool;

    /// Whether this is a version of `path`. Files are keyed by a 64-bit
    /// hash of their path ([`path_key`]), so a table entry or a manager's
    /// answer may be another path's (a chance collision, or one crafted
    /// by a member): such a version is never answered, served or taken.
    fn is_of(&self, path: &str) -> bool;

    /// Its size in bytes: the size class its blocks are named in
    /// ([`crate::protocol::classed`]). 0 where no class applies.
    fn size(&self) -> u64 {
        0
    }
}

/// The tests' versions: numbers, never empty, of any path.
#[cfg(test)]
impl Version for u64 {
    fn has_first_block(&self) -> bool {
        true
    }

    fn is_of(&self, _: &str) -> bool {
        true
    }
}

/// The machine's bounds and timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitConfig {
    /// Files the manager's table keeps (at least 1); the least recently
    /// used is dropped for a new one, which only costs an origin stat.
    pub capacity: usize,
    /// How long a request waits for its answer, in microseconds; it then
    /// completes `None`.
    pub timeout_us: u64,
    /// How long after a membership change the manager answers `None`, in
    /// microseconds (see the module doc).
    pub stable_us: u64,
    /// Whether this node asks for an open's first block with the answer,
    /// and serves it as a manager (see the module doc): only where the
    /// read protocol can serve a read an open carried (not Direct, whose
    /// reads go to a host first, nor a private origin, whose blocks no
    /// manager knows).
    pub serve_first: bool,
}

impl Default for CommitConfig {
    /// 65,536 files, 2 s timeout, 5 s to stabilise, first blocks served.
    fn default() -> Self {
        CommitConfig {
            capacity: 65536,
            timeout_us: 2_000_000,
            stable_us: 5_000_000,
            serve_first: true,
        }
    }
}

/// One node's C2Cfs `exclusive`-mode machine (see the module doc).
pub struct CommitProtocol<V> {
    me: NodeId,
    cfg: CommitConfig,
    /// Live members, this node included, sorted.
    live: Vec<NodeId>,
    /// The manager answers again from this time on.
    stable_at: u64,
    table: CommitTable<u64, V>,
    // Ordered maps: what walks them (a membership change answering every
    // waiter) decides outputs in one order, so a seed of the fault harness
    // replays event for event.
    stats: BTreeMap<u64, manager::Stat>,
    asks: BTreeMap<u64, client::Ask>,
    /// `(deadline, nonce)` of every ask.
    deadlines: BTreeSet<(u64, u64)>,
    /// Commits broadcasting `Forget`: answers still awaited, per request.
    forgetting: BTreeMap<u64, usize>,
    /// This node's opens and commits in flight.
    requests: usize,
    /// This node's `Tlocal` of each file it opened or wrote, by path key:
    /// the `Tcommit` of the version it read or took in last (a hint:
    /// the blocks may have gone since), at most `cfg.capacity`.
    tlocal: client::Tlocal,
    /// This node's opens in flight, by path key.
    opening: BTreeMap<u64, u32>,
    next_nonce: u64,
    /// Messages from this node to itself, handled before the next input.
    local: VecDeque<CommitMsg<V>>,
    actions: VecDeque<Action<V>>,
    counters: CommitCounters,
}

impl<V> std::fmt::Debug for CommitProtocol<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitProtocol")
            .field("me", &self.me)
            .field("live", &self.live)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<V: Version> CommitProtocol<V> {
    /// Node `me`, alone until told its members, issuing `Tcommit` values of
    /// `epoch` (chosen at its start, e.g. at random, so a restarted node
    /// never reissues a value).
    pub fn new(me: NodeId, epoch: u64, cfg: CommitConfig) -> Result<Self, CapacityError> {
        Ok(CommitProtocol {
            me,
            cfg,
            live: vec![me],
            stable_at: 0,
            table: CommitTable::new(epoch, cfg.capacity)?,
            stats: BTreeMap::new(),
            asks: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            forgetting: BTreeMap::new(),
            requests: 0,
            tlocal: client::Tlocal::new(cfg.capacity),
            opening: BTreeMap::new(),
            next_nonce: 0,
            local: VecDeque::new(),
            actions: VecDeque::new(),
            counters: CommitCounters::default(),
        })
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.me
    }

    /// The live members, this node included, sorted.
    pub fn members(&self) -> &[NodeId] {
        &self.live
    }

    /// Whether the members have agreed for the stable period at `now`, so
    /// this node's manager side answers opens from its table.
    pub fn is_stable(&self, now: u64) -> bool {
        now >= self.stable_at
    }

    /// The counters.
    pub fn counters(&self) -> &CommitCounters {
        &self.counters
    }

    /// Files in the manager's table.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// Whether the node waits on nothing: no request of its own in
    /// flight, no stat in flight.
    pub fn is_quiet(&self) -> bool {
        self.asks.is_empty() && self.stats.is_empty() && self.local.is_empty()
    }

    /// The next thing the node must do, if any.
    pub fn poll(&mut self) -> Option<Action<V>> {
        self.actions.pop_front()
    }

    /// When [`CommitProtocol::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.deadlines.first().map(|&(at, _)| at)
    }

    /// This node's user opens `path` to read it; completes with
    /// [`Action::Opened`].
    pub fn handle_open(&mut self, req: u64, path: Arc<str>, now: u64) {
        self.start_open(req, path, true, now);
        self.settle(now);
    }

    /// This node's user asks what `path` is without reading it: a writer's
    /// open (its `Topen`), a `getattr` (the version's size, time and
    /// mode). As [`CommitProtocol::handle_open`], but no first block is
    /// asked for, and the answer is not this node's `Tlocal`.
    pub fn handle_ask(&mut self, req: u64, path: Arc<str>, now: u64) {
        self.start_open(req, path, false, now);
        self.settle(now);
    }

    /// This node's user closed `path` after writing it through to the
    /// origin (or removed it, or renamed another file over it, with
    /// `topen: None`); completes with [`Action::Committed`].
    pub fn handle_commit(&mut self, req: u64, path: Arc<str>, topen: Option<Tcommit>, now: u64) {
        self.start_commit(req, path, topen, now);
        self.settle(now);
    }

    /// A message from `from`, the member its link authenticated.
    pub fn handle_message(&mut self, from: NodeId, msg: CommitMsg<V>, now: u64) {
        self.on_message(from, msg, now);
        self.settle(now);
    }

    /// The origin's answer to [`Action::Stat`] for `path`: its version, or
    /// an error (the file is gone, or the origin failed).
    pub fn handle_stat(&mut self, path: &str, result: Result<V, ()>, now: u64) {
        self.stat_done(path, result);
        self.settle(now);
    }

    /// The live members are now `members` (this node is added if absent).
    pub fn set_members(&mut self, members: &[NodeId], now: u64) {
        let live = live_with(self.me, members);
        if live == self.live {
            return;
        }
        self.live = live;
        self.stable_at = now.saturating_add(self.cfg.stable_us);
        self.table.clear();
        self.drop_stat_waiters();
        self.expire_asks_to_leavers(now);
        self.settle(now);
    }

    /// Fires every timeout due at `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        while let Some(&(at, nonce)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            self.counters.timeouts += 1;
            self.expire(nonce, now);
        }
        self.settle(now);
    }

    /// Drops `path`'s entry, as a `Forget` would.
    #[cfg(test)]
    fn forget_for_test(&mut self, path: &str) {
        self.table.forget(path_key(path));
    }

    fn is_member(&self, node: NodeId) -> bool {
        self.live.binary_search(&node).is_ok()
    }

    fn violation(&mut self, from: NodeId, why: &'static str) {
        self.counters.violations += 1;
        self.actions.push_back(Action::Violation { from, why });
    }

    /// Sends `msg` to `to`, or queues it for this node itself.
    fn send(&mut self, to: NodeId, msg: CommitMsg<V>) {
        if to == self.me {
            self.local.push_back(msg);
        } else {
            self.actions.push_back(Action::Send { to, msg });
        }
    }

    /// Handles the messages this node sent itself.
    fn settle(&mut self, now: u64) {
        while let Some(msg) = self.local.pop_front() {
            self.on_message(self.me, msg, now);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: CommitMsg<V>, now: u64) {
        use CommitMsg::*;
        match msg {
            Open { nonce, path, first } => {
                let request = manager::Request::Open(first);
                self.on_request(from, nonce, path, request, now);
            }
            Commit { nonce, path, topen } => {
                let request = manager::Request::Commit(topen);
                self.on_request(from, nonce, path, request, now);
            }
            Forget { nonce, path } => self.on_forget(from, nonce, path),
            Opened {
                nonce,
                answer,
                served,
            } => {
                self.on_answer(from, nonce, client::Answer::Opened(answer, served), now);
            }
            Committed { nonce, answer } => {
                self.on_answer(from, nonce, client::Answer::Committed(answer), now);
            }
            Forgot { nonce } => self.on_answer(from, nonce, client::Answer::Forgot, now),
        }
    }
}
