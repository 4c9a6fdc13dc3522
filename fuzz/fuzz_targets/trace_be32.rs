//! A CloudPhysics trace (big-endian `u32` ids)
//! read by `trace::read` (the reader `--format be32` selects), uncompressed.
//! Beyond not panicking: the stream ends at its first error (up to
//! `MAX_REQUESTS` requests are taken: a short input may describe a long
//! trace).
#![no_main]

use coopcache_sim::trace::{ReadOptions, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    coopcache_fuzz::read_trace(data, TraceFormat::Be32, &ReadOptions::default());
});
