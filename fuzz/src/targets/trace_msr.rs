//! An SNIA MSR Cambridge trace (`time,host,disk,Read|Write,offset,size,latency`)
//! read by `trace::read` (the reader `--format msr` selects), uncompressed,
//! at a block size chosen by the first byte (`--block-size` takes any
//! positive size: 1 byte and 1 TiB included). Beyond not panicking: the
//! stream ends at its first error (up to `MAX_REQUESTS` requests are
//! taken: one line may cover billions of blocks).

use coopcache_sim::trace::TraceFormat;

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    crate::read_ranges(data, TraceFormat::Msr);
}
