//! Traces with writes replayed through close-to-open consistency (C2Cfs
//! section 3), with the core's own [`CommitTable`] and [`Opened::source`]:
//! where each open's bytes come from, and what the origin and the file
//! managers are asked.
//!
//! Each request is one open, read or write, and close of its object by its
//! client, run to completion before the next (the paper's synthetic
//! experiments): a read takes the object from the client's own copy, a
//! valid peer or the origin; a write is written through to the origin at
//! its close. Objects are the trace's ids, so a block trace (MSR, Tencent)
//! is C2Cfs at block granularity. Deletes count as writes (as the
//! cooperative study treats them).
//!
//! Schemes ([`Scheme`]): NFS's close-to-open (every open asks the origin,
//! no peers), and C2Cfs in `shared` and `exclusive` mode. Each node's cache
//! is LRU. Every read is checked against the origin's current version: a
//! scheme that served an old one counts it in
//! [`ConsistencyStats::stale_reads`], which must stay 0.
//!
//! [`CommitTable`]: coopcache_core::c2cfs::CommitTable
//! [`Opened::source`]: coopcache_core::c2cfs::Opened::source

mod node;
mod run;

pub use run::{ConsistencyError, ConsistencySim, ConsistencyStats, Scheme, simulate};
