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
use crate::coop::{NodeId, SizeClassed};

/// A node is idle once its own reads have stopped for this long: its
/// memory then only serves its peers (Netcache lends idle machines'
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
    /// Whether its own reads have stopped ([`IDLE_AFTER_US`]).
    pub idle: bool,
}

impl Status {
    /// Blocks it has room for without evicting any.
    pub fn free(&self) -> u32 {
        self.capacity.saturating_sub(self.cached)
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
        let idle = self
            .last_read
            .is_none_or(|t| now.saturating_sub(t) >= IDLE_AFTER_US);
        let usage = self.usage();
        Status {
            capacity: clamp(self.cfg.capacity),
            cached: clamp(usage.blocks),
            cached_bytes: usage.bytes as u64,
            idle,
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
            idle: false,
        };
        assert_eq!(s.free(), 6);
        let over = Status { cached: 12, ..s };
        assert_eq!(over.free(), 0);
    }
}
