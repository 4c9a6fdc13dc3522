//! A Tencent block storage trace (`time,offset,size,is_write,volume` in sectors)
//! read by `trace::read` (the reader `--format tencent` selects), uncompressed,
//! at a block size chosen by the first byte (`--block-size` takes any
//! positive size: 1 byte and 1 TiB included). Beyond not panicking: the
//! stream ends at its first error (up to `MAX_REQUESTS` requests are
//! taken: one line may cover billions of blocks).
#![no_main]

use coopcache_sim::trace::{ReadOptions, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&size, trace)) = data.split_first() else {
        return;
    };
    let opts = ReadOptions {
        block_size: coopcache_fuzz::block_size(size),
        csv: None,
    };
    coopcache_fuzz::read_trace(trace, TraceFormat::Tencent, &opts);
});
