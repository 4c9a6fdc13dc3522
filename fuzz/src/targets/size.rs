//! Sizes as users write them: `--cache-size` (`CacheSize::from_str`, then
//! `CacheSize::blocks` at several block sizes), `size::parse_bytes`
//! (class-file bounds, `--block-size`), and the node's `--memory` /
//! `memory =` / `block_size =` (`budget::parse_size`, then
//! `Budget::blocks`). Beyond not panicking: a cache size prints back
//! (`Display`) to text that parses to the same size, and a byte size with
//! unit `B` is the number itself.

use coopcache_node::budget::{Budget, parse_size};
use coopcache_sim::size::{CacheSize, parse_bytes};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(size) = text.parse::<CacheSize>() {
        assert_eq!(size.to_string().parse::<CacheSize>(), Ok(size));
        for block in [0, 1, 512, 8192, 1 << 20, u64::MAX] {
            let _ = size.blocks(block);
        }
    }
    if let Some(bytes) = parse_bytes(text)
        && let Some(n) = text
            .trim()
            .strip_suffix('B')
            .and_then(|n| n.trim().parse::<u64>().ok())
    {
        assert_eq!(bytes, n, "{text:?}");
    }
    if let Ok(total) = parse_size(text) {
        for block_size in [1, 4096, 64 << 10, u32::MAX] {
            for private in [false, true] {
                let _ = Budget {
                    total,
                    block_size,
                    private,
                }
                .blocks();
            }
        }
        if let Ok(block_size) = u32::try_from(total) {
            let _ = Budget {
                total: 2 << 30,
                block_size,
                private: true,
            }
            .blocks();
        }
    }
}
