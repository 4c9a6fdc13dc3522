//! A trace in the `vscsi` format read by `trace::read` (the reader
//! `--format vscsi` selects), uncompressed. Beyond not panicking: the stream
//! ends at its first error (up to `MAX_REQUESTS` requests are taken).

use coopcache_sim::trace::{ReadOptions, TraceFormat};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    crate::read_trace(data, TraceFormat::Vscsi, &ReadOptions::default());
}
