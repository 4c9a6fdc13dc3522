//! A trace in the `txt` format read by `trace::read` (the reader
//! `--format txt` selects), uncompressed. Beyond not panicking: the stream
//! ends at its first error (up to `MAX_REQUESTS` requests are taken).
#![no_main]

use coopcache_sim::trace::{ReadOptions, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    coopcache_fuzz::read_trace(data, TraceFormat::Txt, &ReadOptions::default());
});
