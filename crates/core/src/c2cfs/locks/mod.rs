//! The cluster's file locks, as a file's manager keeps them (issue 40,
//! item 2): pure state, the time passed in as `now` (microseconds), every
//! answer leaving through return values or [`LockTable::poll`].
//!
//! Without it each mount's kernel kept its own locks, so a lock held on
//! node A was granted to a process on node B. The manager of a file (the
//! C2Cfs manager rendezvous hashing already picks per path) keeps one
//! table for all of the file's lockers.
//!
//! - **Two namespaces** ([`LockSpace`]), as Linux keeps them: POSIX record
//!   locks (`fcntl` `F_SETLK`/`F_SETLKW`/`F_GETLK`, `lockf`) over byte
//!   ranges, and `flock` locks over the whole file. A lock in one never
//!   conflicts with a lock in the other.
//! - **Owners** ([`LockOwner`]): the node the request's link authenticated
//!   and the lock owner id the node's kernel gave (FUSE's `lock_owner`).
//!   The node is never a field of a request: every method takes it as
//!   `from`, so a node can hold, release or test only as itself, and can
//!   never release another node's lock.
//! - **POSIX semantics.** An owner's locks never conflict with each other;
//!   a new lock replaces the owner's locks (of either kind) over its range,
//!   splitting them, and merges with the owner's overlapping or adjacent
//!   locks of the same kind; an unlock cuts the range out of whatever the
//!   owner holds. Ranges are inclusive, `end = u64::MAX` meaning to the
//!   end of the file (`l_len = 0`). [`LockTable::test`] reports the first
//!   conflicting lock (`F_GETLK`).
//! - **flock semantics.** One lock per owner per file; a conversion that
//!   can be granted at once is atomic; one that must wait first drops the
//!   owner's lock, as Linux does, so two shared holders upgrading at once
//!   do not wait on each other for ever. A non-blocking conversion that is
//!   refused keeps the old lock (Linux drops it: nobody relies on that).
//! - **Waiters** (`F_SETLKW`, `flock` without `LOCK_NB`) queue per file
//!   and namespace in arrival order. Whenever locks go away (an unlock, a
//!   release, a lease that lapses, a node that leaves) the queue is
//!   scanned in order and every waiter that conflicts with no held lock is
//!   granted, the earlier first: an earlier waiter wins a range two want.
//!   The answer leaves through [`LockTable::poll`] to the node that asked,
//!   named by its request's nonce.
//! - **Deadlocks.** A POSIX request that would wait on an owner that is
//!   itself waiting, through any chain of waits, on the requester is
//!   refused with [`LockError::Deadlock`] (`EDEADLK`), as Linux refuses
//!   it locally; the check spans nodes because owners do. `flock` has no
//!   such check (nor has Linux's): a deadlock there lasts until a waiter
//!   is interrupted ([`LockTable::cancel`]), a holder releases, or a
//!   lease lapses.
//! - **Leases.** A node's locks and waits last [`LockConfig::lease_us`]
//!   after its last request or [`LockTable::renew`]; a node that stops
//!   renewing (it died, or lost its links) loses them all at
//!   [`LockTable::handle_timeout`], and [`LockTable::node_gone`] drops them
//!   at once when membership says the node is down or left. A node's
//!   locks therefore never outlive it by more than a lease.
//! - **Bounds.** Locks and waiters per node and in all
//!   ([`LockConfig`]); past them a request is refused with
//!   [`LockError::TooManyLocks`] or [`LockError::TooManyWaiters`]
//!   (`ENOLCK`), never grown. An unlock that would split a lock past the
//!   bound is refused the same way (POSIX allows `ENOLCK` there); a
//!   release of everything an owner holds never fails.
//!
//! What this table does not do by itself: survive its manager. A new
//! manager (the old one failed, or membership moved the file) starts
//! empty; see docs/guide/mount.md for what the cluster does about it.

mod msg;
mod protocol;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_msg;
#[cfg(test)]
mod tests_protocol;

pub use msg::{LockAnswer, LockMsg, LockViolation, Managed};
pub use protocol::{
    LockAction, LockCall, LockCounters, LockProtocol, LockProtocolConfig, LockResult, MAX_ASKS,
};

use super::exclusive::MAX_PATH;
use crate::coop::NodeId;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use thiserror::Error;

/// The two lock namespaces, which never conflict with each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockSpace {
    /// POSIX record locks over byte ranges (`fcntl`, `lockf`).
    Posix,
    /// `flock` locks, always over the whole file.
    Flock,
}

/// Shared (read) or exclusive (write).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockKind {
    /// Many owners may hold it over one byte.
    Shared,
    /// One owner alone holds it over a byte.
    Exclusive,
}

impl LockKind {
    fn conflicts(self, other: LockKind) -> bool {
        self == LockKind::Exclusive || other == LockKind::Exclusive
    }
}

/// An inclusive byte range, `start <= end`; `end == u64::MAX` reaches the
/// end of the file whatever its size (`l_len = 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockRange {
    start: u64,
    end: u64,
}

impl LockRange {
    /// The whole file (every `flock` lock's range).
    pub const WHOLE: LockRange = LockRange {
        start: 0,
        end: u64::MAX,
    };

    /// `start..=end`, or `None` if `end < start`.
    pub fn new(start: u64, end: u64) -> Option<LockRange> {
        (start <= end).then_some(LockRange { start, end })
    }

    /// The first byte.
    pub fn start(self) -> u64 {
        self.start
    }

    /// The last byte (inclusive).
    pub fn end(self) -> u64 {
        self.end
    }

    fn overlaps(self, other: LockRange) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// Overlapping, or touching end to start, so two locks of one kind
    /// merge into one.
    fn touches(self, other: LockRange) -> bool {
        self.overlaps(other)
            || self.end.checked_add(1) == Some(other.start)
            || other.end.checked_add(1) == Some(self.start)
    }
}

/// Who holds a lock: the node its request came from (the link's identity,
/// never a field) and the lock owner id that node's kernel gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockOwner {
    /// The node, as its link authenticated it.
    pub node: NodeId,
    /// The lock owner within the node (FUSE's `lock_owner`).
    pub owner: u64,
}

/// A lock in the way, as `F_GETLK` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockConflict {
    /// Its holder.
    pub owner: LockOwner,
    /// Its kind.
    pub kind: LockKind,
    /// Its range.
    pub range: LockRange,
    /// The holder's process id on its own node, as its node said (only
    /// for display: it means nothing on another node).
    pub pid: u32,
}

/// A lock or wait request, from the node its link authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRequest {
    /// The requester's id for this request; a grant after a wait names it.
    pub nonce: u64,
    /// The file.
    pub path: Arc<str>,
    /// The namespace.
    pub space: LockSpace,
    /// The lock owner within the requesting node.
    pub owner: u64,
    /// The kind asked for.
    pub kind: LockKind,
    /// The range (always [`LockRange::WHOLE`] for [`LockSpace::Flock`]:
    /// another range is taken as the whole file).
    pub range: LockRange,
    /// Whether to wait for a conflicting lock to go away (`F_SETLKW`)
    /// rather than be refused.
    pub wait: bool,
    /// The requesting process, for [`LockConflict::pid`].
    pub pid: u32,
}

/// What a lock request got at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// Held now.
    Granted,
    /// Refused (no wait asked): this lock is in the way.
    Conflict(LockConflict),
    /// Queued: a [`LockGrant`] with the request's nonce comes through
    /// [`LockTable::poll`] when it is granted (or refused, or cancelled).
    Waiting,
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum LockError {
    /// The node, or the table, holds as many locks as it may (`ENOLCK`).
    #[error("too many locks")]
    TooManyLocks,
    /// The node, or the table, has as many waiters as it may (`ENOLCK`).
    #[error("too many lock waiters")]
    TooManyWaiters,
    /// Waiting would close a cycle of waits (`EDEADLK`).
    #[error("waiting for this lock would deadlock")]
    Deadlock,
    /// The waiter was dropped before it was granted: its owner released
    /// the file (`EINTR`).
    #[error("the lock wait was cancelled")]
    Cancelled,
    /// The node has a waiter with this nonce already: a protocol violation.
    #[error("a lock waiter with this nonce exists")]
    DuplicateNonce,
    /// The path is longer than [`MAX_PATH`]: a protocol violation.
    #[error("path too long")]
    PathTooLong,
    /// No manager answered in time (it failed, or membership kept moving
    /// the file): `ENOLCK`.
    #[error("no manager answered the lock request")]
    Unanswered,
}

/// The answer to a request that waited, for its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockGrant {
    /// The node that asked.
    pub node: NodeId,
    /// Its request's nonce.
    pub nonce: u64,
    /// Held now, or why not.
    pub result: Result<(), LockError>,
}

/// The table's bounds and lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockConfig {
    /// How long a node's locks last after its last request or renewal, in
    /// microseconds.
    pub lease_us: u64,
    /// Locks (ranges held) one node may hold over all files.
    pub max_locks_per_node: usize,
    /// Waiters one node may have queued over all files.
    pub max_waiters_per_node: usize,
    /// Locks in the whole table.
    pub max_locks: usize,
    /// Waiters in the whole table.
    pub max_waiters: usize,
    /// Bytes of the paths of the files the table holds locks or waiters
    /// for (each file's path is kept once, and may be 4 KiB long).
    pub max_path_bytes: usize,
}

impl Default for LockConfig {
    /// A 30 s lease (renewed every 10 s by the nodes), 1,024 locks and
    /// 128 waiters per node, 4,096 locks, 1,024 waiters and 512 KiB of
    /// paths in all: at most about 1 MiB of heap.
    fn default() -> Self {
        LockConfig {
            lease_us: 30_000_000,
            max_locks_per_node: 1024,
            max_waiters_per_node: 128,
            max_locks: 4096,
            max_waiters: 1024,
            max_path_bytes: 512 << 10,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Held {
    owner: LockOwner,
    kind: LockKind,
    range: LockRange,
    pid: u32,
}

impl Held {
    fn conflict(&self) -> LockConflict {
        LockConflict {
            owner: self.owner,
            kind: self.kind,
            range: self.range,
            pid: self.pid,
        }
    }
}

#[derive(Clone, Debug)]
struct Waiter {
    nonce: u64,
    held: Held,
}

/// One file's locks in one namespace.
#[derive(Default)]
struct FileLocks {
    /// Sorted by start, so a conflict report is the lowest lock in the way.
    held: Vec<Held>,
    waiting: VecDeque<Waiter>,
}

impl FileLocks {
    fn first_conflict(&self, owner: LockOwner, kind: LockKind, range: LockRange) -> Option<&Held> {
        self.held
            .iter()
            .find(|h| h.owner != owner && h.range.overlaps(range) && h.kind.conflicts(kind))
    }

    fn count_of(&self, node: NodeId) -> usize {
        self.held.iter().filter(|h| h.owner.node == node).count()
    }

    /// The held list once `owner`'s locks over `range` are cut out and,
    /// with `new`, replaced by a lock of its kind merged with the owner's
    /// touching locks of that kind (the POSIX rules).
    fn replaced(
        &self,
        owner: LockOwner,
        range: LockRange,
        new: Option<(LockKind, u32)>,
    ) -> Vec<Held> {
        let mut out = Vec::with_capacity(self.held.len() + 2);
        let mut merged = range;
        for h in &self.held {
            if h.owner != owner {
                out.push(*h);
                continue;
            }
            if let Some((kind, _)) = new
                && h.kind == kind
                && h.range.touches(merged)
            {
                // The owner's own locks never overlap one another, so a
                // lock merged here cannot overlap one cut below.
                merged = LockRange {
                    start: merged.start.min(h.range.start),
                    end: merged.end.max(h.range.end),
                };
                continue;
            }
            if !h.range.overlaps(range) {
                out.push(*h);
                continue;
            }
            if h.range.start < range.start {
                out.push(Held {
                    range: LockRange {
                        start: h.range.start,
                        end: range.start - 1,
                    },
                    ..*h
                });
            }
            if h.range.end > range.end {
                out.push(Held {
                    range: LockRange {
                        start: range.end + 1,
                        end: h.range.end,
                    },
                    ..*h
                });
            }
        }
        if let Some((kind, pid)) = new {
            out.push(Held {
                owner,
                kind,
                range: merged,
                pid,
            });
        }
        out.sort_by_key(|h| (h.range.start, h.range.end));
        out
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    locks: usize,
    waiters: usize,
    /// When the node's lease lapses.
    expires: u64,
}

/// The locks of the files one manager keeps (see the module doc).
pub struct LockTable {
    cfg: LockConfig,
    /// Ordered: a member's locks dropped or reclaimed are walked in one
    /// order, so a seed of the fault harness replays event for event.
    files: BTreeMap<(Arc<str>, LockSpace), FileLocks>,
    /// Only nodes holding or waiting for a lock have an entry.
    usage: BTreeMap<NodeId, Usage>,
    locks: usize,
    waiters: usize,
    /// Bytes of the paths `files` holds.
    path_bytes: usize,
    grants: VecDeque<LockGrant>,
}

impl LockTable {
    /// An empty table.
    pub fn new(cfg: LockConfig) -> LockTable {
        LockTable {
            cfg,
            files: BTreeMap::new(),
            usage: BTreeMap::new(),
            locks: 0,
            waiters: 0,
            path_bytes: 0,
            grants: VecDeque::new(),
        }
    }

    /// Locks held over all files.
    pub fn locks(&self) -> usize {
        self.locks
    }

    /// Waiters queued over all files.
    pub fn waiters(&self) -> usize {
        self.waiters
    }

    /// Locks `node` holds over all files.
    pub fn locks_of(&self, node: NodeId) -> usize {
        self.usage.get(&node).map_or(0, |u| u.locks)
    }

    /// Take a lock for `(from, req.owner)`, or queue for it.
    pub fn lock(
        &mut self,
        from: NodeId,
        req: LockRequest,
        now: u64,
    ) -> Result<LockOutcome, LockError> {
        if req.path.len() > MAX_PATH {
            return Err(LockError::PathTooLong);
        }
        let owner = LockOwner {
            node: from,
            owner: req.owner,
        };
        let range = match req.space {
            LockSpace::Posix => req.range,
            LockSpace::Flock => LockRange::WHOLE,
        };
        let key = (req.path.clone(), req.space);
        if req.wait
            && self.files.get(&key).is_some_and(|f| {
                f.waiting
                    .iter()
                    .any(|w| w.held.owner.node == from && w.nonce == req.nonce)
            })
        {
            return Err(LockError::DuplicateNonce);
        }
        self.renew(from, now);
        if !self.files.contains_key(&key) {
            if self.path_bytes + key.0.len() > self.cfg.max_path_bytes {
                return Err(LockError::TooManyLocks);
            }
            self.path_bytes += key.0.len();
        }
        let file = self.files.entry(key.clone()).or_default();
        let conflict = file
            .first_conflict(owner, req.kind, range)
            .map(Held::conflict);
        let Some(conflict) = conflict else {
            let result = self.apply(&key, owner, range, Some((req.kind, req.pid)), now);
            // A downgrade (exclusive to shared) may let waiters in.
            self.wake(&key, now);
            self.tidy(&key);
            return result.map(|()| LockOutcome::Granted);
        };
        if !req.wait {
            self.tidy(&key);
            return Ok(LockOutcome::Conflict(conflict));
        }
        let usage = self.usage.get(&from).copied().unwrap_or_default();
        if usage.waiters >= self.cfg.max_waiters_per_node || self.waiters >= self.cfg.max_waiters {
            self.tidy(&key);
            return Err(LockError::TooManyWaiters);
        }
        if req.space == LockSpace::Posix && self.would_deadlock(owner, &key, req.kind, range) {
            self.tidy(&key);
            return Err(LockError::Deadlock);
        }
        let held = Held {
            owner,
            kind: req.kind,
            range,
            pid: req.pid,
        };
        if let Some(file) = self.files.get_mut(&key) {
            file.waiting.push_back(Waiter {
                nonce: req.nonce,
                held,
            });
        }
        self.waiters += 1;
        self.usage_mut(from, now).waiters += 1;
        if req.space == LockSpace::Flock {
            // Linux drops a waiting conversion's old lock first, so two
            // shared holders upgrading together do not wait on each other.
            let dropped = self.apply(&key, owner, LockRange::WHOLE, None, now);
            debug_assert!(dropped.is_ok(), "removing a whole-file lock never splits");
            self.wake(&key, now);
        }
        Ok(LockOutcome::Waiting)
    }

    /// Unlock `range` of what `(from, owner)` holds in `space` (`F_UNLCK`;
    /// for `flock`, `LOCK_UN`, always the whole file). Unlocking what is
    /// not held is no error.
    pub fn unlock(
        &mut self,
        from: NodeId,
        path: &str,
        space: LockSpace,
        owner: u64,
        range: LockRange,
        now: u64,
    ) -> Result<(), LockError> {
        if path.len() > MAX_PATH {
            return Err(LockError::PathTooLong);
        }
        let key: (Arc<str>, LockSpace) = (path.into(), space);
        let range = match space {
            LockSpace::Posix => range,
            LockSpace::Flock => LockRange::WHOLE,
        };
        if !self.files.contains_key(&key) {
            return Ok(());
        }
        self.renew(from, now);
        let owner = LockOwner { node: from, owner };
        let result = self.apply(&key, owner, range, None, now);
        self.wake(&key, now);
        self.tidy(&key);
        result
    }

    /// Drop everything `(from, owner)` holds or waits for on `path` in
    /// `space`: the owner closed the file (FUSE's `flush` with its
    /// `lock_owner` for POSIX locks, `release` for `flock`). Its waiters
    /// are answered [`LockError::Cancelled`].
    pub fn release(&mut self, from: NodeId, path: &str, space: LockSpace, owner: u64, now: u64) {
        let key: (Arc<str>, LockSpace) = (path.into(), space);
        let Some(file) = self.files.get_mut(&key) else {
            return;
        };
        let owner = LockOwner { node: from, owner };
        let mut cancelled = Vec::new();
        file.waiting.retain(|w| {
            let mine = w.held.owner == owner;
            if mine {
                cancelled.push(w.nonce);
            }
            !mine
        });
        for nonce in cancelled {
            self.waiter_gone(from);
            self.grants.push_back(LockGrant {
                node: from,
                nonce,
                result: Err(LockError::Cancelled),
            });
        }
        let dropped = self.apply(&key, owner, LockRange::WHOLE, None, now);
        debug_assert!(dropped.is_ok(), "removing every lock never splits");
        self.wake(&key, now);
        self.tidy(&key);
    }

    /// The first lock in the way of `(from, owner)` taking `kind` over
    /// `range` (`F_GETLK`), or `None` if it would be granted.
    pub fn test(
        &self,
        from: NodeId,
        path: &str,
        space: LockSpace,
        owner: u64,
        kind: LockKind,
        range: LockRange,
    ) -> Option<LockConflict> {
        let range = match space {
            LockSpace::Posix => range,
            LockSpace::Flock => LockRange::WHOLE,
        };
        let owner = LockOwner { node: from, owner };
        self.files
            .get(&(Arc::from(path), space))?
            .first_conflict(owner, kind, range)
            .map(Held::conflict)
    }

    /// Drop `from`'s waiter with this nonce: its process was interrupted.
    /// No answer is queued (the node knows); `false` if there was none
    /// (granted already: the node then unlocks what it got).
    pub fn cancel(&mut self, from: NodeId, nonce: u64) -> bool {
        let found = self.files.iter_mut().find_map(|(key, file)| {
            let at = file
                .waiting
                .iter()
                .position(|w| w.held.owner.node == from && w.nonce == nonce)?;
            file.waiting.remove(at);
            Some(key.clone())
        });
        let Some(key) = found else {
            return false;
        };
        self.waiter_gone(from);
        self.tidy(&key);
        true
    }

    /// Every lock `node` holds, as `(path, space, lock)`: what a node
    /// reclaims from a file's new manager.
    pub fn held_by(&self, node: NodeId) -> Vec<(Arc<str>, LockSpace, LockConflict)> {
        let mut out = Vec::with_capacity(self.locks_of(node));
        for ((path, space), file) in &self.files {
            for h in file.held.iter().filter(|h| h.owner.node == node) {
                out.push((path.clone(), *space, h.conflict()));
            }
        }
        out
    }

    /// Forget every file `keep` says no (membership gave it to another
    /// manager): its locks and waiters go without answers, since their
    /// nodes take them to the new manager.
    pub fn retain_files(&mut self, keep: impl Fn(&str) -> bool) {
        let gone: Vec<_> = self
            .files
            .keys()
            .filter(|(path, _)| !keep(path))
            .cloned()
            .collect();
        for key in gone {
            let Some(file) = self.files.remove(&key) else {
                continue;
            };
            self.path_bytes -= key.0.len();
            self.locks -= file.held.len();
            self.waiters -= file.waiting.len();
            for h in &file.held {
                if let Some(u) = self.usage.get_mut(&h.owner.node) {
                    u.locks -= 1;
                }
            }
            for w in &file.waiting {
                if let Some(u) = self.usage.get_mut(&w.held.owner.node) {
                    u.waiters -= 1;
                }
            }
            let nodes: HashSet<NodeId> = file
                .held
                .iter()
                .map(|h| h.owner.node)
                .chain(file.waiting.iter().map(|w| w.held.owner.node))
                .collect();
            for node in nodes {
                self.forget_idle(node);
            }
        }
    }

    /// `from` is alive and keeps its locks for another lease.
    pub fn renew(&mut self, from: NodeId, now: u64) {
        if let Some(usage) = self.usage.get_mut(&from) {
            usage.expires = now.saturating_add(self.cfg.lease_us);
        }
    }

    /// Membership says `node` is down or left: its locks and waiters go
    /// at once, and whoever waited on them is granted.
    pub fn node_gone(&mut self, node: NodeId, now: u64) {
        if self.usage.remove(&node).is_none() {
            return;
        }
        let keys: Vec<_> = self.files.keys().cloned().collect();
        for key in keys {
            let Some(file) = self.files.get_mut(&key) else {
                continue;
            };
            let (locks, waiters) = (file.held.len(), file.waiting.len());
            file.held.retain(|h| h.owner.node != node);
            file.waiting.retain(|w| w.held.owner.node != node);
            self.locks -= locks - file.held.len();
            self.waiters -= waiters - file.waiting.len();
            self.wake(&key, now);
            self.tidy(&key);
        }
        // Waking may have re-created the node's entry only through its own
        // waiters, which are gone.
        debug_assert!(!self.usage.contains_key(&node));
    }

    /// When [`LockTable::handle_timeout`] is next due: the earliest lease
    /// to lapse.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.usage.values().map(|u| u.expires).min()
    }

    /// Drop the locks of every node whose lease lapsed by `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        let lapsed: Vec<NodeId> = self
            .usage
            .iter()
            .filter(|(_, u)| u.expires <= now)
            .map(|(&n, _)| n)
            .collect();
        for node in lapsed {
            self.node_gone(node, now);
        }
    }

    /// The next answer to a request that waited.
    pub fn poll(&mut self) -> Option<LockGrant> {
        self.grants.pop_front()
    }

    fn usage_mut(&mut self, node: NodeId, now: u64) -> &mut Usage {
        let lease = self.cfg.lease_us;
        self.usage.entry(node).or_insert_with(|| Usage {
            expires: now.saturating_add(lease),
            ..Usage::default()
        })
    }

    fn waiter_gone(&mut self, node: NodeId) {
        self.waiters -= 1;
        if let Some(u) = self.usage.get_mut(&node) {
            u.waiters -= 1;
        }
        self.forget_idle(node);
    }

    fn forget_idle(&mut self, node: NodeId) {
        if self
            .usage
            .get(&node)
            .is_some_and(|u| u.locks == 0 && u.waiters == 0)
        {
            self.usage.remove(&node);
        }
    }

    /// Replace `owner`'s locks over `range` in `key` (see
    /// [`FileLocks::replaced`]), within the bounds.
    fn apply(
        &mut self,
        key: &(Arc<str>, LockSpace),
        owner: LockOwner,
        range: LockRange,
        new: Option<(LockKind, u32)>,
        now: u64,
    ) -> Result<(), LockError> {
        let Some(file) = self.files.get(key) else {
            return Ok(());
        };
        let before = file.count_of(owner.node);
        let held = file.replaced(owner, range, new);
        let after = held.iter().filter(|h| h.owner.node == owner.node).count();
        let grown = after.saturating_sub(before);
        if grown > 0
            && (self.locks_of(owner.node) + grown > self.cfg.max_locks_per_node
                || self.locks + grown > self.cfg.max_locks)
        {
            return Err(LockError::TooManyLocks);
        }
        let Some(file) = self.files.get_mut(key) else {
            return Ok(());
        };
        file.held = held;
        self.locks = self.locks + after - before;
        let usage = self.usage_mut(owner.node, now);
        usage.locks = usage.locks + after - before;
        self.forget_idle(owner.node);
        Ok(())
    }

    /// Grant, in arrival order, every waiter of `key` that no held lock
    /// is in the way of.
    fn wake(&mut self, key: &(Arc<str>, LockSpace), now: u64) {
        let mut at = 0;
        loop {
            let Some(file) = self.files.get_mut(key) else {
                return;
            };
            let Some(w) = file.waiting.get(at) else {
                return;
            };
            let h = w.held;
            if file.first_conflict(h.owner, h.kind, h.range).is_some() {
                at += 1;
                continue;
            }
            let nonce = w.nonce;
            file.waiting.remove(at);
            let result = self.apply(key, h.owner, h.range, Some((h.kind, h.pid)), now);
            self.waiter_gone(h.owner.node);
            self.grants.push_back(LockGrant {
                node: h.owner.node,
                nonce,
                result,
            });
        }
    }

    /// Whether `owner` waiting on what is in its way in `key` closes a
    /// cycle: some owner in the way waits, through any chain of POSIX
    /// waits, on `owner`. Bounded by the waiters in the table (each owner
    /// is visited once).
    fn would_deadlock(
        &self,
        owner: LockOwner,
        key: &(Arc<str>, LockSpace),
        kind: LockKind,
        range: LockRange,
    ) -> bool {
        let blockers = |file: &FileLocks,
                        who: LockOwner,
                        kind: LockKind,
                        range: LockRange|
         -> Vec<LockOwner> {
            file.held
                .iter()
                .filter(|h| h.owner != who && h.range.overlaps(range) && h.kind.conflicts(kind))
                .map(|h| h.owner)
                .collect()
        };
        let Some(file) = self.files.get(key) else {
            return false;
        };
        let mut todo = blockers(file, owner, kind, range);
        let mut seen = HashSet::new();
        while let Some(next) = todo.pop() {
            if next == owner {
                return true;
            }
            if !seen.insert(next) {
                continue;
            }
            for ((_, space), file) in &self.files {
                if *space != LockSpace::Posix {
                    continue;
                }
                for w in file.waiting.iter().filter(|w| w.held.owner == next) {
                    todo.extend(blockers(file, next, w.held.kind, w.held.range));
                }
            }
        }
        false
    }

    fn tidy(&mut self, key: &(Arc<str>, LockSpace)) {
        if self
            .files
            .get(key)
            .is_some_and(|f| f.held.is_empty() && f.waiting.is_empty())
            && self.files.remove(key).is_some()
        {
            self.path_bytes -= key.0.len();
        }
    }
}
