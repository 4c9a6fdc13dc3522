//! A LIRS trace (one integer id per line, `*` lines skipped)
//! read by `trace::read` (the reader `--format lirs` selects), uncompressed.
//! Beyond not panicking: the stream ends at its first error (up to
//! `MAX_REQUESTS` requests are taken: a short input may describe a long
//! trace).

use coopcache_sim::trace::{ReadOptions, TraceFormat};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    crate::read_trace(data, TraceFormat::Lirs, &ReadOptions::default());
}
