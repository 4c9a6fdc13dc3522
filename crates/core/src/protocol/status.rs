//! What each member says of its own memory, Netcache's update-status: how
//! many blocks its cache holds and can hold, and whether it is idle. It
//! rides on the pings every member already sends each live peer once a
//! second (and on their answers), so it costs no message of its own and is
//! never more than a ping period old.
//!
//! A member speaks only for itself: the status is taken from the link the
//! ping came on, never about a third node, so no member can claim another
//! has room (or none). What it says of itself is a claim, not a fact: a
//! liar can say it is idle with room to spare and attract blocks, which it
//! could attract anyway by reading them; everything it sends back is
//! checked against the manager's digest as always.

use super::node::NodeProtocol;
use super::{Content, ProtocolKey};
use crate::coop::{Level, NodeId, SizeClassed};

/// A node is idle once its own reads have stopped (or, since it started,
/// not begun) for this long, by default
/// ([`ProtocolConfig::idle_after_us`](super::ProtocolConfig::idle_after_us)):
/// its memory then only serves its peers (Netcache lends idle machines'
/// memory to busy ones).
pub const IDLE_AFTER_US: u64 = 10_000_000;

/// A member's memory as it advertises it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// Blocks its cache can hold.
    pub capacity: u32,
    /// Blocks its cache holds now (its own and its peers').
    pub cached: u32,
    /// Bytes of their contents (a file's last block may be short).
    pub cached_bytes: u64,
    /// Of the cached blocks, those it keeps for peers (foreign blocks:
    /// parked or forwarded to it).
    pub foreign: u32,
    /// Whether its own reads have stopped ([`IDLE_AFTER_US`]).
    pub idle: bool,
    /// Its reads since it started.
    pub reads: ReadCounts,
}

/// A member's block reads since it started, as it reports them, for an
/// operator's view of the whole cluster from one node (`coopcache status
/// --cluster`). Only shown, never used to decide anything: a member could
/// say anything here, and nothing it says of its reads moves a block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadCounts {
    /// Reads served, by where from ([`Level::ALL`]'s order).
    pub served: [u64; Level::ALL.len()],
    /// Reads that failed.
    pub failed: u64,
    /// Peers' contents that failed their check, and reads that waited on
    /// a peer past the timeout.
    pub errors: u64,
    /// Messages it refused from peers not in the role to send them.
    pub violations: u64,
}

impl ReadCounts {
    /// Reads served, from anywhere.
    pub fn total(&self) -> u64 {
        self.served.iter().sum()
    }

    /// Reads served at `level`.
    pub fn at(&self, level: Level) -> u64 {
        self.served[level.index()]
    }
}

impl Status {
    /// Blocks it has room for without evicting any.
    pub fn free(&self) -> u32 {
        self.capacity.saturating_sub(self.cached)
    }

    /// Blocks it would take for its peers: an idle member lends all of its
    /// memory not already lent (its own blocks are cold and go first), a
    /// busy one nothing (Netcache parks blocks on idle machines only, so a
    /// member's own reads never compete with its peers' blocks).
    pub fn lendable(&self) -> u32 {
        if self.idle {
            self.capacity.saturating_sub(self.foreign)
        } else {
            0
        }
    }
}

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// What this node advertises at `now`.
    pub fn own_status(&self, now: u64) -> Status {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let idle = now.saturating_sub(self.last_read) >= self.cfg.idle_after_us;
        let usage = self.usage();
        Status {
            capacity: clamp(self.cfg.capacity),
            cached: clamp(usage.blocks),
            cached_bytes: usage.bytes as u64,
            foreign: clamp(self.node.foreign()),
            idle,
            reads: ReadCounts {
                served: self.stats.served,
                failed: self.stats.failed_reads,
                errors: self.stats.integrity_failures + self.stats.timeouts,
                violations: self.stats.violations_total(),
            },
        }
    }

    /// Tells the node machine whether this node is idle, when that changes
    /// (its own reads end idleness at once; the ping timer notices it
    /// begin, as the status the pings carry does).
    pub(super) fn tell_idle(&mut self, idle: bool) {
        if idle != self.told_idle {
            self.told_idle = idle;
            self.node.set_idle(idle);
        }
    }

    /// What `peer` last advertised, if it has since it became live.
    pub fn peer_status(&self, peer: NodeId) -> Option<Status> {
        self.peers.status(peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_is_room_left_never_negative() {
        let s = Status {
            capacity: 10,
            cached: 4,
            cached_bytes: 4000,
            foreign: 0,
            idle: false,
            reads: ReadCounts::default(),
        };
        assert_eq!(s.free(), 6);
        let over = Status { cached: 12, ..s };
        assert_eq!(over.free(), 0);
    }

    #[test]
    fn only_an_idle_member_lends_and_never_more_than_its_memory() {
        let busy = Status {
            capacity: 10,
            cached: 10,
            cached_bytes: 0,
            foreign: 2,
            idle: false,
            reads: ReadCounts::default(),
        };
        assert_eq!(busy.lendable(), 0, "a busy member lends nothing");
        let idle = Status { idle: true, ..busy };
        assert_eq!(idle.lendable(), 8, "its own cold blocks make room");
        let lent = Status {
            foreign: 12,
            ..idle
        };
        assert_eq!(lent.lendable(), 0);
    }
}
