//! One node's protocols as one machine: the block reads
//! ([`NodeProtocol`]), C2Cfs `exclusive` mode's opens and commits
//! ([`CommitProtocol`]), the cluster's file locks ([`LockProtocol`]),
//! warm-up placement ([`WarmPlacement`]) and directory listings
//! ([`ListProtocol`]),
//! with everything that joins them decided here, not by whoever drives
//! them:
//!
//! - an open's first block, served in the open's own round trip (C2Cfs
//!   section 3): the manager's commit machine says `ServeFirst` and its
//!   read machine serves that read as a `Read` from the opener its link
//!   authenticated; the opener's says `AwaitFirst` before the `Open`
//!   leaves (contents may overtake the answer) and `ReadFirst` when the
//!   manager answered `served`, and its read machine starts that read
//!   without asking again;
//! - one membership: every machine is told the same live members at the
//!   same time ([`Node::set_members`]);
//! - one clock and one outbox: inputs come with `now`, outputs leave
//!   through [`Node::poll`] in the order they were decided, and
//!   [`Node::poll_timeout`] is the earliest of the machines' deadlines.
//!
//! The daemon's driver carries this machine (frames to links, origin reads
//! and stats on tasks, answers to callers); the first block's id is named
//! by a function given at construction (the daemon's hashes the path and
//! the origin's version string; `first_block` below), the only thing the
//! core cannot know about the bytes' home.

use crate::c2cfs::Tcommit;
use crate::c2cfs::exclusive::{Action as CommitAction, CommitMsg, CommitProtocol, Version};
use crate::c2cfs::listings::{ListAction, ListMsg, ListProtocol, Listing};
use crate::c2cfs::locks::{LockAction, LockCall, LockMsg, LockProtocol};
use crate::coop::{NodeId, SizeClassed};
use crate::protocol::{Action as ReadAction, Content, NodeProtocol, PeerMsg, ProtocolKey};
use crate::warm::{WarmAction, WarmConfig, WarmMsg, WarmPlacement};
use std::collections::VecDeque;
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// Names the first block of `version` of the file at `path`.
pub type FirstBlockOf<K, V> = fn(&str, &V) -> K;

/// A message between nodes, of any of the machines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg<K, D, V, L> {
    /// The block reads'.
    Read(PeerMsg<K, D>),
    /// C2Cfs `exclusive` mode's.
    Commit(CommitMsg<V>),
    /// The file locks'.
    Lock(LockMsg),
    /// Warm-ups placed on managers.
    Warm(WarmMsg),
    /// Directory listings kept by their managers.
    List(ListMsg<L>),
}

/// What the node must do, in the order the machines decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output<K, D, V, L> {
    /// The block reads': send, read the origin, complete reads, report a
    /// violation or an integrity failure.
    Read(ReadAction<K, D>),
    /// C2Cfs `exclusive` mode's: send, stat the origin, answer an open or
    /// a commit, report a violation. Never `ServeFirst`, `AwaitFirst` or
    /// `ReadFirst`: this machine carries those out itself.
    Commit(CommitAction<V>),
    /// The file locks': send, answer a call, report a violation or a lost
    /// lock.
    Lock(LockAction),
    /// Warm-up placement's: send, read a file here (this node's warm-up's
    /// or a peer's), a file placed elsewhere, a violation.
    Warm(WarmAction),
    /// The listings': send, list the origin, answer a listing or a change,
    /// report a violation.
    List(ListAction<L>),
    /// This node starts reading `block`, the first block of `version` of
    /// `path`, which its open's manager is serving: from now on the
    /// block's origin read (if it comes to that) reads this version of
    /// this path, and the open's caller, answered next, joins the read.
    FirstRead {
        /// The block.
        block: K,
        /// The file opened.
        path: Arc<str>,
        /// The version the manager answered.
        version: V,
    },
}

/// Where this node's warm-ups are read: on each file's manager when
/// blocks read there serve this node's reads (Greedy, N-Chance,
/// Hash-Distributed: a manager forwards reads to holders or partition
/// owners hold them) and the origin is shared (a private one's files are
/// this node's alone); it reads for peers unless its origin is private.
fn warm_config<K: ProtocolKey + SizeClassed, D: Content>(reads: &NodeProtocol<K, D>) -> WarmConfig {
    use crate::coop::AlgorithmKind as A;
    let shared = !reads.is_private();
    let shares_blocks = matches!(reads.algorithm(), A::Greedy | A::NChance | A::Hash);
    WarmConfig::new(shared && shares_blocks, shared)
}

/// One node's protocols, joined.
pub struct Node<K, D, V, L> {
    reads: NodeProtocol<K, D>,
    commits: CommitProtocol<V>,
    locks: LockProtocol,
    warms: WarmPlacement,
    listings: ListProtocol<L>,
    first_block: FirstBlockOf<K, V>,
    /// Outputs decided while joining the machines, ahead of theirs.
    out: VecDeque<Output<K, D, V, L>>,
    /// The latest time an input brought: what the joins happen at.
    now: u64,
}

impl<K, D, V, L> std::fmt::Debug for Node<K, D, V, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("reads", &self.reads)
            .field("commits", &self.commits)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl<K, D, V, L> Node<K, D, V, L>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
    V: Version,
    L: Listing,
{
    /// The node made of these machines (all of node `reads.id()`),
    /// naming an open's first block with `first_block`.
    pub fn new(
        reads: NodeProtocol<K, D>,
        commits: CommitProtocol<V>,
        locks: LockProtocol,
        listings: ListProtocol<L>,
        first_block: FirstBlockOf<K, V>,
    ) -> Self {
        debug_assert_eq!(reads.id(), commits.id());
        let warms = WarmPlacement::new(reads.id(), warm_config(&reads));
        Node {
            warms,
            listings,
            reads,
            commits,
            locks,
            first_block,
            out: VecDeque::new(),
            now: 0,
        }
    }

    /// Block 0 of `version` of `path`, named in its size class as the
    /// reader names it (a manager serving an open must name the block the
    /// opener will read).
    fn classed_first_block(&self, path: &str, version: &V) -> K {
        self.reads
            .classed((self.first_block)(path, version), version.size())
    }

    /// The block reads' machine (its stats, status and view).
    pub fn reads(&self) -> &NodeProtocol<K, D> {
        &self.reads
    }

    /// The commit machine (its counters and stability).
    pub fn commits(&self) -> &CommitProtocol<V> {
        &self.commits
    }

    /// The lock machine (its counters and table).
    pub fn locks(&self) -> &LockProtocol {
        &self.locks
    }

    /// The warm-up placement machine (its counters).
    pub fn warms(&self) -> &WarmPlacement {
        &self.warms
    }

    /// The listing machine (its counters and table).
    pub fn listings(&self) -> &ListProtocol<L> {
        &self.listings
    }

    /// The block reads' machine, for what only concerns it (a private
    /// origin's sealer, set before the node starts).
    pub fn reads_mut(&mut self) -> &mut NodeProtocol<K, D> {
        &mut self.reads
    }

    fn at(&mut self, now: u64) {
        self.now = self.now.max(now);
    }

    /// This node's user reads `block`.
    pub fn handle_read(&mut self, block: K, now: u64) {
        self.at(now);
        self.reads.handle_read(block, now);
    }

    /// The origin read of `block` finished.
    pub fn handle_origin_done(&mut self, block: K, result: Result<D, ()>, now: u64) {
        self.at(now);
        self.reads.handle_origin_done(block, result, now);
    }

    /// The disk tier's read of `block` finished
    /// ([`NodeProtocol::handle_disk_read`]).
    pub fn handle_disk_read(
        &mut self,
        block: K,
        result: Result<D, crate::protocol::DiskMiss>,
        now: u64,
    ) {
        self.at(now);
        self.reads.handle_disk_read(block, result, now);
    }

    /// A message from `from`, as its link authenticated it.
    pub fn handle_message(&mut self, from: NodeId, msg: Msg<K, D, V, L>, now: u64) {
        self.at(now);
        match msg {
            Msg::Read(m) => self.reads.handle_message(from, m, now),
            Msg::Commit(m) => self.commits.handle_message(from, m, now),
            Msg::Lock(m) => self.locks.handle_message(from, m, now),
            Msg::Warm(m) => self.warms.handle_message(from, m, now),
            Msg::List(m) => self.listings.handle_message(from, m, now),
        }
    }

    /// This node opens `path` in `exclusive` mode, to read it (`reads`)
    /// or only to learn its `Topen` (to write); answered as request `req`.
    pub fn handle_open(&mut self, req: u64, path: Arc<str>, reads: bool, now: u64) {
        self.at(now);
        match reads {
            true => self.commits.handle_open(req, path, now),
            false => self.commits.handle_ask(req, path, now),
        }
    }

    /// This node wrote `path` through to the origin (or removed or
    /// replaced it, with `topen: None`); answered as request `req`.
    pub fn handle_commit(&mut self, req: u64, path: Arc<str>, topen: Option<Tcommit>, now: u64) {
        self.at(now);
        self.commits.handle_commit(req, path, topen, now);
    }

    /// The origin answered a stat the commit machine asked for.
    pub fn handle_stat(&mut self, path: &str, result: Result<V, ()>, now: u64) {
        self.at(now);
        self.commits.handle_stat(path, result, now);
    }

    /// A lock call of a process of this node, answered as request `req`.
    pub fn handle_lock_call(&mut self, req: u64, call: LockCall, now: u64) {
        self.at(now);
        self.locks.handle_call(req, call, now);
    }

    /// The caller of lock request `req` went away: its wait is cancelled.
    pub fn handle_lock_cancel(&mut self, req: u64, now: u64) {
        self.at(now);
        self.locks.handle_cancel(req, now);
    }

    /// A warm-up of this node reaches `path`, of `size` bytes; answered as
    /// request `req`.
    pub fn handle_warm_call(&mut self, req: u64, path: Arc<str>, size: u64, now: u64) {
        self.at(now);
        self.warms.handle_call(req, path, size, now);
    }

    /// This node read (`Some(bytes)`) or could not read the file `from`
    /// asked it to warm as `nonce`.
    pub fn handle_warm_served(&mut self, from: NodeId, nonce: u64, bytes: Option<u64>, now: u64) {
        self.at(now);
        self.warms.handle_served(from, nonce, bytes);
    }

    /// This node lists directory `dir` in `exclusive` mode; answered as
    /// request `req`.
    pub fn handle_list(&mut self, req: u64, dir: Arc<str>, now: u64) {
        self.at(now);
        self.listings.handle_list(req, dir, now);
    }

    /// An entry of directory `dir` changed at the origin through this node
    /// (`exclusive` mode; `subtree`: `dir` itself was made, removed or
    /// moved); answered as request `req`.
    pub fn handle_dir_changed(&mut self, req: u64, dir: Arc<str>, subtree: bool, now: u64) {
        self.at(now);
        self.listings.handle_changed(req, dir, subtree, now);
    }

    /// The origin listed `dir`, as the listing machine asked (`None`: it
    /// could not).
    pub fn handle_listed(&mut self, dir: &str, listing: Option<L>, now: u64) {
        self.at(now);
        self.listings.handle_listed(dir, listing, now);
    }

    /// The live members, this node among them: every machine hears the
    /// same view at the same time.
    pub fn set_members(&mut self, members: &[NodeId], now: u64) {
        self.at(now);
        self.reads.set_members(members, now);
        self.commits.set_members(members, now);
        self.locks.set_members(members, now);
        self.warms.set_members(members);
        self.listings.set_members(members, now);
    }

    /// The earliest deadline of any machine.
    pub fn poll_timeout(&self) -> Option<u64> {
        [
            self.reads.poll_timeout(),
            self.commits.poll_timeout(),
            self.locks.poll_timeout(),
            self.warms.poll_timeout(),
            self.listings.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Fires every machine's due timers.
    pub fn handle_timeout(&mut self, now: u64) {
        self.at(now);
        self.reads.handle_timeout(now);
        self.commits.handle_timeout(now);
        self.locks.handle_timeout(now);
        self.warms.handle_timeout(now);
        self.listings.handle_timeout(now);
    }

    /// Whether no machine waits on anything.
    pub fn is_quiet(&self) -> bool {
        self.out.is_empty()
            && self.reads.is_quiet()
            && self.commits.is_quiet()
            && self.listings.is_quiet()
    }

    /// The next thing to do. The reads' outputs come first, then the
    /// commit machine's, one at a time, so that what an open's first
    /// block makes the read machine do leaves right behind the commit
    /// message that announced it (an `Opened` then its block's `Data` on
    /// one link), then the locks'.
    pub fn poll(&mut self) -> Option<Output<K, D, V, L>> {
        loop {
            if let Some(o) = self.out.pop_front() {
                return Some(o);
            }
            if let Some(a) = self.reads.poll() {
                return Some(Output::Read(a));
            }
            match self.commits.poll() {
                Some(CommitAction::ServeFirst {
                    reader,
                    path,
                    version,
                }) => {
                    // Judged and served as a `Read` from `reader`, which
                    // the open's link authenticated.
                    let block = self.classed_first_block(&path, &version);
                    self.reads.handle_read_for(reader, block, self.now);
                }
                Some(CommitAction::AwaitFirst { route }) => {
                    self.reads.expect_carried(route, self.now);
                }
                Some(CommitAction::ReadFirst {
                    path,
                    version,
                    manager,
                }) => {
                    let block = self.classed_first_block(&path, &version);
                    // Ahead of whatever the read does: the driver must
                    // know which version an origin read of it reads.
                    self.out.push_back(Output::FirstRead {
                        block,
                        path,
                        version,
                    });
                    self.reads.handle_read_asked(block, manager, self.now);
                }
                Some(a) => return Some(Output::Commit(a)),
                None => {
                    return (self.locks.poll().map(Output::Lock))
                        .or_else(|| self.warms.poll().map(Output::Warm))
                        .or_else(|| self.listings.poll().map(Output::List));
                }
            }
        }
    }
}
