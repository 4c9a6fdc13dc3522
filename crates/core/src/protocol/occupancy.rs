//! How full each of a node's tables is, beside the bound it must keep:
//! what the fault harness checks after every step, so a table that grows
//! with what a peer sends (rather than with what the node chose) is found.

use super::node::NodeProtocol;
use super::{Content, ProtocolKey};
use crate::coop::SizeClassed;

/// One table: its name, its length now, and the most it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupancy {
    /// What the table holds.
    pub table: &'static str,
    /// Entries in it now.
    pub len: usize,
    /// The most it may hold.
    pub bound: usize,
}

impl Occupancy {
    /// Whether the table holds more than its bound.
    pub fn is_over(&self) -> bool {
        self.len > self.bound
    }
}

/// Tables [`NodeProtocol::occupancy`] reports.
pub const TABLES: usize = 17;

impl<K, D> NodeProtocol<K, D>
where
    K: ProtocolKey + SizeClassed,
    D: Content,
{
    /// Every bounded table of this node, with its bound.
    ///
    /// The manager slice's per-block tables (grants, forwards, questions
    /// awaiting a record) share the directory's bound: each tracks blocks
    /// of reads the directory would track. Timers of state that has gone
    /// are dropped after every input once they outnumber the live ones.
    pub fn occupancy(&self) -> [Occupancy; TABLES] {
        let cfg = &self.cfg;
        let slice = self.slice.sizes();
        let (carried, stashed) = self.carried.sizes();
        let max_carried = super::carried::MAX_EXPECTED;
        let o = |table, len, bound| Occupancy { table, len, bound };
        [
            o("reads in flight", self.reads.len(), cfg.max_reads),
            o("reads in line", self.reads.queued_len(), cfg.max_queued),
            o("held blocks", self.held.len(), cfg.max_held),
            o("singlet questions", self.questions.len(), cfg.max_held),
            o("records", slice.records, cfg.max_records),
            o("record order", slice.order, 2 * cfg.max_records + 1),
            o("directory", self.directory().len(), cfg.max_directory),
            o("grants", slice.grants, cfg.max_directory),
            o("forwards", slice.forwards, cfg.max_directory),
            o("awaiting a record", slice.awaiting, cfg.max_directory),
            o("disk hints", slice.disk_hints, cfg.max_records),
            o(
                "disk reads for peers",
                self.disk_serves.len(),
                super::disk_peers::MAX_DISK_SERVES,
            ),
            o("parked here", self.parked.len(), cfg.max_directory),
            o(
                "parked order",
                self.parked.order_len(),
                2 * cfg.max_directory + 1,
            ),
            o("timers", self.timers.len(), 2 * self.timed_entries() + 1024),
            o("carried reads awaited", carried, max_carried),
            o("carried bytes kept", stashed, super::MAX_STASHED_BYTES),
        ]
    }
}
