//! The live read protocol as a sans-IO state machine (docs/ARCHITECTURE.md):
//! everything a node of a live cluster decides, so the daemon, the
//! simulator and the fault harness run the same code.
//!
//! A [`NodeProtocol`] owns one node's machines (its node machine from the
//! catalogue, [`AlgorithmKind::build_live`](crate::coop::AlgorithmKind::build_live),
//! and its manager slice), and around them the protocol the papers leave
//! to the implementation: single-flight per block, digest records and the
//! verification of every block a peer sends, blocks held until verified,
//! peer timeouts and the fall-back to the origin, membership changes, and
//! the roles that decide whom each message is accepted from.
//!
//! Inputs carry the current time in microseconds:
//! [`handle_read`](NodeProtocol::handle_read),
//! [`handle_message`](NodeProtocol::handle_message) (with the sender the
//! *link* authenticated, never a field of the message),
//! [`handle_origin_done`](NodeProtocol::handle_origin_done),
//! [`set_members`](NodeProtocol::set_members) and
//! [`handle_timeout`](NodeProtocol::handle_timeout), with
//! [`poll_timeout`](NodeProtocol::poll_timeout) saying when that is next
//! due (as quinn-proto does). What the node must do leaves through
//! [`poll`](NodeProtocol::poll) as [`Action`]s: send a message, read a
//! block from the origin, complete a read, report a protocol violation.
//!
//! Contents are generic ([`Content`]): the daemon's bytes with a digest
//! computed where they arrived, the simulator's digests alone.

mod block;
mod carried;
mod content;
mod digest_sealer;
mod disk;
mod disk_peers;
mod held;
mod integrity;
mod manager;
mod message;
mod node;
mod occupancy;
mod outgoing;
mod parked;
mod peers;
mod pinned;
mod private;
mod questions;
mod reader;
mod roles;
mod stats;
mod status;
mod timers;

pub use block::{BlockId, ProtocolKey, classed, manager_of, route_of};
pub use carried::MAX_STASHED_BYTES;
pub use content::{Content, Digest, MemStore};
pub use digest_sealer::DigestSealer;
pub use disk::{
    DISK_RETRY_US, DiskMiss, DiskSettings, DiskTier, ENTRY_BYTES as DISK_ENTRY_BYTES,
    MAX_DISK_ERRORS, MAX_DISK_RETRY_US,
};
pub use integrity::Verdict;
pub use message::{NotLive, PeerMsg, Recorded};
pub use node::{Action, MAX_READS, MIN_TRACKED, NodeProtocol, ProtocolConfig, ReadFailure, Served};
pub use occupancy::{Occupancy, TABLES};
pub use peers::MAX_PINGS_PER_ROUND;
pub use pinned::PinRefused;
pub use private::{
    ContentKey, HostId, NOTE_BYTES, RECLAIM_BYTES, SEAL_OVERHEAD, Sealed, Sealer, UNIFIED_OVERHEAD,
};
pub use stats::ProtocolStats;
pub use status::{IDLE_AFTER_US, ReadCounts, Status};
