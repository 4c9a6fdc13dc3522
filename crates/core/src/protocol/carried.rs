//! Reads carried inside another request (a C2Cfs `exclusive` open whose
//! manager serves the file's first block with its answer,
//! [`c2cfs::exclusive`](crate::c2cfs::exclusive)), on the reader's side: the contents
//! that come before the read exists.
//!
//! The manager sends its `Opened` to the opener and, in the same breath,
//! forwards the block's read to a holder, which sends its `Data` straight
//! to the opener. Those are two links, so the holder's contents can arrive
//! first:
//!
//! 1. the opener sends `Open`, asking for its first block;
//! 2. the manager sends `Opened` (on its link to the opener), then
//!    `Forward` to the holder;
//! 3. the holder's `Data` reaches the opener, which has no read of the
//!    block yet (it learns the block from the `Opened`): without this
//!    module, dropped as a late reply;
//! 4. the `Opened` arrives, the read starts, the manager's `Expect` names
//!    the holder, and the read waits for contents already dropped, until
//!    its timeout sends it to the origin.
//!
//! On loopback with three busy nodes this happened to 5% of served opens
//! (417 timeouts in 7,551, `mount_histories` in exclusive mode). So while
//! an open that asked for its first block is in flight, contents of a
//! block of that file (its route) that no read awaits are kept, a few and
//! a bounded number of bytes, until the read starts and takes them as
//! early contents (checked against the manager's digest and holder like
//! any), or until the open's expectation lapses (a peer timeout).

use super::node::NodeProtocol;
use super::{Content, ProtocolKey};
use crate::coop::{NodeId, SizeClassed};
use std::collections::VecDeque;

/// Carried reads awaited at once; more drop the oldest expectation.
pub(super) const MAX_EXPECTED: usize = 64;

/// Bytes of contents kept for reads not started yet (the daemon's
/// runtime reserve counts them); contents that would pass it are dropped
/// as late, and their read waits for its timeout.
pub const MAX_STASHED_BYTES: usize = 1 << 20;

/// Contents kept for a carried read that has not started yet.
#[derive(Debug)]
struct Stashed<K, D> {
    from: NodeId,
    block: K,
    data: D,
    until: u64,
}

/// The reader's carried reads: which files' first blocks may come, and
/// what came before its read.
#[derive(Debug)]
pub(super) struct Carried<K, D> {
    /// `(route, until)` of every open awaiting its first block.
    expected: VecDeque<(u64, u64)>,
    stashed: VecDeque<Stashed<K, D>>,
    stashed_bytes: usize,
}

impl<K, D> Default for Carried<K, D> {
    fn default() -> Self {
        Carried {
            expected: VecDeque::new(),
            stashed: VecDeque::new(),
            stashed_bytes: 0,
        }
    }
}

impl<K: ProtocolKey, D: Content> Carried<K, D> {
    /// Drops expectations and contents past their time.
    fn expire(&mut self, now: u64) {
        self.expected.retain(|&(_, until)| until > now);
        while self.stashed.front().is_some_and(|s| s.until <= now) {
            self.pop_stashed();
        }
    }

    fn pop_stashed(&mut self) {
        if let Some(s) = self.stashed.pop_front() {
            self.stashed_bytes -= s.data.size();
        }
    }

    fn expects(&self, route: u64) -> Option<u64> {
        self.expected
            .iter()
            .find(|&&(r, _)| r == route)
            .map(|&(_, until)| until)
    }

    /// Keeps `data` of `block` from `from` if a carried read of its file
    /// is awaited and there is room; gives it back if not.
    fn stash(&mut self, from: NodeId, block: K, data: D, now: u64) -> Option<D> {
        self.expire(now);
        let Some(until) = self.expects(block.route()) else {
            return Some(data);
        };
        if self.stashed_bytes + data.size() > MAX_STASHED_BYTES {
            return Some(data);
        }
        self.stashed_bytes += data.size();
        self.stashed.push_back(Stashed {
            from,
            block,
            data,
            until,
        });
        None
    }

    /// The contents kept for `block`, taken out, and its file no longer
    /// awaited.
    fn take(&mut self, block: K) -> Vec<(NodeId, D)> {
        self.expected.retain(|&(r, _)| r != block.route());
        let mut out = Vec::new();
        let mut kept = VecDeque::with_capacity(self.stashed.len());
        for s in self.stashed.drain(..) {
            if s.block == block {
                self.stashed_bytes -= s.data.size();
                out.push((s.from, s.data));
            } else {
                kept.push_back(s);
            }
        }
        self.stashed = kept;
        out
    }

    /// Files awaited, and bytes of contents kept.
    pub(super) fn sizes(&self) -> (usize, usize) {
        (self.expected.len(), self.stashed_bytes)
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// This node sent an open asking its manager to serve the first block
    /// of the file routed by `route` with the answer (`c2cfs::exclusive`): the
    /// block's contents may come before the answer, and before the read
    /// ([`NodeProtocol::handle_read_asked`]) that takes them. They are kept
    /// for a peer timeout (see the module doc).
    pub fn expect_carried(&mut self, route: u64, now: u64) {
        self.carried.expire(now);
        if self.carried.expected.len() >= MAX_EXPECTED {
            self.carried.expected.pop_front();
        }
        let until = now + self.peer_timeout();
        self.carried.expected.push_back((route, until));
    }

    /// Contents with no read awaiting them: kept if a carried read of the
    /// block's file may still start; otherwise a late reply.
    pub(super) fn stash_carried(&mut self, from: NodeId, block: K, data: D, now: u64) {
        if self.carried.stash(from, block, data, now).is_some() {
            self.stats.late_replies += 1;
        }
    }

    /// The carried read of `block` started: what came for it before joins
    /// its early contents.
    pub(super) fn take_carried(&mut self, block: K) -> Vec<(NodeId, D)> {
        self.carried.take(block)
    }
}
