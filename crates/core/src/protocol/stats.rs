//! What a node's protocol counts, and the protocol violations it reports.

use crate::coop::{Level, NodeId};
use std::collections::BTreeMap;

/// Counters of one node's protocol, for status and metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtocolStats {
    /// Blocks from peers whose contents did not match the manager's
    /// digest (each cost an origin read or a dropped copy).
    pub integrity_failures: u64,
    /// Reads that waited on peers past the peer timeout and went to the
    /// origin, and held blocks whose digest never came.
    pub timeouts: u64,
    /// Replies for reads that had already finished or gone elsewhere.
    pub late_replies: u64,
    /// Records of one block with two different digests (one recorder
    /// lied, or the origin changed a version in place); the record is
    /// dropped and the next reader records again.
    pub record_conflicts: u64,
    /// Blocks of a private origin parked on peers, sealed.
    pub sealed: u64,
    /// Sealed blocks taken back, opened and matching their digest.
    pub opened: u64,
    /// Of the sealed blocks, those sealed under their content id, to be
    /// stored once with identical blocks other owners park (unification).
    pub unified: u64,
    /// Blocks a peer parked here that another peer had parked already,
    /// the same bytes: kept once for both (the memory unification saves).
    pub unified_hosted: u64,
    /// Unified blocks handed back to one of their parkers as a copy, kept
    /// for the others.
    pub unified_served: u64,
    /// Reads that went to this node's disk tier (`--disk`) instead of
    /// the origin.
    pub disk_reads: u64,
    /// Of those, the ones the disk served (contents matching the digest
    /// they were written with).
    pub disk_hits: u64,
    /// Of those, the ones it failed (unreadable, another digest, too
    /// slow): each read the origin instead.
    pub disk_failures: u64,
    /// Blocks sent to the disk tier to be written (the failed and the
    /// skipped among them).
    pub disk_writes: u64,
    /// Writes to the disk tier that failed.
    pub disk_write_failures: u64,
    /// Writes to the disk tier the driver skipped (its bound on bytes on
    /// their way to the disk was reached).
    pub disk_writes_skipped: u64,
    /// Reads this node, as a block's manager, forwarded to a member's
    /// disk (no member held the block in memory).
    pub disk_forwards: u64,
    /// Blocks this node's disk served to peers' reads.
    pub disk_served: u64,
    /// Block reads this node served, by where from ([`Level::ALL`]'s
    /// order), reads joined to one in flight counted once.
    pub served: [u64; Level::ALL.len()],
    /// Block reads that failed.
    pub failed_reads: u64,
    /// Times the disk tier was given up after failing every call in a row.
    pub disk_given_up: u64,
    /// Times a given-up disk tier was opened again and used.
    pub disk_reopened: u64,
    /// Messages or blocks dropped because a bounded table was full.
    pub dropped: u64,
    /// Messages the node's machines sent that have no live form (a bug:
    /// the catalogue builds only machines that never send them).
    pub not_live: u64,
    /// Inputs whose handling ran away (a node sending itself messages
    /// without end, a bug) and was cut short.
    pub runaways: u64,
    /// Messages refused because their sender did not hold the role
    /// allowed to send them, per sender.
    pub violations: BTreeMap<NodeId, u64>,
}

impl ProtocolStats {
    /// Protocol violations by every sender.
    pub fn violations_total(&self) -> u64 {
        self.violations.values().sum()
    }
}

/// Most senders whose violations are counted one by one; beyond, they are
/// counted under the last one (ids come from authenticated links, so this
/// is never reached in a cluster of fewer members).
pub(super) const MAX_VIOLATORS: usize = 1024;

/// How often one peer's violations are reported (logged), in microseconds.
pub(super) const REPORT_EVERY_US: u64 = 60_000_000;
