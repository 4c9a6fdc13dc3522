//! A trace in the `twr` format read by `trace::read` (the reader
//! `--format twr` selects), uncompressed. Beyond not panicking: the stream
//! ends at its first error (up to `MAX_REQUESTS` requests are taken).

use coopcache_sim::trace::{ReadOptions, TraceFormat};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    crate::read_trace(data, TraceFormat::Twr, &ReadOptions::default());
}
