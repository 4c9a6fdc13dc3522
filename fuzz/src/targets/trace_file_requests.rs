//! A file-request trace for the attribute caches (`coopcache mrc`,
//! `coopcache sim --attr`): a header naming columns, then requests, from a
//! scratch file through `trace::read_file_requests` (compressed or not, by
//! magic number); the requests are then split into blocks by
//! `attr::block_requests` under the Unix baseline and under one cache of
//! 1-byte blocks (the smallest a notation allows). Checks that neither
//! panics (up to `MAX_REQUESTS` blocks are taken).

use crate::{MAX_REQUESTS, ScratchFile};
use coopcache_core::attr::AttrConfig;
use coopcache_sim::attr::{block_requests, uniform};
use std::sync::OnceLock;

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    static FILE: OnceLock<ScratchFile> = OnceLock::new();
    let path = FILE.get_or_init(ScratchFile::new).write(data);
    let Ok(requests) = coopcache_sim::trace::read_file_requests(path) else {
        return;
    };
    let baseline = AttrConfig::unix_baseline()
        .resolve(1 << 20)
        .expect("the baseline fits 1 MiB");
    for resolved in [baseline, uniform(1)] {
        let blocks = block_requests(requests.iter().copied(), resolved);
        blocks.take(MAX_REQUESTS).for_each(drop);
    }
}
