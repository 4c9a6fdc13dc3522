//! An SNIA MSR Cambridge trace (`time,host,disk,Read|Write,offset,size,latency`)
//! read by `trace::read` (the reader `--format msr` selects), uncompressed,
//! at a block size chosen by the first byte (`--block-size` takes any
//! positive size: 1 byte and 1 TiB included). Beyond not panicking: the
//! stream ends at its first error (up to `MAX_REQUESTS` requests are
//! taken: one line may cover billions of blocks).
#![no_main]

use coopcache_sim::trace::TraceFormat;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| coopcache_fuzz::read_ranges(data, TraceFormat::Msr));
