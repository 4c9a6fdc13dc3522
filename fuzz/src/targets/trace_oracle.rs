//! A libCacheSim `oracleGeneral` trace (24-byte records)
//! read by `trace::read` (the reader `--format oracle` selects), uncompressed.
//! Beyond not panicking: the stream ends at its first error (up to
//! `MAX_REQUESTS` requests are taken: a short input may describe a long
//! trace).

use coopcache_sim::trace::{ReadOptions, TraceFormat};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    crate::read_trace(data, TraceFormat::Oracle, &ReadOptions::default());
}
