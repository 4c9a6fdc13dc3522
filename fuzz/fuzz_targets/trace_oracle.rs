//! A libCacheSim `oracleGeneral` trace (24-byte records)
//! read by `trace::read` (the reader `--format oracle` selects), uncompressed.
//! Beyond not panicking: the stream ends at its first error (up to
//! `MAX_REQUESTS` requests are taken: a short input may describe a long
//! trace).
#![no_main]

use coopcache_sim::trace::{ReadOptions, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    coopcache_fuzz::read_trace(data, TraceFormat::Oracle, &ReadOptions::default());
});
